"""``adds_in_arrival_order``: a bookie takes a client's adds as they arrive, not earliest
entry first (the spec's ``IsEarliestMsg``), because BookKeeper's client can send a later
entry to a replacement before the resends of earlier ones.

Entry ids are the spec's (1-based): the spec's e1 is BookKeeper's e0.
"""

from __future__ import annotations

import dataclasses

import pytest

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.records import State
from model.bookkeeper.scripted import ScriptError, run_script, step

SPEC = ModelConfig(
    bookies=3, clients=1, write_quorum=3, ack_quorum=2, send_limit=2, inflight_limit=2
)
ARRIVAL = dataclasses.replace(SPEC, adds_in_arrival_order=True)

#: c1 sends e1 (LAC 0); b2 and b3 confirm it, c1 takes both (LAC 1) and sends e2 (LAC 1):
#: b1 then has e1 and e2 to take.
BOTH_SENT = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
    step("BookieSendsAddConfirmedResponse", bookie="b3", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b3", entry=1),
    step("ClientSendsAddEntryRequests", client="c1"),
)
E2_FIRST = (step("BookieSendsAddConfirmedResponse", bookie="b1", entry=2),)


def test_in_the_spec_a_bookie_takes_the_earliest_entry_first() -> None:
    with pytest.raises(ScriptError):
        run_script(SPEC, [*BOTH_SENT, *E2_FIRST])


def test_a_bookie_may_take_a_later_entry_first_and_keeps_its_lac() -> None:
    trace = run_script(ARRIVAL, [*BOTH_SENT, *E2_FIRST])
    s: State = trace[-1].state  # type: ignore[assignment]
    assert s.b_lac[0] == 1  # e2 carried LAC 1
    later = run_script(
        ARRIVAL,
        [*BOTH_SENT, *E2_FIRST, step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1)],
    )
    stored: State = later[-1].state  # type: ignore[assignment]
    assert {e.id for e in stored.b_entries[0]} == {1, 2}
    # e1 (LAC 0) taken after e2: the bookie's LAC stays the one its highest entry carried.
    assert stored.b_lac[0] == 1


def test_the_switch_is_named() -> None:
    assert "AddsInArrivalOrder=TRUE" in ARRIVAL.describe()
    assert "AddsInArrivalOrder" not in SPEC.describe()


def test_no_invariant_breaks_in_the_states_the_switch_allows() -> None:
    result = check_exhaustively(ARRIVAL, invariants=invariants_for(ARRIVAL), max_states=60_000)
    assert result.violation is None
