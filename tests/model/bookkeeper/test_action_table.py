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
    Effect,
    SpecAction,
    Var,
    WriteEnd,
    check_table,
    encoding_digest,
    names_with,
    spec_action,
)
from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import State

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
)


def test_the_table_names_each_spec_action_once_in_the_encodings_order() -> None:
    assert len(ALL_ACTIONS) == 4 + 17 + 1
    assert ALL_ACTIONS[:4] == tuple(sorted(names_with(Effect.ANSWER)))
    assert ALL_ACTIONS[-1] == "BookieRestartsEmpty"
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
