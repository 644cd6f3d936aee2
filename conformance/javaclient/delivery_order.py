"""The order in which a run's proxies delivered the answers of its ledger to the client, as
plan data (issue 49, Deliver 3): a finding's run directory records it in its plan
(``FrameSchedule.order``), and a replay's :class:`~.controller.ScheduleController` enforces it.

Why answers, and all of them: the Java client decides on what it is told, in the order it is
told it (#3005 turns on whether e0's answer or the forged error reaches the client first); the
requests it sends follow from those answers. Which answers decided a finding cannot be told
cheaply from a record (the judge reads the whole story), so every answer of the run's ledger
delivered to the client is kept, forged ones included, each frame key once (its first
delivery, as the controller decides only the first frame of a key). A forged answer to a
request is delivered by the controller's forging of that request, so it is keyed by the
request.

The client's writes of the ledger's metadata are in the order too (``metadata_writes.py``):
each write as two keys, sent (its request reached the ZooKeeper proxy) and answered (its
answer did), so that an answer recorded while a write was in flight (#3005's window: e0's
answer while the ensemble change is being written) comes in that window in a replay too.

The proxies' delivery order is not quite the client's: each connection has its own event-loop
thread, so deliveries on two connections within ``CONCURRENT_AT_CLIENT_S`` may be processed
in either order. There the order follows the writer's judge (``writer_story._failures_first``):
a forged failure goes before the other connections' answers delivered just before it, which
is how a forged failure decides an ensemble change (#3005 from scratch: b1's answer to e0
delivered 0.1 ms before b2's forged EIO, the change made from e0, so the client took the EIO
first). The controller then lets frames of different connections go on a gap apart
(``controller.ORDER_GAP_S``), so the client takes them in that order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from adapters.netproxy import Direction
from conformance.javaclient.controller import key_of
from conformance.javaclient.metadata_writes import write_key
from conformance.javaclient.observed import (
    CONCURRENT_AT_CLIENT_S,
    FrameKind,
    frame_kind,
    pairing_key,
)
from conformance.javaclient.plans import (
    METADATA_WRITE,
    ZOOKEEPER,
    FrameKey,
    FrameSchedule,
    PlannedFault,
)
from conformance.javaclient.role import Record
from conformance.javaclient.session import model_bookie_names

P = TypeVar("P")


@dataclass(frozen=True)
class _Delivery:
    at: float
    frame_id: int
    key: FrameKey
    connection: tuple[str, int]
    forged: bool


def delivery_order(record: Record) -> tuple[FrameKey, ...]:
    """The keys of the answers of ``record``'s ledger, as the controller names them, in the
    order the proxies delivered them to the client; each key once, and only when the first
    frame of that key (the one the controller decides) was delivered: a key whose first frame
    a plan dropped and whose later frame (a resend's) went on would wait forever."""
    return tuple(item.key for item in _ordered(record))


def faults_after(record: Record, carried: Sequence[PlannedFault]) -> tuple[int, ...]:
    """For each fault of ``carried`` (the faults a run carries out at moments of its own, in
    the order it does), how many keys of :func:`delivery_order` were delivered before the
    recorded run carried it out (its record's fault event: the same step, in turn; the
    event's time is when it was done, so an answer delivered while it was being done counts
    as before it). Stops at the first fault the record does not have."""
    ordered = _ordered(record)
    events = list(record.faults)
    counts: list[int] = []
    for fault in carried:
        step = fault.describe()
        found = next((e for e in events if e.step == step), None)
        if found is None:
            break
        events.remove(found)
        before = [i for i, item in enumerate(ordered) if item.at < found.time]
        counts.append(max(before) + 1 if before else 0)
    return tuple(counts)


def _ordered(record: Record) -> list[_Delivery]:
    names = model_bookie_names(record.bookie_of_proxy)
    forgeries = {frame.forged_from: frame for frame in record.frames if frame.forged_from}
    request_kinds: dict[object, FrameKind] = {}
    seen: set[FrameKey] = set()
    delivered: list[_Delivery] = []
    for frame in record.frames:  # in arrival order: the order the controller decides them
        if frame.info.ledger_id != record.ledger_id or frame.forged_from is not None:
            continue  # a forgery is delivered by its original's decision (below)
        if frame.info.direction is Direction.REQUEST:
            request_kinds[pairing_key(frame)] = frame_kind(frame)
            key = key_of(frame, names)
        else:
            key = key_of(frame, names, request_kinds.get(pairing_key(frame)))
        if key is None or key in seen:
            continue
        seen.add(key)
        # What reached the client for it: the forged answer that took its place, or itself
        # when it is an answer (a request's own delivery goes to the bookie).
        sent = forgeries.get(frame.frame_id)
        if sent is None and frame.info.direction is Direction.RESPONSE:
            sent = frame
        delivery = record.deliveries.get(sent.frame_id) if sent is not None else None
        if sent is None or delivery is None or not delivery.delivered:
            continue
        connection = (sent.proxy, sent.connection_id)
        forged = sent.forged_from is not None
        delivered.append(_Delivery(delivery.at, sent.frame_id, key, connection, forged))
    for number, write in enumerate(record.metadata_writes):
        connection = (ZOOKEEPER, write.connection_id)
        delivered.append(
            _Delivery(write.sent_at, -1, write_key(number, answered=False), connection, False)
        )
        if write.answered_at is not None:
            answered = write_key(number, answered=True)
            delivered.append(_Delivery(write.answered_at, -1, answered, connection, False))
    return _failures_first(sorted(delivered, key=lambda d: (d.at, d.frame_id)))


def _failures_first(deliveries: list[_Delivery]) -> list[_Delivery]:
    """``deliveries`` with each forged failure moved before the answers of other connections
    delivered within :data:`CONCURRENT_AT_CLIENT_S` before it (a connection's own keep their
    order): the client may have taken it first, and a finding with a forged failure among
    answers that close is one where it decided. A metadata write stays where it is: the
    client sent it, or was answered, when the proxy saw it."""
    out: list[_Delivery] = []
    for item in deliveries:
        if not item.forged:
            out.append(item)
            continue
        moved: list[_Delivery] = []
        index = len(out)
        while index > 0 and item.at - out[index - 1].at <= CONCURRENT_AT_CLIENT_S:
            index -= 1
            other = out[index]
            if other.connection != item.connection and other.key.kind != METADATA_WRITE:
                moved.insert(0, out.pop(index))
        out += [item, *moved]
    return out


def with_delivery_order(plan: P, record: Record) -> P:
    """``plan`` (a role's plan: a dataclass with a ``schedule``) with ``record``'s delivery
    order to enforce when it is run again, and where its faults carried out at moments of
    their own (a writer's before and after the recovery) come in it."""
    schedule: FrameSchedule = getattr(plan, "schedule")  # noqa: B009 - every role's plan has one
    carried = (*getattr(plan, "before_recovery", ()), *getattr(plan, "after_recovery", ()))
    replaced: Any = dataclasses.replace(
        plan,  # type: ignore[type-var]
        schedule=schedule.with_order(delivery_order(record), faults_after(record, carried)),
    )
    return replaced  # type: ignore[no-any-return]


__all__ = ["delivery_order", "faults_after", "with_delivery_order"]
