"""Naming a step among a state's successors, whichever spec it is of."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from model.search.scripted import ScriptError, names_any, replay_script, take_named


@dataclass(frozen=True)
class Move:
    label: str
    state: int


@dataclass(frozen=True)
class Named:
    action: str

    def matches(self, label: str) -> bool:
        return label == self.action


def moves(state: int) -> list[Move]:
    return [Move("inc", state + 1), Move("double", state * 2)] if state < 10 else []


def test_a_name_matches_some_successor_or_none() -> None:
    assert names_any(moves(1), Named("inc"))
    assert not names_any(moves(1), Named("dec"))
    assert not names_any(moves(10), Named("inc"))


def test_a_script_replays_and_a_drift_is_an_error_listing_the_enabled_steps() -> None:
    def take(state: int, scripted: Named) -> Move:
        return take_named(moves(state), scripted, str)

    trace = replay_script(1, take, [Named("inc"), Named("double")])  # type: ignore[arg-type]
    assert [(s.label, s.state) for s in trace] == [(None, 1), ("inc", 2), ("double", 4)]
    with pytest.raises(ScriptError, match=r"step 2: .* matches no successor; enabled steps"):
        replay_script(1, take, [Named("inc"), Named("dec")])  # type: ignore[arg-type]
