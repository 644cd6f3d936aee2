"""A bookie's side of the spec, for one ledger: how it answers each request and what the answer
changes in what it holds. The spec's bookie actions (``BookieSends...``) take their answers
from here, and so does the conformance suite's in-process ``model`` target, which is a bookie
that follows the spec exactly: one definition of the bookie, never two.
"""

from __future__ import annotations

from typing import NamedTuple

from model.bookkeeper.records import (
    ADD_ENTRY_RESPONSE,
    FENCE_RESPONSE,
    NIL_DATA,
    NO_SUCH_ENTRY,
    OK,
    READ_RESPONSE,
    UNKNOWN,
    AddEntryRequest,
    AddEntryResponse,
    Entry,
    FenceRequest,
    FenceResponse,
    ReadRequest,
    ReadResponse,
)


class BookieLedger(NamedTuple):
    """What one bookie holds of the ledger: the spec's ``b_entries[b]``, ``b_fenced[b]``,
    ``b_lac[b]`` and ``b_limbo[b]``."""

    entries: frozenset[Entry] = frozenset()
    fenced: bool = False
    lac: int = 0
    limbo: bool = False


def accepts_add(fenced: bool, msg: AddEntryRequest) -> bool:
    """``BookieSendsAddConfirmedResponse``'s guard: not fenced, or a recovery add (which a
    fenced bookie accepts); else ``BookieSendsAddFencedResponse``."""
    return not fenced or msg.recovery


def add_answer(msg: AddEntryRequest, success: bool) -> AddEntryResponse:
    return AddEntryResponse(
        ADD_ENTRY_RESPONSE, msg.bookie, msg.cid, msg.entry, msg.recovery, success
    )


def fence_answer(msg: FenceRequest, lac: int, limbo: bool) -> FenceResponse:
    """Fencing read of the LAC: fence (even an unknown ledger) and answer the LAC, or Unknown
    from a bookie that has the ledger in limbo (limbo extension)."""
    return FenceResponse(FENCE_RESPONSE, msg.bookie, msg.cid, lac, UNKNOWN if limbo else OK)


def read_answer(msg: ReadRequest, entries: frozenset[Entry], limbo: bool) -> ReadResponse:
    """The entry if held (CHOOSE: one fixed entry with that id), else NoSuchEntry, or Unknown
    from a bookie that has the ledger in limbo."""
    held = [e for e in entries if e.id == msg.entry_id]
    if held:
        entry, code = min(held), OK
    else:
        entry, code = Entry(msg.entry_id, NIL_DATA), (UNKNOWN if limbo else NO_SUCH_ENTRY)
    return ReadResponse(READ_RESPONSE, msg.bookie, msg.cid, entry, msg.fence, code)


def stored_lac(
    entries: frozenset[Entry],
    lac: int,
    msg: AddEntryRequest,
    *,
    of_highest_entry: bool,
    first_copy_kept: bool = False,
) -> int:
    """The bookie's LAC once it stores ``msg``'s entry. The spec's: the LAC the add carries.
    ``of_highest_entry`` (``lac_of_highest_entry``), BookKeeper's: the LAC its highest entry
    carries, which its fence read returns (the last entry), so an older entry written back
    later leaves it as it was; with ``first_copy_kept`` (SortedLedgerStorage) the same entry
    written again leaves it too."""
    if of_highest_entry and any(
        e.id > msg.entry.id or (first_copy_kept and e.id == msg.entry.id) for e in entries
    ):
        return lac
    return msg.lac


def process(
    ledger: BookieLedger,
    msg: AddEntryRequest | FenceRequest | ReadRequest,
    *,
    lac_of_highest_entry: bool = False,
    first_copy_kept: bool = False,
) -> tuple[AddEntryResponse | FenceResponse | ReadResponse, BookieLedger]:
    """The bookie processes one request: its answer, and what it holds afterwards."""
    if isinstance(msg, AddEntryRequest):
        if accepts_add(ledger.fenced, msg):
            lac = stored_lac(
                ledger.entries,
                ledger.lac,
                msg,
                of_highest_entry=lac_of_highest_entry,
                first_copy_kept=first_copy_kept,
            )
            stored = ledger._replace(entries=ledger.entries | {msg.entry}, lac=lac)
            return add_answer(msg, True), stored
        return add_answer(msg, False), ledger
    if isinstance(msg, FenceRequest):
        return fence_answer(msg, ledger.lac, ledger.limbo), ledger._replace(fenced=True)
    fenced = ledger.fenced or msg.fence
    return read_answer(msg, ledger.entries, ledger.limbo), ledger._replace(fenced=fenced)


def restarted_empty(protected: bool, fence: bool, limbo: bool) -> BookieLedger:
    """``BookieRestartsEmpty``: entries and LAC are gone; a bookie of the last ensemble of a
    ledger that is not closed (``protected``) comes back fenced and/or in limbo when the
    switches say so, as BookKeeper's data integrity check does after an unclean shutdown."""
    return BookieLedger(frozenset(), fence and protected, 0, limbo and protected)
