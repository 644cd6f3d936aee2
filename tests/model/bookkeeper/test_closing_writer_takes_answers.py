"""``closing_writer_takes_answers``: a writer closing after a fenced add still takes the add
confirmations that reached it first, and closes at the LAC they raised (BookKeeper's close
runs on the ledger's ordered executor, after the answers queued there). Found by the
15-minute ``--role both`` search on 4.17.3 (seed 51).

Entry ids are the spec's (1-based): the spec's e1 is BookKeeper's e0.
"""

from __future__ import annotations

import dataclasses

import pytest

from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.records import CLIENT_CLOSING, STATUS_CLOSED, State
from model.bookkeeper.scripted import enabled, run_script, step

SPEC = ModelConfig(
    bookies=2, clients=2, write_quorum=2, ack_quorum=2, send_limit=2, inflight_limit=2
)
FENCED_CLOSES = dataclasses.replace(SPEC, fenced_writer_closes=True)
TAKES_ANSWERS = dataclasses.replace(FENCED_CLOSES, closing_writer_takes_answers=True)

#: c1 sends e1 and e2; both bookies store e1 before they are fenced, but only b1's answer has
#: reached c1 when b1's EFENCED for e2 does: b2's answer to e1 is still on its way.
E2_FENCED_E1_IN_FLIGHT = (
    step("ClientCreatesLedger", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("ClientSendsAddEntryRequests", client="c1"),
    step("BookieSendsAddConfirmedResponse", bookie="b1", entry=1),
    step("BookieSendsAddConfirmedResponse", bookie="b2", entry=1),
    step("ClientReceivesAddConfirmedResponse", client="c1", peer="b1", entry=1),
    step("ClientStartsRecovery", client="c2"),
    step("BookieSendsFencingReadLacResponse", bookie="b1"),
    step("BookieSendsAddFencedResponse", bookie="b1", entry=2),
    step("ClientReceivesAddFencedResponse", client="c1", peer="b1"),
)
B2_CONFIRMS_E1 = step("ClientReceivesAddConfirmedResponse", client="c1", peer="b2", entry=1)
WRITER_CLOSES = step("ClientClosesLedgerSuccess", client="c1")


def after(cfg: ModelConfig, *script: object) -> State:
    return run_script(cfg, list(script))[-1].state  # type: ignore[arg-type]


def test_the_closing_writer_takes_an_answer_that_reached_it_and_closes_above_it() -> None:
    s = after(TAKES_ANSWERS, *E2_FENCED_E1_IN_FLIGHT)
    assert s.clients[0].status == CLIENT_CLOSING and s.clients[0].lac == 0
    confirmed = after(TAKES_ANSWERS, *E2_FENCED_E1_IN_FLIGHT, B2_CONFIRMS_E1)
    assert confirmed.clients[0].status == CLIENT_CLOSING and confirmed.clients[0].lac == 1
    closed = after(TAKES_ANSWERS, *E2_FENCED_E1_IN_FLIGHT, B2_CONFIRMS_E1, WRITER_CLOSES)
    assert (closed.meta_status, closed.meta_last_entry) == (STATUS_CLOSED, 1)
    assert not violated(TAKES_ANSWERS, closed, invariants_for(TAKES_ANSWERS))


def test_without_the_switch_a_closing_writer_only_closes() -> None:
    s = after(FENCED_CLOSES, *E2_FENCED_E1_IN_FLIGHT)
    assert not enabled(FENCED_CLOSES, s, B2_CONFIRMS_E1)
    closed = after(FENCED_CLOSES, *E2_FENCED_E1_IN_FLIGHT, WRITER_CLOSES)
    assert closed.meta_last_entry == 0


def test_the_switch_needs_fenced_writer_closes() -> None:
    with pytest.raises(ConfigError, match="needs fenced_writer_closes"):
        dataclasses.replace(SPEC, closing_writer_takes_answers=True)
    assert "ClosingWriterTakesAnswers=TRUE" in TAKES_ANSWERS.describe()


def test_no_invariant_breaks_in_the_first_fail_overs_the_switch_allows() -> None:
    one_entry = dataclasses.replace(TAKES_ANSWERS, send_limit=1, inflight_limit=1)
    result = check_exhaustively(one_entry, invariants=invariants_for(one_entry), max_states=60_000)
    assert result.distinct_states == 60_000 and result.violation is None
