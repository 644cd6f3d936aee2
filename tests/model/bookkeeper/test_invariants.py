"""Each of the six invariants fires on a hand-built state that breaks it, and only it: a check
that always passes would let every run be clean."""

from __future__ import annotations

import pytest

from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import ALL_INVARIANTS, invariants_for, violated
from model.bookkeeper.records import (
    STATUS_CLOSED,
    STATUS_OPEN,
    Entry,
    Fragment,
    State,
)

CFG = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2)
FRAGMENT = Fragment(id=1, ensemble=0b111, first_entry_id=1)
ENTRY = Entry(1, 1)


def healthy() -> State:
    """w1 created the ledger, wrote e1 to all three bookies and has it acknowledged."""
    s = init_state(CFG)
    writer = s.clients[0]._replace(
        meta_version=1, status=STATUS_OPEN, fragments=(FRAGMENT,), curr_fragment=FRAGMENT, lac=1
    )
    return s._replace(
        meta_status=STATUS_OPEN,
        meta_fragments=(FRAGMENT,),
        meta_version=1,
        b_entries=(frozenset({ENTRY}),) * 3,
        clients=(writer, *s.clients[1:]),
    )


def closed_at(s: State, last: int) -> State:
    return s._replace(meta_status=STATUS_CLOSED, meta_last_entry=last, meta_version=2)


def test_the_healthy_states_break_nothing() -> None:
    assert violated(CFG, init_state(CFG), ALL_INVARIANTS) == []
    assert violated(CFG, healthy(), ALL_INVARIANTS) == []
    assert violated(CFG, closed_at(healthy(), 1), ALL_INVARIANTS) == []


BROKEN = {
    "TypeOK": healthy()._replace(b_lac=(-1, 0, 0)),
    # Closed at 0 while w1 had e1 acknowledged: the acknowledged entry is truncated.
    "NoDivergenceBetweenClientAndMetaData": closed_at(healthy(), 0),
    # e1 is acknowledged but no bookie of its fragment holds it.
    "AllAckedEntriesAreReadable": healthy()._replace(b_entries=(frozenset(),) * 3),
    # Closed at e1, which only one bookie holds (AQ = 2); w1 has withdrawn its LAC.
    "AllCommittedEntriesReachAckQuorum": closed_at(
        healthy()._replace(
            b_entries=(frozenset({ENTRY}), frozenset(), frozenset()),
            clients=(healthy().clients[0]._replace(lac=0), *healthy().clients[1:]),
        ),
        1,
    ),
    # A stored entry whose data is not its own.
    "NoOutOfOrderEntries": healthy()._replace(
        b_entries=(frozenset({Entry(1, 0)}), frozenset({ENTRY}), frozenset({ENTRY}))
    ),
    # A second fragment starting where the first does.
    "OnlyValidFragments": healthy()._replace(
        meta_fragments=(FRAGMENT, Fragment(id=2, ensemble=0b111, first_entry_id=1))
    ),
}


@pytest.mark.parametrize("name", [i.name for i in ALL_INVARIANTS])
def test_each_invariant_fires_alone_on_a_state_that_breaks_it(name: str) -> None:
    assert violated(CFG, BROKEN[name], ALL_INVARIANTS) == [name]


def test_with_crashes_ack_quorum_is_not_checked() -> None:
    crashing = ModelConfig(
        bookies=3,
        clients=2,
        write_quorum=3,
        ack_quorum=2,
        max_crashes=1,
        crash_when_open=True,
        limbo_on_unclean_shutdown=True,
        fence_on_unclean_shutdown=True,
    )
    names = [i.name for i in invariants_for(crashing)]
    assert "AllCommittedEntriesReachAckQuorum" not in names and len(names) == 5
    state = BROKEN["AllCommittedEntriesReachAckQuorum"]
    assert violated(crashing, state, invariants_for(crashing)) == []
    assert [i.name for i in invariants_for(CFG)] == [i.name for i in ALL_INVARIANTS]
