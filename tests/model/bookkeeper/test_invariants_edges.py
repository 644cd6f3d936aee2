"""The edges of TypeOK, AllAckedEntriesAreReadable and AllCommittedEntriesReachAckQuorum on
hand-built states: the bounds of entry ids, which clients count, which bookies count (only
those of the entry's write set, striped or not), and when a ledger counts as committed."""

from __future__ import annotations

from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import (
    all_acked_entries_are_readable,
    all_committed_entries_reach_ack_quorum,
    type_ok,
)
from model.bookkeeper.records import (
    CLIENT_WITHDRAWN,
    STATUS_CLOSED,
    STATUS_OPEN,
    Entry,
    Fragment,
    State,
)

CFG = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2)
ALL_THREE = Fragment(id=1, ensemble=0b111, first_entry_id=1)
# Two bookies of three (E = WQ = 2): bookie b3 is outside the ensemble.
PAIR_CFG = ModelConfig(bookies=3, clients=2, write_quorum=2, ack_quorum=2)
FIRST_TWO = Fragment(id=1, ensemble=0b011, first_entry_id=1)
# Striped: E = 3, WQ = 2; entry 1 goes to b1 and b2, entry 2 to b2 and b3.
STRIPED_CFG = ModelConfig(
    bookies=3, clients=2, write_quorum=2, ack_quorum=2, ensemble_size=3, send_limit=2
)


def stored(cfg: ModelConfig, entries: tuple[frozenset[Entry], ...]) -> State:
    return init_state(cfg)._replace(b_entries=entries)


def with_client(
    cfg: ModelConfig, fragment: Fragment, index: int, status: int, lac: int, s: State
) -> State:
    """``s`` with an open ledger on ``fragment`` and client ``index`` at ``status``, ``lac``."""
    client = s.clients[index]._replace(
        meta_version=1, status=status, fragments=(fragment,), curr_fragment=fragment, lac=lac
    )
    clients = tuple(client if i == index else c for i, c in enumerate(s.clients))
    return s._replace(
        meta_status=STATUS_OPEN, meta_fragments=(fragment,), meta_version=1, clients=clients
    )


def closed(fragment: Fragment, last: int, s: State) -> State:
    return s._replace(
        meta_status=STATUS_CLOSED, meta_fragments=(fragment,), meta_last_entry=last, meta_version=2
    )


# TypeOK


def test_type_ok_accepts_entry_ids_from_one_to_the_send_limit() -> None:
    entries = frozenset({Entry(1, 1), Entry(2, 2), Entry(2, 0)})
    assert type_ok(CFG, stored(CFG, (entries,) * 3)) is True


def test_type_ok_refuses_an_entry_id_of_zero() -> None:
    assert type_ok(CFG, stored(CFG, (frozenset({Entry(0, 0)}), frozenset(), frozenset()))) is False


def test_type_ok_refuses_an_entry_id_past_the_send_limit() -> None:
    assert type_ok(CFG, stored(CFG, (frozenset({Entry(3, 3)}), frozenset(), frozenset()))) is False


def test_type_ok_refuses_entry_data_past_the_send_limit_even_with_a_valid_id() -> None:
    assert type_ok(CFG, stored(CFG, (frozenset({Entry(1, 3)}), frozenset(), frozenset()))) is False


# AllAckedEntriesAreReadable


def test_a_withdrawn_client_s_lac_does_not_need_to_be_readable() -> None:
    s = with_client(CFG, ALL_THREE, 0, CLIENT_WITHDRAWN, 1, init_state(CFG))
    assert all_acked_entries_are_readable(CFG, s) is True


def test_a_later_client_is_checked_after_one_with_nothing_acknowledged() -> None:
    # Client 0 has no status and LAC 0 (skipped); client 1 has e1 acknowledged, stored nowhere.
    s = with_client(CFG, ALL_THREE, 1, STATUS_OPEN, 1, init_state(CFG))
    assert all_acked_entries_are_readable(CFG, s) is False
    held = s._replace(b_entries=(frozenset({Entry(1, 1)}), frozenset(), frozenset()))
    assert all_acked_entries_are_readable(CFG, held) is True


def test_an_acked_entry_only_on_a_bookie_outside_its_ensemble_is_not_readable() -> None:
    outside = stored(PAIR_CFG, (frozenset(), frozenset(), frozenset({Entry(1, 1)})))
    s = with_client(PAIR_CFG, FIRST_TWO, 0, STATUS_OPEN, 1, outside)
    assert all_acked_entries_are_readable(PAIR_CFG, s) is False
    inside = s._replace(b_entries=(frozenset(), frozenset({Entry(1, 1)}), frozenset()))
    assert all_acked_entries_are_readable(PAIR_CFG, inside) is True


def test_a_striped_acked_entry_must_be_on_a_bookie_of_its_own_write_set() -> None:
    # e2's write set is {b2, b3}: on b1 alone it is not readable.
    on_b1 = stored(
        STRIPED_CFG, (frozenset({Entry(1, 1), Entry(2, 2)}), frozenset({Entry(1, 1)}), frozenset())
    )
    s = with_client(STRIPED_CFG, ALL_THREE, 0, STATUS_OPEN, 2, on_b1)
    assert all_acked_entries_are_readable(STRIPED_CFG, s) is False
    on_b3 = s._replace(b_entries=(frozenset({Entry(1, 1)}), frozenset(), frozenset({Entry(2, 2)})))
    assert all_acked_entries_are_readable(STRIPED_CFG, on_b3) is True


# AllCommittedEntriesReachAckQuorum


def test_an_open_ledger_is_not_held_to_its_last_entry() -> None:
    # Not CLOSED: a last entry of 1 with no copies anywhere is not a committed entry.
    s = init_state(CFG)._replace(
        meta_status=STATUS_OPEN, meta_fragments=(ALL_THREE,), meta_last_entry=1, meta_version=1
    )
    assert all_committed_entries_reach_ack_quorum(CFG, s) is True
    assert all_committed_entries_reach_ack_quorum(CFG, closed(ALL_THREE, 1, s)) is False


def test_copies_outside_the_ensemble_do_not_count_towards_the_ack_quorum() -> None:
    # e1 on b1 (in the ensemble) and b3 (outside it): one copy of AQ = 2.
    s = stored(PAIR_CFG, (frozenset({Entry(1, 1)}), frozenset(), frozenset({Entry(1, 1)})))
    assert all_committed_entries_reach_ack_quorum(PAIR_CFG, closed(FIRST_TWO, 1, s)) is False
    both = s._replace(b_entries=(frozenset({Entry(1, 1)}),) * 2 + (frozenset(),))
    assert all_committed_entries_reach_ack_quorum(PAIR_CFG, closed(FIRST_TWO, 1, both)) is True


def test_striped_copies_count_only_on_the_entry_s_write_set() -> None:
    # e2's write set is {b2, b3}; copies on b1 and b2 are one copy of AQ = 2.
    e1, e2 = Entry(1, 1), Entry(2, 2)
    s = stored(STRIPED_CFG, (frozenset({e1, e2}), frozenset({e1, e2}), frozenset()))
    assert all_committed_entries_reach_ack_quorum(STRIPED_CFG, closed(ALL_THREE, 2, s)) is False
    good = s._replace(b_entries=(frozenset({e1}), frozenset({e1, e2}), frozenset({e2})))
    assert all_committed_entries_reach_ack_quorum(STRIPED_CFG, closed(ALL_THREE, 2, good)) is True
