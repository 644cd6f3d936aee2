"""Each action's guards and effects, on small hand-built states."""

from __future__ import annotations

import dataclasses

import pytest

from model.bookkeeper.action_table import ALL_ACTIONS
from model.bookkeeper.actions import (
    fragment_of_entry_id,
    init_state,
    max_contiguous_confirmed_entry,
    select_ensemble,
    successors,
    writeset,
)
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.messaging import processed_one_and_send_another, send_messages_to_ensemble
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    CLIENT_WITHDRAWN,
    DELIVERED,
    FENCING_PHASE,
    LOST,
    PROCESSED,
    READ_WRITE_PHASE,
    RECOVERY_ABORTED,
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    STATUS_OPEN,
    AddEntryRequest,
    Entry,
    Fragment,
    State,
)
from model.bookkeeper.scripted import enabled, run_script, step, take

CFG = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2)

#: b1 and b2 answer c2's fencing LAC reads and c2 takes both answers (recovery just started).
FENCED_BY_B1_AND_B2 = (
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("BookieSendsFencingReadLacResponse", bookie="b2"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
    step("ClientReceivesFencingReadLacResponse", client="c2", peer="b2"),
)


def actions_of(cfg: ModelConfig, state: State) -> set[str]:
    return {t.label.action for t in successors(cfg, state)}


def after(cfg: ModelConfig, *script: object) -> State:
    return run_script(cfg, list(script))[-1].state  # type: ignore[arg-type]


def test_initial_state_is_the_specs_init() -> None:
    s = init_state(CFG)
    assert s.meta_status is None and s.meta_version == 0 and s.meta_fragments == ()
    assert s.b_entries == (frozenset(),) * 3 and s.b_fenced == (False,) * 3 and s.b_lac == (0,) * 3
    assert s.messages == frozenset()
    assert [c.status for c in s.clients] == [None, None]
    assert actions_of(CFG, s) == {"ClientCreatesLedger"}  # recovery needs an existing ledger


def test_every_action_name_is_the_specs() -> None:
    # The spec's 21, seed 001's crash, and the bookies' own repair of a limbo ledger.
    assert len(ALL_ACTIONS) == 4 + 17 + 1 + 1
    assert len(set(ALL_ACTIONS)) == len(ALL_ACTIONS)


def test_create_ledger_sets_metadata_and_client_and_only_once() -> None:
    s = after(CFG, step("ClientCreatesLedger", client="c1"))
    assert s.meta_status == STATUS_OPEN and s.meta_version == 1
    assert s.meta_fragments == (Fragment(1, 0b111, 1),)
    c1 = s.clients[0]
    assert (
        c1.status == STATUS_OPEN
        and c1.meta_version == 1
        and c1.curr_fragment == s.meta_fragments[0]
    )
    assert not enabled(CFG, s, step("ClientCreatesLedger", client="c2"))


def test_send_add_entry_requests_respects_send_and_inflight_limits() -> None:
    s = after(CFG, step("ClientCreatesLedger", client="c1"))
    sends = [t for t in successors(CFG, s) if t.label.action == "ClientSendsAddEntryRequests"]
    assert len(sends) == 8  # each of the three adds delivered or lost
    s = take(CFG, s, step("ClientSendsAddEntryRequests", client="c1")).state
    assert s.clients[0].lap == 1 and len(s.clients[0].pending_add_ops) == 1
    assert all(count == DELIVERED for _, count in s.messages)
    assert all(m.lac == 0 and not m.recovery for m, _ in s.messages)  # type: ignore[union-attr]
    # InflightLimit 1 and SendLimit 1: no second add.
    assert "ClientSendsAddEntryRequests" not in actions_of(CFG, s)


def test_bookie_add_stores_entry_and_lac_unless_fenced() -> None:
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
    )
    stored = take(CFG, s, step("BookieSendsAddConfirmedResponse", bookie="b1")).state
    assert stored.b_entries[0] == {Entry(1, 1)} and stored.b_lac[0] == 0
    fenced = s._replace(b_fenced=(True, False, False))
    assert not enabled(CFG, fenced, step("BookieSendsAddConfirmedResponse", bookie="b1"))
    rejected = take(CFG, fenced, step("BookieSendsAddFencedResponse", bookie="b1")).state
    assert rejected.b_entries[0] == frozenset()
    (response,) = [m for m, c in rejected.messages if m.kind == 1]
    assert response.success is False  # type: ignore[union-attr]


def test_receive_add_confirmed_advances_lac_at_ack_quorum_only() -> None:
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
    )
    assert s.clients[0].lac == 0 and s.clients[0].confirmed == (0b001,)
    s = take(CFG, s, step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2")).state
    assert s.clients[0].lac == 1 and s.clients[0].pending_add_ops == frozenset()


def test_receive_add_fenced_withdraws_the_writer() -> None:
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
    )._replace(b_fenced=(True, False, False))
    s = take(CFG, s, step("BookieSendsAddFencedResponse", bookie="b1")).state
    s = take(CFG, s, step("ClientReceivesAddFencedResponse", client="c1", peer="b1")).state
    assert s.clients[0].status == CLIENT_WITHDRAWN


def test_is_earliest_msg_orders_adds_per_bookie() -> None:
    cfg = ModelConfig(
        bookies=2, clients=1, write_quorum=2, ack_quorum=1, send_limit=2, inflight_limit=2
    )
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
    )
    assert enabled(cfg, s, step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1))
    assert not enabled(cfg, s, step("BookieSendsAddConfirmedResponse", bookie="b1", entry=2))


def test_ensemble_change_replaces_the_timed_out_bookie_and_updates_metadata() -> None:
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    )
    assert s.meta_fragments == (Fragment(1, 0b011, 1),)
    s = take(cfg, s, step("ClientChangesEnsemble", client="c1")).state
    # first_entry_id = lac + 1 = 1 = the current fragment's start: the fragment is replaced.
    assert s.meta_fragments == (Fragment(1, 0b101, 1),) and s.meta_version == 2
    assert s.clients[0].meta_version == 2
    assert all(count != LOST for _, count in s.messages)  # the timeout was cleared
    assert "ClientChangesEnsemble" not in actions_of(cfg, s)
    s = take(cfg, s, step("ClientResendsPendingAddOp", client="c1")).state
    (resent,) = [m for m, c in s.messages if m.bookie == 2]
    assert resent.entry == Entry(1, 1)  # type: ignore[union-attr]


def test_ensemble_change_needs_a_new_ensemble() -> None:
    cfg = ModelConfig(bookies=2, clients=1, write_quorum=2, ack_quorum=1)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    )
    assert "ClientChangesEnsemble" not in actions_of(cfg, s)


def test_close_success_and_fail() -> None:
    s = after(CFG, step("ClientCreatesLedger", client="c1"))
    closed = take(CFG, s, step("ClientClosesLedgerSuccess", client="c1")).state
    assert closed.meta_status == STATUS_CLOSED and closed.meta_last_entry == 0
    assert closed.meta_version == 2 and closed.clients[0].status == STATUS_CLOSED
    in_recovery = take(CFG, s, step("ClientStartsRecovery", client="c2")).state
    assert not enabled(CFG, in_recovery, step("ClientClosesLedgerSuccess", client="c1"))
    failed = take(CFG, in_recovery, step("ClientClosesLedgerFail", client="c1")).state
    assert failed.clients[0].status == CLIENT_WITHDRAWN and failed.clients[0].meta_version is None


def test_start_recovery_fences_the_last_ensemble() -> None:
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientStartsRecovery", client="c2", lost={"b3"}),
    )
    c2 = s.clients[1]
    assert s.meta_status == STATUS_IN_RECOVERY and s.meta_version == 2 and c2.meta_version == 2
    assert c2.recovery_phase == FENCING_PHASE and c2.recovery_ensemble == 0b111
    assert sorted((m.bookie, c) for m, c in s.messages) == [(0, 1), (1, 1), (2, LOST)]
    assert not enabled(CFG, s, step("ClientStartsRecovery", client="c1"))  # c1 is OPEN


def test_fencing_lac_response_fences_and_coverage_starts_reads() -> None:
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientStartsRecovery", client="c2"),
        step("BookieSendsFencingReadLacResponse", bookie="b1"),
        step("ClientReceivesFencingReadLacResponse", client="c2", peer="b1"),
    )
    assert s.b_fenced == (True, False, False) and s.clients[1].fenced == 0b001
    # Coverage for E=WQ=3, AQ=2 is 3 - 2 + 1 = 2 fenced bookies.
    assert not enabled(CFG, s, step("ClientSendsRecoveryReadRequests", client="c2"))
    s = after(
        CFG,
        step("ClientCreatesLedger", client="c1"),
        step("ClientStartsRecovery", client="c2"),
        *FENCED_BY_B1_AND_B2,
        step("ClientSendsRecoveryReadRequests", client="c2"),
    )
    c2 = s.clients[1]
    assert c2.recovery_phase == READ_WRITE_PHASE and c2.curr_read_entry == 1 and c2.fenced == 0
    reads = [m for m, _ in s.messages if m.kind == 4]
    assert len(reads) == 3 and all(m.fence for m in reads)  # type: ignore[union-attr]
    # Late fencing answers are no longer processed by the client (phase guard).
    s = take(CFG, s, step("BookieSendsFencingReadLacResponse", bookie="b3")).state
    assert not enabled(CFG, s, step("ClientReceivesFencingReadLacResponse", client="c2"))


def _reading(cfg: ModelConfig, *, writer_adds_to: tuple[str, ...]) -> State:
    script = [step("ClientCreatesLedger", client="c1")]
    if writer_adds_to:
        script.append(step("ClientSendsAddEntryRequests", client="c1"))
        script += [step("BookieSendsAddConfirmedResponse", bookie=b) for b in writer_adds_to]
    script += [
        step("ClientStartsRecovery", client="c2"),
        *FENCED_BY_B1_AND_B2,
        step("ClientSendsRecoveryReadRequests", client="c2"),
    ]
    return after(cfg, *script)


def test_recovery_read_negative_needs_quorum_coverage_of_no_such_entry() -> None:
    s = _reading(CFG, writer_adds_to=())
    for b in ("b1", "b2"):
        s = take(CFG, s, step("BookieSendsReadResponse", bookie=b)).state
    s = take(CFG, s, step("BookieSendsReadResponse", bookie="b3", lost={"b3"})).state
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1")).state
    assert s.clients[1].curr_read_entry == 1  # one NoSuchEntry decides nothing
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2")).state
    assert s.clients[1].last_recoverable_entry == 0  # 2 x NoSuchEntry = coverage: negative
    assert s.clients[1].recovery_ensemble == 0


def _all_answers_in(cfg: ModelConfig) -> State:
    s = _reading(cfg, writer_adds_to=("b1",))
    for b in ("b1", "b2", "b3"):
        s = take(cfg, s, step("BookieSendsReadResponse", bookie=b)).state
    return take(cfg, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2")).state


def test_tlc_semantics_blocks_a_read_decision_while_another_answer_is_in_flight() -> None:
    s = _all_answers_in(CFG)
    assert s.clients[1].curr_read_entry == 1
    # b1's OK would decide positive and b3's NoSuchEntry negative, but each decision would
    # also ignore the other in-flight answer, and TLC's conjunction with MessageProcessed
    # forbids that: the recovery stalls here.
    assert not enabled(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"))
    assert not enabled(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b3"))


def test_late_read_answers_ignored_switch_decides_at_once() -> None:
    cfg = ModelConfig(
        bookies=3, clients=2, write_quorum=3, ack_quorum=2, late_read_answers_ignored=True
    )
    s = _all_answers_in(cfg)
    s = take(cfg, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1")).state
    assert s.clients[1].lap == 1 and len(s.clients[1].pending_add_ops) == 1
    (late,) = [c for m, c in s.messages if m.kind == 5 and m.bookie == 2]
    assert late == PROCESSED  # b3's answer was ignored


def test_recovery_read_ok_then_write_back_then_close() -> None:
    s = _reading(CFG, writer_adds_to=("b1", "b2"))
    for b in ("b1", "b2", "b3"):
        s = take(
            CFG, s, step("BookieSendsReadResponse", bookie=b, lost={b} if b != "b1" else ())
        ).state
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1")).state
    c2 = s.clients[1]
    assert c2.lap == 1 and c2.curr_read_entry is None and len(c2.pending_add_ops) == 1
    s = take(CFG, s, step("ClientWritesBackEntry", client="c2")).state
    adds = [m for m, _ in s.messages if m.kind == 0 and m.recovery]  # type: ignore[union-attr]
    assert len(adds) == 3
    assert not enabled(CFG, s, step("ClientWritesBackEntry", client="c2"))  # sent once
    for b in ("b1", "b3"):
        s = take(CFG, s, step("BookieSendsAddConfirmedResponse", bookie=b)).state
        s = take(
            CFG, s, step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer=b)
        ).state
    assert s.clients[1].pending_add_ops == frozenset() and s.clients[1].lac == 1
    assert not enabled(
        CFG, s, step("RecoveryClientClosesLedger", client="c2")
    )  # not yet read to end


def test_recovery_read_unknown_aborts_when_all_answers_are_in() -> None:
    s = _reading(CFG, writer_adds_to=())
    s = take(CFG, s, step("BookieSendsReadResponse", bookie="b1")).state
    s = take(CFG, s, step("BookieSendsReadResponse", bookie="b2", lost={"b2"})).state
    s = take(CFG, s, step("BookieSendsReadResponse", bookie="b3", lost={"b3"})).state
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1")).state
    assert s.clients[1].status == RECOVERY_ABORTED


def test_recovery_close_requires_matching_metadata_version() -> None:
    s = _reading(CFG, writer_adds_to=())
    for b in ("b1", "b2"):
        s = take(CFG, s, step("BookieSendsReadResponse", bookie=b)).state
    s = take(CFG, s, step("BookieSendsReadResponse", bookie="b3", lost={"b3"})).state
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1")).state
    s = take(CFG, s, step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2")).state
    assert enabled(CFG, s, step("RecoveryClientClosesLedger", client="c2"))
    stale = s._replace(meta_version=s.meta_version + 1)
    assert not enabled(CFG, stale, step("RecoveryClientClosesLedger", client="c2"))
    s = take(CFG, s, step("RecoveryClientClosesLedger", client="c2")).state
    assert s.meta_status == STATUS_CLOSED and s.meta_last_entry == 0 and s.meta_version == 3


def test_recovery_ensemble_change_stays_local_until_close() -> None:
    cfg = ModelConfig(bookies=3, clients=2, write_quorum=2, ack_quorum=1)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
        step("ClientStartsRecovery", client="c2"),
        *FENCED_BY_B1_AND_B2,
        step("ClientSendsRecoveryReadRequests", client="c2", lost={"b2"}),
        step("BookieSendsReadResponse", bookie="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("ClientWritesBackEntry", client="c2", lost={"b2"}),
        step("RecoveryClientChangesEnsemble", client="c2"),
    )
    assert s.meta_fragments == (Fragment(1, 0b011, 1),) and s.meta_version == 2
    assert s.clients[1].fragments == (Fragment(1, 0b101, 1),)
    s = take(cfg, s, step("RecoveryClientSendsPendingAddOp", client="c2")).state
    assert any(m.bookie == 2 and m.recovery for m, _ in s.messages if m.kind == 0)  # type: ignore[union-attr]


def test_crash_loses_data_and_undelivered_requests_only_when_allowed() -> None:
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=2, max_crashes=1)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
    )
    crashed = take(cfg, s, step("BookieRestartsEmpty", bookie="b2")).state
    assert crashed.crashes == 1 and crashed.b_entries[1] == frozenset()
    counts = {m.bookie: c for m, c in crashed.messages if m.kind == 0}
    assert counts == {0: PROCESSED, 1: LOST}  # b2's undelivered add is lost, b1's stays processed
    assert "BookieRestartsEmpty" not in actions_of(cfg, crashed)  # budget of one
    assert "BookieRestartsEmpty" not in actions_of(CFG, s)  # off by default


def test_limbo_bookie_answers_unknown() -> None:
    cfg = ModelConfig(
        bookies=2,
        clients=2,
        write_quorum=2,
        ack_quorum=2,
        max_crashes=1,
        limbo_on_unclean_shutdown=True,
    )
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("BookieRestartsEmpty", bookie="b1"),
        step("ClientStartsRecovery", client="c2"),
        step("BookieSendsFencingReadLacResponse", bookie="b1"),
    )
    assert s.b_limbo == (True, False) and s.b_fenced == (True, False)
    (answer,) = [m for m, _ in s.messages if m.kind == 3]
    assert answer.code == 3  # type: ignore[union-attr]


def test_helpers_follow_the_spec() -> None:
    fragments = (Fragment(1, 0b011, 1), Fragment(2, 0b101, 3), Fragment(3, 0b110, 5))
    assert fragment_of_entry_id(1, fragments).id == 1
    assert fragment_of_entry_id(4, fragments).id == 2
    assert fragment_of_entry_id(9, fragments).id == 3
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=2, send_limit=3)
    assert max_contiguous_confirmed_entry(cfg, (0b11, 0b01, 0b11)) == 1
    assert max_contiguous_confirmed_entry(cfg, (0b01, 0b11, 0b11)) == 0
    s = init_state(cfg)._replace(meta_fragments=(Fragment(1, 0b011, 1),))
    assert select_ensemble(cfg, s, 0b001, 0b010) == 0b101
    assert select_ensemble(cfg, s, 0b011, 0) is None  # only the existing ensemble fits


def test_striping_writes_each_entry_to_its_write_set() -> None:
    cfg = ModelConfig(
        bookies=3,
        clients=1,
        write_quorum=2,
        ack_quorum=1,
        ensemble_size=3,
        send_limit=3,
        inflight_limit=3,
    )
    assert [writeset(cfg, 0b111, e) for e in (1, 2, 3, 4)] == [0b011, 0b110, 0b101, 0b011]
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
    )
    to = sorted((m.entry.id, m.bookie) for m, _ in s.messages)  # type: ignore[union-attr]
    assert to == [(1, 0), (1, 1), (2, 1), (2, 2)]


def _recovering_above_a_lac(cfg: ModelConfig) -> State:
    """w1's e1 reached an ack quorum (b1, b2) and its e2 (carrying LAC 1) reached b2 only; c2
    fenced b1 and b2 (LAC 1 from b2), read e2 (OK from b2, NoSuchEntry from b1), read e3
    (absent: the end), and wrote e2 back, confirmed by b1 and b2."""
    script = [
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b3"}),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b1", "b3"}),
        step("BookieSendsAddConfirmedResponse", bookie="b2", entry=2),
        step("ClientStartsRecovery", client="c2", lost={"b3"}),
        *FENCED_BY_B1_AND_B2,
        step("ClientSendsRecoveryReadRequests", client="c2", lost={"b3"}),
        step("BookieSendsReadResponse", bookie="b1"),
        step("BookieSendsReadResponse", bookie="b2"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
        step("ClientWritesBackEntry", client="c2", lost={"b3"}),
        step("ClientSendsRecoveryReadRequests", client="c2", lost={"b3"}),
        step("BookieSendsReadResponse", bookie="b1", entry=3),
        step("BookieSendsReadResponse", bookie="b2", entry=3),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1", entry=3),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2", entry=3),
    ]
    for b in ("b1", "b2"):
        script.append(step("BookieSendsAddConfirmedResponse", bookie=b, entry=2))
        script.append(
            step("RecoveryClientReceivesAddConfirmedResponse", client="c2", peer=b, entry=2)
        )
    return run_script(cfg, script)[-1].state


def test_a_recovery_above_a_fenced_lac_never_closes_in_the_spec() -> None:
    # MaxContiguousConfirmedEntry counts from entry 1 over c2's own confirmed, empty for e1:
    # e2, confirmed by an ack quorum, stays pending, and the close is never enabled.
    cfg = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=3)
    s = _recovering_above_a_lac(cfg)
    c2 = s.clients[1]
    assert c2.lac == 1 and c2.last_recoverable_entry == 2
    assert [op.entry.id for op in c2.pending_add_ops] == [2]
    assert not enabled(cfg, s, step("RecoveryClientClosesLedger", client="c2"))


def test_lac_counts_as_confirmed_lets_that_recovery_close() -> None:
    cfg = ModelConfig(
        bookies=3,
        clients=2,
        write_quorum=3,
        ack_quorum=2,
        send_limit=3,
        lac_counts_as_confirmed=True,
    )
    assert "LacCountsAsConfirmed=TRUE" in cfg.describe()
    s = _recovering_above_a_lac(cfg)
    assert s.clients[1].pending_add_ops == frozenset() and s.clients[1].lac == 2
    s = take(cfg, s, step("RecoveryClientClosesLedger", client="c2")).state
    assert s.meta_status == STATUS_CLOSED and s.meta_last_entry == 2
    assert max_contiguous_confirmed_entry(cfg, (0, 0b11, 0b01), 1) == 2
    assert max_contiguous_confirmed_entry(cfg, (0, 0b11, 0b01)) == 0


def _decided_with_b3_unanswered(cfg: ModelConfig) -> State:
    """c1's e1 reached no bookie; c2 fenced b1 and b2 (b3's fence read lost), sent its
    recovery reads of e1 to all three, and decided e1 absent on b1's and b2's NoSuchEntry
    while its read to b3 was still on the way."""
    script = [
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b1", "b2", "b3"}),
        step("ClientStartsRecovery", client="c2", lost={"b3"}),
        *FENCED_BY_B1_AND_B2,
        step("ClientSendsRecoveryReadRequests", client="c2"),
        step("BookieSendsReadResponse", bookie="b1"),
        step("BookieSendsReadResponse", bookie="b2"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b1"),
        step("ClientReceivesRecoveryReadResponse", client="c2", peer="b2"),
    ]
    return run_script(cfg, script)[-1].state


def test_the_spec_drops_a_decided_reads_requests_so_they_never_fence() -> None:
    cfg = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2)
    cfg = dataclasses.replace(cfg, late_read_answers_ignored=True)
    s = _decided_with_b3_unanswered(cfg)
    assert s.clients[1].curr_read_entry is None and not s.b_fenced[2]
    assert not enabled(cfg, s, step("BookieSendsReadResponse", bookie="b3"))


def test_late_read_requests_processed_lets_that_read_fence_its_bookie() -> None:
    cfg = ModelConfig(
        bookies=3,
        clients=2,
        write_quorum=3,
        ack_quorum=2,
        late_read_answers_ignored=True,
        late_read_requests_processed=True,
    )
    assert "LateReadRequestsProcessed=TRUE" in cfg.describe()
    s = _decided_with_b3_unanswered(cfg)
    after = take(cfg, s, step("BookieSendsReadResponse", bookie="b3"))
    assert after.state.b_fenced[2] and dict(after.label.detail)["ignored_by_client"] == 1
    # The answer is ignored: it never joins the messages, so nothing waits on it.
    ((reply, delivered),) = after.label.sent
    assert delivered and all(m != reply for m, _ in after.state.messages)
    with pytest.raises(ConfigError, match="needs late_read_answers_ignored"):
        ModelConfig(late_read_requests_processed=True)


STRIPED = ModelConfig(
    bookies=4,
    clients=1,
    write_quorum=2,
    ack_quorum=2,
    ensemble_size=3,
    send_limit=3,
    inflight_limit=3,
)


def test_a_striped_ensemble_change_puts_the_replacement_in_the_failed_position() -> None:
    # b2 (position 1 of b1,b2,b3) times out on e1: BookKeeper's new ensemble is b1,b4,b3,
    # so e2 (positions 1,2) goes to b4 and b3, and e1 (positions 0,1) to b1 and b4. Sorted,
    # the set b1,b3,b4 would send e1 to b1 and b3: not what the real client does.
    s = after(
        STRIPED,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    )
    assert s.meta_fragments == (Fragment(1, 0b0111, 1, (0, 1, 2)),)
    s = take(STRIPED, s, step("ClientChangesEnsemble", client="c1")).state
    (fragment,) = s.meta_fragments
    assert fragment.ensemble == 0b1101 and fragment.order == (0, 3, 2)
    assert [writeset(STRIPED, fragment.ensemble, e, fragment.order) for e in (1, 2, 3)] == [
        0b1001,
        0b1100,
        0b0101,
    ]
    s = take(STRIPED, s, step("ClientResendsPendingAddOp", client="c1")).state
    resent = sorted(m.bookie for m, _ in s.messages if m.bookie == 3)  # type: ignore[union-attr]
    assert resent == [3]  # e1's new member is b4, in b2's place


def test_without_striping_the_order_stays_empty_so_the_specs_states_are_unchanged() -> None:
    cfg = ModelConfig(bookies=4, clients=1, write_quorum=3, ack_quorum=2)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
        step("ClientChangesEnsemble", client="c1"),
    )
    assert s.meta_fragments == (Fragment(1, 0b1101, 1),)
    assert all(op.order == () for op in s.clients[0].pending_add_ops)


def test_the_spec_never_returns_to_an_earlier_ensemble_unless_switched() -> None:
    # E = WQ = 2 of 3 bookies: e1 confirmed by b1,b2 (fragment 1); e2 lost to b2, so b3 takes
    # its place from e2 on (fragment 2: b1,b3); e3 lost to b3: the only replacement, b2,
    # gives back fragment 1's ensemble.
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=2, send_limit=3)

    def confirmed(entry: int, *bookies: str) -> list[object]:
        return [
            *(step("BookieSendsAddConfirmedResponse", bookie=b, entry=entry) for b in bookies),
            *(
                step("ClientReceivesAddConfirmedResponse", client="c1", peer=b, entry=entry)
                for b in bookies
            ),
        ]

    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1"),
        *confirmed(1, "b1", "b2"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
        step("ClientChangesEnsemble", client="c1"),
        step("ClientResendsPendingAddOp", client="c1"),
        *confirmed(2, "b1", "b3"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b3"}),
    )
    assert s.clients[0].lac == 2
    assert [f.ensemble for f in s.meta_fragments] == [0b011, 0b101]
    assert "ClientChangesEnsemble" not in actions_of(cfg, s)
    repeat = dataclasses.replace(cfg, ensembles_may_repeat=True)
    s = take(repeat, s, step("ClientChangesEnsemble", client="c1")).state
    assert [f.ensemble for f in s.meta_fragments] == [0b011, 0b101, 0b011]


def test_a_bookie_back_in_the_ensemble_gets_and_confirms_an_entry_again() -> None:
    # E = WQ = 2 of 3, SendLimit 2: e1 is lost to b2 (b3 replaces it), then e1's resend is
    # lost to b3 (b2 comes back, e1 is resent to it): the same add and the same answer are
    # sent a second time, which the spec (each message at most once) never needs.
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=2, ensembles_may_repeat=True)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
        step("BookieSendsAddConfirmedResponse", bookie="b1"),
        step("ClientChangesEnsemble", client="c1"),
        step("ClientResendsPendingAddOp", client="c1", lost={"b3"}),
        step("ClientChangesEnsemble", client="c1"),
        step("ClientResendsPendingAddOp", client="c1"),
        step("BookieSendsAddConfirmedResponse", bookie="b2"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1"),
        step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2"),
    )
    assert s.clients[0].lac == 1
    assert [f.ensemble for f in s.meta_fragments] == [0b011]


def test_partial_ensemble_changes_replace_timed_out_bookies_one_at_a_time() -> None:
    # E=3 WQ=2 of 4 bookies: e1 lost to b1 and e2 lost to b2. The spec replaces both at once,
    # and with one spare it cannot; BookKeeper replaces b2 by b4, then b1 by b2.
    cfg = dataclasses.replace(STRIPED, send_limit=2)
    s = after(
        cfg,
        step("ClientCreatesLedger", client="c1"),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b1"}),
        step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
    )
    assert "ClientChangesEnsemble" not in actions_of(cfg, s)
    partial = dataclasses.replace(cfg, partial_ensemble_changes=True, ensembles_may_repeat=True)
    changes = [t for t in successors(partial, s) if t.label.action == "ClientChangesEnsemble"]
    failed = sorted(dict(t.label.detail)["failed"] for t in changes)
    assert failed == [0b0001, 0b0010]  # b1 alone or b2 alone; both at once has no ensemble
    s = next(t.state for t in changes if dict(t.label.detail)["failed"] == 0b0010)
    assert s.meta_fragments[0].order == (0, 3, 2)
    # The pending adds move to the new ensemble first (NoPendingResends), then b1 goes.
    s = take(partial, s, step("ClientResendsPendingAddOp", client="c1", entry=1)).state
    s = take(partial, s, step("ClientResendsPendingAddOp", client="c1", entry=2)).state
    (second,) = [t for t in successors(partial, s) if t.label.action == "ClientChangesEnsemble"]
    assert second.state.meta_fragments[0].order == (1, 3, 2)


def test_an_answer_sent_again_while_the_first_is_in_flight_joins_it() -> None:
    add = AddEntryRequest(ADD_ENTRY_REQUEST, 1, 0, Entry(1, 1), 0, False)
    in_flight = frozenset({(add, DELIVERED)})
    counts = dict(in_flight)
    assert send_messages_to_ensemble(in_flight, counts, [add]) == []
    ((messages, delivery),) = send_messages_to_ensemble(in_flight, counts, [add], again=True)
    assert messages == frozenset({(add, 2)}) and delivery == ((add, True),)
    processed = frozenset({(add, PROCESSED)})
    again = send_messages_to_ensemble(processed, dict(processed), [add], again=True)
    assert sorted(dict(m)[add] for m, _ in again) == [LOST, DELIVERED]
    reply_in_flight = frozenset({(add, DELIVERED), ("reply", DELIVERED)})
    out = processed_one_and_send_another(
        reply_in_flight,
        dict(reply_in_flight),
        add,
        "reply",
        again=True,  # type: ignore[arg-type]
    )
    assert out == [(frozenset({(add, PROCESSED), ("reply", 2)}), True)]
