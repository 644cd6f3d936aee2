"""A search's verdict from what it found, what went wrong and how much it ran: clean only when
examples ran and none failed; a finding keeps its verdict; otherwise undecided, with why."""

from __future__ import annotations

import pytest

from conformance.engine import Outcome
from conformance.search.choices import to_blob
from conformance.search.program import ExampleRun, Swarm
from conformance.search.verdict import Finding, SearchReport, SearchTally, conclude
from conformance.verdict import Verdict

TALLY = SearchTally(examples=12, steps=340, elapsed=4.0, explorer_steps=9000)
NOTES = ["a note"]


def _run(verdict: Verdict) -> ExampleRun:
    return ExampleRun(Outcome(verdict, [], []), Swarm(), choices=[3, 1, 4])


def test_examples_that_all_passed_are_clean() -> None:
    report = conclude(None, None, None, TALLY, NOTES, "10 s")
    assert report == SearchReport(Verdict.CLEAN, None, 12, 340, 4.0, None, NOTES, 9000)
    assert report.exit_code == 0


def test_a_target_error_with_nothing_found_is_undecided_with_the_error() -> None:
    report = conclude(None, None, "bookie b2 did not answer", TALLY, NOTES, "10 s")
    assert report == SearchReport(
        Verdict.UNDECIDED, None, 12, 340, 4.0, "bookie b2 did not answer", NOTES, 9000
    )
    assert report.exit_code == 2


def test_nothing_run_on_the_target_is_undecided_not_clean() -> None:
    report = conclude(None, None, None, SearchTally(0, 0, 0.5, 70), [], "1 s")
    assert report.verdict is Verdict.UNDECIDED and report.exit_code == 2
    assert report.error == "nothing was checked: no example ran on the target (time budget 1 s)"
    assert (report.examples, report.steps, report.explorer_steps) == (0, 0, 70)


@pytest.mark.parametrize(
    ("verdict", "exit_code"), [(Verdict.VIOLATION, 1), (Verdict.DIVERGENCE, 1)]
)
def test_a_finding_keeps_its_verdict_and_says_who_found_it(
    verdict: Verdict, exit_code: int
) -> None:
    run = _run(verdict)
    report = conclude(run, ("explorer", 2.5, 17), None, TALLY, NOTES, "10 s")
    assert report.verdict == verdict and report.exit_code == exit_code
    assert report.error is None and report.notes == NOTES
    assert report.finding == Finding(run, [3, 1, 4], "explorer", 2.5, 17)
    assert report.finding.blob == to_blob([3, 1, 4])
    assert (report.examples, report.steps, report.elapsed, report.explorer_steps) == (
        12,
        340,
        4.0,
        9000,
    )


def test_a_finding_outweighs_a_later_target_error() -> None:
    # The failing run was decided before the target failed: it stands.
    report = conclude(_run(Verdict.VIOLATION), ("hypothesis", 1.0, 5), "lost", TALLY, [], "10 s")
    assert report.verdict is Verdict.VIOLATION and report.error is None


def test_a_finding_without_its_discovery_is_a_bug() -> None:
    with pytest.raises(ValueError, match="who found it first"):
        conclude(_run(Verdict.VIOLATION), None, None, TALLY, [], "10 s")


def test_steps_per_second() -> None:
    assert SearchReport(Verdict.CLEAN, None, 1, 340, 4.0).steps_per_second == 85.0
    assert SearchReport(Verdict.CLEAN, None, 1, 340, 0.0).steps_per_second == 0.0


def test_a_finding_without_its_discovery_is_refused_with_the_whole_reason() -> None:
    with pytest.raises(ValueError) as refused:
        conclude(_run(Verdict.DIVERGENCE), None, None, TALLY, NOTES, "10 s")
    assert str(refused.value) == "a search that found a failing run must say who found it first"
