"""The proxies' frame log read as the Java client's events (``conformance.javaclient.observed``)."""

from __future__ import annotations

import pytest

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import Direction, FrameFlag, Operation
from conformance.javaclient.observed import (
    ForeignFrame,
    FrameKind,
    Phase,
    frame_kind,
    java_events,
    recovery_reads_fenced,
)
from tests.conformance.javaclient.recorded import FENCE, LEDGER, PROXIES, LogBuilder, defect1_log


def test_frames_are_classified_in_the_spec_terms() -> None:
    log = LogBuilder()
    fence = log.request(1.0, "b1", -1, flags=FENCE)
    plain_lac = log.request(1.0, "b1", -1)
    read = log.request(1.0, "b1", 0)
    write_back = log.frame(
        1.0,
        "b1",
        Direction.REQUEST,
        Operation.ADD_ENTRY,
        0,
        flags=frozenset({FrameFlag.RECOVERY_ADD}),
    )
    plain_add = log.frame(1.0, "b1", Direction.REQUEST, Operation.ADD_ENTRY, 0)
    assert frame_kind(fence) is FrameKind.FENCE_READ
    assert frame_kind(plain_lac) is FrameKind.OTHER
    assert frame_kind(read) is FrameKind.RECOVERY_READ
    assert frame_kind(write_back) is FrameKind.RECOVERY_ADD
    assert frame_kind(plain_add) is FrameKind.ADD  # a writer's add (the recovery judge refuses it)


def test_events_follow_delivery_time_so_a_held_answer_arrives_late() -> None:
    log = defect1_log(reads_fence=False)
    events = java_events(log.frames, log.deliveries, PROXIES, LEDGER)
    order = [(e.phase, e.bookie, e.kind) for e in events]
    b2_answer = (Phase.ANSWERED, 1, FrameKind.RECOVERY_READ)
    b2_received = (Phase.RECEIVED, 1, FrameKind.RECOVERY_READ)
    b3_received = (Phase.RECEIVED, 2, FrameKind.RECOVERY_READ)
    # b2 answered before b3 was even asked, but its answer reached the client after b3's.
    assert order.index(b2_answer) < order.index((Phase.SENT, 2, FrameKind.RECOVERY_READ))
    assert order.index(b3_received) < order.index(b2_received)
    dropped = [e for e in events if e.phase is Phase.SENT and not e.delivered]
    assert [(e.bookie, e.kind) for e in dropped] == [(2, FrameKind.FENCE_READ)]
    # A dropped request never gets an answer; every delivered answer is received once.
    assert not any(
        e.bookie == 2 and e.kind is FrameKind.FENCE_READ and e.phase is not Phase.SENT
        for e in events
    )
    assert events[-1].describe() == "received b2: READ_ENTRY 7/0 -> EOK"


def test_other_ledgers_and_ledgerless_frames_are_not_the_runs() -> None:
    log = LogBuilder()
    log.frame(1.0, "b1", Direction.REQUEST, Operation.AUTH, None, ledger=None)
    log.request(1.0, "b1", 0, ledger=LEDGER + 1)
    log.request(1.0, "b2", 0)
    events = java_events(log.frames, log.deliveries, PROXIES, LEDGER)
    assert [(e.bookie, e.entry_id) for e in events] == [(1, 0)]


def test_a_frame_from_an_unknown_proxy_is_an_error() -> None:
    log = LogBuilder()
    log.request(1.0, "b9", 0)
    with pytest.raises(ForeignFrame, match="proxy 'b9'"):
        java_events(log.frames, log.deliveries, PROXIES, LEDGER)


def test_whether_recovery_reads_fence_is_read_from_the_requests() -> None:
    for fenced in (False, True):
        log = defect1_log(reads_fence=fenced)
        events = java_events(log.frames, log.deliveries, PROXIES, LEDGER)
        assert recovery_reads_fenced(events) is fenced
    fence_only = LogBuilder()
    fence_only.request(1.0, "b1", -1, flags=FENCE)
    events = java_events(fence_only.frames, fence_only.deliveries, PROXIES, LEDGER)
    assert recovery_reads_fenced(events) is None
    mixed = LogBuilder()
    mixed.request(1.0, "b1", 0, flags=FENCE)
    mixed.request(1.1, "b2", 0)
    mixed.request(1.2, "b3", 0)
    events = java_events(mixed.frames, mixed.deliveries, PROXIES, LEDGER)
    assert recovery_reads_fenced(events) is False
    assert events[0].status is None and events[0].fence
    answer = LogBuilder()
    answer.response(1.0, "b1", 0, status=StatusCode.ENOENTRY)
    (answered, received) = java_events(answer.frames, answer.deliveries, PROXIES, LEDGER)
    assert answered.status is StatusCode.ENOENTRY and received.phase is Phase.RECEIVED
