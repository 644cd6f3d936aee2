"""Hypothesis over proxy schedules: the strategy, the per-frame controller on real frames
(reference bookies, our stand-in sender), and the search with the real Java client (4.11.1
and the default version, installed from Maven Central)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import BookieProxy, Direction, FrameRecord, Operation, ProxyGroup
from adapters.refbookie.server import BookieServer
from conformance.javaclient.plans import (
    DEFECT_1_PLAN,
    DEFECT_1_SCHEDULE,
    DEFECT_1_WRITER,
    DROP,
    FrameKey,
    FrameSchedule,
    PlanError,
    RecoveryPlan,
    WriterPlan,
    hold,
    searched_frames,
)
from conformance.javaclient.scenario import (
    Arrangement,
    writer_add,
)
from conformance.javaclient.search import (
    ScheduleController,
    SearchResult,
    frame_schedules,
    generated_plans,
    search,
    smaller_plans,
)
from conformance.javaclient.story import RecoveryRecord, judge
from tests.conformance.javaclient.recorded import (
    RECOVERY_ADD,
    LogBuilder,
    defect1_record,
    recipe_answers,
    recipe_writer,
)
from tests.conformance.javaclient.standin import LEDGER, recover_like_java


@settings(max_examples=30, deadline=None)
@given(frame_schedules(DEFECT_1_WRITER))
def test_every_decision_names_a_searched_frame(schedule: FrameSchedule) -> None:
    assert set(schedule.decisions) <= set(searched_frames(DEFECT_1_WRITER))
    for choice in schedule.decisions.values():
        assert choice == DROP or (choice.action == "hold" and 1 <= choice.after <= 4)


@settings(max_examples=50, deadline=None)
@given(generated_plans())
def test_generated_plans_are_valid_and_round_trip(plan: RecoveryPlan) -> None:
    assert 1 <= plan.writer.entries <= 2 and plan.writer.acked in (0, 1)
    assert set(plan.schedule.decisions) <= set(searched_frames(plan.writer))
    assert RecoveryPlan.from_json(plan.to_json()) == plan


def test_searched_frames_follow_the_writer() -> None:
    two = WriterPlan(entries=2, acked=1)
    keys = searched_frames(two)
    assert {k.entry_id for k in keys if k.kind == "recovery read"} == {1, 2, 3}
    assert {k.entry_id for k in keys if k.kind == "recovery add"} == {1, 2}
    assert len(keys) == 3 * (1 + 3 + 2)


def test_plans_refuse_what_no_run_can_do() -> None:
    with pytest.raises(PlanError, match="b4"):
        WriterPlan(adds=(DEFECT_1_WRITER.adds[0].__class__(0, "b4", False),))
    with pytest.raises(PlanError, match="not one of its unconfirmed entries"):
        WriterPlan(entries=1, adds=(DEFECT_1_WRITER.adds[0].__class__(1, "b1", False),))
    with pytest.raises(PlanError, match="out of order"):
        WriterPlan.from_json({"entries": 2, "adds": [[0, "b1", "after"], [1, "b1", "before"]]})
    with pytest.raises(PlanError, match="no such frame"):
        FrameSchedule.from_json([{"kind": "fence read", "bookie": "b9", "entry": -1}])
    with pytest.raises(PlanError, match="needs 'writer'"):
        RecoveryPlan.from_json({"schedule": []})


def test_smaller_plans_take_one_thing_away() -> None:
    smaller = list(smaller_plans(DEFECT_1_PLAN))
    read_e0_b2 = FrameKey("recovery read", "b2", 0)
    fence_b3 = FrameKey("fence read", "b3", -1)
    schedules = [p.schedule.decisions for p in smaller if p.writer == DEFECT_1_WRITER]
    assert {fence_b3: DROP} in schedules and {read_e0_b2: hold(2)} in schedules
    assert {fence_b3: DROP, read_e0_b2: hold(1)} in schedules
    assert sorted(len(p.writer.adds) for p in smaller if p.writer != DEFECT_1_WRITER) == [1, 1]
    assert all(p.origin == "shrunk from issue 8's recipe" for p in smaller)


@pytest.mark.cluster
def test_the_controller_applies_the_defect_1_schedule_frame_by_frame(
    bookies: list[BookieServer],
) -> None:
    direct = [("127.0.0.1", bookie.port) for bookie in bookies]
    assert writer_add(direct[1], LEDGER, 5.0) is StatusCode.EOK
    with ProxyGroup(call_timeout=5.0) as group:
        proxies = {f"b{i + 1}": group.add(f"b{i + 1}", *direct[i]) for i in range(3)}
        with ScheduleController(group, proxies, LEDGER, DEFECT_1_SCHEDULE) as controller:
            asyncio.run(recover_like_java([(p.host, p.port) for p in proxies.values()], False))
        frames, deliveries = group.frames(), group.deliveries()
        assert all(proxy.held() == [] for proxy in proxies.values())
        assert all(proxy.rules() == [] for proxy in proxies.values())
    assert controller.errors == []
    by_frame = {description.split(" (")[0]: what for description, what in controller.decisions}
    assert [
        what
        for description, what in by_frame.items()
        if " b3 " in description and "11/-1" in description
    ] == ["drop"]
    assert sorted(what for _d, what in controller.decisions) == sorted(
        ["forward"] * 2 + ["drop"] + ["forward", "hold until 2 other frames passed", "forward"]
    )
    # b2's read went on only after b3's speculative read and b3's answer had passed.
    b2_read = next(f for f in frames if f.proxy == "b2" and f.info.entry_id == 0)
    b3_answer = next(
        f
        for f in frames
        if f.proxy == "b3" and f.info.entry_id == 0 and f.info.direction is Direction.RESPONSE
    )
    assert deliveries[b2_read.frame_id].at >= b3_answer.at
    late = writer_add(direct[2], LEDGER, 5.0)
    record = RecoveryRecord(
        ledger_id=LEDGER,
        bookie_of_proxy={"b1": 0, "b2": 1, "b3": 2},
        frames=frames,
        deliveries=deliveries,
        writer=recipe_writer(),
        writer_answers=recipe_answers(recipe_writer(), late),
        closed_last_entry=-1,
    )
    assert judge(record).outcome.violations == ["NoDivergenceBetweenClientAndMetaData"]


# The search against the real Java client (4.11.1 and the default version) runs through its
# command: tests/conformance/test_java_client_run_command.py.


class RecordedRecoveries:
    """Hands out a recorded run for every plan (the schedule is arranged on no proxies):
    checks the search's Hypothesis plumbing, not the Java client. ``arrange=False``: the
    schedule is never arranged; ``break_controller``: the controller crashes."""

    def __init__(
        self,
        group: ProxyGroup,
        reads_fence: bool,
        *,
        arrange: bool = True,
        break_controller: bool = False,
    ) -> None:
        self.group = group
        self.proxies: dict[str, BookieProxy] = {}
        self.reads_fence = reads_fence
        self.arrange = arrange
        self.break_controller = break_controller
        self.runs = 0
        self.writers: list[WriterPlan] = []

    def recover(self, arrange: Arrangement, writer: WriterPlan) -> RecoveryRecord:
        self.runs += 1
        self.writers.append(writer)
        if self.arrange:
            with arrange(LEDGER) as controller:
                assert isinstance(controller, ScheduleController)
                if self.break_controller:
                    controller.errors.append("RuntimeError('proxy gone')")
        return defect1_record(reads_fence=self.reads_fence)


def test_the_search_stops_at_the_first_finding_and_shrinks_it() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=False)
        result = search(recoveries, max_examples=5, seed=1)
    assert result.examples == 1 and result.stopped == "finding"
    assert result.finding is not None and result.finding.example == 1
    assert result.finding.judgement.outcome.verdict == "violation"
    assert result.verdicts == {"violation": 1}
    # The recorded run fails whatever the plan: shrinking takes every decision away.
    assert result.finding.shrink_runs == recoveries.runs - 1 > 0
    assert result.finding.plan.schedule.without_forwards().decisions == {}
    assert result.finding.plan.writer.adds == ()


def test_without_shrinking_the_finding_is_the_example_found() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=False)
        result = search(recoveries, max_examples=5, seed=1, shrink=False)
    assert recoveries.runs == 1 and result.finding is not None
    assert result.finding.shrunk is result.finding.found


def test_a_clean_client_passes_every_plan() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=True)
        result = search(recoveries, max_examples=5, seed=3)
    assert result.finding is None
    assert result.examples == recoveries.runs == 5  # nothing built in comes first
    assert result.verdicts == {"clean": 5}
    assert result.verdict == "clean" and result.stopped == "examples"


def test_guided_plans_are_drawn() -> None:
    guided = [dataclasses.replace(DEFECT_1_PLAN, origin="model")]
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=True)
        result = search(recoveries, max_examples=20, seed=3, guided=guided)
    assert 0 < result.guided_examples < result.examples == 20
    assert DEFECT_1_WRITER in recoveries.writers


def test_a_spent_budget_with_nothing_run_is_undecided() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=True)
        result = search(recoveries, max_examples=5, seconds=0.0)
    assert result.examples == 0 and result.stopped == "budget"
    assert result.verdict == "undecided"


@pytest.mark.parametrize(
    ("arrange", "break_controller", "reason"),
    [(False, False, "never arranged"), (True, True, "controller failed")],
)
def test_an_unapplied_schedule_is_undecided_never_clean(
    arrange: bool, break_controller: bool, reason: str
) -> None:
    # A clean client: judged as if the schedule had been applied, every example passes.
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(
            group, reads_fence=True, arrange=arrange, break_controller=break_controller
        )
        result = search(recoveries, max_examples=5, seed=3)
    assert result.finding is None
    assert result.verdict == "undecided"
    assert recoveries.runs == 1 and result.verdicts == {"undecided": 1}
    assert len(result.errors) == 1 and reason in result.errors[0]


def test_search_verdicts() -> None:
    assert SearchResult().verdict == "undecided"  # nothing ran
    assert SearchResult(examples=2, verdicts={"clean": 2}).verdict == "clean"
    assert SearchResult(examples=2, errors=["x"]).verdict == "undecided"


class _FakeProxy:
    """Holds the frames given to it; records what the controller released and dropped."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.frames: dict[int, FrameRecord] = {}

    def add_rule(self, *args: object, **kwargs: object) -> int:
        return 1

    def remove_rule(self, rule_id: int) -> None:
        pass

    def held(self) -> list[FrameRecord]:
        return list(self.frames.values())

    def release(self, frame_id: int) -> None:
        self.frames.pop(frame_id)
        self.log.append(f"release #{frame_id}")

    def discard(self, frame_id: int) -> None:
        self.frames.pop(frame_id)
        self.log.append(f"drop #{frame_id}")

    def release_all(self) -> None:
        for frame_id in list(self.frames):
            self.release(frame_id)


class _FakeGroup:
    def __init__(self) -> None:
        self.last = 0

    def mark(self) -> int:
        return self.last


def test_a_hold_never_reorders_a_clients_adds_to_one_bookie() -> None:
    # Seen on real 4.17.3: the write-back of e1 to b3 held, the one of e2 forwarded, so b3
    # took e2's before e1's, which the spec's FIFO channel forbids. e2's now waits for e1's.
    log: list[str] = []
    b3 = _FakeProxy("b3", log)
    group = _FakeGroup()
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
