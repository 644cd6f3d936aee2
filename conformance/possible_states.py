"""The model states still possible: every state some explanation of the run so far leaves.

A run's answers usually leave one model state. A race does not always: when two serial orders
of it explain its answers, each leaves a state of its own, and what tells them apart may come
many steps later (two adds raced at one bookie leave the LAC of whichever came last; only a
later fence read of that bookie shows it). A judge that keeps one of them guesses, and a later
answer the other one predicts is then a false divergence. So the judge keeps **every** state
still possible, as Knossos and Porcupine keep every configuration of a linearizability search
still open: each step is taken from each kept state, a state whose prediction an answer
contradicts is dropped, and a divergence is reported only when no kept state explains the
answer.

Each kept state is a :class:`Possible`: the state, the trace that reached it (what a finding
shows) and every invariant broken on that trace. An invariant is broken *for certain* only when
every possible trace breaks it (:func:`certain_violations`); until then the answers are still
explained by a trace that breaks nothing.

The set is bounded (:data:`MAX_POSSIBLE_STATES`): past the bound the run is undecided, never a
guess among the states (``Execution`` says so).

Steps are chosen from the first kept state (the *primary*: the explanation found first). The
same step from another kept state is the one with the same event (action, actor, the message
it processes and the fate of each message it sends: :func:`corresponding`); a kept state with
no such step cannot have taken the step the run took and is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from model.bookkeeper.actions import Label, Transition, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import Invariant, violated
from model.bookkeeper.records import State
from model.search.bfs import Step

#: At most this many model states are kept at once. A race of four requests has 24 serial
#: orders; the states they leave differ only in what no answer showed yet (a bookie's LAC), and
#: a later answer usually tells them apart. Past the bound the run decides nothing.
MAX_POSSIBLE_STATES = 64


@dataclass(frozen=True)
class Possible:
    """One model state still possible, the trace that reached it and the invariants broken
    anywhere on that trace."""

    state: State
    trace: tuple[Step[State, Label], ...]
    broken: frozenset[str] = frozenset()

    @classmethod
    def initial(cls, state: State) -> Possible:
        return cls(state, (Step(None, state),))

    def then(
        self, cfg: ModelConfig, invariants: tuple[Invariant, ...], transition: Transition
    ) -> Possible:
        """This possibility after ``transition`` (a step from :attr:`state`)."""
        broken = violated(cfg, transition.state, invariants)
        return Possible(
            transition.state,
            (*self.trace, Step(transition.label, transition.state)),
            self.broken.union(broken) if broken else self.broken,
        )


def _event(label: Label) -> tuple[object, ...]:
    """What identifies a step across kept states: who took which action on which message, and
    which of the messages it sent are delivered (their contents may differ: a fence read's
    answer carries the bookie's LAC, the very thing the kept states may disagree on)."""
    return (
        label.action,
        label.client,
        label.bookie,
        label.received,
        label.detail,
        tuple(delivered for _message, delivered in label.sent),
    )


def corresponding(cfg: ModelConfig, state: State, label: Label) -> list[Transition]:
    """The steps from ``state`` that are the event ``label`` describes (taken from another
    kept state): none when ``state`` cannot take it."""
    wanted = _event(label)
    return [t for t in successors(cfg, state) if _event(t.label) == wanted]


def distinct(possibles: Iterable[Possible]) -> list[Possible]:
    """One possibility per state: the first's trace (the explanation found first), and the
    invariants broken on *every* trace that reached the state (a trace that broke nothing
    reached it too: nothing is certain there)."""
    seen: dict[State, Possible] = {}
    for possible in possibles:
        first = seen.get(possible.state)
        if first is None:
            seen[possible.state] = possible
        elif not first.broken <= possible.broken:
            seen[possible.state] = Possible(
                first.state, first.trace, first.broken & possible.broken
            )
    return list(seen.values())


def certain_violations(possibles: Sequence[Possible]) -> frozenset[str]:
    """The invariants every possible trace breaks: broken for certain, whichever explanation
    is the true one."""
    if not possibles:
        return frozenset()
    certain = possibles[0].broken
    for possible in possibles[1:]:
        certain &= possible.broken
    return certain


__all__ = [
    "MAX_POSSIBLE_STATES",
    "Possible",
    "certain_violations",
    "corresponding",
    "distinct",
]
