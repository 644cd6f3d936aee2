"""``model.replacer``: the same record as ``_replace``, and clear errors for what it cannot do."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import ClientState, State
from model.replacer import replacer


class Point(NamedTuple):
    x: int
    y: int
    z: int = 0


def test_replaces_the_named_fields_and_keeps_the_rest() -> None:
    replace = replacer(Point, "z", "x")
    moved = replace(Point(1, 2, 3), 30, 10)
    assert moved == Point(10, 2, 30)
    assert type(moved) is Point


def test_equals_replace_on_a_model_state() -> None:
    state = init_state(ModelConfig(bookies=3, clients=2))
    messages = frozenset({("m", 1)})
    with_clients = replacer(State, "clients", "messages")
    assert with_clients(state, state.clients[::-1], messages) == state._replace(
        clients=state.clients[::-1], messages=messages
    )
    client = state.clients[1]
    with_lac = replacer(ClientState, "fenced", "lac", "lap")
    assert with_lac(client, 5, 1, 2) == client._replace(fenced=5, lac=1, lap=2)
    assert hash(with_lac(client, 5, 1, 2)) == hash(client._replace(fenced=5, lac=1, lap=2))


def test_a_record_of_another_length_is_refused() -> None:
    replace = replacer(Point, "y")
    with pytest.raises(ValueError):
        replace((1, 2), 5)


@pytest.mark.parametrize("fields", [(), ("w",), ("x", "x")])
def test_unknown_missing_or_repeated_fields_are_refused(fields: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="fields to replace"):
        replacer(Point, *fields)


def test_a_field_named_like_the_generated_code_is_refused() -> None:
    class Shadowing(NamedTuple):
        cls: int
        record: int

    with pytest.raises(ValueError, match="cannot name"):
        replacer(Shadowing, "cls")


def test_the_function_says_what_it_replaces() -> None:
    replace = replacer(Point, "x", "y")
    assert replace.__name__ == "replace_x_y"
    assert "x, y" in (replace.__doc__ or "")


def test_values_by_keyword_in_any_order() -> None:
    replace = replacer(Point, "x", "z")
    assert replace(Point(1, 2, 3), z=30, x=10) == Point(10, 2, 30)
    with pytest.raises(TypeError):
        replace(Point(1, 2, 3), x=10)  # every replaced field must be given
