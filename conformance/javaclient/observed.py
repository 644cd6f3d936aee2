"""What the Java client did, read from the proxies' decoded frame log.

Every frame the proxies saw is the Java client's (our Python writer talks to the bookies
directly), so the log is the client's side of the story: each request it sent, each bookie
answer, and when (if ever) that answer reached it. :func:`java_events` turns the log into
events in time order, the order in which the model's steps must be taken:

- ``SENT``: the client sent a request (it arrived at the proxy; a dropped one never goes on);
- ``ANSWERED``: the bookie's answer arrived at the proxy (the bookie processed the request);
- ``RECEIVED``: the proxy delivered that answer to the client (a held answer arrives late).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import DeliveryRecord, Direction, FrameFlag, FrameRecord, Operation
from conformance.errors import ConformanceError
from model.bookkeeper.action_table import Actor, AddAnswer, Move, the_action
from model.bookkeeper.action_table import Phase as ProtocolPhase


class FrameKind(enum.Enum):
    """What a frame of the ledger is, in the spec's terms."""

    #: READ_ENTRY of entry -1 with FENCE_LEDGER: the spec's fencing read-LAC request.
    FENCE_READ = "fence read"
    #: READ_ENTRY of an entry: the spec's recovery read (with or without the fence flag).
    RECOVERY_READ = "recovery read"
    #: ADD_ENTRY with RECOVERY_ADD: the spec's write-back of a recovered entry.
    RECOVERY_ADD = "recovery add"
    #: ADD_ENTRY without RECOVERY_ADD: a writer's add (the Java client as the spec's writer).
    ADD = "add"
    #: Anything else on the ledger: no recovering client of the spec sends it.
    OTHER = "other"


#: The decision the proxies log for an answer they forged (:class:`adapters.netproxy.Forge`).
FORGED = "forged"


class Phase(enum.IntEnum):
    # The values order events that share a timestamp.
    SENT = 0
    ANSWERED = 1
    RECEIVED = 2


@dataclass(frozen=True)
class JavaEvent:
    """One event of the Java client's recovery, tied to the frame that shows it."""

    at: float
    phase: Phase
    kind: FrameKind
    bookie: int
    frame: FrameRecord
    #: The request's entry id (BookKeeper's numbering: -1 for the fence read).
    entry_id: int | None
    #: Whether the frame got through the proxy (to the bookie, or to the client).
    delivered: bool
    #: For a request: whether its bookie's answer reached the proxy (a bookie that crashed, or
    #: was paused past the run, never answers what it was handed).
    answered: bool = True

    @property
    def fence(self) -> bool:
        return FrameFlag.FENCE_LEDGER in self.frame.info.flags

    @property
    def status(self) -> StatusCode | None:
        return self.frame.info.status

    def describe(self) -> str:
        bookie = f"b{self.bookie + 1}"
        late = "" if self.delivered else " (never delivered)"
        return f"{self.phase.name.lower()} {bookie}: {self.frame.info.describe()}{late}"


class ForeignFrame(ConformanceError, ValueError):
    """A frame from a proxy the run does not know (its bookie cannot be named)."""


def frame_kind(record: FrameRecord) -> FrameKind:
    info = record.info
    if info.operation is Operation.READ_ENTRY and info.entry_id is not None:
        if info.entry_id < 0:
            return FrameKind.FENCE_READ if FrameFlag.FENCE_LEDGER in info.flags else FrameKind.OTHER
        return FrameKind.RECOVERY_READ
    if info.operation is Operation.ADD_ENTRY:
        return FrameKind.RECOVERY_ADD if FrameFlag.RECOVERY_ADD in info.flags else FrameKind.ADD
    return FrameKind.OTHER


def _concerns(record: FrameRecord, ledger_id: int) -> bool:
    # AUTH (connection set-up) carries no ledger and is no protocol step; other ledgers are
    # not this run's business.
    return record.info.ledger_id == ledger_id


#: Answers delivered on different connections within this long of each other may be processed
#: by the client in either order: each connection has its event-loop thread, and they meet
#: only on the ledger's ordered executor (``PerChannelBookieClient`` hands each response to
#: ``executeOrdered`` from the thread that read it).
CONCURRENT_AT_CLIENT_S = 0.002


def java_events(
    frames: Sequence[FrameRecord],
    deliveries: Mapping[int, DeliveryRecord],
    bookie_of_proxy: Mapping[str, int],
    ledger_id: int,
) -> list[JavaEvent]:
    """The client's events on ``ledger_id`` in time order (see the module docstring)."""
    events: list[JavaEvent] = []
    # A forged answer is the harness's, not the bookie's: the bookie's own answer (or the
    # request the forgery answered) is logged as never delivered, which the model reads as a
    # lost message.
    frames = [record for record in frames if record.decision != FORGED]
    requests = _requests_by_key(frames)
    answered = {
        pairing_key(record) for record in frames if record.info.direction is Direction.RESPONSE
    }
    for record in frames:
        if not _concerns(record, ledger_id):
            continue
        if record.proxy not in bookie_of_proxy:
            raise ForeignFrame(
                f"frame #{record.frame_id} came through proxy {record.proxy!r}; the run's "
                f"proxies are {sorted(bookie_of_proxy)}"
            )
        bookie = bookie_of_proxy[record.proxy]
        delivery = deliveries.get(record.frame_id)
        delivered = delivery is not None and delivery.delivered
        kind = frame_kind(record)
        entry = record.info.entry_id
        if record.info.direction is Direction.REQUEST:
            events.append(
                JavaEvent(
                    record.at,
                    Phase.SENT,
                    kind,
                    bookie,
                    record,
                    entry,
                    delivered,
                    answered=pairing_key(record) in answered,
                )
            )
            continue
        processed_at = processing_time(record, requests, deliveries)
        events.append(
            JavaEvent(processed_at, Phase.ANSWERED, kind, bookie, record, entry, delivered)
        )
        if delivered:
            assert delivery is not None
            events.append(JavaEvent(delivery.at, Phase.RECEIVED, kind, bookie, record, entry, True))
    events.sort(key=lambda e: (e.at, e.phase, e.frame.frame_id))
    return events


_RequestKey = tuple[str, int, object]


def pairing_key(record: FrameRecord) -> _RequestKey:
    """What pairs an answer with its request: the proxy, the connection and the txnId (v3),
    else what the frame names (v2 has no txnId)."""
    info = record.info
    # v3 frames pair by txnId; v2 ones (no txnId) by what they name.
    tag = (
        info.txn_id if info.txn_id is not None else (info.operation, info.ledger_id, info.entry_id)
    )
    return (record.proxy, record.connection_id, tag)


def _requests_by_key(frames: Sequence[FrameRecord]) -> dict[_RequestKey, list[FrameRecord]]:
    requests: dict[_RequestKey, list[FrameRecord]] = {}
    for record in frames:
        if record.info.direction is Direction.REQUEST:
            requests.setdefault(pairing_key(record), []).append(record)
    return requests


def processing_time(
    response: FrameRecord,
    requests: Mapping[_RequestKey, list[FrameRecord]],
    deliveries: Mapping[int, DeliveryRecord],
) -> float:
    """When the bookie processed the request ``response`` answers: when the proxy handed that
    request to the bookie. A bookie's effects (an entry stored, the ledger fenced) take place
    then, and its answers may come out in another order (an add waits for its journal write, a
    read does not), so two requests to one bookie are ordered by their arrival there, not by
    their answers. The answer's own arrival when the request is not found."""
    candidates = [
        r
        for r in requests.get(pairing_key(response), [])
        if r.frame_id < response.frame_id and r.at <= response.at
    ]
    if not candidates:
        return response.at
    request = candidates[-1]
    delivery = deliveries.get(request.frame_id)
    if delivery is None or not delivery.delivered or delivery.at > response.at:
        return response.at
    return max(delivery.at, request.at)


def recovery_reads_fenced(events: Sequence[JavaEvent]) -> bool | None:
    """Whether the client's recovery reads carried FENCE_LEDGER (None: it sent none).

    A client that fences some recovery reads and not others is not either configuration of
    the model: the answer is then the majority's, and the frame check reports the others.
    """
    reads = [e for e in events if e.phase is Phase.SENT and e.kind is FrameKind.RECOVERY_READ]
    if not reads:
        return None
    fenced = sum(1 for e in reads if e.fence)
    return fenced * 2 >= len(reads)


#: The part of the protocol each kind of frame belongs to (the action table's phases).
PROTOCOL_PHASE: Mapping[FrameKind, ProtocolPhase] = {
    FrameKind.FENCE_READ: ProtocolPhase.FENCING,
    FrameKind.RECOVERY_READ: ProtocolPhase.READ,
    FrameKind.RECOVERY_ADD: ProtocolPhase.ADD,
    FrameKind.ADD: ProtocolPhase.ADD,
}


def _answer(kind: FrameKind, status: StatusCode | None) -> AddAnswer | None:
    """An add's answer as the spec tells them apart (fenced, or confirmed); None for reads.
    Any other status is no answer of the spec's bookie: the judges report it before asking."""
    if PROTOCOL_PHASE[kind] is not ProtocolPhase.ADD:
        return None
    return AddAnswer.FENCED if status is StatusCode.EFENCED else AddAnswer.CONFIRMED


def send_action(kind: FrameKind) -> str:
    """The spec's action in which a client first sends a request of ``kind`` (the writer's
    adds; the recovering client's fence reads, recovery reads and write-backs)."""
    return the_action(
        actor=Actor.CLIENT,
        phase=PROTOCOL_PHASE[kind],
        move=Move.SEND,
        recovery=kind is not FrameKind.ADD,
    )


def answer_action(kind: FrameKind, status: StatusCode | None) -> str:
    """The spec's action in which a bookie processes a request of ``kind`` and answers
    ``status``."""
    return the_action(
        actor=Actor.BOOKIE,
        phase=PROTOCOL_PHASE[kind],
        move=Move.ANSWER,
        answer=_answer(kind, status),
    )


def receive_action(kind: FrameKind, status: StatusCode | None) -> str:
    """The spec's action in which the client takes a bookie's answer ``status`` to a request
    of ``kind``."""
    return the_action(
        actor=Actor.CLIENT,
        phase=PROTOCOL_PHASE[kind],
        move=Move.RECEIVE,
        answer=_answer(kind, status),
        recovery=kind is not FrameKind.ADD,
    )


__all__ = [
    "CONCURRENT_AT_CLIENT_S",
    "FORGED",
    "PROTOCOL_PHASE",
    "ForeignFrame",
    "FrameKind",
    "JavaEvent",
    "Phase",
    "answer_action",
    "frame_kind",
    "java_events",
    "pairing_key",
    "receive_action",
    "recovery_reads_fenced",
    "send_action",
]
