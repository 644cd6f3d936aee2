"""Never a false clean: every verdict path, shown to fail when the target answers wrongly.

``ModelTarget`` answers with the prediction itself, so a run on it compares the model with
itself. Here a lying target (``tests/conformance/lying_target.py``) answers wrongly on demand,
and each lie must turn into the right verdict: a wrong answer or a wrong final state is a
divergence, a missing answer is undecided, and only a run where everything was checked and
agreed is clean.
"""

from __future__ import annotations

import pytest

from conformance.engine import Execution, Outcome
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search.runner import SearchSettings, run_search
from conformance.search.verdict import SearchReport
from conformance.verdict import Verdict, exit_code_for
from model.bookkeeper.action_table import ACTION_TABLE, WriteEnd
from model.bookkeeper.config import ModelConfig
from tests.conformance.lying_target import LIES, Lie, LyingTarget, path_to

DEFECT_1 = SCENARIOS["defect1-fencing"]
QUICK = SearchSettings(max_examples=20, max_steps=30, time_budget=None, explore=False)


def _scenario(target: LyingTarget, name: str = "defect1-fencing", protected: bool = True):  # type: ignore[no-untyped-def]
    scenario = SCENARIOS[name]
    target.open(scenario.config(protected=protected))
    return run_scenario(scenario, target, protected=protected)


def test_exit_codes_are_0_clean_1_finding_2_anything_else() -> None:
    assert {v.value: v.exit_code for v in Verdict} == {
        "clean": 0,
        "violation": 1,
        "divergence": 1,
        "undecided": 2,
    }
    assert [exit_code_for(v.value) for v in Verdict] == [0, 1, 1, 2]
    assert exit_code_for("error") == exit_code_for("") == 2
    for verdict in Verdict:
        code = verdict.exit_code
        assert Outcome(verdict, [], []).exit_code == code
        assert SearchReport(verdict, None, 1, 1, 0.0).exit_code == code


@pytest.mark.parametrize(("name", "protected"), [(n, p) for n in SCENARIOS for p in (True, False)])
def test_the_honest_lying_target_agrees_with_the_model_to_the_final_state(
    name: str, protected: bool
) -> None:
    target = LyingTarget()
    outcome = _scenario(target, name, protected)
    assert outcome.verdict == SCENARIOS[name].expected_verdict(protected)
    assert outcome.divergences == [] and outcome.error is None and target.told == []


def test_an_honest_search_compares_the_final_state_and_is_clean() -> None:
    cfg = DEFECT_1.config(protected=True)
    target = LyingTarget()
    target.open(cfg)
    report = run_search(cfg, target, QUICK)
    assert report.verdict == "clean" and report.examples == QUICK.max_examples


@pytest.mark.parametrize(
    ("lie", "verdict", "said"),
    [
        (Lie("add-status"), "divergence", "success: predicted True, observed False (EFENCED)"),
        (Lie("lac"), "divergence", "lac: predicted 0, observed 1"),
        (Lie("read-data"), "divergence", "code: predicted 'NoSuchEntry', observed 'OK'"),
        (Lie("metadata"), "divergence", "success: predicted True, observed False"),
        (Lie("missing-entry"), "divergence", "final state: bookie b2 holds [], model [1]"),
        (Lie("extra-entry"), "divergence", "final state: bookie b1 holds [2], model []"),
        (Lie("status-final"), "divergence", "metadata status IN_RECOVERY, model CLOSED"),
        (Lie("error"), "undecided", "did not answer"),
        (Lie("metadata-outage"), "undecided", "ZooKeeper did not answer"),
        (Lie("snapshot-error"), "undecided", "final state could not be read"),
    ],
)
def test_each_lie_is_caught(lie: Lie, verdict: str, said: str) -> None:
    target = LyingTarget(lie)
    outcome = _scenario(target)
    assert target.told, "the lie must have been told"
    assert outcome.verdict == verdict, (outcome.divergences, outcome.error)
    assert said in " ".join([*outcome.divergences, outcome.error or ""])


def test_a_lie_on_top_of_a_violation_is_still_a_finding() -> None:
    outcome = _scenario(LyingTarget(Lie("missing-entry")), protected=False)
    assert outcome.verdict in ("violation", "divergence") and outcome.exit_code == 1
    assert outcome.violations == ["NoDivergenceBetweenClientAndMetaData"]


@pytest.mark.parametrize(
    ("lie", "verdict"),
    [
        (None, "clean"),
        (Lie("metadata-status", 0), "divergence"),
        (Lie("metadata", 0), "divergence"),
        (Lie("metadata-outage", 0), "undecided"),
    ],
)
def test_an_expected_metadata_failure_matches_only_a_lost_compare_and_set(
    lie: Lie | None, verdict: str
) -> None:
    (failing,) = [a.name for a in ACTION_TABLE if a.write_ends is WriteEnd.VERSION_MISMATCH]
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
    target = LyingTarget(*([lie] if lie else []))
    target.open(cfg)
    execution = Execution(cfg, target)
    for transition in path_to(cfg, failing):
        execution.apply(transition)
        if execution.stopped:
            break
    outcome = execution.finish()
    assert outcome.verdict == verdict, (outcome.divergences, outcome.error)
    if lie is not None and lie.kind == "metadata-status":
        assert outcome.steps[-1].action == failing
        assert (
            "status: predicted 'MetadataVersionMismatch', observed 'NoSuchLedger'"
            in outcome.divergences[0]
        )


@pytest.mark.parametrize(
    ("lie", "verdict"),
    [
        (Lie("add-status", 0), "divergence"),
        (Lie("extra-entry"), "divergence"),
        (Lie("error", 2), "undecided"),
        (Lie("snapshot-error"), "undecided"),
    ],
)
def test_the_search_reports_what_the_lie_makes_of_it(lie: Lie, verdict: str) -> None:
    cfg = DEFECT_1.config(protected=True)
    target = LyingTarget(lie)
    target.open(cfg)
    report = run_search(cfg, target, QUICK)
    assert report.verdict == verdict, (report.error, report.notes)
    if verdict == "undecided":
        assert report.error and report.finding is None
    else:
        assert report.finding is not None and report.finding.run.outcome.divergences


def test_every_lie_is_documented_and_tested() -> None:
    assert set(LIES) == {
        "add-status",
        "lac",
        "read-data",
        "error",
        "metadata",
        "metadata-status",
        "metadata-outage",
        "missing-entry",
        "extra-entry",
        "status-final",
        "snapshot-error",
    }
    with pytest.raises(ValueError, match="unknown lie"):
        Lie("fib")
