"""The decoded frame log shared by the proxies of one group, with bounded waits on it.

Frame ids are global to the log (one sequence across all the group's proxies), so the log is a
total order of what every proxy saw. Times are ``time.monotonic()`` seconds. The log lives on
the proxies' event loop; :mod:`.group` hands out copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from adapters.netproxy.errors import ProxyTimeout
from adapters.netproxy.frames import FrameInfo
from adapters.netproxy.policy import FrameMatch
from adapters.proxycore.records import DeliveryRecord, RecordLog


@dataclass(frozen=True, slots=True)
class FrameRecord:
    """One frame as it arrived at a proxy, and what its rules decided."""

    frame_id: int
    proxy: str
    connection_id: int
    at: float
    info: FrameInfo
    size: int
    #: ``forward``, ``drop``, ``delay <s>s``, ``hold``, ``reorder``, ``disconnect``,
    #: ``forge <STATUS>``; ``forged`` for an answer the proxy made up (see ``forged_from``).
    decision: str
    #: The rule that decided (None: no rule matched, forwarded; or a call such as ``forge``).
    rule_id: int | None = None
    #: A forged answer's: the frame it replaces (a response) or answers (a request). That frame
    #: is logged undelivered (reason ``forged <STATUS>``); this one is what the client got.
    forged_from: int | None = None

    def describe(self) -> str:
        return (
            f"#{self.frame_id} {self.proxy} c{self.connection_id} "
            f"{self.info.direction.value} {self.info.describe()} ({self.decision})"
        )


@dataclass(slots=True)
class ConnectionRecord:
    """One client connection through a proxy; ``error`` says why it closed, if abnormally."""

    connection_id: int
    proxy: str
    client: str
    opened_at: float
    closed_at: float | None = None
    error: str | None = None

    def snapshot(self) -> ConnectionRecord:
        return ConnectionRecord(
            self.connection_id, self.proxy, self.client, self.opened_at, self.closed_at, self.error
        )


class FrameLog(RecordLog[FrameRecord, ConnectionRecord]):
    """Frames, deliveries and connections, in arrival order (event-loop confined).

    A frame's delivery is what finally happened to it (:class:`DeliveryRecord`, keyed by frame
    id; its ``frame_id`` is its ``record_id``): reasons ``drop``, ``disconnect``,
    ``discarded``, ``connection closed``, ``proxy closed``, ``forged <STATUS>`` (the client got
    a forged answer instead, logged as its own frame).
    """

    def __init__(self) -> None:
        super().__init__()
        #: Keep every frame's payload (bytes after the length prefix) from now on, in
        #: :attr:`payloads`. Off by default: a search's session logs thousands of entries, and
        #: only a capture of whole frames (``bkconform encodings``) needs the bytes.
        self.keeps_payloads = False
        #: Frame id -> its payload, for the frames logged while :attr:`keeps_payloads` was on.
        self.payloads: dict[int, bytes] = {}

    @property
    def frames(self) -> list[FrameRecord]:
        return self.records

    def add_frame(
        self,
        proxy: str,
        connection_id: int,
        info: FrameInfo,
        size: int,
        decision: str,
        rule_id: int | None,
        *,
        forged_from: int | None = None,
        payload: bytes | None = None,
    ) -> FrameRecord:
        def make(frame_id: int) -> FrameRecord:
            record = FrameRecord(
                frame_id, proxy, connection_id, time.monotonic(), info, size, decision, rule_id,
                forged_from,
            )  # fmt: skip
            # Kept before the record is added: a waiter woken by it may ask for its payload.
            if self.keeps_payloads and payload is not None:
                self.payloads[frame_id] = payload
            return record

        return self.add(make)

    @property
    def last_frame_id(self) -> int:
        return self.last_id

    def find(
        self, match: FrameMatch, *, proxy: str | None = None, since: int = 0
    ) -> FrameRecord | None:
        """The first frame after frame id ``since`` that ``match`` matches (at ``proxy``)."""
        return self.find_record(_fits(proxy, match), since)

    async def wait_for(
        self, match: FrameMatch, *, timeout: float, proxy: str | None = None, since: int = 0
    ) -> FrameRecord:
        """:meth:`find`, waiting up to ``timeout`` seconds for such a frame to arrive."""

        def timed_out(later: int) -> ProxyTimeout:
            where = f" at proxy {proxy}" if proxy else ""
            return ProxyTimeout(
                f"no frame matching {match} arrived{where} within {timeout}s "
                f"(frames after #{since}: {later})"
            )

        return await self.wait_for_record(
            _fits(proxy, match), since=since, timeout=timeout, timed_out=timed_out
        )


def _fits(proxy: str | None, match: FrameMatch) -> Callable[[FrameRecord], bool]:
    return lambda record: (proxy is None or record.proxy == proxy) and match.matches(record.info)


__all__ = ["ConnectionRecord", "DeliveryRecord", "FrameLog", "FrameRecord"]
