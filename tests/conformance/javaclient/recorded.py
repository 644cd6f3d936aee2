"""Frame logs shaped like the ones the proxies record in Defect 1's recipe (issue 8 facts).

Built from the proxy's own record types (``FrameRecord``, ``FrameInfo``, ``DeliveryRecord``),
as :class:`~adapters.netproxy.ProxyGroup` hands them out, with the timing of a real run:
fence reads first (b3's dropped), then sequential recovery reads of e0 with a speculative
read to b3 after 300 ms while b2's answer is held for 350 ms.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    DeliveryRecord,
    Direction,
    FrameFlag,
    FrameInfo,
    FrameRecord,
    Operation,
    Protocol,
)
from conformance.javaclient.plans import WriterAdd, WriterPlan
from conformance.javaclient.story import RecoveryRecord

LEDGER = 7
PROXIES = {"b1": 0, "b2": 1, "b3": 2}
FENCE = frozenset({FrameFlag.FENCE_LEDGER})


@dataclass
class LogBuilder:
    """Appends frames with consecutive ids; ``delivered_at`` None means never delivered."""

    frames: list[FrameRecord] = field(default_factory=list)
    deliveries: dict[int, DeliveryRecord] = field(default_factory=dict)
    _txn: int = 0

    def frame(
        self,
        at: float,
        proxy: str,
        direction: Direction,
        operation: Operation,
        entry: int | None,
        *,
        flags: frozenset[FrameFlag] = frozenset(),
        status: StatusCode | None = None,
        decision: str = "forward",
        delivered_at: float | None = -1.0,
        ledger: int | None = LEDGER,
    ) -> FrameRecord:
        frame_id = len(self.frames) + 1
        self._txn += 1
        info = FrameInfo(direction, operation, Protocol.V3, ledger, entry, flags, self._txn, status)
        record = FrameRecord(frame_id, proxy, 1 + PROXIES.get(proxy, 9), at, info, 40, decision)
        self.frames.append(record)
        if delivered_at is None:
            self.deliveries[frame_id] = DeliveryRecord(frame_id, at, False, decision)
        else:
            when = at + 0.0001 if delivered_at < 0 else delivered_at
            self.deliveries[frame_id] = DeliveryRecord(frame_id, when, True)
        return record

    def request(self, at: float, proxy: str, entry: int, **kw: object) -> FrameRecord:
        return self.frame(at, proxy, Direction.REQUEST, Operation.READ_ENTRY, entry, **kw)  # type: ignore[arg-type]

    def response(self, at: float, proxy: str, entry: int, **kw: object) -> FrameRecord:
        return self.frame(at, proxy, Direction.RESPONSE, Operation.READ_ENTRY, entry, **kw)  # type: ignore[arg-type]


def defect1_log(*, reads_fence: bool) -> LogBuilder:
    """The recipe's log: 4.11-like (``reads_fence=False``) or 4.14+-like."""
    log = LogBuilder()
    read_flags = FENCE if reads_fence else frozenset()
    for proxy in ("b1", "b2"):
        log.request(1.000, proxy, -1, flags=FENCE)
    log.request(1.000, "b3", -1, flags=FENCE, decision="drop", delivered_at=None)
    log.response(1.010, "b1", -1, flags=FENCE, status=StatusCode.ENOENTRY)
    log.response(1.011, "b2", -1, flags=FENCE, status=StatusCode.EOK)
    log.request(1.020, "b1", 0, flags=read_flags)
    log.response(1.030, "b1", 0, flags=read_flags, status=StatusCode.ENOENTRY)
    log.request(1.031, "b2", 0, flags=read_flags)
    log.response(
        1.040, "b2", 0, flags=read_flags, status=StatusCode.EOK, decision="hold", delivered_at=1.390
    )
    log.request(1.331, "b3", 0, flags=read_flags)
    # An unfenced read of a ledger b3 never heard of: ENOLEDGER; a fenced one creates it.
    b3_status = StatusCode.ENOENTRY if reads_fence else StatusCode.ENOLEDGER
    log.response(1.340, "b3", 0, flags=read_flags, status=b3_status)
    return log


def recipe_writer(entries: int = 1, acked: int = 0) -> WriterPlan:
    """The recipe's w1: each unconfirmed entry lost to b1, at b2 before the recovery, at b3
    after it."""
    ids = range(acked, acked + entries)
    adds = [WriterAdd(e, "b2", False) for e in ids] + [WriterAdd(e, "b3", True) for e in ids]
    return WriterPlan(entries=entries, adds=tuple(adds), acked=acked)


def recipe_answers(
    writer: WriterPlan, late: StatusCode = StatusCode.EOK
) -> dict[tuple[int, str], StatusCode]:
    """EOK for w1's adds before the recovery, ``late`` for those after it."""
    return {(a.entry, a.bookie): late if a.after_recovery else StatusCode.EOK for a in writer.adds}


def with_writer(
    record: RecoveryRecord,
    *,
    entries: int = 1,
    acked: int = 0,
    late: StatusCode | None = None,
) -> RecoveryRecord:
    """``record`` with the recipe's w1 of ``entries`` unconfirmed entries after ``acked``;
    its adds after the recovery answered ``late`` (default: as in ``record``)."""
    writer = recipe_writer(entries, acked)
    if late is None:
        late = next((s for (_, b), s in record.writer_answers.items() if b == "b3"), StatusCode.EOK)
    return dataclasses.replace(record, writer=writer, writer_answers=recipe_answers(writer, late))


def defect1_record(*, reads_fence: bool, log: LogBuilder | None = None) -> RecoveryRecord:
    """The whole run: the log, w1's adds (b3's EOK without fencing, else EFENCED), the close."""
    log = log or defect1_log(reads_fence=reads_fence)
    return RecoveryRecord(
        ledger_id=LEDGER,
        bookie_of_proxy=PROXIES,
        frames=log.frames,
        deliveries=log.deliveries,
        writer=recipe_writer(),
        writer_answers=recipe_answers(
            recipe_writer(), StatusCode.EFENCED if reads_fence else StatusCode.EOK
        ),
        closed_last_entry=-1,
    )


RECOVERY_ADD = frozenset({FrameFlag.RECOVERY_ADD})


def recovery_add(log: LogBuilder, at: float, proxy: str, entry: int, **kw: object) -> FrameRecord:
    """The client's write-back (ADD_ENTRY with RECOVERY_ADD) of ``entry`` to ``proxy``."""
    return log.frame(
        at, proxy, Direction.REQUEST, Operation.ADD_ENTRY, entry, flags=RECOVERY_ADD, **kw
    )  # type: ignore[arg-type]


def recovery_add_confirmed(
    log: LogBuilder, at: float, proxy: str, entry: int, **kw: object
) -> FrameRecord:
    """A bookie's EOK to a write-back (delivered 0.1 ms later unless ``delivered_at`` says)."""
    return log.frame(
        at,
        proxy,
        Direction.RESPONSE,
        Operation.ADD_ENTRY,
        entry,
        flags=RECOVERY_ADD,
        status=StatusCode.EOK,
        **kw,  # type: ignore[arg-type]
    )


def concurrent_recovery_log(
    *, reads_fence: bool = True, b3_confirms_at: float = 1.110
) -> LogBuilder:
    """An unfaulted recovery (every frame forwarded) of a ledger where w1 added e0 and e1 to b2
    only, with the Java client's concurrency: it reads lazily (b1, then b2), writes e0 back and
    at once reads e1; the read of e1 is sent AND answered, and e1 written back, before any
    write-back confirmation of e0 reaches it (b2's comes first); then it reads e2 (absent),
    and e1's confirmations come. The ack quorum of both write-backs is in at 1.100 (the close);
    the third confirmations come after it."""
    log = LogBuilder()
    flags = FENCE if reads_fence else frozenset()
    for proxy in ("b1", "b2", "b3"):
        log.request(1.000, proxy, -1, flags=FENCE)
    log.response(1.005, "b3", -1, flags=FENCE, status=StatusCode.ENOENTRY)
    log.response(1.008, "b1", -1, flags=FENCE, status=StatusCode.ENOENTRY)
    log.response(1.009, "b2", -1, flags=FENCE, status=StatusCode.EOK)
    # e0: b1 has nothing, b2 has it.
    log.request(1.020, "b1", 0, flags=flags)
    log.response(1.022, "b1", 0, flags=flags, status=StatusCode.ENOENTRY)
    log.request(1.025, "b2", 0, flags=flags)
    log.response(1.027, "b2", 0, flags=flags, status=StatusCode.EOK)
    for proxy in ("b1", "b3", "b2"):
        recovery_add(log, 1.030, proxy, 0)
    # e1, while e0's write-backs are unconfirmed: read, answered, decided, written back.
    log.request(1.031, "b1", 1, flags=flags)
    log.response(1.034, "b1", 1, flags=flags, status=StatusCode.ENOENTRY)
    log.request(1.035, "b2", 1, flags=flags)
    log.response(1.037, "b2", 1, flags=flags, status=StatusCode.EOK)
    for proxy in ("b2", "b1", "b3"):
        recovery_add(log, 1.040, proxy, 1)
    # e0's write-backs answered (b2 first) only now; then e2 is read: absent.
    recovery_add_confirmed(log, 1.050, "b2", 0)
    log.request(1.051, "b1", 2, flags=flags)
    recovery_add_confirmed(log, 1.052, "b1", 0)
    log.response(1.055, "b1", 2, flags=flags, status=StatusCode.ENOENTRY)
    log.request(1.056, "b2", 2, flags=flags)
    recovery_add_confirmed(log, 1.060, "b2", 1)
    log.response(1.062, "b2", 2, flags=flags, status=StatusCode.ENOENTRY)
    recovery_add_confirmed(log, 1.070, "b1", 1)
    # After the close (1.100): b3's confirmations (unless ``b3_confirms_at`` says when).
    recovery_add_confirmed(log, b3_confirms_at, "b3", 0)
    recovery_add_confirmed(log, b3_confirms_at + 0.001, "b3", 1)
    return log


def concurrent_recovery_record(
    *, reads_fence: bool = True, log: LogBuilder | None = None
) -> RecoveryRecord:
    """:func:`concurrent_recovery_log` as a run: w1's adds of e0 and e1 (b2 before, b3 after
    the recovery), the ledger closed at e1 when ``openLedger`` returned at 1.100."""
    log = log or concurrent_recovery_log(reads_fence=reads_fence)
    record = dataclasses.replace(
        defect1_record(reads_fence=reads_fence, log=log), closed_last_entry=1, recovered_at=1.100
    )
    return with_writer(record, entries=2)


def recovery_above_a_lac_log() -> LogBuilder:
    """An unfaulted recovery where w1's e0 was confirmed by every bookie and its e1 (carrying
    LAC 0) reached b2 only: the fencing reads return LAC 0 (b2) and the client reads from e1
    (b1, then b2), writes e1 back, reads e2 (absent) meanwhile; the write-back's ack quorum is
    in at 1.060, the close at 1.100."""
    log = LogBuilder()
    for proxy in ("b1", "b2", "b3"):
        log.request(1.000, proxy, -1, flags=FENCE)
    for proxy in ("b1", "b2", "b3"):
        log.response(1.005, proxy, -1, flags=FENCE, status=StatusCode.EOK)
    log.request(1.020, "b1", 1, flags=FENCE)
    log.response(1.022, "b1", 1, flags=FENCE, status=StatusCode.ENOENTRY)
    log.request(1.025, "b2", 1, flags=FENCE)
    log.response(1.027, "b2", 1, flags=FENCE, status=StatusCode.EOK)
    for proxy in ("b1", "b2", "b3"):
        recovery_add(log, 1.030, proxy, 1)
    log.request(1.031, "b1", 2, flags=FENCE)
    log.response(1.034, "b1", 2, flags=FENCE, status=StatusCode.ENOENTRY)
    log.request(1.035, "b2", 2, flags=FENCE)
    log.response(1.037, "b2", 2, flags=FENCE, status=StatusCode.ENOENTRY)
    recovery_add_confirmed(log, 1.050, "b2", 1)
    recovery_add_confirmed(log, 1.060, "b1", 1)
    recovery_add_confirmed(log, 1.110, "b3", 1)
    return log
