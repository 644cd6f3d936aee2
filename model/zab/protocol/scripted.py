"""Replaying an interleaving step by step, naming each step by its TLA+ action and servers.

``step("LeaderProcessCEPOCH", "s2", "s3")`` names ``LeaderProcessCEPOCH(s2, s3)``: the
arguments are the spec's ``i`` and ``j``, in its order. Exactly one successor must match; any
other outcome is an error that lists the enabled steps, so a replay that drifts from the model
fails loudly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from model.search.bfs import Step
from model.search.scripted import ScriptError, names_any, replay_script, take_named
from model.zab.protocol.actions import Label, Transition, initial_state, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import State
from model.zab.protocol.render import describe_step


def server(name: str) -> int:
    """``"s1"`` -> 0."""
    if not name.startswith("s") or not name[1:].isdigit() or int(name[1:]) < 1:
        raise ScriptError(f"expected a server name like s1, got {name!r}")
    return int(name[1:]) - 1


@dataclass(frozen=True)
class ScriptedStep:
    """One step: the action and its arguments ``i`` (and ``j``) as server names."""

    action: str
    i: str
    j: str | None = None

    def matches(self, label: Label) -> bool:
        if label.action != self.action or label.i != server(self.i):
            return False
        return self.j is None or label.j == server(self.j)

    def __str__(self) -> str:
        return f"{self.action}({self.i}{'' if self.j is None else ', ' + self.j})"


def step(action: str, i: str, j: str | None = None) -> ScriptedStep:
    return ScriptedStep(action, i, j)


def take(cfg: ZabConfig, state: State, scripted: ScriptedStep) -> Transition:
    """The one successor of ``state`` that ``scripted`` names."""
    return take_named(successors(cfg, state), scripted, describe_step)


def enabled(cfg: ZabConfig, state: State, scripted: ScriptedStep) -> bool:
    """Whether ``scripted`` names a successor of ``state``."""
    return names_any(successors(cfg, state), scripted)


def run_script(
    cfg: ZabConfig, script: Sequence[ScriptedStep], start: State | None = None
) -> list[Step[State, Label]]:
    """Replay ``script`` from ``start`` (default: the initial state); returns the trace."""
    first = initial_state(cfg) if start is None else start
    return replay_script(
        first,
        lambda state, scripted: take(cfg, state, scripted),  # type: ignore[arg-type]
        script,
    )
