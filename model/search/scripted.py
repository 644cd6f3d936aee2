"""Replaying a script of named steps on any spec: each scripted step must name exactly one
successor of the state reached so far, and any other outcome is a ``ScriptError`` that lists
the enabled steps, so a replay that drifts from the model fails loudly. The specs say how a
step is named (``model.bookkeeper.scripted``, ``model.zab.protocol.scripted``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol, TypeVar

from model.errors import ModelError
from model.search.bfs import Step

S = TypeVar("S", bound=Hashable)
L = TypeVar("L")
L_contra = TypeVar("L_contra", contravariant=True)
S_co = TypeVar("S_co", covariant=True)
L_co = TypeVar("L_co", covariant=True)


class ScriptError(ModelError, AssertionError):
    """A scripted step matched no successor, or more than one."""


class Named(Protocol[L_contra]):
    """A scripted step: says whether a successor's label is the step it names."""

    def matches(self, label: L_contra) -> bool: ...


class Labelled(Protocol[L_co, S_co]):
    """A successor: its label and the state it leads to (a spec's ``Transition``)."""

    @property
    def label(self) -> L_co: ...

    @property
    def state(self) -> S_co: ...


T = TypeVar("T", bound=Labelled[object, object])


def take_named(options: Sequence[T], scripted: Named[L], describe: Callable[[L], str]) -> T:
    """The one of ``options`` that ``scripted`` names (ScriptError otherwise)."""
    chosen = [t for t in options if scripted.matches(t.label)]  # type: ignore[arg-type]
    if len(chosen) == 1:
        return chosen[0]
    listing = "\n  ".join(describe(t.label) for t in options) or "(no successor)"  # type: ignore[arg-type]
    verdict = "matches no successor" if not chosen else f"matches {len(chosen)} successors"
    raise ScriptError(f"{scripted} {verdict}; enabled steps:\n  {listing}")


def names_any(options: Sequence[Labelled[L, object]], scripted: Named[L]) -> bool:
    """Whether ``scripted`` names at least one of ``options`` (a state's successors)."""
    return any(scripted.matches(t.label) for t in options)


def replay_script(
    start: S,
    take: Callable[[S, Named[L]], Labelled[L, S]],
    script: Sequence[Named[L]],
) -> list[Step[S, L]]:
    """Replay ``script`` from ``start`` with the spec's ``take``; returns the trace."""
    state = start
    trace: list[Step[S, L]] = [Step(None, state)]
    for number, scripted in enumerate(script, start=1):
        try:
            transition = take(state, scripted)
        except ScriptError as exc:
            raise ScriptError(f"step {number}: {exc}") from None
        state = transition.state
        trace.append(Step(transition.label, state))
    return trace
