"""``late_adds_after_timeout``: an add that timed out may still reach its bookie (issue 29).

The spec's add is delivered or lost; BookKeeper's client times an add out, changes its
ensemble, and the request may still be stored by its bookie, whose answer the client then
drops. Entry ids are the spec's (1-based): the spec's e1 is BookKeeper's e0.
"""

from __future__ import annotations

import dataclasses

import pytest

from model.bookkeeper.actions import successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.messaging import (
    clear_write_timeout,
    lose_requests_to,
    write_timeout_for_bookie,
)
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    DELIVERED,
    LATE,
    LOST,
    PROCESSED,
    REQUEST_KINDS,
    STATUS_OPEN,
    AddEntryRequest,
    AddEntryResponse,
    Entry,
    Message,
    State,
)
from model.bookkeeper.scripted import ScriptedStep, enabled, run_script, step, take
from model.search.scripted import ScriptError

#: The writer of a Java-client writer run, with the spec's own ensemble changes: 3 bookies
#: and a spare, E=3 WQ=2 AQ=2, two entries in flight, one client.
WRITER = ModelConfig(
    bookies=4,
    clients=1,
    ensemble_size=3,
    write_quorum=2,
    ack_quorum=2,
    send_limit=2,
    inflight_limit=2,
)
LATE_WRITER = dataclasses.replace(WRITER, late_adds_after_timeout=True)

B2 = 1  # b2's index

#: e1 (BookKeeper's e0) goes to b1 and b2; b2's add is lost to the client, which times it
#: out and changes its ensemble: b4 takes b2's place, and e1 is resent to it.
E1_TIMED_OUT_AT_B2 = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientChangesEnsemble", client="c1"),
    step("ClientResendsPendingAddOp", client="c1", entry=1),
)
#: b2 processes the old add after all.
B2_PROCESSES_THE_OLD_ADD = step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1)
#: b4 confirms e1, the writer takes it and closes the ledger.
E1_CONFIRMED_BY_B4_AND_CLOSED = (
    step("BookieSendsAddConfirmedResponse", bookie="b4", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b4"),
    step("ClientClosesLedgerSuccess", client="c1"),
)

E1_TO_B2 = AddEntryRequest(ADD_ENTRY_REQUEST, B2, 0, Entry(1, 1), 0, False)


def after(cfg: ModelConfig, *script: ScriptedStep) -> State:
    return run_script(cfg, list(script))[-1].state


def count_of(s: State, msg: Message) -> int | None:
    return dict(s.messages).get(msg)


def answers_from(s: State, bookie: int) -> list[tuple[AddEntryResponse, int]]:
    return [
        (m, n)
        for m, n in s.messages
        if isinstance(m, AddEntryResponse) and m.kind == ADD_ENTRY_RESPONSE and m.bookie == bookie
    ]


def test_the_switch_is_off_by_default_and_named_when_on() -> None:
    assert ModelConfig().late_adds_after_timeout is False
    assert "LateAddsAfterTimeout" not in WRITER.describe()
    assert "LateAddsAfterTimeout=TRUE" in LATE_WRITER.describe()


def test_without_the_switch_a_timed_out_add_never_reaches_its_bookie() -> None:
    s = after(WRITER, *E1_TIMED_OUT_AT_B2)
    assert count_of(s, E1_TO_B2) == PROCESSED  # ClearWriteTimeout retired it
    assert not enabled(WRITER, s, B2_PROCESSES_THE_OLD_ADD)
    with pytest.raises(ScriptError, match="matches no successor"):
        run_script(WRITER, [*E1_TIMED_OUT_AT_B2, B2_PROCESSES_THE_OLD_ADD])


def test_a_timed_out_add_is_stored_after_the_ensemble_change_and_its_answer_ignored() -> None:
    trace = run_script(
        LATE_WRITER,
        [*E1_TIMED_OUT_AT_B2, B2_PROCESSES_THE_OLD_ADD, *E1_CONFIRMED_BY_B4_AND_CLOSED],
    )
    states = [t.state for t in trace]
    changed = states[len(E1_TIMED_OUT_AT_B2)]
    assert changed.meta_fragments[0].order == (0, 3, 2)  # b4 in b2's place: e1 to b1, b4
    assert count_of(changed, E1_TO_B2) == LATE  # timed out, still on its way
    assert not write_timeout_for_bookie(dict(changed.messages), 0, B2, False)

    late = trace[len(E1_TIMED_OUT_AT_B2) + 1]
    assert late.label is not None and dict(late.label.detail) == {"ignored_by_client": 1}
    assert late.label.received == E1_TO_B2
    s = late.state
    assert Entry(1, 1) in s.b_entries[B2]  # b2 stored the old add
    assert count_of(s, E1_TO_B2) == PROCESSED
    assert answers_from(s, B2) == []  # its answer reached a client that dropped it
    assert s.clients == changed.clients  # the writer's state is untouched
    assert not enabled(
        LATE_WRITER, s, step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2")
    )
    # The answer delivered or lost: the same step for the model, either way named.
    lost_answer = take(
        LATE_WRITER, changed, step("BookieSendsAddConfirmedResponse", bookie="b2", lost={"b2"})
    )
    assert lost_answer.state == s
    assert not write_timeout_for_bookie(dict(s.messages), 0, B2, False)

    closed = states[-1]
    assert closed.meta_last_entry == 1 and closed.clients[0].lac == 1
    for state in states:
        assert violated(LATE_WRITER, state, invariants_for(LATE_WRITER)) == []


def test_a_late_add_may_also_never_arrive() -> None:
    s = after(LATE_WRITER, *E1_TIMED_OUT_AT_B2, *E1_CONFIRMED_BY_B4_AND_CLOSED)
    assert s.meta_last_entry == 1
    assert count_of(s, E1_TO_B2) == LATE and Entry(1, 1) not in s.b_entries[B2]


def test_a_late_add_keeps_the_bookies_higher_lac() -> None:
    # E = WQ = 2 of 3, AQ 1: e1 is lost to b2 and confirmed by b1 (LAC 1); e2 carries LAC 1
    # and b2 stores it first; then b2 is replaced and the old e1 (LAC 0) reaches it.
    cfg = ModelConfig(
        bookies=3,
        clients=1,
        write_quorum=2,
        ack_quorum=1,
        send_limit=2,
        inflight_limit=2,
        late_adds_after_timeout=True,
    )
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
        step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2", entry=2),
        step("ClientChangesEnsemble", client="c1"),
    )
    assert s.b_lac[B2] == 1
    s = take(cfg, s, B2_PROCESSES_THE_OLD_ADD).state
    assert s.b_entries[B2] == frozenset({Entry(1, 1), Entry(2, 2)})
    assert s.b_lac[B2] == 1  # not the old add's 0: a bookie keeps its highest LAC


def test_a_late_add_to_a_fenced_bookie_is_refused_and_the_writer_does_not_hear_of_it() -> None:
    s = after(LATE_WRITER, *E1_TIMED_OUT_AT_B2)
    fenced = s._replace(b_fenced=(False, True, False, False))
    refused = take(LATE_WRITER, fenced, step("BookieSendsAddFencedResponse", bookie="b2"))
    assert dict(refused.label.detail) == {"ignored_by_client": 1}
    assert count_of(refused.state, E1_TO_B2) == PROCESSED
    assert answers_from(refused.state, B2) == [] and Entry(1, 1) not in refused.state.b_entries[B2]
    assert refused.state.clients[0].status == STATUS_OPEN


#: 3 bookies and a spare, E=3 WQ=2 AQ=2 (the spec's own ensemble changes): b2 confirms e1,
#: then b2 (e2 lost) is replaced by b4, then b3 (its answer to e2 lost) by b2, which comes
#: back in b3's position, outside e1's write set (b1, b4). b2's answer to e1, sent before the
#: first change, then reaches the writer.
STALE_ANSWER_OF_A_RETURNING_BOOKIE = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
    step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
    step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    step("ClientChangesEnsemble", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b3", entry=2, lost={"b3"}),
    step("ClientResendsPendingAddOp", client="c1", entry=1),
    step("ClientResendsPendingAddOp", client="c1", entry=2),
    step("ClientChangesEnsemble", client="c1"),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    step("ClientClosesLedgerSuccess", client="c1"),
)


def test_without_the_switch_a_stale_answer_counts_and_the_striped_ledger_loses_e1() -> None:
    # The model's striping (issue 15) kept the spec's guard "the bookie is in the current
    # ensemble": b2 is, but not in e1's write set, and its old answer gives e1 its ack quorum.
    # Closed at e1, whose write set (b1, b4) holds one copy: the invariant breaks.
    trace = run_script(WRITER, list(STALE_ANSWER_OF_A_RETURNING_BOOKIE))
    s = trace[-1].state
    assert s.meta_fragments[0].order == (0, 3, 1)
    assert s.meta_last_entry == 1
    assert violated(WRITER, s, invariants_for(WRITER)) == ["AllCommittedEntriesReachAckQuorum"]


def test_with_the_switch_the_stale_answer_is_consumed_and_ignored() -> None:
    trace = run_script(LATE_WRITER, list(STALE_ANSWER_OF_A_RETURNING_BOOKIE))
    stale = trace[-2]
    assert stale.label is not None and stale.label.action == "ClientReceivesAddConfirmedResponse"
    assert dict(stale.label.detail) == {"ignored": 1}
    assert stale.state.clients == trace[-3].state.clients  # the writer ignored it
    assert answers_from(stale.state, B2) == [(stale.label.received, PROCESSED)]
    s = trace[-1].state
    assert s.meta_last_entry == 0 and s.clients[0].lac == 0
    assert all(violated(LATE_WRITER, t.state, invariants_for(LATE_WRITER)) == [] for t in trace)


def test_an_ensemble_change_leaves_lost_add_requests_late_and_retires_lost_answers() -> None:
    answer = AddEntryResponse(ADD_ENTRY_RESPONSE, B2, 0, Entry(2, 2), False, True)
    other = E1_TO_B2._replace(bookie=2)
    messages = frozenset({(E1_TO_B2, LOST), (answer, LOST), (other, LOST)})
    assert clear_write_timeout(messages, 0, 1 << B2, False) == frozenset(
        {(E1_TO_B2, PROCESSED), (answer, PROCESSED), (other, LOST)}
    )
    assert clear_write_timeout(messages, 0, 1 << B2, False, late=True) == frozenset(
        {(E1_TO_B2, LATE), (answer, PROCESSED), (other, LOST)}
    )


def test_a_crash_drops_the_late_adds_to_the_bookie_without_a_new_timeout() -> None:
    delivered = E1_TO_B2._replace(entry=Entry(2, 2))
    messages = frozenset({(E1_TO_B2, LATE), (delivered, DELIVERED)})
    assert lose_requests_to(messages, B2, REQUEST_KINDS) == frozenset(
        {(E1_TO_B2, LATE), (delivered, LOST)}
    )
    assert lose_requests_to(messages, B2, REQUEST_KINDS, late_too=True) == frozenset(
        {(E1_TO_B2, PROCESSED), (delivered, LOST)}
    )


def test_without_the_switch_the_striped_writer_breaks_ack_quorum() -> None:
    # The search finds the stale-answer interleaving above (depth 14).
    result = check_exhaustively(WRITER)
    assert result.violation is not None
    assert result.violation.invariants == ["AllCommittedEntriesReachAckQuorum"]
    assert (result.distinct_states, result.depth) == (35_349, 14)


@pytest.mark.slow
def test_with_the_switch_the_striped_writer_is_safe_exhaustively() -> None:
    result = check_exhaustively(LATE_WRITER)
    assert result.complete and result.violation is None
    assert (result.distinct_states, result.depth) == (316_983, 38)


def test_late_adds_only_follow_a_timeout() -> None:
    # With every add delivered, the switch adds no step: no LATE message ever appears.
    s = after(
        LATE_WRITER,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
    )
    assert all(n != LATE for _, n in s.messages)
    assert [t.label for t in successors(LATE_WRITER, s)] == [t.label for t in successors(WRITER, s)]


def _change(cfg: ModelConfig, s: State, failed: int) -> State:
    (change,) = [
        t
        for t in successors(cfg, s)
        if t.label.action == "ClientChangesEnsemble" and dict(t.label.detail)["failed"] == failed
    ]
    return change.state


def test_a_step_names_the_late_add_or_the_resent_one() -> None:
    # The writer judge's flags: e2 (to b2, b3) is lost to both; b4 replaces b2, then b2
    # replaces b3, and e2 is resent to b2 with LAC 1 while the timed-out copy (LAC 0) may
    # still arrive: b2 holds two adds of e2, which only ``late`` tells apart.
    cfg = dataclasses.replace(LATE_WRITER, ensembles_may_repeat=True, partial_ensemble_changes=True)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2", "b3"}),
        step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
        step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    )
    s = _change(cfg, s, 1 << B2)
    s = take(cfg, s, step("ClientResendsPendingAddOp", client="c1", entry=2)).state
    s = _change(cfg, s, 1 << 2)
    s = take(cfg, s, step("ClientResendsPendingAddOp", client="c1", entry=2)).state
    old, resent = (E1_TO_B2._replace(entry=Entry(2, 2), lac=lac) for lac in (0, 1))
    assert (count_of(s, old), count_of(s, resent)) == (LATE, DELIVERED)
    either = step("BookieSendsAddConfirmedResponse", bookie="b2", entry=2)
    with pytest.raises(ScriptError, match="matches 2 successors"):
        take(cfg, s, either)
    on_time = take(cfg, s, dataclasses.replace(either, late=False))
    late = take(cfg, s, dataclasses.replace(either, late=True))
    assert (on_time.label.received, late.label.received) == (resent, old)

    def answered_e2(t: State) -> bool:
        return any(m.entry.id == 2 for m, _ in answers_from(t, B2))

    assert answered_e2(on_time.state) and not answered_e2(late.state)
