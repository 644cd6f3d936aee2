"""Races judged by serial orders (:mod:`conformance.races`), and the engine's race steps."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from adapters.cluster.gates import At, GatePoint
from conformance.engine import Execution
from conformance.gated_races import Gated, GateReport, GateSchedule, Stop
from conformance.observations import Observation
from conformance.operations import Deliver, Operation
from conformance.races import (
    RESTARTED,
    RaceTally,
    Restart,
    Timed,
    explain,
    is_restart_step,
    member_of,
    raceable,
)
from conformance.targets.base import TargetSnapshot
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.actions import Transition, init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import AddEntryRequest, FenceRequest, State
from model.bookkeeper.scripted import step, take
from tests.conformance.racing_prefix import ADD_AND_FENCE_WAIT_AT_B1

CFG = ModelConfig(
    bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2, inflight_limit=2
)
OK_ADD = Observation("add", "EOK", success=True)
FENCED_ADD = Observation("add", "EFENCED", success=False)


def _fence(lac: int) -> Observation:
    return Observation("fence", "OK", code="OK", lac=lac)


#: c1 has e1 confirmed by b1..b3 and its LAC at 1, sends e2 (LAC 1); c2 starts recovery: at
#: b1, c1's add of e2 and c2's fence read both wait.
PREFIX_STEPS = ADD_AND_FENCE_WAIT_AT_B1


def _prefix() -> State:
    state = init_state(CFG)
    for scripted in PREFIX_STEPS:
        state = take(CFG, state, scripted).state
    return state


PREFIX = _prefix()


def _at_b1(state: State) -> tuple[Transition, Transition]:
    racing = [t for t in raceable(_enabled(state)) if t.label.received.bookie == 0]  # type: ignore[union-attr]
    add = next(t for t in racing if isinstance(t.label.received, AddEntryRequest))
    fence = next(t for t in racing if isinstance(t.label.received, FenceRequest))
    return add, fence


def _enabled(state: State) -> list[Transition]:
    return successors(CFG, state)


ADD, FENCE = _at_b1(PREFIX)
REQUESTS = (ADD.label.received, FENCE.label.received)


def _timed(*observations: Observation | None, overlap: bool = True) -> list[Timed]:
    """Answers sent at once (overlapping), or one after the other (the first done first)."""
    if overlap:
        return [Timed(o, 0.0 + i * 0.001, 1.0) for i, o in enumerate(observations)]
    return [Timed(o, float(i), i + 0.5) for i, o in enumerate(observations)]


def test_the_add_first_explains_an_add_the_fence_read_saw() -> None:
    assert REQUESTS[0].lac == 1  # type: ignore[union-attr]
    found = explain(CFG, PREFIX, REQUESTS, _timed(OK_ADD, _fence(1)))  # type: ignore[arg-type]
    # Every order is tried (each explaining one leaves a state the engine keeps): one explains.
    assert found.explained and found.order == (0, 1) and found.tried == 2
    assert len(found.explaining) == 1
    assert [t.label.action for _i, t in found.steps] == [
        "BookieSendsAddConfirmedResponse",
        "BookieSendsFencingReadLacResponse",
    ]


def test_the_fence_first_explains_a_fenced_add() -> None:
    found = explain(CFG, PREFIX, REQUESTS, _timed(FENCED_ADD, _fence(0)))  # type: ignore[arg-type]
    assert found.explained and found.order == (1, 0) and found.tried == 2
    assert "EFENCED" in found.failures[0] or "success" in found.failures[0]


def test_an_add_past_a_fence_that_missed_it_has_no_serial_order() -> None:
    found = explain(CFG, PREFIX, REQUESTS, _timed(OK_ADD, _fence(0)))  # type: ignore[arg-type]
    assert not found.explained and found.tried == 2 and len(found.failures) == 2
    finding = found.finding()
    assert finding.startswith("no serial order of the 2 concurrent requests")
    assert "2 orders tried" in finding and "lac: predicted 1, observed 0" in finding


def test_an_operation_done_before_another_was_sent_comes_first() -> None:
    # The add was answered before the fence read was sent: only add-then-fence may explain,
    # and it does not explain a fenced add.
    answers = _timed(FENCED_ADD, _fence(0), overlap=False)
    found = explain(CFG, PREFIX, REQUESTS, answers)  # type: ignore[arg-type]
    assert not found.explained and found.tried == 1


def test_the_invocation_order_is_tried_first() -> None:
    answers = [Timed(OK_ADD, 0.002, 1.0), Timed(_fence(1), 0.001, 1.0)]
    found = explain(CFG, PREFIX, REQUESTS, answers)  # type: ignore[arg-type]
    assert found.order == (0, 1) and found.tried == 2  # fence first was tried, and failed


def test_answers_and_requests_must_pair_up() -> None:
    with pytest.raises(ValueError, match="2 requests raced, 1 answers"):
        explain(CFG, PREFIX, REQUESTS, _timed(OK_ADD))  # type: ignore[arg-type]


def test_the_tally_counts_races_orders_and_the_longest_search() -> None:
    tally = RaceTally()
    tally.add(explain(CFG, PREFIX, REQUESTS, _timed(OK_ADD, _fence(1))))  # type: ignore[arg-type]
    tally.add(explain(CFG, PREFIX, REQUESTS, _timed(OK_ADD, _fence(0))))  # type: ignore[arg-type]
    assert (tally.races, tally.concurrent_steps, tally.orders_checked) == (2, 4, 4)
    assert (tally.longest_search, tally.unexplained) == (2, 1)
    other = RaceTally()
    other.merge(tally)
    assert other.as_dict() == tally.as_dict()
    assert "4 concurrent steps in 2 races, 4 serial orders checked" in tally.describe()
    assert "more than one model state" not in tally.describe()


class _Scripted:
    """A target whose race answers are given (a racy bookie, or a correct one)."""

    name = "scripted"

    def __init__(self, answers: Sequence[Observation]) -> None:
        self.answers = list(answers)
        self.raced: list[list[Operation]] = []

    def open(self, cfg: ModelConfig) -> None: ...

    def invoke(self, op: Operation) -> Observation:
        raise AssertionError(f"only races here, not {op}")

    def invoke_concurrently(
        self, ops: Sequence[Deliver], offsets_s: Sequence[float]
    ) -> list[Timed]:
        self.raced.append(list(ops))
        return _timed(*self.answers)

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        return None

    def describe(self) -> dict[str, str]:
        return {}

    def close(self) -> None: ...


def _execution(answers: Sequence[Observation]) -> Execution:
    execution = Execution(CFG, _Scripted(answers))  # type: ignore[arg-type]
    execution.state = PREFIX
    return execution


def test_an_explained_race_is_the_model_s_steps_in_that_order() -> None:
    execution = _execution([FENCED_ADD, _fence(0)])
    records = execution.apply_race([ADD, FENCE], [0.0, 0.0])
    assert [r.action for r in records] == [
        "BookieSendsFencingReadLacResponse",
        "BookieSendsAddFencedResponse",
    ]
    assert [r.race["position"] for r in records] == [1, 2]  # type: ignore[index]
    assert all(not r.divergence for r in records)
    assert not execution.stopped
    assert execution.state.b_fenced[0]
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN
    assert outcome.races is not None and outcome.races.concurrent_steps == 2


def test_an_unexplained_race_is_a_divergence_naming_the_orders_tried() -> None:
    execution = _execution([OK_ADD, _fence(0)])
    (record,) = execution.apply_race([ADD, FENCE])
    assert record.action == "Race" and record.race is not None
    assert len(record.race["orders"]) == 2 and len(record.race["answers"]) == 2
    assert execution.stopped and execution.state == PREFIX
    outcome = execution.finish()
    assert outcome.verdict is Verdict.DIVERGENCE
    assert outcome.divergences[0].startswith("no serial order")


def test_a_race_needs_distinct_bookie_steps() -> None:
    execution = _execution([OK_ADD, OK_ADD])
    with pytest.raises(ValueError, match="two or more distinct"):
        execution.apply_race([ADD, ADD])
    create = _enabled(PREFIX)[0]
    with pytest.raises(ValueError):
        execution.apply_race([ADD, create])


def test_a_target_that_cannot_race_leaves_the_example_undecided() -> None:
    class Sequential(_Scripted):
        invoke_concurrently = None  # type: ignore[assignment]

    execution = Execution(CFG, Sequential([]))  # type: ignore[arg-type]
    execution.state = PREFIX
    assert execution.apply_race([ADD, FENCE]) == []
    assert execution.finish().verdict is Verdict.UNDECIDED


def test_the_model_target_serves_a_race_in_the_order_of_its_offsets() -> None:
    execution = Execution(CFG, ModelTarget(CFG))
    for scripted in PREFIX_STEPS:  # the model target's bookies get the prefix's requests
        execution.apply(take(CFG, execution.state, scripted))
    assert execution.state == PREFIX
    records = execution.apply_race([ADD, FENCE], [0.001, 0.0])  # the fence is sent first
    assert [r.action for r in records] == [
        "BookieSendsFencingReadLacResponse",
        "BookieSendsAddFencedResponse",
    ]


# A restart in a race: c1's add of e1 waits at b1..b3 when b1 restarts without its data.
CRASHY = ModelConfig(
    bookies=3, clients=2, write_quorum=3, ack_quorum=2, max_crashes=1, crash_when_open=True
)


def _crash_prefix() -> tuple[State, Transition, Transition]:
    state = init_state(CRASHY)
    for scripted in PREFIX_STEPS[:2]:
        state = take(CRASHY, state, scripted).state
    racing = raceable(successors(CRASHY, state))
    restart = next(t for t in racing if is_restart_step(t) and t.label.bookie == 0)
    add = next(t for t in racing if member_of(t) != Restart(0) and member_of(t).bookie == 0)
    return state, restart, add


def test_a_request_answered_before_the_restart_is_explained_before_it() -> None:
    state, restart, add = _crash_prefix()
    members = (member_of(restart), member_of(add))
    found = explain(CRASHY, state, members, _timed(RESTARTED, OK_ADD))
    assert found.explained and [i for i, _step in found.steps] == [1, 0]


def test_a_request_with_no_answer_is_explained_only_as_lost_in_the_restart() -> None:
    state, restart, add = _crash_prefix()
    members = (member_of(restart), member_of(add))
    found = explain(CRASHY, state, members, _timed(RESTARTED, None))
    assert found.explained and found.order == (0, 1)
    assert [i for i, _step in found.steps] == [0]  # the add has no step: the restart lost it
    # The add was over before the restart began: no answer is then no answer the model gives.
    answers = [Timed(RESTARTED, 1.0, 1.5), Timed(None, 0.0, 0.5)]
    alone = explain(CRASHY, state, members, answers)
    assert not alone.explained
    assert "no answer, where the model's bookie answers" in alone.finding()


def test_the_model_target_loses_a_request_sent_after_a_restart_in_its_race() -> None:
    execution = Execution(CRASHY, ModelTarget(CRASHY))
    for scripted in PREFIX_STEPS[:2]:
        execution.apply(take(CRASHY, execution.state, scripted))
    _state, restart, add = _crash_prefix()
    records = execution.apply_race([add, restart], [0.001, 0.0])  # the restart first
    assert [r.action for r in records] == ["BookieRestartsEmpty"]
    assert records[0].race is not None and records[0].race["lost"] == ["c1's add e1 (lac=0) to b1"]
    assert execution.finish().verdict is Verdict.CLEAN


def test_a_race_holds_one_restart_at_most() -> None:
    state = init_state(CRASHY)
    for scripted in PREFIX_STEPS[:2]:
        state = take(CRASHY, state, scripted).state
    restarts = [t for t in raceable(successors(CRASHY, state)) if is_restart_step(t)][:2]
    execution = Execution(CRASHY, ModelTarget(CRASHY))
    execution.state = state
    with pytest.raises(ValueError, match="at most one restart"):
        execution.apply_race(restarts)


def test_no_answer_from_a_request_the_model_cannot_process_is_not_taken_as_lost() -> None:
    # c1 sent e1 and e2 pipelined: b1 takes e1 first (IsEarliestMsg), so its add of e2 cannot
    # be processed yet, and b2's restart does not lose it: no answer is then unexplained.
    cfg = ModelConfig(
        bookies=3,
        clients=2,
        write_quorum=3,
        ack_quorum=2,
        send_limit=2,
        inflight_limit=2,
        max_crashes=1,
    )
    state = init_state(cfg)
    for scripted in (*PREFIX_STEPS[:2], step("ClientSendsAddEntryRequests", client="c1")):
        state = take(cfg, state, scripted).state
    second = next(
        m
        for m, _count in state.messages
        if isinstance(m, AddEntryRequest) and m.entry.id == 2 and m.bookie == 0
    )
    found = explain(cfg, state, (Restart(1), second), _timed(RESTARTED, None))
    assert not found.explained
    assert "the model cannot carry out c1's add e2 (lac=0) to b1" in found.finding()


#: The fence held at its setFenced, the add sent meanwhile (tests/conformance/test_gated_races.py).
FENCE_HELD = GateSchedule(1, Stop(GatePoint.SET_FENCED, At.ENTRY))


class _ScriptedGates(_Scripted):
    """A scripted target whose bookies load the gate agent: its race answers carry the gate
    reports given (None: it says nothing of its gates)."""

    gates = True

    def __init__(
        self, answers: Sequence[Observation], reports: Sequence[GateReport | None]
    ) -> None:
        super().__init__(answers)
        self.reports = list(reports)
        self.schedules: list[GateSchedule | None] = []

    def invoke_concurrently(  # type: ignore[override]
        self,
        ops: Sequence[Deliver],
        offsets_s: Sequence[float],
        gates: GateSchedule | None = None,
    ) -> list[Timed]:
        self.schedules.append(gates)
        timed = super().invoke_concurrently(ops, offsets_s)
        return [dataclasses.replace(t, gate=r) for t, r in zip(timed, self.reports, strict=True)]


def test_a_gated_race_is_judged_and_says_what_its_gates_did() -> None:
    reports = [GateReport(None, Gated.NOT_HELD), GateReport(FENCE_HELD.first, Gated.HELD, 1)]
    target = _ScriptedGates([FENCED_ADD, _fence(0)], reports)
    execution = Execution(CFG, target)  # type: ignore[arg-type]
    execution.state = PREFIX
    records = execution.apply_race([ADD, FENCE], [0.0, 0.0], FENCE_HELD)
    assert target.schedules == [FENCE_HELD]
    gates = {r.action: r.race["gate"] for r in records}  # type: ignore[index]
    assert gates == {
        "BookieSendsFencingReadLacResponse": "held at the entry of "
        "LedgerDescriptorImpl.setFenced, released first",
        "BookieSendsAddFencedResponse": "not held (ran through)",
    }
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN
    assert outcome.races is not None and outcome.races.gates.reached == 1
    assert outcome.races.as_dict()["gates"]["gated"] == 1


def test_an_unexplained_gated_race_names_its_schedule_and_what_its_gates_did() -> None:
    reports = [GateReport(None, Gated.NOT_HELD), GateReport(FENCE_HELD.first, Gated.HELD, 1)]
    execution = Execution(CFG, _ScriptedGates([OK_ADD, _fence(0)], reports))  # type: ignore[arg-type]
    execution.state = PREFIX
    (record,) = execution.apply_race([ADD, FENCE], [0.0, 0.0], FENCE_HELD)
    assert record.race is not None and record.race["gate_schedule"] == FENCE_HELD.as_dict()
    assert [a["gate"] for a in record.race["answers"]] == [r.describe() for r in reports]
    assert execution.finish().verdict is Verdict.DIVERGENCE


def test_a_gated_race_whose_target_says_nothing_of_its_gates_is_undecided() -> None:
    target = _ScriptedGates([FENCED_ADD, _fence(0)], [None, None])
    execution = Execution(CFG, target)  # type: ignore[arg-type]
    execution.state = PREFIX
    assert execution.apply_race([ADD, FENCE], [0.0, 0.0], FENCE_HELD) == []
    outcome = execution.finish()
    assert outcome.verdict is Verdict.UNDECIDED
    assert "without saying what its gates did" in (outcome.error or "")


def test_a_target_without_gates_cannot_run_a_gated_race() -> None:
    execution = _execution([FENCED_ADD, _fence(0)])
    assert execution.apply_race([ADD, FENCE], [0.0, 0.0], FENCE_HELD) == []
    outcome = execution.finish()
    assert outcome.verdict is Verdict.UNDECIDED
    assert "no gates" in (outcome.error or "")
