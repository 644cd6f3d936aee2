"""The spec's bookie, one request at a time: what the in-process model target answers."""

from __future__ import annotations

from model.bookkeeper.bookie import BookieLedger, process, restarted_empty
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    FENCE_REQUEST,
    NO_SUCH_ENTRY,
    OK,
    READ_REQUEST,
    UNKNOWN,
    AddEntryRequest,
    Entry,
    FenceRequest,
    ReadRequest,
)

E1 = Entry(1, 11)


def add(recovery: bool = False, lac: int = 0) -> AddEntryRequest:
    return AddEntryRequest(ADD_ENTRY_REQUEST, 0, 0, E1, lac, recovery)


def test_an_add_is_stored_with_its_lac_until_the_bookie_is_fenced() -> None:
    reply, held = process(BookieLedger(), add(lac=0))
    assert reply.success and held.entries == {E1} and held.lac == 0
    reply, fenced = process(BookieLedger(fenced=True), add())
    assert not reply.success and fenced == BookieLedger(fenced=True)
    reply, recovered = process(BookieLedger(fenced=True), add(recovery=True))
    assert reply.success and recovered.entries == {E1}


def test_a_fencing_read_fences_and_answers_the_lac_or_unknown_in_limbo() -> None:
    fence = FenceRequest(FENCE_REQUEST, 0, 1)
    reply, after = process(BookieLedger(lac=1), fence)
    assert (reply.code, reply.lac, after.fenced) == (OK, 1, True)
    reply, after = process(BookieLedger(limbo=True), fence)
    assert (reply.code, after.fenced) == (UNKNOWN, True)


def test_a_read_answers_the_entry_or_no_such_entry_or_unknown_in_limbo() -> None:
    read = ReadRequest(READ_REQUEST, 0, 1, 1, False)
    reply, after = process(BookieLedger(entries=frozenset({E1})), read)
    assert (reply.code, reply.entry) == (OK, E1) and not after.fenced
    assert process(BookieLedger(), read)[0].code == NO_SUCH_ENTRY
    assert process(BookieLedger(limbo=True), read)[0].code == UNKNOWN
    fencing_read = read._replace(fence=True)
    assert process(BookieLedger(), fencing_read)[1].fenced


def test_a_restart_loses_everything_and_protects_only_when_told() -> None:
    assert restarted_empty(False, True, True) == BookieLedger()
    assert restarted_empty(True, True, False) == BookieLedger(fenced=True)
    assert restarted_empty(True, False, True) == BookieLedger(limbo=True)
