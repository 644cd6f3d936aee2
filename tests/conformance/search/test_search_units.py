"""The search's bookkeeping, unit by unit, with a fake clock and no search run: the example
database key, the refusals of SearchSettings.check, _Search's budget, progress reports and
handling of each example, the Hypothesis settings it asks for, and replay_choices."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis.database import InMemoryExampleDatabase

from conformance.engine import Outcome, StepRecord
from conformance.search import runner
from conformance.search.portfolio import ExplorerProgress
from conformance.search.program import ExampleRun, Swarm
from conformance.search.runner import (
    SearchProgress,
    SearchSettings,
    _Search,
    database_key,
    replay_choices,
)
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig

CFG = ModelConfig()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def new_search(
    clock: FakeClock,
    progress: Callable[[SearchProgress], None] | None = None,
    budget: float | None = 10.0,
    on_example: Callable[[str, ExampleRun], None] | None = None,
) -> _Search:
    search = SearchSettings(max_examples=4, max_steps=7, seed=3, time_budget=budget)
    return _Search(CFG, ModelTarget(CFG), search, progress, clock, on_example)


# database_key


def test_database_key_of_the_default_configuration_is_stable_across_releases() -> None:
    # Changing it orphans every finding kept in users' example databases: bump
    # PROGRAM_VERSION on purpose instead (version 2, issue 46: BookieLeavesLimbo joined the
    # action table, which the choices' action kinds index).
    assert database_key(CFG, "model", 60) == b"bkconform-9a8248047be61762921850bf9cd17279"


def test_database_key_is_a_prefix_and_32_hex_digits_of_the_sorted_description() -> None:
    described = json.dumps(
        {
            "config": {
                k: v
                for k, v in dataclasses.asdict(CFG).items()
                if k not in runner.LATER_SWITCHES or v
            },
            "max_steps": 25,
            "program": runner.PROGRAM_VERSION,
            "target": "cluster",
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(described.encode()).hexdigest()[:32]
    key = database_key(CFG, "cluster", 25)
    assert key == b"bkconform-" + digest.encode()
    assert len(key) == len(b"bkconform-") + 32


def test_a_later_switch_changes_the_key_only_when_on() -> None:
    on = dataclasses.replace(CFG, lac_counts_as_confirmed=True)
    assert database_key(on, "model", 60) != database_key(CFG, "model", 60)


def test_database_key_is_the_same_for_equal_inputs() -> None:
    assert database_key(ModelConfig(send_limit=2), "model", 60) == database_key(
        ModelConfig(send_limit=2), "model", 60
    )


def test_database_key_changes_with_each_of_its_inputs() -> None:
    base = database_key(CFG, "model", 60)
    assert database_key(ModelConfig(send_limit=2), "model", 60) != base
    assert database_key(ModelConfig(recovery_reads_fence=False), "model", 60) != base
    assert database_key(CFG, "cluster", 60) != base
    assert database_key(CFG, "model", 61) != base


def test_database_key_changes_with_the_program_version(monkeypatch: pytest.MonkeyPatch) -> None:
    base = database_key(CFG, "model", 60)
    monkeypatch.setattr(runner, "PROGRAM_VERSION", runner.PROGRAM_VERSION + 1)
    assert database_key(CFG, "model", 60) != base


# SearchSettings.corpus_until_time_is_up, describe_examples


@pytest.mark.parametrize(
    ("target", "settings", "corpus"),
    [
        ("local", SearchSettings(time_budget=30.0), True),
        ("external", SearchSettings(time_budget=30.0), True),
        ("model", SearchSettings(time_budget=30.0), False),
        ("local", SearchSettings(time_budget=None), False),
        ("local", SearchSettings(time_budget=30.0, explore=False), False),
    ],
)
def test_the_corpus_runs_until_the_time_is_up_only_on_a_cluster_with_explorer_and_budget(
    target: str, settings: SearchSettings, corpus: bool
) -> None:
    assert settings.corpus_until_time_is_up(target) is corpus
    described = settings.describe_examples(target)
    assert described.startswith(
        f"{settings.max_examples} generated examples of up to {settings.max_steps} steps"
    )
    assert described.endswith(", then the explorer's corpus while time is left") is corpus


# SearchSettings.check


def test_the_smallest_useful_budgets_are_accepted() -> None:
    SearchSettings(max_examples=1).check()
    SearchSettings(max_steps=1).check()
    SearchSettings(time_budget=0.5).check()
    SearchSettings(max_examples=1, max_steps=1, time_budget=0.001).check()


def test_each_refusal_names_the_option_and_the_value() -> None:
    refusals = [
        (SearchSettings(max_examples=0), "--max-examples must be at least 1 (got 0)"),
        (SearchSettings(max_steps=-2), "--steps must be at least 1 (got -2)"),
        (
            SearchSettings(time_budget=0.0),
            "--seconds must be positive (got 0): a search with no time checks nothing",
        ),
        (
            SearchSettings(time_budget=-1.5),
            "--seconds must be positive (got -1.5): a search with no time checks nothing",
        ),
    ]
    for bad, message in refusals:
        with pytest.raises(ValueError) as refused:
            bad.check()
        assert str(refused.value) == message


# _Search: the clock, the budget, progress


def test_a_new_search_starts_counting_from_zero() -> None:
    clock = FakeClock(100.0)
    state = new_search(clock)
    assert (state.examples, state.steps, state.explorer_steps) == (0, 0, 0)
    assert (state.phase, state.error, state.first_found, state.best) == (
        "hypothesis",
        None,
        None,
        None,
    )
    clock.now = 102.5
    assert state.elapsed() == 2.5


def test_the_budget_runs_out_exactly_at_its_end() -> None:
    clock = FakeClock(50.0)
    state = new_search(clock, budget=10.0)
    clock.now = 59.5
    assert (state.out_of_time(), state.idle()) == (False, False)
    clock.now = 60.0
    assert (state.out_of_time(), state.idle()) == (True, True)


def test_an_unbounded_search_never_runs_out_of_time() -> None:
    clock = FakeClock()
    state = new_search(clock, budget=None)
    clock.now = 1e9
    assert (state.out_of_time(), state.idle()) == (False, False)


def test_a_target_error_makes_the_search_idle() -> None:
    state = new_search(FakeClock())
    state.error = "bookie b1: connection refused"
    assert state.idle() is True


def test_a_report_gives_phase_counts_elapsed_time_and_no_finding() -> None:
    clock = FakeClock(5.0)
    reports: list[SearchProgress] = []
    state = new_search(clock, reports.append)
    clock.now = 7.0
    state.report()
    state.examples, state.steps, state.phase = 3, 40, "corpus"
    state.report()
    assert reports == [
        SearchProgress("hypothesis", 0, 0, 2.0, 0, budget=10.0),
        SearchProgress("corpus", 3, 40, 2.0, 0, budget=10.0),
    ]


def test_a_report_counts_a_first_finding_as_one() -> None:
    reports: list[SearchProgress] = []
    state = new_search(FakeClock(), reports.append)
    state.first_found = ("explorer", 1.0, 17)
    state.report()
    assert [r.findings for r in reports] == [1]


def test_steps_are_counted_and_reported_at_most_once_a_second() -> None:
    clock = FakeClock(1.0)
    reports: list[SearchProgress] = []
    state = new_search(clock, reports.append)
    for now in (1.0, 1.5, 2.0, 2.5, 3.0, 4.5, 5.0):
        clock.now = now
        state.count_step()
    assert state.steps == 7
    # At 1.0: a second since the (zero) start of reporting; then 2.0, 3.0 and 4.5.
    assert [(r.steps, r.elapsed) for r in reports] == [(1, 0.0), (3, 1.0), (5, 2.0), (6, 3.5)]
    assert {r.phase for r in reports} == {"hypothesis"}


def test_a_heartbeat_reports_only_once_the_interval_passed_without_a_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 10.0)
    clock = FakeClock(100.0)
    reports: list[SearchProgress] = []
    state = new_search(clock, reports.append, budget=60.0)
    state.phase = "explorer"
    state.report()  # the phase's start, at 0 s
    for now in (101.0, 105.0, 109.9, 110.0, 112.0, 119.0, 120.5):
        clock.now = now
        state.heartbeat()
    assert [r.elapsed for r in reports] == [0.0, 10.0, 20.5]
    # A step's report (once a second) counts: the next heartbeat is due 10 s after it.
    clock.now = 125.0
    state.count_step()
    clock.now = 134.0
    state.heartbeat()
    clock.now = 135.0
    state.heartbeat()
    assert [r.elapsed for r in reports[3:]] == [25.0, 35.0]


def test_a_heartbeat_line_names_the_phase_its_counts_and_the_budget_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner, "PROGRESS_INTERVAL_S", 0.5)
    clock = FakeClock()
    reports: list[SearchProgress] = []
    state = new_search(clock, reports.append, budget=1800.0)
    state.phase, state.examples, state.steps = "explorer", 50, 372
    state.phase_until = 900.0
    clock.now = 16.0
    state.explorer_progress(ExplorerProgress(2, 2, 10_432, 198_233, 1_204))
    (report,) = reports
    assert report.time_left == 1784.0
    assert report.describe() == (
        "[explorer] 50 examples, 372 steps, 0 findings, 16 s; left: 884 s for the explorer, "
        "1784 s of 1800 s; explorer: 2 workers running, 10,432 walks, 198,233 model steps, "
        "1,204 cells"
    )
    # Only the explorer phase carries the explorer's counts.
    state.phase, state.phase_until, state.examples_until = "corpus", None, 80
    clock.now = 17.0
    state.heartbeat()
    assert reports[-1].describe(rate=True) == (
        "[corpus] 50 examples, 372 steps, 22 steps/s, 0 findings, 17 s; "
        "left: 30 examples, 1783 s of 1800 s"
    )


def test_once_a_finding_is_shrunk_the_phase_says_so_and_spent_time_is_not_its_bound() -> None:
    clock = FakeClock()
    reports: list[SearchProgress] = []
    state = new_search(clock, reports.append, budget=10.0)
    state.examples_until = 4
    state.shrinking = True
    clock.now = 12.0
    state.report()
    assert reports[-1].describe() == (
        "[shrink] 0 examples, 0 steps, 0 findings, 12 s; "
        "left: 0 s of 10 s (a finding is shrunk all the same)"
    )
    state.phase = "replay"  # no shrinking there: Hypothesis only replays the database
    state.report()
    assert reports[-1].phase == "replay" and reports[-1].examples_left == 4


def test_without_a_budget_a_line_is_as_it_always_was() -> None:
    # The shards' logs (conformance/distributed/shard.py) and their tests read these.
    assert (
        SearchProgress("hypothesis", 3, 40, 5.0, 1).describe()
        == "[hypothesis] 3 examples, 40 steps, 1 findings, 5 s"
    )


def test_steps_are_counted_without_a_progress_callback() -> None:
    clock = FakeClock()
    state = new_search(clock, None)
    for now in (0.0, 3.0, 6.0):
        clock.now = now
        state.count_step()
    state.report()
    assert state.steps == 3


# _Search.example


def _outcome(verdict: Verdict, steps: int, error: str | None = None) -> Outcome:
    records = [StepRecord(i + 1, "ClientCreatesLedger", "step") for i in range(steps)]
    return Outcome(verdict, records, [], error=error)


class FakeRunner:
    """Stands in for run_example: draws one choice, counts ``steps`` steps, returns the
    queued outcomes in order."""

    def __init__(self, outcomes: list[Outcome], steps: int = 2, danger: int = 4) -> None:
        self.outcomes = outcomes
        self.steps = steps
        self.danger = danger
        self.max_steps: list[object] = []

    def __call__(
        self,
        cfg: ModelConfig,
        target: object,
        chooser: Any,
        *,
        max_steps: object,
        on_step: Callable[[], None],
        on_record: Callable[[StepRecord], None] | None = None,  # the run directory's; unused
        races: bool = False,
        gates: bool = False,
    ) -> ExampleRun:
        self.max_steps.append(max_steps)
        chooser.integer(0, 9)
        for _ in range(self.steps):
            on_step()
        return ExampleRun(self.outcomes.pop(0), Swarm(), max_danger=self.danger)


def _patch(monkeypatch: pytest.MonkeyPatch, fake: FakeRunner) -> list[tuple[float, str]]:
    targeted: list[tuple[float, str]] = []
    monkeypatch.setattr(runner, "run_example", fake)
    monkeypatch.setattr(
        runner, "target", lambda observation, label: targeted.append((observation, label))
    )
    return targeted


def _draw(strategy: object) -> int:
    return 6


def test_an_idle_search_runs_and_draws_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeRunner([_outcome(Verdict.CLEAN, 2)])
    targeted = _patch(monkeypatch, fake)
    clock = FakeClock()
    state = new_search(clock)
    clock.now = 10.0
    drawn: list[object] = []
    assert state.example(drawn.append) is None
    assert (drawn, fake.max_steps, targeted, state.examples) == ([], [], [], 0)


def test_a_clean_example_is_counted_shown_and_targeted_on_its_danger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = FakeRunner([_outcome(Verdict.CLEAN, 2)], steps=2, danger=4)
    targeted = _patch(monkeypatch, fake)
    seen: list[tuple[str, ExampleRun]] = []
    state = new_search(FakeClock(), on_example=lambda phase, run: seen.append((phase, run)))
    run = state.example(_draw)
    assert run is not None
    assert fake.max_steps == [7]
    assert run.choices == [6]
    assert (state.examples, state.steps) == (1, 2)
    assert seen == [("hypothesis", run)]
    assert targeted == [(4.0, "danger")]
    assert (state.shrinking, state.best, state.first_found, state.error) == (
        False,
        None,
        None,
        None,
    )


def test_an_undecided_example_stops_the_search_with_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _patch(monkeypatch, FakeRunner([_outcome(Verdict.UNDECIDED, 1, error="bookie b2: timed out")]))
    state = new_search(FakeClock())
    state.example(_draw)
    assert state.error == "bookie b2: timed out"
    assert state.idle() is True


def test_a_finding_keeps_the_search_going_past_its_budget_to_shrink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _patch(monkeypatch, FakeRunner([_outcome(Verdict.VIOLATION, 5)]))
    clock = FakeClock(1.0)
    state = new_search(clock, budget=10.0)
    clock.now = 3.0
    run = state.example(_draw)
    assert state.shrinking is True
    assert state.best is run
    assert state.first_found == ("hypothesis", 2.0, 5)
    clock.now = 20.0
    assert state.out_of_time() is True
    assert state.idle() is False


def test_the_best_finding_is_the_first_of_the_shortest(monkeypatch: pytest.MonkeyPatch) -> None:
    lengths = [5, 5, 3, 7, 3]
    _patch(monkeypatch, FakeRunner([_outcome(Verdict.DIVERGENCE, n) for n in lengths]))
    clock = FakeClock()
    state = new_search(clock)
    runs = []
    for i in range(len(lengths)):
        clock.now = float(i)
        runs.append(state.example(_draw))
    assert state.best is runs[2]
    assert state.first_found == ("hypothesis", 0.0, 5)
    assert state.examples == 5


# _Search.hypothesis_settings


def test_hypothesis_settings_fix_every_value_whatever_the_profile() -> None:
    previous = settings.get_current_profile_name()
    settings.register_profile(
        "bkconform-contrary",
        max_examples=999,
        phases=(Phase.explicit,),
        deadline=timedelta(milliseconds=250),
        suppress_health_check=[],
        derandomize=True,
        report_multiple_bugs=True,
    )
    settings.load_profile("bkconform-contrary")
    try:
        db = InMemoryExampleDatabase()
        phases = (Phase.reuse, Phase.shrink)
        made = new_search(FakeClock()).hypothesis_settings(phases, db)
    finally:
        settings.load_profile(previous)
    assert made.max_examples == 4
    assert tuple(made.phases) == phases
    assert made.database is db
    assert made.deadline is None
    assert list(made.suppress_health_check) == list(HealthCheck)
    assert made.derandomize is False
    assert made.report_multiple_bugs is False


# replay_choices


def test_replay_choices_keeps_a_copy_of_the_choices_it_replayed() -> None:
    choices = [0, 1, 0, 2]
    run = replay_choices(CFG, ModelTarget(CFG), choices, max_steps=3)
    assert run.choices == [0, 1, 0, 2]
    assert run.choices is not choices
    assert run.outcome.verdict == "clean"
    assert 1 <= len(run.outcome.steps) <= 3


def test_replay_choices_reads_zeros_past_the_end_of_a_short_list() -> None:
    assert replay_choices(CFG, ModelTarget(CFG), [], max_steps=5).choices == []


def test_hypothesis_prints_nothing_of_its_own() -> None:
    # When the budget runs out mid-phase, example() draws nothing; Hypothesis calls that
    # inconsistent data generation (a Flaky that run_search handles) and, unless quiet, prints
    # "You can reproduce this failure by adding @seed(...)" for a search that failed nothing
    # (seen in qualification output on real bookies).
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=2)
    search = runner._Search(cfg, ModelTarget(cfg), SearchSettings(), None, lambda: 0.0, None)
    chosen = search.hypothesis_settings((Phase.generate,), InMemoryExampleDatabase())
    assert chosen.verbosity is Verbosity.quiet
