"""The kernel's one search loop, on a toy live system: a plan is a tuple of numbers, its run
fails when the plan holds a 7 (a violation) or a 3 (a divergence), and cannot be judged at all
when it holds a 5 (when the role says so). The Java client's roles and the Zab schedules are
searched by the same loop (tests/conformance/javaclient/test_search.py, tests/conformance/zab)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import pytest
from hypothesis import strategies as st

from conformance.live import search as live
from conformance.live.search import (
    SearchProgress,
    StopAt,
    Stopped,
    interleaved,
    search,
    shrink_greedily,
)
from conformance.verdict import Verdict

Plan = tuple[int, ...]
#: Any plan of up to six numbers.
ANY = st.lists(st.integers(0, 9), min_size=1, max_size=6).map(tuple)
#: Plans that pass, as many as Hypothesis wants to draw (a space it cannot exhaust).
CLEAN = st.integers(0, 10**6).map(lambda n: (0, 1, 2)[: 1 + n % 3])


@dataclass(frozen=True)
class Run:
    plan: Plan
    verdict: Verdict


@dataclass
class Toy:
    """A live system whose every run is recorded; ``stops_on_5``: a 5 cannot be judged."""

    stops_on_5: bool = False
    slow_s: float = 0.0
    #: Hypothesis' plans (default: any); ``CLEAN``: every drawn plan passes.
    drawn: st.SearchStrategy[Plan] = ANY
    runs: list[Plan] = field(default_factory=list)

    def plans(self) -> st.SearchStrategy[Plan]:
        return self.drawn

    def smaller_plans(self, plan: Plan) -> Iterator[Plan]:
        for index in range(len(plan)):
            if len(plan) > 1:
                yield plan[:index] + plan[index + 1 :]

    def perform(self, plan: Plan) -> Run:
        self.runs.append(plan)
        time.sleep(self.slow_s)
        if 7 in plan:
            return Run(plan, Verdict.VIOLATION)
        if 3 in plan:
            return Run(plan, Verdict.DIVERGENCE)
        if 5 in plan:
            return Run(plan, Verdict.UNDECIDED)
        return Run(plan, Verdict.CLEAN)

    def verdict(self, run: Run) -> Verdict:
        return run.verdict

    def unjudged(self, run: Run) -> str | None:
        return "a 5" if self.stops_on_5 and 5 in run.plan else None

    def same_failure(self, found: Run, run: Run) -> bool:
        return run.verdict is found.verdict

    def steering(self, run: Run) -> Mapping[str, float]:
        return {"length": float(len(run.plan))}

    def describe(self, plan: Plan) -> str:
        return " ".join(map(str, plan))


def test_the_first_violation_stops_the_search_and_is_shrunk_to_one_step() -> None:
    toy = Toy()
    result = search(toy, max_examples=200, seed=1, guided=[(1, 2, 7, 4)])
    assert result.stopped is Stopped.FINDING and result.verdict is Verdict.VIOLATION
    assert result.finding is not None and result.finding.example == 1  # the guided plan
    assert result.finding.found.plan == (1, 2, 7, 4)
    assert result.finding.plan == result.finding.shrunk.plan == (7,)
    assert result.finding.shrink_runs == len(toy.runs) - result.examples


def test_a_divergence_is_kept_while_the_search_goes_on_unless_any_finding_stops_it() -> None:
    guided = [(3,), (0,)]
    result = search(Toy(drawn=CLEAN), max_examples=6, seed=2, guided=guided, shrink=False)
    assert result.finding is not None and result.finding.found.plan == (3,)
    assert result.divergent_examples >= 1 and result.examples > 1
    toy = Toy(drawn=CLEAN)
    stopped = search(toy, max_examples=6, seed=2, guided=guided, stop_at=StopAt.FINDING)
    assert stopped.examples == 1 and stopped.verdict is Verdict.DIVERGENCE
    with pytest.raises(ValueError, match="stop_at is a StopAt"):
        search(Toy(), stop_at="finding")  # type: ignore[arg-type]


def test_a_run_the_role_cannot_judge_stops_the_search_undecided() -> None:
    result = search(Toy(stops_on_5=True, drawn=CLEAN), max_examples=20, seed=3, guided=[(5,)])
    assert result.stopped is Stopped.UNDECIDED and result.examples == 1
    assert result.errors == ["plan (5): a 5"] and result.verdict is Verdict.UNDECIDED
    # Undecided but not unjudged: counted, and the search goes on; never clean.
    counted = search(Toy(drawn=CLEAN), max_examples=4, seed=3, guided=[(5,), (0,)])
    assert counted.examples == 4 and counted.verdict is Verdict.UNDECIDED


def test_clean_only_when_examples_ran_and_each_was_clean() -> None:
    result = search(Toy(drawn=CLEAN), max_examples=4, seed=4, stop_at=StopAt.FINDING)
    assert result.stopped is Stopped.EXAMPLES and result.examples == 4
    assert result.verdicts == {Verdict.CLEAN: 4} and result.verdict is Verdict.CLEAN
    spent = search(Toy(), max_examples=4, seconds=-1.0, seed=4)
    assert spent.stopped is Stopped.BUDGET and spent.examples == 0
    assert spent.verdict is Verdict.UNDECIDED


def test_a_halt_stops_before_the_next_example_and_a_finding_is_announced_once() -> None:
    asked: list[int] = []
    toy = Toy(drawn=CLEAN)

    def halt() -> bool:
        asked.append(len(toy.runs))
        return len(toy.runs) >= 3

    halted = search(toy, max_examples=50, seed=5, halt=halt)
    assert halted.stopped is Stopped.HALTED and halted.examples == 3 == len(toy.runs)
    assert asked == [0, 1, 2, 3] and halted.verdict is Verdict.CLEAN  # three checked, passed
    announced: list[int] = []
    toy = Toy()
    found = search(
        toy,
        max_examples=50,
        seed=5,
        guided=[(7, 1)],
        on_finding=lambda: announced.append(len(toy.runs)),
    )
    # Announced when the example stopped the search, before the shrinking's runs.
    assert found.stopped is Stopped.FINDING and found.examples == 1 and announced == [1]
    assert found.finding is not None and found.finding.plan == (7,) and len(toy.runs) > 1


def test_shrinking_keeps_the_first_smaller_plan_that_fails_within_its_bounds() -> None:
    tried: list[Plan] = []

    def fails(plan: Plan) -> bool:
        tried.append(plan)
        return 7 in plan

    def smaller(plan: Plan) -> Iterator[Plan]:
        return Toy().smaller_plans(plan)

    assert shrink_greedily((1, 7, 2), smaller, fails) == ((7,), 3)
    assert tried == [(7, 2), (2,), (7,)]
    assert shrink_greedily((1, 7, 2), smaller, fails, max_runs=1) == ((7, 2), 1)
    assert shrink_greedily((1, 7, 2), smaller, fails, more=lambda: False) == ((1, 7, 2), 0)


def test_the_search_says_what_it_is_doing_at_least_every_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(live, "PROGRESS_INTERVAL_S", 0.05)
    reports: list[SearchProgress] = []
    search(Toy(slow_s=0.2, drawn=CLEAN), max_examples=2, seed=5, progress=reports.append)
    # Two examples of 0.2 s each: several reports while they ran, none late.
    assert len(reports) >= 4
    assert all(r.phase == "examples" and r.max_examples == 2 for r in reports)
    assert "examples" in reports[-1].describe()


def test_guided_plans_come_every_other_example_cycling() -> None:
    guided = [(1,), (2,)]
    assert [interleaved(guided, n, (9,)) for n in range(5)] == [(1,), (9,), (2,), (9,), (1,)]
    assert interleaved([], 0, (9,)) == (9,)
