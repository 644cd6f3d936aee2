"""The action table: consistent with itself, pinned in order, and true of the model's steps."""

from __future__ import annotations

import dataclasses
import random

import pytest

from model.bookkeeper.action_table import (
    ACTION_TABLE,
    ALL_ACTIONS,
    ENCODING_DIGEST,
    Actor,
    AddAnswer,
    Effect,
    Move,
    Phase,
    SpecAction,
    Var,
    WriteEnd,
    actions_where,
    add_answer,
    check_table,
    classification,
    encoding_digest,
    names_with,
    spec_action,
    the_action,
)
from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    FENCE_REQUEST,
    FENCE_RESPONSE,
    READ_REQUEST,
    READ_RESPONSE,
    AddEntryResponse,
    State,
)

#: Which of the table's variable groups each field of the spec's state belongs to.
GROUP_OF = {
    "meta_status": Var.METADATA,
    "meta_fragments": Var.METADATA,
    "meta_last_entry": Var.METADATA,
    "meta_version": Var.METADATA,
    "b_entries": Var.BOOKIES,
    "b_fenced": Var.BOOKIES,
    "b_lac": Var.BOOKIES,
    "b_limbo": Var.BOOKIES,
    "crashes": Var.CRASHES,
    "clients": Var.CLIENTS,
    "messages": Var.MESSAGES,
}
CONFIGS = (
    ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2),
    ModelConfig(
        bookies=4,
        clients=2,
        write_quorum=2,
        ack_quorum=2,
        ensemble_size=3,
        send_limit=2,
        inflight_limit=2,
        max_crashes=1,
        crash_when_open=True,
        crash_in_recovery=True,
        crash_when_closed=True,
        limbo_on_unclean_shutdown=True,
        fence_on_unclean_shutdown=True,
    ),
    # The bookies' own recovery of a limbo ledger (BookieLeavesLimbo).
    ModelConfig(
        bookies=2,
        clients=3,
        write_quorum=2,
        ack_quorum=2,
        max_crashes=1,
        crash_when_closed=False,
        limbo_on_unclean_shutdown=True,
        fence_on_unclean_shutdown=True,
        late_read_answers_ignored=True,
        bookie_recovers_limbo=True,
    ),
)


def test_the_table_names_each_spec_action_once_in_the_encodings_order() -> None:
    assert len(ALL_ACTIONS) == 4 + 17 + 2
    assert ALL_ACTIONS[:4] == tuple(sorted(names_with(Effect.ANSWER)))
    assert ALL_ACTIONS[-2:] == ("BookieRestartsEmpty", "BookieLeavesLimbo")
    assert encoding_digest(ACTION_TABLE) == ENCODING_DIGEST


def test_a_reordered_table_fails_until_its_version_is_bumped() -> None:
    swapped = (ACTION_TABLE[1], ACTION_TABLE[0], *ACTION_TABLE[2:])
    with pytest.raises(ValueError, match="bump ENCODING_VERSION"):
        check_table(swapped, ENCODING_DIGEST)
    check_table(swapped, encoding_digest(swapped))  # a new pinned digest accepts it


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"effect": Effect.NONE}, "bookie actions, and only they, answer"),
        ({"write_ends": WriteEnd.SUCCEEDS}, "only it, has an expected end"),
        ({"generator": "_no_such_function"}, "no generator"),
        ({"recovery": True}, "only a client recovers"),
    ],
)
def test_an_inconsistent_record_is_refused(change: dict[str, object], message: str) -> None:
    bookie_action = spec_action("BookieSendsReadResponse")
    broken = dataclasses.replace(bookie_action, **change)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        broken.check()


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("BookieSendsReadResponse", {"move": Move.SEND}, "take the move ANSWER"),
        ("ClientSendsAddEntryRequests", {"move": Move.ANSWER}, "take the move ANSWER"),
        ("BookieRestartsEmpty", {"phase": Phase.ADD}, "phase FAULT"),
        ("ClientClosesLedgerSuccess", {"phase": Phase.FAULT}, "phase FAULT"),
        ("ClientClosesLedgerSuccess", {"answer": AddAnswer.CONFIRMED}, "how the add was answered"),
        ("ClientSendsAddEntryRequests", {"answer": AddAnswer.FENCED}, "how the add was answered"),
        ("BookieSendsAddFencedResponse", {"answer": None}, "how the add was answered"),
        ("ClientReceivesAddConfirmedResponse", {"answer": None}, "how the add was answered"),
        ("ClientClosesLedgerFail", {"move": Move.SEND}, "changes the messages"),
        ("ClientSendsRecoveryReadRequests", {"recovery": False}, "only while recovering"),
        ("ClientCreatesLedger", {"recovery": True}, "does not create the ledger"),
    ],
)
def test_a_self_contradicting_classification_is_refused(
    name: str, change: dict[str, object], message: str
) -> None:
    broken = dataclasses.replace(spec_action(name), **change)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        broken.check()


def test_a_bad_record_built_by_hand_is_refused() -> None:
    """A record made from scratch, not from the table: a bookie that sends requests and says
    how an add was answered in the read phase."""
    bad = SpecAction(
        "BookieSendsSomething",
        Actor.BOOKIE,
        frozenset({Var.MESSAGES}),
        Effect.ANSWER,
        "_bookie_actions",
        phase=Phase.READ,
        move=Move.SEND,
        answer=AddAnswer.CONFIRMED,
    )
    with pytest.raises(ValueError, match=r"BookieSendsSomething: .*ANSWER.*how the add"):
        bad.check()


def test_each_action_is_classified_uniquely_and_a_query_names_it() -> None:
    assert len({classification(a) for a in ACTION_TABLE}) == len(ACTION_TABLE)
    for a in ACTION_TABLE:
        found = the_action(
            actor=a.actor,
            phase=a.phase,
            move=a.move,
            answer=a.answer,
            recovery=a.recovery,
            write_ends=a.write_ends,
        )
        assert found == a.name


def test_two_records_classified_alike_are_refused() -> None:
    twin = dataclasses.replace(ACTION_TABLE[0], name="BookieSendsAddConfirmedResponseToo")
    table = (*ACTION_TABLE, twin)
    with pytest.raises(ValueError, match=r"no query tells them apart.*ResponseToo"):
        check_table(table, encoding_digest(table))


def test_the_action_finds_one_action_by_what_it_is() -> None:
    start = the_action(actor=Actor.CLIENT, phase=Phase.FENCING, move=Move.SEND, recovery=True)
    assert start == "ClientStartsRecovery"
    close = the_action(phase=Phase.CLOSE, write_ends=WriteEnd.VERSION_MISMATCH)
    assert close == "ClientClosesLedgerFail"
    assert the_action(phase=[Phase.FAULT]) == "BookieRestartsEmpty"  # a list of phases too


def test_the_action_refuses_an_ambiguous_or_empty_query_and_names_the_matches() -> None:
    with pytest.raises(ValueError, match=r"2 actions match .*ClientClosesLedgerSuccess"):
        the_action(actor=Actor.CLIENT, phase=Phase.CLOSE, recovery=False)
    with pytest.raises(ValueError, match=r"0 actions match \(actor=Actor.FAULT, move=Move.SEND"):
        the_action(actor=Actor.FAULT, move=Move.SEND)


def test_actions_where_matches_every_given_attribute() -> None:
    assert actions_where() == frozenset(ALL_ACTIONS)
    assert actions_where(actor=Actor.BOOKIE) == names_with(Effect.ANSWER)
    assert actions_where(actor=Actor.CLIENT, phase=Phase.ADD, move=Move.SEND) == {
        "ClientSendsAddEntryRequests",
        "ClientWritesBackEntry",
    }
    assert actions_where(phase=Phase.ADD, move=Move.SEND, recovery=False) == {
        "ClientSendsAddEntryRequests"
    }
    writes = actions_where(effect=Effect.METADATA_WRITE, recovery=True)
    assert writes == {"ClientStartsRecovery", "RecoveryClientClosesLedger"}
    both = actions_where(phase=(Phase.CREATE, Phase.FAULT))
    assert both == {"ClientCreatesLedger", "BookieRestartsEmpty"}
    assert actions_where(phase=frozenset({Phase.CREATE, Phase.FAULT})) == both
    assert actions_where(phase=iter([Phase.CREATE, Phase.FAULT])) == both
    assert actions_where(answer=AddAnswer.FENCED) == {
        "BookieSendsAddFencedResponse",
        "ClientReceivesAddFencedResponse",
    }


def test_add_answer_names_both_sides() -> None:
    assert add_answer(Actor.BOOKIE, fenced=False) == "BookieSendsAddConfirmedResponse"
    assert add_answer(Actor.BOOKIE, fenced=True) == "BookieSendsAddFencedResponse"
    # A bookie answers a write-back by the same action as the writer's add.
    assert add_answer(Actor.BOOKIE, False, recovery=True) == "BookieSendsAddConfirmedResponse"
    assert add_answer(Actor.CLIENT, fenced=False) == "ClientReceivesAddConfirmedResponse"
    assert add_answer(Actor.CLIENT, fenced=True) == "ClientReceivesAddFencedResponse"
    recovered = add_answer(Actor.CLIENT, False, recovery=True)
    assert recovered == "RecoveryClientReceivesAddConfirmedResponse"
    with pytest.raises(ValueError, match="never fenced"):
        add_answer(Actor.CLIENT, True, recovery=True)
    with pytest.raises(ValueError, match="only bookies and clients"):
        add_answer(Actor.FAULT, False)


def test_a_repeated_name_is_refused() -> None:
    table = (*ACTION_TABLE, ACTION_TABLE[0])
    with pytest.raises(ValueError, match="twice"):
        check_table(table, encoding_digest(table))


def test_an_unknown_name_is_a_key_error_that_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match="BookieSendsReadResponse"):
        spec_action("ClientEatsLedger")


def _walk(cfg: ModelConfig, rng: random.Random, length: int) -> list[tuple[State, object]]:
    state, steps = init_state(cfg), []
    for _ in range(length):
        enabled = successors(cfg, state)
        if not enabled:
            break
        chosen = rng.choice(enabled)
        steps.append((state, chosen))
        state = chosen.state
    return steps


def test_each_action_changes_exactly_the_variables_the_table_says() -> None:
    """Over random walks, an action never changes a variable outside its record's ``writes``,
    and each variable its record names is changed by some step (the claim is not vacuous)."""
    rng = random.Random(7)
    changed: dict[str, set[Var]] = {}
    for cfg in CONFIGS:
        for _ in range(1_500):
            for before, transition in _walk(cfg, rng, 40):
                after = transition.state  # type: ignore[attr-defined]
                action: SpecAction = spec_action(transition.label.action)  # type: ignore[attr-defined]
                groups = {
                    GROUP_OF[f] for f in State._fields if getattr(before, f) != getattr(after, f)
                }
                assert groups <= action.writes, (action.name, groups - action.writes)
                changed.setdefault(action.name, set()).update(groups)
    assert set(changed) == set(ALL_ACTIONS), set(ALL_ACTIONS) - set(changed)
    for name, groups in changed.items():
        assert groups == spec_action(name).writes, name


def test_actors_and_effects_agree_with_the_labels() -> None:
    rng = random.Random(3)
    for cfg in CONFIGS:
        for _ in range(300):
            for _before, transition in _walk(cfg, rng, 40):
                label = transition.label  # type: ignore[attr-defined]
                action = spec_action(label.action)
                if action.actor is Actor.CLIENT:
                    assert label.client is not None
                elif action.actor is Actor.BOOKIE:
                    assert label.received is not None and label.bookie is not None
                else:
                    assert label.bookie is not None and label.client is None


#: The messages each phase's requests and answers are (the ensemble change resends adds).
KINDS_OF = {
    Phase.ADD: (ADD_ENTRY_REQUEST, ADD_ENTRY_RESPONSE),
    Phase.ENSEMBLE_CHANGE: (ADD_ENTRY_REQUEST, ADD_ENTRY_RESPONSE),
    Phase.FENCING: (FENCE_REQUEST, FENCE_RESPONSE),
    Phase.READ: (READ_REQUEST, READ_RESPONSE),
}


def test_moves_phases_and_answers_agree_with_the_labels() -> None:
    """Over random walks: a SEND step sends requests of its phase and takes nothing, a RECEIVE
    step takes an answer of its phase, an ANSWER step takes a request of its phase and sends
    its answer, a NONE step neither sends nor takes; an add answer's record says how the add
    was answered, and a recovering client's add answers are the write-backs'."""
    rng = random.Random(11)
    seen: set[str] = set()
    for cfg in CONFIGS:
        for _ in range(400):
            for _before, transition in _walk(cfg, rng, 40):
                label = transition.label  # type: ignore[attr-defined]
                action = spec_action(label.action)
                seen.add(action.name)
                sent = [m for m, _delivered in label.sent]
                got = label.received
                if action.move is Move.NONE:
                    assert got is None and not sent, action.name
                    continue
                request, response = KINDS_OF[action.phase]
                if action.move is Move.SEND:
                    assert got is None and sent, action.name
                    assert {m.kind for m in sent} == {request}, action.name
                elif action.move is Move.RECEIVE:
                    assert got is not None and got.kind == response and not sent, action.name
                else:
                    assert got is not None and got.kind == request, action.name
                    assert [m.kind for m in sent] == [response], action.name
                if action.answer is not None:
                    reply = got if action.move is Move.RECEIVE else sent[0]
                    assert isinstance(reply, AddEntryResponse), action.name
                    assert reply.success == (action.answer is AddAnswer.CONFIRMED), action.name
                    if action.move is Move.RECEIVE:
                        assert reply.recovery == action.recovery, action.name
    assert seen == set(ALL_ACTIONS), set(ALL_ACTIONS) - seen
