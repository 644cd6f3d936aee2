"""Hypothesis over proxy schedules: the strategy, the per-frame controller on real frames
(reference bookies, our stand-in sender), and the search with the real Java client (4.11.1
and the default version, installed from Maven Central)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import BookieProxy, Direction, ProxyGroup
from adapters.refbookie.server import BookieServer
from conformance.javaclient.scenario import (
    Arrangement,
    JavaScenarioOptions,
    RecoverySession,
    expected_verdict,
    writer_add,
)
from conformance.javaclient.search import (
    DEFECT_1_SCHEDULE,
    DROP,
    FORWARD,
    SEARCHED_FRAMES,
    FrameKey,
    FrameSchedule,
    ScheduleController,
    SearchResult,
    frame_schedules,
    hold,
    key_of,
    search,
)
from conformance.javaclient.story import RecoveryRecord, judge
from tests.conformance.javaclient.recorded import FENCE, LogBuilder, defect1_record
from tests.conformance.javaclient.standin import LEDGER, recover_like_java


@settings(max_examples=30, deadline=None)
@given(frame_schedules())
def test_every_searched_frame_gets_a_choice(schedule: FrameSchedule) -> None:
    assert set(schedule.decisions) == set(SEARCHED_FRAMES)
    for choice in schedule.decisions.values():
        assert choice in (FORWARD, DROP) or (choice.action == "hold" and 1 <= choice.after <= 3)


def test_schedules_describe_themselves() -> None:
    assert DEFECT_1_SCHEDULE.describe() == [
        "fence read to b3: drop",
        "recovery read e0 to b2: hold until 2 other frames passed",
    ]
    assert FrameSchedule().describe() == ["forward everything"]
    assert FrameSchedule().choice(FrameKey("fence read", "b1", -1)) == FORWARD
    with pytest.raises(ValueError, match=">= 1 other frames"):
        hold(0)


def test_frames_are_keyed_by_meaning() -> None:
    log = LogBuilder()
    fence = log.request(1.0, "b3", -1, flags=FENCE)
    read = log.request(1.0, "b2", 0)
    answer = log.response(1.0, "b2", 0, status=StatusCode.EOK)
    ledgerless = log.frame(1.0, "b1", Direction.REQUEST, read.info.operation, None)
    assert key_of(fence) == FrameKey("fence read", "b3", -1)
    assert key_of(read) == key_of(answer) == FrameKey("recovery read", "b2", 0)
    assert key_of(ledgerless) is None


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
        LEDGER, {"b1": 0, "b2": 1, "b3": 2}, frames, deliveries, StatusCode.EOK, late, -1
    )
    assert judge(record).outcome.violations == ["NoDivergenceBetweenClientAndMetaData"]


@pytest.mark.cluster
@pytest.mark.slow
def test_the_search_with_the_real_java_client(tmp_path: Path, java_client_home: Path) -> None:
    """4.11.1: finds Defect 1 at once; the default version: every schedule is clean."""
    options = JavaScenarioOptions(
        bookkeeper_home=java_client_home, log_dir=tmp_path, read_entry_timeout_s=2
    )
    with RecoverySession(options) as session:
        result = search(session, max_examples=4, seed=8)
        expected = expected_verdict(session.version)
    if expected == "violation":
        assert result.finding is not None and result.examples == 1  # the recipe comes first
        assert result.finding.judgement.outcome.violations == [
            "NoDivergenceBetweenClientAndMetaData"
        ]
    else:
        assert result.finding is None, result.finding.schedule.describe()
        assert result.verdicts == {"clean": result.examples}


class RecordedRecoveries:
    """Hands out a recorded run for every schedule (the schedule is arranged on no proxies):
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

    def recover(self, arrange: Arrangement) -> RecoveryRecord:
        self.runs += 1
        if self.arrange:
            with arrange(LEDGER) as controller:
                assert isinstance(controller, ScheduleController)
                if self.break_controller:
                    controller.errors.append("RuntimeError('proxy gone')")
        return defect1_record(reads_fence=self.reads_fence)


def test_the_search_stops_at_the_first_finding_and_runs_it_once() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=False)
        result = search(recoveries, max_examples=5)
    assert recoveries.runs == 1 and result.examples == 1
    assert result.finding is not None and result.finding.schedule == DEFECT_1_SCHEDULE
    assert result.finding.judgement.outcome.verdict == "violation"
    assert result.verdicts == {"violation": 1}


def test_a_clean_client_passes_every_schedule() -> None:
    with ProxyGroup(call_timeout=5.0) as group:
        recoveries = RecordedRecoveries(group, reads_fence=True)
        result = search(recoveries, max_examples=5, seed=3)
    assert result.finding is None
    assert result.examples == recoveries.runs == 6  # the recipe, then five generated
    assert result.verdicts == {"clean": 6}


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
