"""``lac_of_highest_entry``: a bookie's LAC is the LAC its highest entry carries (what its fence
read answers: the last entry), not the last add's, as the spec has it. Found by the first
race search on real 4.17.3: a recovery's write-back of an older entry left the real bookie's
fence answer at the newer entry's LAC."""

from __future__ import annotations

import dataclasses

from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.bookie import BookieLedger, process, stored_lac
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    DELIVERED,
    FENCE_REQUEST,
    STATUS_IN_RECOVERY,
    AddEntryRequest,
    Entry,
    FenceRequest,
    Fragment,
    State,
)

SPEC = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1, send_limit=2)
BOOKKEEPER = dataclasses.replace(SPEC, lac_of_highest_entry=True)
E1, E2 = Entry(1, 1), Entry(2, 2)
#: c2's write-back of e1 (it carries LAC 0) to b1, which already holds e1 and e2 (LAC 1).
WRITE_BACK = AddEntryRequest(ADD_ENTRY_REQUEST, 0, 1, E1, 0, True)


def test_an_older_entry_leaves_the_lac_of_the_highest() -> None:
    assert stored_lac(frozenset({E1, E2}), 1, WRITE_BACK, of_highest_entry=True) == 1
    assert stored_lac(frozenset({E1, E2}), 1, WRITE_BACK, of_highest_entry=False) == 0
    newer = AddEntryRequest(ADD_ENTRY_REQUEST, 0, 0, Entry(3, 3), 2, False)
    assert stored_lac(frozenset({E1, E2}), 1, newer, of_highest_entry=True) == 2
    again = WRITE_BACK._replace(entry=E2, lac=0)  # the highest entry again: its new copy's LAC
    assert stored_lac(frozenset({E1, E2}), 1, again, of_highest_entry=True) == 0


def test_a_storage_that_keeps_the_first_copy_keeps_its_lac() -> None:
    # The race search on real SortedLedgerStorage bookies: the writer's e2 (LAC 1), then a
    # recovery's write-back of e2 (LAC 0), then a fence read answered LAC 1 (the memtable
    # keeps the first copy). DbLedgerStorage keeps the latest: LAC 0, the spec's.
    again = WRITE_BACK._replace(entry=E2, lac=0)
    held = frozenset({E1, E2})
    assert stored_lac(held, 1, again, of_highest_entry=True, first_copy_kept=True) == 1
    assert stored_lac(held, 1, again, of_highest_entry=True, first_copy_kept=False) == 0
    # A new highest entry still brings its own LAC, and an older one leaves it either way.
    newer = AddEntryRequest(ADD_ENTRY_REQUEST, 0, 0, Entry(3, 3), 2, False)
    assert stored_lac(held, 1, newer, of_highest_entry=True, first_copy_kept=True) == 2
    assert stored_lac(held, 1, WRITE_BACK, of_highest_entry=True, first_copy_kept=True) == 1
    ledger = BookieLedger(entries=held, lac=1)
    fence = FenceRequest(FENCE_REQUEST, 0, 1)
    for first, lac in ((True, 1), (False, 0)):
        _added, after = process(ledger, again, lac_of_highest_entry=True, first_copy_kept=first)
        answer, _fenced = process(after, fence, lac_of_highest_entry=True)
        assert answer.lac == lac  # type: ignore[union-attr]


def test_the_model_target_s_bookie_answers_the_fence_read_with_the_highest_entry_s_lac() -> None:
    ledger = BookieLedger(entries=frozenset({E1, E2}), lac=1)
    fence = FenceRequest(FENCE_REQUEST, 0, 1)
    for highest, lac in ((True, 1), (False, 0)):
        _added, after = process(ledger, WRITE_BACK, lac_of_highest_entry=highest)
        answer, _fenced = process(after, fence, lac_of_highest_entry=highest)
        assert answer.lac == lac  # type: ignore[union-attr]


def _held_e1_e2_and_a_write_back_waits() -> State:
    s = init_state(SPEC)
    fragment = Fragment(1, 0b11, 1)
    c2 = s.clients[1]._replace(
        status=STATUS_IN_RECOVERY, fragments=(fragment,), curr_fragment=fragment, meta_version=2
    )
    return s._replace(
        meta_status=STATUS_IN_RECOVERY,
        meta_fragments=(fragment,),
        meta_version=2,
        b_entries=(frozenset({E1, E2}), frozenset()),
        b_lac=(1, 0),
        clients=(s.clients[0], c2),
        messages=frozenset({(WRITE_BACK, DELIVERED)}),
    )


def test_the_model_s_bookie_keeps_the_highest_entry_s_lac_under_a_write_back() -> None:
    s = _held_e1_e2_and_a_write_back_waits()
    for cfg, lac in ((BOOKKEEPER, 1), (SPEC, 0)):
        stored = [
            t for t in successors(cfg, s) if t.label.action == "BookieSendsAddConfirmedResponse"
        ]
        assert stored  # its answer delivered or lost: the bookie stored it either way
        assert {t.state.b_lac[0] for t in stored} == {lac}, cfg.describe()
    assert "LacOfHighestEntry=TRUE" in BOOKKEEPER.describe()
