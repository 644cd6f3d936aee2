"""Every model state still possible (:mod:`conformance.possible_states`): a race that two serial
orders explain leaves two states, and a later answer chooses between them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

import conformance.engine as engine_module
from conformance.engine import Execution, operation_for
from conformance.observations import Observation
from conformance.operations import Deliver, Operation
from conformance.possible_states import Possible, certain_violations, corresponding, distinct
from conformance.races import Timed, member_of, raceable
from conformance.targets.base import TargetSnapshot
from conformance.verdict import Verdict
from model.bookkeeper.actions import Transition, init_state, successors
from model.bookkeeper.records import (
    STATUS_NAMES,
    AddEntryRequest,
    Entry,
    FenceRequest,
    State,
    bookies_of,
)
from model.bookkeeper.scripted import step, take
from tests.conformance.test_races import CFG as RACES_CFG
from tests.conformance.test_races import PREFIX_STEPS

# The recovery decides on the first answer to its read (the spec's client waits for the others
# without it), so that it writes e1 back while its fence read and recovery read of b1 wait.
CFG = dataclasses.replace(RACES_CFG, late_read_answers_ignored=True)
OK_ADD = Observation("add", "EOK", success=True)

#: c1 sent e2 (LAC 1) to b1..b3; c2 fenced b2 and b3, read e1 back and writes it back (LAC 0):
#: at b1, c1's add of e2 and c2's write-back of e1 wait together, and so does c2's fence read.
#: Both adds succeed whichever comes first, and leave b1's LAC at the last one's (the spec's
#: bookie): 0 or 1. Only the fence read's answer tells.
WRITE_BACK_STEPS = (
    *PREFIX_STEPS,
    step("BookieSendsFencingReadLacResponse", bookie="b2"),
    step("BookieSendsFencingReadLacResponse", bookie="b3"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b2"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b3"),
    step("ClientSendsRecoveryReadRequests", client="c2"),
    step("BookieSendsReadResponse", bookie="b2"),
    step("BookieSendsReadResponse", bookie="b3"),
    step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
    step("ClientWritesBackEntry", client="c2"),
)


def _prefix() -> State:
    state = init_state(CFG)
    for scripted in WRITE_BACK_STEPS:
        state = take(CFG, state, scripted).state
    return state


PREFIX = _prefix()


def _adds_at_b1(state: State) -> tuple[Transition, Transition]:
    at_b1 = [
        t
        for t in raceable(successors(CFG, state))
        if isinstance(member_of(t), AddEntryRequest) and member_of(t).bookie == 0
    ]
    writer = next(t for t in at_b1 if not member_of(t).recovery)  # type: ignore[union-attr]
    write_back = next(t for t in at_b1 if member_of(t).recovery)  # type: ignore[union-attr]
    return writer, write_back


WRITER, WRITE_BACK = _adds_at_b1(PREFIX)


def _fence_read_at_b1(state: State) -> Transition:
    return next(
        t
        for t in successors(CFG, state)
        if isinstance(t.label.received, FenceRequest)
        and t.label.received.bookie == 0
        and not t.label.lost
    )


class _Answers:
    """A target that answers a race, then single requests, as it is told."""

    name = "scripted"

    def __init__(self, race: Sequence[Observation], then: Sequence[Observation] = ()) -> None:
        self.race = list(race)
        self.then = list(then)

    def open(self, cfg: object) -> None: ...

    def invoke(self, op: Operation) -> Observation:
        return self.then.pop(0)

    def invoke_concurrently(
        self, ops: Sequence[Deliver], offsets_s: Sequence[float]
    ) -> list[Timed]:
        return [Timed(o, i * 0.001, 1.0) for i, o in enumerate(self.race)]

    def snapshot(self, cfg: object) -> TargetSnapshot | None:
        return None

    def describe(self) -> dict[str, str]:
        return {}

    def close(self) -> None: ...


def _raced(then: Sequence[Observation] = ()) -> Execution:
    execution = Execution(CFG, _Answers([OK_ADD, OK_ADD], then))  # type: ignore[arg-type]
    execution.state = PREFIX
    records = execution.apply_race([WRITER, WRITE_BACK])
    assert [r.action for r in records] == ["BookieSendsAddConfirmedResponse"] * 2
    return execution


def _fence(lac: int) -> Observation:
    return Observation("fence", "OK", code="OK", lac=lac)


def test_a_race_two_orders_explain_keeps_both_states() -> None:
    execution = _raced()
    assert sorted(p.state.b_lac[0] for p in execution.possible) == [0, 1]
    # The primary is the invocation order's: the writer's add first, the write-back last.
    assert execution.state.b_lac[0] == 0
    record = execution.records[-1]
    assert record.possible_states == 2 and record.race is not None
    assert record.race["orders_explaining"] == 2
    tally = execution.race_tally
    assert (tally.ambiguous, tally.most_states, tally.unexplained) == (1, 2, 0)
    assert "1 left more than one model state possible (at most 2 kept at once)" in tally.describe()


@pytest.mark.parametrize("lac", [0, 1])
def test_a_later_fence_read_chooses_the_state_that_predicts_its_answer(lac: int) -> None:
    execution = _raced(then=[_fence(lac)])
    record = execution.apply(_fence_read_at_b1(execution.state))
    assert not record.divergence and not execution.stopped
    assert record.predicted is not None and record.predicted["lac"] == lac
    assert [p.state.b_lac[0] for p in execution.possible] == [lac]
    assert record.possible_states is None  # one state is left
    assert execution.finish().verdict is Verdict.CLEAN


def test_an_answer_no_state_predicts_is_a_divergence_that_says_so() -> None:
    execution = _raced(then=[_fence(2)])
    record = execution.apply(_fence_read_at_b1(execution.state))
    assert execution.stopped
    (difference,) = record.divergence
    assert difference.startswith("lac: predicted 0, observed 2")
    assert "no other of the 2 model states still possible predicts the answer" in difference
    assert execution.finish().verdict is Verdict.DIVERGENCE


def test_past_the_bound_the_run_is_undecided(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "MAX_POSSIBLE_STATES", 1)
    execution = _raced()
    assert execution.error is not None and "more than the 1 the judge keeps" in execution.error
    assert execution.finish().verdict is Verdict.UNDECIDED


def test_steps_no_answer_tells_apart_are_taken_from_every_state() -> None:
    execution = _raced()
    # c1 takes b1's confirmation of e2: a client step, the same event from both states.
    receive = next(
        t
        for t in execution.enabled()
        if t.label.action == "ClientReceivesAddConfirmedResponse" and t.label.received.bookie == 0  # type: ignore[union-attr]
    )
    execution.apply(receive)
    assert len(execution.possible) == 2
    other = execution.possible[1]
    assert corresponding(CFG, other.state, _fence_read_at_b1(execution.state).label)


def test_a_state_with_no_such_step_has_none() -> None:
    fence = _fence_read_at_b1(PREFIX)
    assert corresponding(CFG, init_state(CFG), fence.label) == []


def test_distinct_keeps_one_possibility_per_state_with_what_every_trace_broke() -> None:
    a = Possible.initial(PREFIX)
    b = Possible(PREFIX, (), frozenset({"x"}))
    c = Possible.initial(init_state(CFG))
    assert distinct([a, b, c]) == [a, c]
    both = Possible(PREFIX, (), frozenset({"x", "y"}))
    (merged,) = distinct([both, b, Possible(PREFIX, (), frozenset({"y", "x", "z"}))])
    assert merged.trace == both.trace and merged.broken == {"x"}


def test_an_invariant_is_broken_for_certain_only_on_every_possible_trace() -> None:
    one = Possible(PREFIX, (), frozenset({"A", "B"}))
    other = Possible(PREFIX, (), frozenset({"B", "C"}))
    assert certain_violations([one, other]) == {"B"}
    assert certain_violations([one]) == {"A", "B"}
    assert certain_violations([]) == frozenset()


def test_the_end_is_compared_with_every_state_still_possible() -> None:
    stored = PREFIX._replace(b_entries=(PREFIX.b_entries[0] | {Entry(2, 2)}, *PREFIX.b_entries[1:]))

    class Ending(_Answers):
        def snapshot(self, cfg: object) -> TargetSnapshot:
            return _snapshot_of(stored)

    execution = Execution(CFG, Ending([]))  # type: ignore[arg-type]
    execution.possible = [Possible.initial(PREFIX), Possible.initial(stored)]
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome.divergences
    assert execution.state == stored  # the state that explains the end is the primary now
    execution = Execution(CFG, Ending([]))  # type: ignore[arg-type]
    execution.possible = [Possible.initial(PREFIX)]
    assert execution.finish().verdict is Verdict.DIVERGENCE


def _snapshot_of(state: State) -> TargetSnapshot:
    return TargetSnapshot(
        entries={b: {e.id for e in state.b_entries[b]} for b in range(CFG.bookies)},
        meta_status=STATUS_NAMES[state.meta_status],
        meta_last_entry=state.meta_last_entry,
        meta_fragments=[(f.first_entry_id, bookies_of(f.ensemble)) for f in state.meta_fragments],
    )


def _client_step(execution: Execution) -> Transition:
    """A step the target takes no part in (nothing to invoke)."""
    return next(
        t for t in execution.enabled() if operation_for(t.label, execution.state, t.state) is None
    )


def test_a_violation_on_one_possible_trace_only_is_not_reported() -> None:
    broken = frozenset({"SomeInvariant"})
    execution = Execution(CFG, _Answers([]))  # type: ignore[arg-type]
    execution.possible = [Possible(PREFIX, (), broken), Possible(PREFIX, (), frozenset())]
    record = execution.apply(_client_step(execution))
    assert record.violations == [] and not execution.violations
    # Once the trace that broke nothing is no longer possible, the violation is certain.
    execution.possible = [Possible(execution.state, (), broken)]
    record = execution.apply(_client_step(execution))
    assert record.violations == ["SomeInvariant"] and execution.violations == ["SomeInvariant"]
