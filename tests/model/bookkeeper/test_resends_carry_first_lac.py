"""``resends_carry_first_lac``: a resent add carries the LAC it was first sent with, as
BookKeeper's ``PendingAddOp`` resends the buffer ``initiate`` packaged; in the spec a resend
carries the client's LAC at the resend.

Entry ids are the spec's (1-based): the spec's e1 is BookKeeper's e0.
"""

from __future__ import annotations

import dataclasses

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.records import ADD_ENTRY_REQUEST, State
from model.bookkeeper.scripted import run_script, step
from model.bookkeeper.symmetry import canonical_fingerprint

SPEC = ModelConfig(
    bookies=3, clients=1, write_quorum=2, ack_quorum=2, send_limit=2, inflight_limit=2
)
FIRST_LAC = dataclasses.replace(SPEC, resends_carry_first_lac=True)

#: c1 sends e1 and e2 (LAC 0); b1 and b2 confirm e1 (LAC 1); b2's add of e2 is lost, so c1
#: replaces b2 by b3 and resends e2 to b3.
E2_RESENT_AFTER_THE_LAC_MOVED = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
    step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2", entry=1),
    step("ClientChangesEnsemble", client="c1"),
    step("ClientResendsPendingAddOp", client="c1", entry=2),
)


def after(cfg: ModelConfig) -> State:
    return run_script(cfg, list(E2_RESENT_AFTER_THE_LAC_MOVED))[-1].state  # type: ignore[arg-type]


def _lac_of_the_resend_to_b3(s: State) -> int:
    (lac,) = {
        m.lac  # type: ignore[union-attr]
        for m, _count in s.messages
        if m.kind == ADD_ENTRY_REQUEST and m.bookie == 2 and m.entry.id == 2  # type: ignore[union-attr]
    }
    return lac


def test_the_resend_carries_the_lac_of_the_first_send() -> None:
    s = after(FIRST_LAC)
    assert s.clients[0].lac == 1
    assert _lac_of_the_resend_to_b3(s) == 0


def test_in_the_spec_the_resend_carries_the_lac_of_the_resend() -> None:
    assert _lac_of_the_resend_to_b3(after(SPEC)) == 1


def test_off_the_ops_carry_no_lac() -> None:
    # So the spec's states are the same objects as before the switch (the TLC state counts
    # of tests/model are unchanged).
    assert all(op.lac is None for c in after(SPEC).clients for op in c.pending_add_ops)


def test_the_switch_is_named_and_symmetry_reduction_keeps_the_lac() -> None:
    assert "ResendsCarryFirstLac=TRUE" in FIRST_LAC.describe()
    s = after(FIRST_LAC)
    c1 = s.clients[0]
    (op,) = c1.pending_add_ops
    other_lac = frozenset({op._replace(lac=1)})
    t = s._replace(clients=(c1._replace(pending_add_ops=other_lac), *s.clients[1:]))
    assert canonical_fingerprint(FIRST_LAC, s) != canonical_fingerprint(FIRST_LAC, t)


def test_no_invariant_breaks_in_the_first_states_the_switch_allows() -> None:
    result = check_exhaustively(FIRST_LAC, invariants=invariants_for(FIRST_LAC), max_states=60_000)
    assert result.violation is None
