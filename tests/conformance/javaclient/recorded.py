"""Frame logs shaped like the ones the proxies record in Defect 1's recipe (issue 8 facts).

Built from the proxy's own record types (``FrameRecord``, ``FrameInfo``, ``DeliveryRecord``),
as :class:`~adapters.netproxy.ProxyGroup` hands them out, with the timing of a real run:
fence reads first (b3's dropped), then sequential recovery reads of e0 with a speculative
read to b3 after 300 ms while b2's answer is held for 350 ms.
"""

from __future__ import annotations

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


def defect1_record(*, reads_fence: bool, log: LogBuilder | None = None) -> RecoveryRecord:
    """The whole run: the log, w1's adds (b3's EOK without fencing, else EFENCED), the close."""
    log = log or defect1_log(reads_fence=reads_fence)
    return RecoveryRecord(
        ledger_id=LEDGER,
        bookie_of_proxy=PROXIES,
        frames=log.frames,
        deliveries=log.deliveries,
        writer_first_add=StatusCode.EOK,
        writer_late_add=StatusCode.EFENCED if reads_fence else StatusCode.EOK,
        closed_last_entry=-1,
    )
