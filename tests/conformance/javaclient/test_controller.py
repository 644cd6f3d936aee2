"""The proxies' side of a plan: the controller applies a schedule frame by frame (reference
bookies, our stand-in sender), and never reorders a client's adds to one bookie."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import pytest

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import Direction, FrameRecord, Operation, ProxyGroup
from adapters.refbookie.server import BookieServer
from conformance.javaclient.controller import (
    FaultsFailed,
    ScheduleController,
    key_of,
    unapplied_reason,
)
from conformance.javaclient.plans import (
    DEFECT_1_SCHEDULE,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlannedFault,
    forge,
    hold,
    hold_for,
)
from conformance.javaclient.recovery_role import writer_add
from conformance.javaclient.story import RecoveryRecord, judge
from tests.conformance.javaclient.fake_proxies import FakeGroup, FakeProxy
from tests.conformance.javaclient.recorded import (
    RECOVERY_ADD,
    LogBuilder,
    recipe_answers,
    recipe_writer,
)
from tests.conformance.javaclient.standin import LEDGER, recover_like_java


@pytest.mark.cluster
def test_the_controller_applies_the_defect_1_schedule_frame_by_frame(
    bookies: list[BookieServer],
) -> None:
    direct = [("127.0.0.1", bookie.port) for bookie in bookies]
    assert writer_add(direct[1], LEDGER, 5.0) is StatusCode.EOK
    with ProxyGroup(call_timeout=5.0) as group:
        # Proxies named as a session names them, the schedule naming the model's bookies.
        proxies = {f"p{i + 1}": group.add(f"p{i + 1}", *direct[i]) for i in range(3)}
        names = {f"p{i + 1}": f"b{i + 1}" for i in range(3)}
        with ScheduleController(
            group, proxies, LEDGER, DEFECT_1_SCHEDULE, names=names
        ) as controller:
            # The hold is on order (until b3's read and answer passed), not on time; time only
            # caps it: b2's read must be answered within the stand-in's 1.5 s request timeout,
            # and b3's exchange (sent at 0.3 s) must end before the controller's 2 s max hold.
            asyncio.run(recover_like_java([(p.host, p.port) for p in proxies.values()], False))
        frames, deliveries = group.frames(), group.deliveries()
        assert all(proxy.held() == [] for proxy in proxies.values())
        assert all(proxy.rules() == [] for proxy in proxies.values())
    assert controller.errors == []
    by_frame = {description.split(" (")[0]: what for description, what in controller.decisions}
    assert [
        what
        for description, what in by_frame.items()
        if " p3 " in description and "11/-1" in description
    ] == ["drop"]
    assert sorted(what for _d, what in controller.decisions) == sorted(
        ["forward"] * 2 + ["drop"] + ["forward", "hold until 2 other frames passed", "forward"]
    )
    # b2's read went on only after b3's speculative read and b3's answer had passed.
    b2_read = next(f for f in frames if f.proxy == "p2" and f.info.entry_id == 0)
    b3_answer = next(
        f
        for f in frames
        if f.proxy == "p3" and f.info.entry_id == 0 and f.info.direction is Direction.RESPONSE
    )
    assert deliveries[b2_read.frame_id].at >= b3_answer.at
    late = writer_add(direct[2], LEDGER, 5.0)
    record = RecoveryRecord(
        ledger_id=LEDGER,
        bookie_of_proxy={"p1": 0, "p2": 1, "p3": 2},
        frames=frames,
        deliveries=deliveries,
        writer=recipe_writer(),
        writer_answers=recipe_answers(recipe_writer(), late),
        closed_last_entry=-1,
    )
    assert judge(record).outcome.violations == ["NoDivergenceBetweenClientAndMetaData"]


def test_a_frame_is_named_by_what_it_is_and_the_bookie_the_role_names() -> None:
    read = LogBuilder().frame(1.0, "p2", Direction.REQUEST, Operation.READ_ENTRY, 0)
    assert key_of(read, {"p2": "b3"}) == FrameKey("recovery read", "b3", 0)
    assert key_of(read) == FrameKey("recovery read", "p2", 0)


def test_no_controller_or_a_failed_one_leaves_the_schedule_unapplied() -> None:
    assert unapplied_reason([]) is not None and "never arranged" in str(unapplied_reason([]))
    failed: Any = type("Failed", (), {"errors": ["RuntimeError('proxy gone')"]})()
    assert "proxy gone" in str(unapplied_reason([failed]))
    fine: Any = type("Fine", (), {"errors": [], "order_broken": []})()
    assert unapplied_reason([fine]) is None


def test_a_hold_never_reorders_a_clients_adds_to_one_bookie() -> None:
    # Seen on real 4.17.3: the write-back of e1 to b3 held, the one of e2 forwarded, so b3
    # took e2's before e1's, which the spec's FIFO channel forbids. e2's now waits for e1's.
    log: list[str] = []
    b3 = FakeProxy(log, "b3")
    group = FakeGroup()
    add = Operation.ADD_ENTRY
    first = LogBuilder().frame(1.0, "b3", Direction.REQUEST, add, 1, flags=RECOVERY_ADD)
    second = dataclasses.replace(
        first, frame_id=3, info=dataclasses.replace(first.info, entry_id=2)
    )
    read = LogBuilder().frame(1.0, "b3", Direction.REQUEST, Operation.READ_ENTRY, 3)
    read = dataclasses.replace(read, frame_id=4)
    schedule = FrameSchedule({FrameKey("recovery add", "b3", 1): hold(2)})
    proxies: Any = {"b3": b3}
    controller = ScheduleController(group, proxies, LEDGER, schedule, max_hold_s=60.0)
    b3.frames = {1: first, 3: second, 4: read}
    group.last = 2  # one frame has passed since e1's add: not yet due
    controller.step()
    assert log == ["release #4"]  # the read may overtake; e2's add waits behind e1's
    group.last = 6
    controller.step()
    assert log == ["release #4", "release #1", "release #3"]


class _Executor:
    def __init__(self) -> None:
        self.done: list[str] = []
        self.closed = False

    def execute(self, event: PlannedFault) -> str:
        self.done.append(event.describe())
        return event.kind.value

    def close(self) -> None:
        self.closed = True


def _add_and_answer() -> tuple[FrameRecord, FrameRecord]:
    log = LogBuilder()
    request = log.frame(1.0, "p1", Direction.REQUEST, Operation.ADD_ENTRY, 0)
    answer = log.frame(1.1, "p1", Direction.RESPONSE, Operation.ADD_ENTRY, 0, status=StatusCode.EOK)
    return request, answer


def test_answers_are_decided_and_faults_triggered_at_their_frame() -> None:
    log: list[str] = []
    p1 = FakeProxy(log, "p1")
    group = FakeGroup()
    request, answer = _add_and_answer()
    answer_key = FrameKey("add", "b1", 0, answer=True)
    schedule = FrameSchedule(
        {answer_key: forge("EIO")},
        (
            PlannedFault(FaultKind.RESET, answer_key, "b2"),
            PlannedFault(FaultKind.HOLD_METADATA, None, None, 300),
        ),
    )
    executor = _Executor()
    proxies: Any = {"p1": p1}
    with ScheduleController(
        group, proxies, LEDGER, schedule, names={"p1": "b1"}, executor=executor, poll_s=60
    ) as controller:
        assert len(p1.matches) == 2  # requests and, as the plan decides one, answers held
        p1.frames = {request.frame_id: request}
        controller.step()
        p1.frames = {answer.frame_id: answer}
        controller.step()
    assert log == [f"release #{request.frame_id}", f"forge #{answer.frame_id} EIO"]
    assert executor.done == [
        "hold metadata for 300 ms as the client starts",
        "reset b2 when b1's answer to add e0 passes",
    ]
    assert executor.closed and controller.errors == []
    assert [what for _at, what in controller.faults] == ["hold metadata", "reset"]


def test_a_hold_for_a_time_outlasts_the_longest_hold_by_frames() -> None:
    log: list[str] = []
    p1 = FakeProxy(log, "p1")
    group = FakeGroup()
    request, _answer = _add_and_answer()
    schedule = FrameSchedule({FrameKey("add", "p1", 0): hold_for(400)})
    proxies: Any = {"p1": p1}
    controller = ScheduleController(group, proxies, LEDGER, schedule, max_hold_s=0.0)
    p1.frames = {request.frame_id: request}
    group.last = 99  # many frames passed, the longest hold by frames is spent: still held
    controller.step()
    assert log == []
    time.sleep(0.45)
    controller.step()
    assert log == [f"release #{request.frame_id}"]


def test_a_fault_whose_frame_never_comes_did_nothing_and_is_listed() -> None:
    group = FakeGroup()
    schedule = FrameSchedule(
        events=(PlannedFault(FaultKind.CRASH, FrameKey("add", "b1", 3), "b1"),)
    )
    proxies: Any = {"p1": FakeProxy([], "p1")}
    with pytest.raises(ValueError, match="no executor"):
        ScheduleController(group, proxies, LEDGER, schedule)
    with ScheduleController(
        group, proxies, LEDGER, schedule, executor=_Executor(), poll_s=60
    ) as controller:
        pass
    assert controller.untriggered == ["crash b1 when add e3 to b1 passes"]
    assert unapplied_reason([controller]) is None


class _SlowExecutor(_Executor):
    """Records when each fault starts and ends: two at once would overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[float, float]] = []

    def execute(self, event: PlannedFault) -> str:
        started = time.monotonic()
        time.sleep(0.05)
        self.spans.append((started, time.monotonic()))
        return super().execute(event)


def test_faults_carried_out_now_wait_for_those_a_frame_set_off() -> None:
    p1 = FakeProxy([], "p1")
    group = FakeGroup()
    request, _answer = _add_and_answer()
    frame_fault = PlannedFault(FaultKind.RESTART, FrameKey("add", "b1", 0), "b1")
    executor = _SlowExecutor()
    proxies: Any = {"p1": p1}
    with ScheduleController(
        group,
        proxies,
        LEDGER,
        FrameSchedule(events=(frame_fault,)),
        names={"p1": "b1"},
        executor=executor,
        poll_s=60,
    ) as controller:
        p1.frames = {request.frame_id: request}
        controller.step()  # sets off the restart at e0's frame, on the fault thread
        controller.carry_out((PlannedFault(FaultKind.RESTART, None, "b1"),))
        assert len(executor.done) == 2  # carried out before carry_out returned
    (first, second) = executor.spans
    assert first[1] <= second[0]  # one after the other, never at once
    assert [what for _at, what in controller.faults] == ["restart", "restart"]


def test_faults_that_fail_now_or_that_no_executor_carries_out_are_refused() -> None:
    class Failing(_Executor):
        def execute(self, event: PlannedFault) -> str:
            raise RuntimeError("the bookie would not start")

    group = FakeGroup()
    proxies: Any = {"p1": FakeProxy([], "p1")}
    event = PlannedFault(FaultKind.RESTART, None, "b1")
    bare = ScheduleController(group, proxies, LEDGER, FrameSchedule(), poll_s=60)
    with bare, pytest.raises(FaultsFailed, match="carries out no faults"):
        bare.carry_out((event,))
    failing = ScheduleController(
        group, proxies, LEDGER, FrameSchedule(), executor=Failing(), poll_s=60
    )
    with failing, pytest.raises(FaultsFailed, match="would not start"):
        failing.carry_out((event,))
