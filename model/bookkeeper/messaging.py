"""The spec's MessagePassing module: messages as a function from message to delivery count.

A message is sent at most once. Sending chooses, for EACH message, a count of 1 (it will be
delivered) or -1 (lost). Processing requires a count >= 1 and decrements it. A -1 count is what a
sender sees as a timeout; clearing a write timeout sets those -1 counts to 0 (with
``late_adds_after_timeout``, a lost add request's to -2, ``LATE``: still on its way).

``messages`` is a frozenset of ``(message, count)`` pairs: a frozenset caches its hash, and
adding freshly sent messages is a set union.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from functools import cache

from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    DELIVERED,
    LATE,
    LOST,
    PROCESSED,
    READ_REQUEST,
    READ_RESPONSE,
    Message,
)

Messages = frozenset[tuple[Message, int]]
Delivery = tuple[tuple[Message, bool], ...]


@cache
def _count_patterns(n: int) -> tuple[tuple[int, ...], ...]:
    return tuple(itertools.product((DELIVERED, LOST), repeat=n))


def send_messages_to_ensemble(
    messages: Messages,
    counts: dict[Message, int],
    msgs: Sequence[Message],
    *,
    again: bool = False,
) -> list[tuple[Messages, Delivery]]:
    """``SendMessagesToEnsemble``: every delivered/lost combination, or nothing if any was sent.

    ``again`` (``ensembles_may_repeat``): a message sent before may be sent again (a bookie
    back in the ensemble gets an entry it was sent before). If the earlier copy is no longer
    in flight, the new one replaces its record (delivered or lost); if it is still in flight,
    the new copy joins it (count + 1: the function is a bag) and is delivered.
    """
    in_flight = set()
    for msg in msgs:
        if msg in counts:
            if not again:
                return []
            if counts[msg] >= DELIVERED:
                in_flight.add(msg)
    if again:
        messages = messages - {(m, counts[m]) for m in msgs if m in counts}
    out = []
    for pattern in _count_patterns(len(msgs)):
        if any(c != DELIVERED for m, c in zip(msgs, pattern, strict=True) if m in in_flight):
            continue
        added = frozenset(
            (m, counts[m] + 1 if m in in_flight else c) for m, c in zip(msgs, pattern, strict=True)
        )
        delivery = tuple((m, c == DELIVERED) for m, c in zip(msgs, pattern, strict=True))
        out.append((messages | added, delivery))
    return out


def message_processed(messages: Messages, msg: Message, count: int) -> Messages:
    """``MessageProcessed``: decrement the count of a receivable message."""
    return (messages - {(msg, count)}) | {(msg, count - 1)}


def processed_one_and_send_another(
    messages: Messages,
    counts: dict[Message, int],
    received: Message,
    reply: Message,
    *,
    again: bool = False,
) -> list[tuple[Messages, bool]]:
    """``ProcessedOneAndSendAnother``: the reply is delivered or lost; disabled if already sent
    (``again``: sent again, as :func:`send_messages_to_ensemble` sends a message again)."""
    if reply in counts and not again:
        return []
    base = message_processed(messages, received, counts[received])
    if again and reply in counts:
        earlier = counts[reply]
        base = base - {(reply, earlier)}
        if earlier >= DELIVERED:
            # The earlier answer is still in flight (a client ignores an answer of a bookie
            # outside its ensemble, and the spec never consumes it): this one joins it.
            return [(base | {(reply, earlier + 1)}, True)]
    return [(base | {(reply, DELIVERED)}, True), (base | {(reply, LOST)}, False)]


def write_timeout_for_bookie(
    counts: dict[Message, int], cid: int, bookie: int, recovery: bool
) -> bool:
    """``WriteTimeoutForBookie``: a lost add request or add response of this client and bookie."""
    for msg, count in counts.items():
        if (
            count == LOST
            and msg.bookie == bookie
            and msg.cid == cid
            and (msg.kind == ADD_ENTRY_REQUEST or msg.kind == ADD_ENTRY_RESPONSE)
            and msg.recovery == recovery  # type: ignore[union-attr]
        ):
            return True
    return False


def read_timeout_count(
    counts: dict[Message, int], cid: int, ensemble: int, entry_id: int | None = None
) -> int:
    """``ReadTimeoutCount``: bookies of the ensemble with a lost read request or response.

    With ``entry_id`` (``read_timeouts_per_entry``), only the reads of that entry count; the
    spec's count takes every lost read message of the client, earlier entries' too."""
    timed_out = 0
    for msg, count in counts.items():
        if (
            count == LOST
            and msg.cid == cid
            and (msg.kind == READ_REQUEST or msg.kind == READ_RESPONSE)
            and ensemble >> msg.bookie & 1
            and (entry_id is None or _read_entry(msg) == entry_id)
        ):
            timed_out |= 1 << msg.bookie
    return timed_out.bit_count()


def _read_entry(msg: Message) -> int:
    if msg.kind == READ_REQUEST:
        return msg.entry_id  # type: ignore[union-attr]
    return msg.entry.id  # type: ignore[union-attr]


def clear_write_timeout(
    messages: Messages, cid: int, bookies: int, recovery: bool, *, late: bool = False
) -> Messages:
    """``ClearWriteTimeout``: the acted-upon -1 counts become 0 so they never fire again.

    With ``late`` (``late_adds_after_timeout``) the lost add *requests* become ``LATE``
    instead: timed out for the client, still on their way to the bookie. Lost answers are
    retired as in the spec (a late answer would only be dropped: nothing is left to model)."""
    return frozenset(
        (
            msg,
            (LATE if late and msg.kind == ADD_ENTRY_REQUEST else PROCESSED)
            if count == LOST
            and msg.cid == cid
            and bookies >> msg.bookie & 1
            and (msg.kind == ADD_ENTRY_REQUEST or msg.kind == ADD_ENTRY_RESPONSE)
            and msg.recovery == recovery  # type: ignore[union-attr]
            else count,
        )
        for msg, count in messages
    )


def late_add_processed(messages: Messages, msg: Message) -> Messages:
    """A ``LATE`` add reaches its bookie: it is processed, and its answer never joins the
    messages (the client dropped it: the request had timed out)."""
    return (messages - {(msg, LATE)}) | {(msg, PROCESSED)}


def ignore_further_read_responses(
    messages: Messages, msg: Message, ensemble: int, *, requests_too: bool = True
) -> Messages:
    """``IgnoreFurtherReadResponses``: the decided read's undelivered messages are dropped
    (with ``requests_too=False``, its responses only: the requests stay for the bookies)."""
    kinds = (READ_REQUEST, READ_RESPONSE) if requests_too else (READ_RESPONSE,)
    return frozenset(
        (
            m,
            PROCESSED
            if m == msg
            or (
                count == DELIVERED
                and m.cid == msg.cid
                and ensemble >> m.bookie & 1
                and m.kind in kinds
            )
            else count,
        )
        for m, count in messages
    )


def lose_requests_to(
    messages: Messages, bookie: int, request_kinds: Iterable[int], *, late_too: bool = False
) -> Messages:
    """Requests delivered to a bookie that crashes before processing them are lost (-1).

    With ``late_too`` (``late_adds_after_timeout``) its ``LATE`` adds are gone as well, as
    processed (0): their client already acted on their timeout, so no new one fires."""
    kinds = frozenset(request_kinds)
    return frozenset(
        (
            m,
            LOST
            if count >= DELIVERED and m.bookie == bookie and m.kind in kinds
            else PROCESSED
            if late_too and count == LATE and m.bookie == bookie
            else count,
        )
        for m, count in messages
    )
