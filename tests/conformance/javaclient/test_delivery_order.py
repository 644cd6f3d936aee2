"""Issue 49, Deliver 3: a finding's run records the order its answers reached the client in
(``FrameSchedule.order``, in its plan), and a replay's controller enforces it: a frame goes on
only after its predecessor in the order, and a predecessor that never comes leaves the run
undecided after a bounded wait, never silently clean."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import DeliveryRecord, Direction, FrameRecord, Operation
from adapters.zkproxy import Direction as ZkDirection
from adapters.zkproxy import Op, PacketInfo, PacketRecord
from conformance.commands.java_client_run import _faults_placed
from conformance.javaclient.controller import ScheduleController, unapplied_reason
from conformance.javaclient.delivery_order import (
    delivery_order,
    faults_after,
    with_delivery_order,
)
from conformance.javaclient.metadata_writes import MetadataWrite, write_key
from conformance.javaclient.plans import FaultKind, FrameKey, FrameSchedule, PlannedFault, forge
from conformance.javaclient.run import RECORD_FILE
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.live.faults import FaultEvent
from tests.conformance.javaclient.fake_proxies import FakeGroup, FakeProxy
from tests.conformance.javaclient.recorded import LEDGER, LogBuilder

ADD = Operation.ADD_ENTRY
B1_E0 = FrameKey("add", "b1", 0, answer=True)
B2_E1 = FrameKey("add", "b2", 1, answer=True)
B2_E3 = FrameKey("add", "b2", 3, answer=True)
B1_E2 = FrameKey("add", "b1", 2, answer=True)


@dataclass
class _Record:
    """What a role's record has that the order is read from."""

    frames: list[FrameRecord]
    deliveries: dict[int, DeliveryRecord]
    ledger_id: int = LEDGER
    bookie_of_proxy: dict[str, int] = field(default_factory=lambda: {"p3": 0, "p2": 1, "p1": 2})
    faults: tuple[Any, ...] = ()
    metadata_writes: tuple[MetadataWrite, ...] = ()


def _3005_like_run() -> _Record:
    """#3005 as the search found it (E=2 WQ=AQ=1; p3 = b1, p2 = b2): b2's answer to e1 is
    delivered, b2's answer to e3 replaced by a forged EIO, then b1's answer to e0."""
    log = LogBuilder()
    log.frame(1.000, "p3", Direction.REQUEST, ADD, 0)
    log.frame(1.001, "p2", Direction.REQUEST, ADD, 1)
    log.frame(1.002, "p2", Direction.REQUEST, ADD, 3)
    log.frame(1.050, "p2", Direction.RESPONSE, ADD, 1, status=StatusCode.EOK)
    original = log.frame(
        1.060, "p2", Direction.RESPONSE, ADD, 3, status=StatusCode.EOK, delivered_at=None
    )
    forged = log.frame(1.061, "p2", Direction.RESPONSE, ADD, 3, status=StatusCode.EIO)
    log.frames[-1] = dataclasses.replace(forged, decision="forged", forged_from=original.frame_id)
    log.frame(1.040, "p3", Direction.RESPONSE, ADD, 0, status=StatusCode.EOK, delivered_at=1.2)
    # Not in the order: a second answer of a key (a resend's), another ledger's, an undelivered.
    log.frame(1.300, "p2", Direction.RESPONSE, ADD, 1, status=StatusCode.EOK)
    log.frame(1.310, "p1", Direction.RESPONSE, ADD, 0, status=StatusCode.EOK, ledger=LEDGER + 1)
    log.frame(1.320, "p1", Direction.RESPONSE, ADD, 2, status=StatusCode.EOK, delivered_at=None)
    return _Record(log.frames, log.deliveries)


def test_the_answers_are_recorded_in_the_order_they_reached_the_client_each_key_once() -> None:
    # A forged answer is keyed as the answer it replaced: forging that frame delivered it.
    assert delivery_order(_3005_like_run()) == (B2_E1, B2_E3, B1_E0)


def test_a_forged_failure_goes_before_other_connections_answers_just_before_it() -> None:
    # #3005 from scratch (seed 7, 4.17.3): b1's answer to e0 delivered 0.1 ms before b2's
    # forged EIO, yet the change was made from e0: the client took the EIO first. Two
    # connections' deliveries that close are in either order to the client; the record
    # takes the judge's reading that makes the forged failure decide.
    log = LogBuilder()
    log.frame(1.000, "p2", Direction.RESPONSE, ADD, 1, status=StatusCode.EOK, delivered_at=1.0950)
    log.frame(1.000, "p3", Direction.RESPONSE, ADD, 0, status=StatusCode.EOK, delivered_at=1.0955)
    original = log.frame(1.0, "p2", Direction.RESPONSE, ADD, 3, delivered_at=None)
    forged = log.frame(1.096, "p2", Direction.RESPONSE, ADD, 3, status=StatusCode.EIO)
    log.frames[-1] = dataclasses.replace(forged, forged_from=original.frame_id)
    # b2's own answer to e1 stays before (one connection keeps its order).
    assert delivery_order(_Record(log.frames, log.deliveries)) == (B2_E1, B2_E3, B1_E0)


def test_a_key_whose_first_frame_was_not_delivered_is_left_out() -> None:
    # The controller decides only a key's first frame: had the plan dropped it, a later
    # frame of the key (a resend's answer) in the order would never count as gone on.
    log = LogBuilder()
    log.frame(1.0, "p2", Direction.RESPONSE, ADD, 1, status=StatusCode.EOK, delivered_at=None)
    log.frame(1.1, "p3", Direction.RESPONSE, ADD, 0, status=StatusCode.EOK)
    log.frame(1.2, "p2", Direction.RESPONSE, ADD, 1, status=StatusCode.EOK)
    assert delivery_order(_Record(log.frames, log.deliveries)) == (B1_E0,)


def test_a_forged_answer_to_a_request_is_keyed_by_the_request() -> None:
    log = LogBuilder()
    request = log.frame(1.0, "p2", Direction.REQUEST, ADD, 3, delivered_at=None)
    forged = log.frame(1.001, "p2", Direction.RESPONSE, ADD, 3, status=StatusCode.EIO)
    log.frames[-1] = dataclasses.replace(forged, forged_from=request.frame_id)
    assert delivery_order(_Record(log.frames, log.deliveries)) == (FrameKey("add", "b2", 3),)


def test_the_order_is_written_into_the_plan_and_read_back() -> None:
    plan = WriterRunPlan(WriterShape(2, 1, 1), 4, FrameSchedule({B2_E3: forge("EIO")}))
    ordered = with_delivery_order(plan, _3005_like_run())
    assert ordered.schedule.order == (B2_E1, B2_E3, B1_E0)
    assert ordered.schedule.decisions == plan.schedule.decisions
    data = ordered.to_json()
    assert data["schedule"][-1] == {"order": [key.to_json() for key in (B2_E1, B2_E3, B1_E0)]}
    assert WriterRunPlan.from_json(data).schedule.order == (B2_E1, B2_E3, B1_E0)
    assert "the recorded delivery order of 3 frames enforced" in ordered.describe()
    # A plan without an order is written and read as before (old run directories replay so).
    assert all("order" not in item for item in plan.to_json()["schedule"])
    assert WriterRunPlan.from_json(plan.to_json()).schedule.order == ()
    # Answers in the order are held by the proxies, to be let go in it.
    assert FrameSchedule(order=(B1_E0,)).watches_answers()
    assert not FrameSchedule(order=(FrameKey("add", "b1", 0),)).watches_answers()


def _answers() -> tuple[FrameRecord, FrameRecord]:
    """b2's answer to e3 (on p2), arriving before b1's answer to e0 (on p3)."""
    log = LogBuilder()
    e3 = log.frame(1.0, "p2", Direction.RESPONSE, ADD, 3, status=StatusCode.EOK)
    e0 = log.frame(1.1, "p3", Direction.RESPONSE, ADD, 0, status=StatusCode.EOK)
    return e3, e0


def test_a_frame_goes_on_only_after_its_predecessor_in_the_recorded_order() -> None:
    # #3005: the forged EIO must reach the client after b1's answer to e0, as recorded; here
    # b2's answer comes first and is held (its forgery too) until b1's has gone on.
    log: list[str] = []
    p2, p3 = FakeProxy(log), FakeProxy(log)
    e3, e0 = _answers()
    schedule = FrameSchedule({B2_E3: forge("EIO")}, order=(B1_E0, B2_E3))
    proxies: Any = {"p2": p2, "p3": p3}
    names = {"p3": "b1", "p2": "b2"}
    group: Any = FakeGroup(last=100)
    controller = ScheduleController(group, proxies, LEDGER, schedule, names=names, order_gap_s=0)
    p2.frames = {e3.frame_id: e3}
    controller.step()
    controller.step()
    assert log == []  # its predecessor has not come: held, its forgery with it
    p3.frames = {e0.frame_id: e0}
    controller.step()  # e0's answer goes on; e3's forgery, already looked at, waits a pass
    controller.step()
    assert log == [f"release #{e0.frame_id}", f"forge #{e3.frame_id} EIO"]
    assert controller.order_broken == [] and unapplied_reason([controller]) is None


def test_frames_in_the_recorded_order_go_on_at_once() -> None:
    log: list[str] = []
    p2, p3 = FakeProxy(log), FakeProxy(log)
    e3, e0 = _answers()
    schedule = FrameSchedule(order=(B2_E3, B1_E0))
    proxies: Any = {"p2": p2, "p3": p3}
    names = {"p3": "b1", "p2": "b2"}
    group: Any = FakeGroup(last=100)
    controller = ScheduleController(group, proxies, LEDGER, schedule, names=names, order_gap_s=0)
    p2.frames, p3.frames = {e3.frame_id: e3}, {e0.frame_id: e0}
    controller.step()
    assert log == [f"release #{e3.frame_id}", f"release #{e0.frame_id}"]


def test_a_frame_on_another_connection_goes_on_a_gap_after_its_predecessor() -> None:
    # The client reads each connection on its own thread: frames sent together may be taken
    # in either order, so the next one waits the gap.
    log: list[str] = []
    p2, p3 = FakeProxy(log), FakeProxy(log)
    e3, e0 = _answers()
    schedule = FrameSchedule(order=(B2_E3, B1_E0))
    proxies: Any = {"p2": p2, "p3": p3}
    names = {"p3": "b1", "p2": "b2"}
    group: Any = FakeGroup(last=100)
    controller = ScheduleController(group, proxies, LEDGER, schedule, names=names, order_gap_s=0.1)
    p2.frames, p3.frames = {e3.frame_id: e3}, {e0.frame_id: e0}
    controller.step()
    assert log == [f"release #{e3.frame_id}"]
    time.sleep(0.12)
    controller.step()
    assert log == [f"release #{e3.frame_id}", f"release #{e0.frame_id}"]


def test_a_predecessor_that_never_comes_ends_the_wait_and_leaves_the_run_undecided() -> None:
    log: list[str] = []
    p2 = FakeProxy(log)
    e3, _e0 = _answers()
    schedule = FrameSchedule(order=(B1_E0, B2_E3))
    proxies: Any = {"p2": p2}
    controller = ScheduleController(
        FakeGroup(last=100),  # type: ignore[arg-type]
        proxies,
        LEDGER,
        schedule,
        names={"p3": "b1", "p2": "b2"},
        order_wait_s=0.1,
    )
    p2.frames = {e3.frame_id: e3}
    controller.step()
    assert log == []
    time.sleep(0.15)
    controller.step()
    assert log == [f"release #{e3.frame_id}"]  # bounded: the run goes on ...
    reason = unapplied_reason([controller])  # ... and is not judged: undecided
    assert reason == (
        "the recorded delivery order could not be enforced: b2's answer to add e3 waited "
        "0.1 s for b1's answer to add e0, which never went on"
    )


def test_a_forgery_waits_a_while_for_the_frame_recorded_after_it() -> None:
    # A forgery's moment is the harness's: sent right before the answer recorded after it,
    # both reach the client as close together as recorded (#3005: e0's answer must come while
    # the change the EIO started is being written).
    log: list[str] = []
    p2, p3 = FakeProxy(log), FakeProxy(log)
    e3, e0 = _answers()
    schedule = FrameSchedule({B2_E3: forge("EIO")}, order=(B2_E3, B1_E0))
    proxies: Any = {"p2": p2, "p3": p3}
    names = {"p3": "b1", "p2": "b2"}
    group: Any = FakeGroup(last=100)
    controller = ScheduleController(group, proxies, LEDGER, schedule, names=names, order_gap_s=0)
    p2.frames = {e3.frame_id: e3}
    controller.step()
    assert log == []  # b1's answer to e0 has not come
    p3.frames = {e0.frame_id: e0}
    controller.step()
    controller.step()
    assert log == [f"forge #{e3.frame_id} EIO", f"release #{e0.frame_id}"]
    # Not for long: without it, the forgery goes on after forge_wait_s, the order unbroken.
    log.clear()
    p2.frames = {e3.frame_id: e3}
    controller = ScheduleController(
        group, proxies, LEDGER, schedule, names=names, order_gap_s=0, forge_wait_s=0.05
    )
    controller.step()
    time.sleep(0.06)
    controller.step()
    assert log == [f"forge #{e3.frame_id} EIO"] and unapplied_reason([controller]) is None


def test_a_bookie_s_own_answers_do_not_wait_for_each_other() -> None:
    # A bookie's answers keep their order on their connection: b2's answer to e3 does not
    # wait for b2's to e1 (recorded before it), b1's answer to e0 waits for b2's to e3.
    log: list[str] = []
    p2, p3 = FakeProxy(log), FakeProxy(log)
    e3, e0 = _answers()
    schedule = FrameSchedule(order=(B2_E1, B2_E3, B1_E0))
    proxies: Any = {"p2": p2, "p3": p3}
    names = {"p3": "b1", "p2": "b2"}
    group: Any = FakeGroup(last=100)
    controller = ScheduleController(group, proxies, LEDGER, schedule, names=names, order_gap_s=0)
    p3.frames, p2.frames = {e0.frame_id: e0}, {e3.frame_id: e3}
    controller.step()
    controller.step()
    assert log == [f"release #{e3.frame_id}", f"release #{e0.frame_id}"]


W0_SENT = write_key(0, answered=False)
W0_ANSWERED = write_key(0, answered=True)


def test_the_ledger_s_metadata_writes_are_in_the_order_sent_and_answered() -> None:
    # #3005's window as a record says it: b1's answer to e0 reached the client after the
    # change's metadata write was sent and before it was answered.
    record = dataclasses.replace(
        _3005_like_run(), metadata_writes=(MetadataWrite(1.1, 1.5, "setData", 0, 4),)
    )
    expected = (B2_E1, B2_E3, W0_SENT, B1_E0, W0_ANSWERED)
    assert delivery_order(record) == expected
    plan = WriterRunPlan(WriterShape(2, 1, 1), 4, FrameSchedule({B2_E3: forge("EIO")}))
    assert WriterRunPlan.from_json(with_delivery_order(plan, record).to_json()).schedule.order == (
        expected
    )
    # A write never answered in the run has its sent key only; a write stays where the
    # proxy saw it, even just before a forged failure (the client sent it then).
    unanswered = dataclasses.replace(
        _3005_like_run(), metadata_writes=(MetadataWrite(1.0605, None, "setData", None, 4),)
    )
    assert delivery_order(unanswered) == (B2_E1, W0_SENT, B2_E3, B1_E0)


class _Writes:
    """The ledger's metadata writes at a ZooKeeper proxy: requests arrive (held, when the
    controller holds them), the controller lets them go, their answers come."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.arrived: list[PacketRecord] = []
        self.holding = False
        self.held_ids: set[int] = set()
        self.answered_ids: set[int] = set()

    def arrive(self, record_id: int, *, held: bool = True) -> None:
        info = PacketInfo(ZkDirection.REQUEST, Op.SET_DATA, xid=record_id, path="/L")
        self.arrived.append(PacketRecord(record_id, 4, time.monotonic(), info, 10, "hold"))
        if held and self.holding:
            self.held_ids.add(record_id)

    def hold(self) -> None:
        self.holding = True

    def requests(self, after: int = 0) -> list[PacketRecord]:
        return [p for p in self.arrived if p.record_id > after]

    def held(self) -> list[PacketRecord]:
        return [p for p in self.arrived if p.record_id in self.held_ids]

    def release(self, record_id: int) -> bool:
        if record_id not in self.held_ids:
            return False
        self.held_ids.discard(record_id)
        self.log.append(f"write #{record_id}")
        return True

    def answered(self, record_id: int) -> bool:
        return record_id in self.answered_ids

    def writes(self) -> tuple[MetadataWrite, ...]:
        return ()

    def close(self) -> None:
        self.holding = False


def _with_writes(
    order: tuple[FrameKey, ...],
) -> tuple[ScheduleController, FakeProxy, _Writes, list[str]]:
    log: list[str] = []
    p3, writes = FakeProxy(log), _Writes(log)
    proxies: Any = {"p3": p3}
    controller = ScheduleController(
        FakeGroup(last=100),  # type: ignore[arg-type]
        proxies,
        LEDGER,
        FrameSchedule(order=order),
        names={"p3": "b1"},
        order_gap_s=0,
        order_wait_s=0.1,
        metadata=writes,  # type: ignore[arg-type]
    )
    return controller, p3, writes, log


def test_an_answer_recorded_while_a_write_was_in_flight_comes_in_that_window() -> None:
    controller, p3, writes, log = _with_writes((W0_SENT, B1_E0, W0_ANSWERED, B1_E2))
    with controller:  # holds the ledger's writes (the order names them)
        assert writes.holding
        _e3, e0 = _answers()
        p3.frames = {e0.frame_id: e0}
        controller.step()
        assert log == []  # the client has not sent its write yet: e0's answer waits for it
        writes.arrive(7)
        controller.step()  # the write is sent: e0's answer goes on; the write waits for it
        assert log == [f"release #{e0.frame_id}"]
        controller.step()
        assert log == [f"release #{e0.frame_id}", "write #7"]
        e2 = LogBuilder().frame(1.2, "p3", Direction.RESPONSE, ADD, 2, status=StatusCode.EOK)
        p3.frames = {e2.frame_id: e2}
        controller.step()
        assert log[2:] == []  # e2's answer waits for ZooKeeper's answer to the write
        writes.answered_ids.add(7)
        controller.step()
        assert log[2:] == [f"release #{e2.frame_id}"]
        assert unapplied_reason([controller]) is None
    assert not writes.holding  # released on exit


def test_a_write_let_go_before_its_turn_breaks_the_order() -> None:
    # Another hold's release (a plan's held metadata writes) let the write go before the
    # answer recorded before its answer: the order was not kept, the run is undecided.
    controller, _p3, writes, _log = _with_writes((W0_SENT, B1_E0, W0_ANSWERED))
    writes.hold()
    writes.arrive(7, held=False)
    controller.step()
    reason = unapplied_reason([controller])
    assert reason is not None and "the write went on before b1's answer to add e0" in reason


def test_without_writes_in_the_order_the_writes_are_recorded_not_held() -> None:
    controller, _p3, writes, _log = _with_writes((B1_E0,))
    with controller:
        writes.arrive(7)
        controller.step()
    assert not writes.held_ids and controller.metadata_writes == ()


CRASH_B2 = PlannedFault(FaultKind.CRASH, bookie="b2")
RESTART_B2 = PlannedFault(FaultKind.RESTART, bookie="b2")


def _with_faults(record: _Record, *faults: tuple[float, PlannedFault]) -> _Record:
    events = tuple(
        FaultEvent(at, fault.describe(), fault.kind.value, fault.bookie) for at, fault in faults
    )
    return dataclasses.replace(record, faults=events)


def test_a_fault_carried_out_at_its_own_moment_is_placed_after_what_was_delivered_before_it() -> (
    None
):
    # The lost fence's crash of b2, timed by a sleep: recorded after b2's answers (delivered at
    # 1.050 and 1.061), before b1's (1.2); the restart after everything.
    record = _with_faults(_3005_like_run(), (1.1, CRASH_B2), (1.5, RESTART_B2))
    assert faults_after(record, [CRASH_B2, RESTART_B2]) == (2, 3)
    # A fault the record does not have ends the list (nothing after it is placed).
    assert faults_after(record, [RESTART_B2, CRASH_B2, CRASH_B2]) == (3, 2)
    assert faults_after(_3005_like_run(), [CRASH_B2]) == ()
    plan = WriterRunPlan(
        WriterShape(2, 1, 1), 4, FrameSchedule(), recover_after=1, before_recovery=(CRASH_B2,)
    )
    ordered = with_delivery_order(plan, record)
    assert ordered.schedule.faults_after == (2,)
    assert WriterRunPlan.from_json(ordered.to_json()).schedule.faults_after == (2,)


def _carrying(schedule: FrameSchedule, **timing: float) -> tuple[ScheduleController, list[str]]:
    class _Executor:
        def execute(self, event: PlannedFault) -> str:
            done.append(event.describe())
            return event.describe()

        def close(self) -> None:  # nothing to undo
            pass

    done: list[str] = []
    controller = ScheduleController(
        FakeGroup(last=100),  # type: ignore[arg-type]
        {},
        LEDGER,
        schedule,
        names={"p3": "b1", "p2": "b2"},
        executor=_Executor(),  # type: ignore[arg-type]
        **timing,  # type: ignore[arg-type]
    )
    return controller, done


def test_a_fault_waits_for_the_answers_recorded_before_it() -> None:
    schedule = FrameSchedule(order=(B2_E1, B1_E0), faults_after=(1,))
    controller, done = _carrying(schedule, order_wait_s=5.0)
    with controller:
        waiting = threading.Thread(target=controller.carry_out, args=([CRASH_B2],))
        waiting.start()
        time.sleep(0.1)
        assert done == []  # b2's answer to e1 has not gone on: the crash waits
        controller._gone[B2_E1] = (time.monotonic(), None)  # it goes on
        waiting.join(timeout=5.0)
        assert done == [CRASH_B2.describe()]
        controller.carry_out([RESTART_B2])  # the second fault has no place recorded: at once
    assert controller.order_broken == []


def test_a_fault_whose_predecessor_never_goes_on_breaks_the_order() -> None:
    schedule = FrameSchedule(order=(B2_E1, B1_E0), faults_after=(2,))
    controller, done = _carrying(schedule, order_wait_s=0.1)
    with controller:
        controller.carry_out([CRASH_B2])
    assert done == [CRASH_B2.describe()]  # bounded: the fault goes on ...
    assert unapplied_reason([controller]) == (  # ... and the run is undecided
        f"the recorded delivery order could not be enforced: fault {CRASH_B2.describe()} "
        "waited 0.1 s for b2's answer to add e1, which never went on"
    )


def test_an_older_run_directory_s_faults_are_placed_from_its_record(tmp_path: Path) -> None:
    # Written before plans said where their faults go: the replay reads it from record.json.
    record = _with_faults(_3005_like_run(), (1.1, CRASH_B2))

    class _Role:
        def record_from_json(self, data: object) -> _Record:
            assert data == {"recorded": True}
            return record

    plan = WriterRunPlan(
        WriterShape(2, 1, 1),
        4,
        FrameSchedule(order=delivery_order(record)),
        recover_after=1,
        before_recovery=(CRASH_B2,),
    )
    assert _faults_placed(_Role(), plan, tmp_path) is plan  # no record.json: as it is
    (tmp_path / RECORD_FILE).write_text(json.dumps({"recorded": True}))
    placed = _faults_placed(_Role(), plan, tmp_path)
    assert placed.schedule.faults_after == (2,)
    assert placed.schedule.order == plan.schedule.order
    assert _faults_placed(_Role(), placed, tmp_path) is placed  # already placed: as it is
