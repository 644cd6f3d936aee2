"""The search: finds the seeds' defects from scratch, finds nothing with the fixes, keeps and
replays its findings, and says so when it could not decide."""

from __future__ import annotations

import dataclasses
import itertools
import types
from typing import Any

import pytest
from hypothesis.database import InMemoryExampleDatabase
from hypothesis.errors import Flaky

from conformance.observations import Observation
from conformance.operations import Deliver, FreshLedger, Operation
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search import runner
from conformance.search.portfolio import ExplorerProgress
from conformance.search.program import ExampleRun
from conformance.search.runner import (
    PROFILES,
    SearchProgress,
    SearchReport,
    SearchSettings,
    replay_choices,
    run_search,
)
from conformance.search.verdict import Finding
from conformance.targets.base import TargetError
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.config import ModelConfig
from model.search.simulation import SimulationResult

CI = PROFILES["ci"]
DEFECT_1 = SCENARIOS["defect1-fencing"]
LIMBO = SCENARIOS["limbo-crash"]


def _search(cfg: ModelConfig, search: SearchSettings = CI, **kwargs: object):  # type: ignore[no-untyped-def]
    target = ModelTarget(cfg)
    target.open(cfg)
    return run_search(cfg, target, search, **kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
def test_finds_defect_1_from_scratch_within_the_ci_profile() -> None:
    cfg = DEFECT_1.config(protected=False)
    report = _search(cfg)
    assert report.verdict == "violation"
    assert report.finding is not None
    outcome = report.finding.run.outcome
    assert "NoDivergenceBetweenClientAndMetaData" in outcome.violations
    assert len(outcome.steps) <= 20  # shrunk: the shortest trace has 17 steps
    assert report.exit_code == 1
    # The blob replays the same story.
    again = replay_choices(cfg, ModelTarget(cfg), report.finding.choices, max_steps=CI.max_steps)
    assert [s.label for s in again.outcome.trace] == [s.label for s in outcome.trace]


@pytest.mark.slow
def test_finds_nothing_with_the_recovery_read_fence_within_the_ci_profile() -> None:
    report = _search(DEFECT_1.config(protected=True))
    assert report.verdict == "clean"
    assert report.examples >= CI.max_examples and report.explorer_steps > 10_000
    assert report.exit_code == 0


@pytest.mark.slow
def test_finds_the_limbo_loss_with_crash_faults_and_nothing_with_limbo() -> None:
    unprotected = _search(LIMBO.config(protected=False))
    assert unprotected.verdict == "violation"
    assert unprotected.finding is not None
    assert any(r.action == "BookieRestartsEmpty" for r in unprotected.finding.run.outcome.steps)
    assert _search(LIMBO.config(protected=True)).verdict == "clean"


def test_hypothesis_alone_searches_the_target_and_stays_in_its_budget() -> None:
    cfg = DEFECT_1.config(protected=True)
    search = SearchSettings(max_examples=30, max_steps=40, time_budget=None, explore=False)
    seen: list[str] = []
    report = _search(cfg, search, on_example=lambda phase, run: seen.append(phase))
    assert report.verdict == "clean"
    assert report.examples == len(seen) >= 30
    assert set(seen) == {"hypothesis"}


@pytest.mark.slow
def test_a_kept_finding_comes_back_at_once_from_the_database() -> None:
    cfg = DEFECT_1.config(protected=False)
    db = InMemoryExampleDatabase()
    first = _search(cfg, database=db)
    assert first.finding is not None
    phases: list[str] = []
    second = _search(
        cfg,
        dataclasses.replace(CI, explore=False, max_examples=1),
        database=db,
        on_example=lambda phase, run: phases.append(phase),
    )
    assert second.verdict == "violation"
    assert phases[0] == "replay"
    assert second.finding is not None
    assert len(second.finding.run.outcome.steps) == len(first.finding.run.outcome.steps)


class _BrokenTarget(ModelTarget):
    name = "broken"

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, Deliver):
            raise TargetError("bookie b1: connection refused")
        return super().invoke(op)


class _WrongFromTheThirdDelivery(ModelTarget):
    """Answers every delivery after an example's second with an answer the model never gives:
    each example of three deliveries or more diverges, and the shortest has three."""

    name = "wrong-from-the-third-delivery"
    deliveries = 0

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            self.deliveries = 0
        observed = super().invoke(op)
        if isinstance(op, Deliver):
            self.deliveries += 1
            if self.deliveries >= 3:
                return Observation("bogus", "EBOGUS")
        return observed


def _search_the_wrong_target(shrink: bool) -> tuple[SearchReport, list[ExampleRun]]:
    cfg = DEFECT_1.config(protected=True)
    target = _WrongFromTheThirdDelivery(cfg)
    target.open(cfg)
    runs: list[ExampleRun] = []
    search = SearchSettings(
        max_examples=50, max_steps=40, seed=1, time_budget=None, explore=False, shrink=shrink
    )
    report = run_search(cfg, target, search, on_example=lambda _, run: runs.append(run))
    return report, runs


def _deliveries(finding: Finding) -> int:
    return sum(
        1
        for s in finding.run.outcome.steps
        if s.operation is not None and s.operation["type"] == "Deliver"
    )


def test_a_search_without_shrinking_keeps_the_finding_as_first_found() -> None:
    shrunk, _ = _search_the_wrong_target(shrink=True)
    kept, runs = _search_the_wrong_target(shrink=False)
    assert shrunk.verdict == kept.verdict == "divergence"
    assert shrunk.finding is not None and kept.finding is not None
    assert _deliveries(shrunk.finding) == 3
    assert len(shrunk.finding.run.outcome.steps) < shrunk.finding.found_steps
    # The search stopped at its first failing example (Hypothesis runs it once more to return
    # it), and that example is the finding.
    first = [r.finding for r in runs].index(True)
    assert {tuple(r.choices) for r in runs[first:]} == {tuple(kept.finding.choices)}
    assert len(kept.finding.run.outcome.steps) == kept.finding.found_steps
    assert len(kept.finding.run.outcome.steps) > len(shrunk.finding.run.outcome.steps)


def test_a_phase_hypothesis_stops_without_a_failure_goes_on_with_another_seed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On a real cluster a race's answers need not repeat, and Hypothesis stops its phase
    # (Flaky) when a replay takes another path: the search must go on, and say so.
    real_find = runner.find
    calls: list[int] = []

    def find_stopping_once(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 1:
            raise Flaky("Inconsistent data generation! (a replay took another path)")
        return real_find(*args, **kwargs)

    monkeypatch.setattr(runner, "find", find_stopping_once)
    search = SearchSettings(max_examples=20, max_steps=30, time_budget=None, explore=False)
    report = _search(DEFECT_1.config(protected=True), search)
    assert report.verdict == "clean" and len(calls) == 2
    assert report.examples >= 20  # the phase ran its examples after all
    assert any("Hypothesis stopped 1 time(s)" in note for note in report.notes), report.notes


class _WrongOnce(ModelTarget):
    """Answers one delivery of one example wrongly (the ``wrong_example``-th fresh ledger),
    right ever after: a failure that does not repeat, as a race's may not."""

    name = "wrong-once"

    def __init__(self, cfg: ModelConfig, wrong_example: int) -> None:
        super().__init__(cfg)
        self.wrong_example = wrong_example
        self.examples = 0

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            self.examples += 1
        observed = super().invoke(op)
        if isinstance(op, Deliver) and self.examples == self.wrong_example:
            self.wrong_example = 0
            return Observation("bogus", "EBOGUS")
        return observed


def test_a_proposal_that_fails_once_is_the_finding_unshrunk_and_says_so() -> None:
    cfg = DEFECT_1.config(protected=True)
    # The hypothesis phase runs its 10 examples; the corpus's first proposal is the 11th.
    target = _WrongOnce(cfg, wrong_example=11)
    target.open(cfg)
    phases: list[str] = []
    # Bounded by examples and the explorer's steps: the corpus is cut at max_examples.
    search = SearchSettings(
        max_examples=10, max_steps=40, seed=1, time_budget=None, explorer_steps=5_000
    )
    report = run_search(cfg, target, search, on_example=lambda phase, _: phases.append(phase))
    assert phases[:11] == ["hypothesis"] * 10 + ["corpus"]
    assert report.verdict == "divergence" and report.finding is not None
    assert report.finding.found_by == "corpus"
    assert any("did not fail when Hypothesis ran it again" in note for note in report.notes)


class _Honest(ModelTarget):
    """The model's answers, under another name: a cluster's search, with a corpus."""

    name = "honest"


def test_the_corpus_replays_the_archive_while_the_budget_lasts() -> None:
    cfg = DEFECT_1.config(protected=True)
    target = _Honest(cfg)
    target.open(cfg)
    phases: list[str] = []
    search = SearchSettings(max_examples=5, max_steps=40, seed=1, time_budget=3.0)
    # The search's clock moves a millisecond each time it is read: the budget is spent after
    # the same work on any machine (the explorer reads it once a round, the corpus once an
    # example and a step).
    ticks = itertools.count()
    report = run_search(
        cfg,
        target,
        search,
        on_example=lambda phase, _: phases.append(phase),
        clock=lambda: next(ticks) / 1000,
    )
    assert report.verdict == "clean"
    # Not cut at max_examples: the target is kept busy with the explorer's corners (here, every
    # one of them: the corpus ends with the archive, before the budget).
    assert phases.count("corpus") > 2 * search.max_examples


def test_every_phase_reports_at_least_once_an_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    # The corpus search above, its progress heard: with a heartbeat every 50 ms of the
    # search's clock (a millisecond a read), no phase goes longer without a report (issue 48:
    # 15 minutes of the explorer in silence looked hung), and each report says what is left.
    interval = 0.05
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", interval)
    cfg = DEFECT_1.config(protected=True)
    target = _Honest(cfg)
    target.open(cfg)
    search = SearchSettings(max_examples=5, max_steps=40, seed=1, time_budget=3.0)
    ticks = itertools.count()
    reports: list[SearchProgress] = []
    report = run_search(
        cfg, target, search, progress=reports.append, clock=lambda: next(ticks) / 1000
    )
    assert report.verdict == "clean"
    phases = [r.phase for r in reports]
    assert phases[0] == "hypothesis" and phases[-1] == "corpus"
    assert {"hypothesis", "explorer", "corpus"} == set(phases)
    gaps = [b.elapsed - a.elapsed for a, b in itertools.pairwise(reports)]
    assert max(gaps) <= interval + 0.005
    explorer = [r for r in reports if r.phase == "explorer"]
    assert len(explorer) > 10 and all(r.explorer for r in explorer[1:])
    assert (
        [r.explorer.steps for r in explorer[1:]]
        == sorted(  # type: ignore[union-attr]
            r.explorer.steps  # type: ignore[union-attr]
            for r in explorer[1:]
        )
    )
    # The explorer's half of the time left, and the whole budget's, as they run out.
    line = explorer[len(explorer) // 2].describe()
    assert "s for the explorer, " in line and " s of 3 s; explorer: 1 worker running" in line
    assert all(r.budget == 3.0 and r.time_left is not None for r in reports)
    assert reports[0].examples_left == 5  # the hypothesis phase: its examples
    corpus = [r for r in reports if r.phase == "corpus"]
    assert corpus[0].examples_left is not None and corpus[0].examples_left > 0


def test_the_search_reports_while_it_waits_for_the_explorer_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The explorer's workers in other processes: the search's process, waiting, is told their
    # counts every 50 ms of its own (here: every second of a fake clock) and reports them
    # every interval.
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 10.0)
    now = [0.0]

    def explore(*args: object, progress: Any, should_stop: Any, **kwargs: object) -> Any:
        while not should_stop():
            now[0] += 1.0
            progress(ExplorerProgress(2, 1, int(now[0]), 100 * int(now[0]), 3))
        return SimulationResult(40, 4000, cells=3, archive=[])

    monkeypatch.setattr("conformance.search.runner.explore_portfolio", explore)
    cfg = DEFECT_1.config(protected=True)
    search = SearchSettings(max_examples=1, max_steps=5, time_budget=35.0, explorer_workers=2)
    reports: list[SearchProgress] = []
    run_search(cfg, ModelTarget(cfg), search, progress=reports.append, clock=lambda: now[0])
    explorer = [r for r in reports if r.phase == "explorer"]
    assert [r.elapsed for r in explorer] == [0.0, 10.0, 20.0, 30.0, 35.0]
    assert explorer[2].describe() == (
        "[explorer] 1 examples, 1 steps, 0 findings, 20 s; left: 15 s of 35 s; "
        "explorer: 1 of 2 workers running, 20 walks, 2,000 model steps, 3 cells"
    )
    assert explorer[-1].explorer == ExplorerProgress(2, 0, 40, 4000, 3)


def test_a_target_that_fails_makes_the_search_undecided_not_clean() -> None:
    cfg = DEFECT_1.config(protected=True)
    target = _BrokenTarget(cfg)
    report = run_search(cfg, target, dataclasses.replace(CI, time_budget=5.0))
    assert report.verdict == "undecided"
    assert report.exit_code == 2
    assert report.error is not None and "connection refused" in report.error


def test_a_search_that_ran_no_example_is_undecided_not_clean() -> None:
    # The budget is spent before the first example (a clock that jumps): nothing was checked.
    cfg = DEFECT_1.config(protected=True)
    ticks = iter(range(0, 10**9, 100))
    report = run_search(
        cfg,
        ModelTarget(cfg),
        dataclasses.replace(CI, time_budget=1.0),
        clock=lambda: float(next(ticks)),
    )
    assert (report.verdict, report.examples, report.exit_code) == ("undecided", 0, 2)
    assert report.error == "nothing was checked: no example ran on the target (time budget 1 s)"


def test_an_explorer_finding_that_does_not_replay_is_undecided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A replay that does not follow the explorer's trace (here: every choice 0) is a bug of
    # ours; the run cannot say the target is clean.
    monkeypatch.setattr(
        "conformance.search.runner.encode_trace", lambda cfg, trace, max_steps, **kwargs: [0]
    )
    scenario = SCENARIOS["defect1-fencing"]
    cfg = scenario.config(protected=False)
    story = run_scenario(scenario, ModelTarget(cfg), protected=False)
    assert story.verdict == "violation"

    explored = types.SimpleNamespace(
        walks=1,
        steps=len(story.trace),
        cells=None,
        violation=types.SimpleNamespace(trace=story.trace),
        archive=[],
    )
    monkeypatch.setattr(
        "conformance.search.runner.explore_portfolio", lambda *args, **kwargs: explored
    )
    search = SearchSettings(max_examples=1, max_steps=30, time_budget=None, explore=True)
    report = run_search(cfg, ModelTarget(cfg), search)
    assert report.verdict == "undecided" and report.finding is None
    assert report.error is not None and "a bug in bkconform's replay" in report.error


def test_budgets_that_check_nothing_are_refused() -> None:
    for bad, message in [
        (SearchSettings(time_budget=0.0), "--seconds must be positive"),
        (SearchSettings(time_budget=-1.0), "--seconds must be positive"),
        (SearchSettings(max_examples=0), "--max-examples must be at least 1"),
        (SearchSettings(max_steps=0), "--steps must be at least 1"),
        (SearchSettings(explorer_steps=0), "--explorer-steps must be at least 1"),
    ]:
        with pytest.raises(ValueError, match=message):
            bad.check()
    SearchSettings(time_budget=None).check()
    assert SearchSettings(time_budget=None).describe_budget() == "unbounded"
    assert SearchSettings(time_budget=0.5).describe_budget() == "0.5 s"
