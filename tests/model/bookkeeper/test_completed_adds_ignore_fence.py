"""``completed_adds_ignore_fence``: an EFENCED answer to an add that already has its ack quorum
changes nothing, as BookKeeper's ``PendingAddOp.writeComplete`` returns once its add is
completed; an EFENCED answer to an add still short of it withdraws the writer as in the spec.
Found by the ``--role both`` search on 4.17.3 (issue 46).

Entry ids are the spec's (1-based): the spec's e1 is BookKeeper's e0.
"""

from __future__ import annotations

import dataclasses

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.records import CLIENT_WITHDRAWN, STATUS_OPEN, State
from model.bookkeeper.scripted import enabled, run_script, step

SPEC = ModelConfig(
    bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2, inflight_limit=2
)
IGNORES = dataclasses.replace(SPEC, completed_adds_ignore_fence=True)

#: b1 and b2 confirm e1 and c1 takes both (its ack quorum); then c2 fences b3, which answers
#: c1's add of e1 EFENCED.
E1_COMPLETED_THEN_FENCED_AT_B3 = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
    step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2", entry=1),
    step("ClientStartsRecovery", client="c2"),
    step("BookieSendsFencingReadLacResponse", bookie="b3"),
    step("BookieSendsAddFencedResponse", bookie="b3", entry=1),
)
B3_FENCED_E1 = step("ClientReceivesAddFencedResponse", client="c1", peer="b3")
SEND_E2 = step("ClientSendsAddEntryRequests", client="c1")


def after(cfg: ModelConfig, *script: object) -> State:
    return run_script(cfg, list(script))[-1].state  # type: ignore[arg-type]


def test_the_fenced_answer_to_a_completed_add_is_consumed_and_the_writer_goes_on() -> None:
    s = after(IGNORES, *E1_COMPLETED_THEN_FENCED_AT_B3, B3_FENCED_E1)
    assert s.clients[0].status == STATUS_OPEN and s.clients[0].lac == 1
    assert not enabled(IGNORES, s, B3_FENCED_E1)  # consumed, not left in flight
    assert enabled(IGNORES, s, SEND_E2)


def test_in_the_spec_the_same_answer_withdraws_the_writer() -> None:
    s = after(SPEC, *E1_COMPLETED_THEN_FENCED_AT_B3, B3_FENCED_E1)
    assert s.clients[0].status == CLIENT_WITHDRAWN
    assert not enabled(SPEC, s, SEND_E2)


def test_a_fenced_answer_to_an_add_short_of_its_ack_quorum_still_withdraws() -> None:
    # Only b1's confirmation of e1 reached c1: the add is not completed.
    script = [
        s
        for s in E1_COMPLETED_THEN_FENCED_AT_B3
        if not (s.action == "ClientReceivesAddConfirmedResponse" and s.peer == "b2")
    ]
    s = after(IGNORES, *script, B3_FENCED_E1)
    assert s.clients[0].status == CLIENT_WITHDRAWN


def test_the_switch_is_named_in_the_description() -> None:
    assert "CompletedAddsIgnoreFence=TRUE" in IGNORES.describe()
    assert "CompletedAddsIgnoreFence" not in SPEC.describe()


def test_no_invariant_breaks_in_the_first_states_the_switch_allows() -> None:
    one_entry = dataclasses.replace(IGNORES, bookies=3, send_limit=1, inflight_limit=1)
    result = check_exhaustively(one_entry, invariants=invariants_for(one_entry), max_states=60_000)
    assert result.violation is None
