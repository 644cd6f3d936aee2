"""Replaying an interleaving step by step, naming each step by its TLA+ action and servers.

``step("LeaderProcessCEPOCH", "s2", "s3")`` names ``LeaderProcessCEPOCH(s2, s3)``: the
arguments are the spec's ``i`` and ``j``, in its order. Exactly one successor must match; any
other outcome is an error that lists the enabled steps, so a replay that drifts from the model
fails loudly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from model.errors import ModelError
from model.search.bfs import Step
from model.zab.protocol.actions import Label, Transition, initial_state, successors
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.records import State
from model.zab.protocol.render import describe_step


class ScriptError(ModelError, AssertionError):
    """A scripted step matched no successor, or more than one."""


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
    options = successors(cfg, state)
    chosen = [t for t in options if scripted.matches(t.label)]
    if len(chosen) == 1:
        return chosen[0]
    listing = "\n  ".join(describe_step(t.label) for t in options) or "(no successor)"
    verdict = "matches no successor" if not chosen else f"matches {len(chosen)} successors"
    raise ScriptError(f"{scripted} {verdict}; enabled steps:\n  {listing}")


def enabled(cfg: ZabConfig, state: State, scripted: ScriptedStep) -> bool:
    """Whether ``scripted`` names a successor of ``state``."""
    return any(scripted.matches(t.label) for t in successors(cfg, state))


def run_script(
    cfg: ZabConfig, script: Sequence[ScriptedStep], start: State | None = None
) -> list[Step[State, Label]]:
    """Replay ``script`` from ``start`` (default: the initial state); returns the trace."""
    state = initial_state(cfg) if start is None else start
    trace: list[Step[State, Label]] = [Step(None, state)]
    for number, scripted in enumerate(script, start=1):
        try:
            transition = take(cfg, state, scripted)
        except ScriptError as exc:
            raise ScriptError(f"step {number}: {exc}") from None
        state = transition.state
        trace.append(Step(transition.label, state))
    return trace
