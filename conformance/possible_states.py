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

The same set holds what the bookies did on their own (``bookie_recovers_limbo``: BP-46's
data-integrity service recovering a limbo ledger through the bookie's internal client). No
harness drives those steps; when an answer, the ledger's metadata or the run's end is
explained by no kept state, the states the bookies' own steps lead to are searched for those
that explain it (:func:`after_internal_steps`, trace validation of an observed actor); when
none do, the same steps placed before an earlier observation, with every observation since
judged again (:func:`with_internal_steps_earlier`).

Steps are chosen from the first kept state (the *primary*: the explanation found first). The
same step from another kept state is the one with the same event (action, actor, the message
it processes and the fate of each message it sends; for a bookie, the request it processes,
whichever answer: :func:`corresponding`); a kept state with no such step cannot have taken the
step the run took and is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from conformance.errors import ConformanceError
from model.bookkeeper.action_table import Effect, spec_action
from model.bookkeeper.actions import Label, Transition, bookie_internal, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import Invariant, violated
from model.bookkeeper.records import State
from model.search.bfs import Step

#: At most this many model states are kept at once. A race of four requests has 24 serial
#: orders; the states they leave differ only in what no answer showed yet (a bookie's LAC), and
#: a later answer usually tells them apart. Past the bound the run decides nothing.
MAX_POSSIBLE_STATES = 64
#: The bookies' own steps (``bookie_recovers_limbo``) that may explain one observation, and the
#: model states visited looking for them: a whole recovery by the bookies' client, its closing
#: of the ledger and a bookie leaving limbo take about 20 steps with two bookies.
MAX_INTERNAL_STEPS = 60
MAX_INTERNAL_STATES = 50_000
#: The bookies' own steps placed before an earlier observation than the one that needs them
#: (:func:`with_internal_steps_earlier`): model states visited over every place tried.
MAX_EARLIER_STATES = 20_000


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
    # A bookie processing a request is one event whatever it answers: which answer (an add
    # confirmed or fenced: two actions of the spec) is what the kept states may disagree on.
    kind = "answer" if spec_action(label.action).effect is Effect.ANSWER else label.action
    return (
        kind,
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


class InternalSearchExhausted(ConformanceError):
    """The bookies' own steps that could explain an observation are more than the bound."""


def _internal_levels(
    cfg: ModelConfig,
    invariants: tuple[Invariant, ...],
    possibles: Sequence[Possible],
    counted: Callable[[], None],
) -> Iterator[list[Possible]]:
    """The possibilities the bookies' own steps (:func:`bookie_internal`) lead to from
    ``possibles``, one list per number of steps (1, 2, ... up to :data:`MAX_INTERNAL_STEPS`),
    breadth first, each state once (the first trace found to it), until no state is new.
    None of those steps loses a message: the bookies' client talks to them directly, not
    through anything a harness faults. ``counted`` is called for every new state (the
    callers' bounds: it raises to stop)."""
    seen = {p.state for p in possibles}
    frontier = list(possibles)
    for _depth in range(MAX_INTERNAL_STEPS):
        following: list[Possible] = []
        for possible in frontier:
            for step in successors(cfg, possible.state):
                if step.label.lost or not bookie_internal(cfg, step.label):
                    continue
                if step.state in seen:
                    continue
                seen.add(step.state)
                counted()
                following.append(possible.then(cfg, invariants, step))
        if not following:
            return
        yield following
        frontier = following


def after_internal_steps(
    cfg: ModelConfig,
    invariants: tuple[Invariant, ...],
    possibles: Sequence[Possible],
    accept: Callable[[Possible], bool],
) -> list[Possible]:
    """Trace validation of the bookies' own actor (``bookie_recovers_limbo``): the
    possibilities that the **fewest** of the bookies' own steps (:func:`bookie_internal`:
    their internal client's recovery, the bookies' answers to it, a bookie leaving limbo)
    lead to from ``possibles`` and that ``accept`` takes, breadth first. Fewest: every longer
    sequence that explains the observation goes on from one of these (a fence that explains
    an EFENCED stays), and what the bookies did after it is searched again, from the states
    kept, when a later observation needs it; keeping every longer one would keep hundreds of
    states that no answer has told apart yet.
    :class:`InternalSearchExhausted` past :data:`MAX_INTERNAL_STATES` states or
    :data:`MAX_INTERNAL_STEPS` steps with states still new: the run then cannot decide."""
    if cfg.internal_client is None:
        return []
    states = len({p.state for p in possibles})

    def counted() -> None:
        nonlocal states
        states += 1
        if states > MAX_INTERNAL_STATES:
            raise InternalSearchExhausted(
                f"more than {MAX_INTERNAL_STATES} model states of the bookies' own steps"
            )

    depth = 0
    for level in _internal_levels(cfg, invariants, possibles, counted):
        depth += 1
        found = [reached for reached in level if accept(reached)]
        if found:
            return found
    if depth == MAX_INTERNAL_STEPS:
        raise InternalSearchExhausted(f"the bookies' own steps go on past {MAX_INTERNAL_STEPS}")
    return []


def with_internal_steps_earlier(
    cfg: ModelConfig,
    invariants: tuple[Invariant, ...],
    befores: Sequence[Sequence[Possible]],
    replay: Callable[[Sequence[Possible], int], Sequence[Possible]],
) -> tuple[int, list[Possible]]:
    """The bookies' own steps taken **earlier** than the observation that shows them.

    :func:`after_internal_steps` looks for the bookies' steps from the states kept when an
    observation needs them. They may have been taken long before: a bookie's data-integrity
    service recovers a limbo ledger as soon as the bookie is back (4.18.0 starts it with the
    bookie), and what the harness did meanwhile may have changed what that recovery would
    read from then on (a write-back reached a bookie after the recovery had read it). Then no
    steps from the states kept explain the observation, while the same steps placed earlier do.

    ``befores[k]`` are the states still possible before the k-th observation judged so far
    (the last: the one nothing kept explains); ``replay(states, k)`` judges the observations
    from the k-th on from ``states`` (the run's answers again, each from every state) and
    gives what survives (empty: not explained). For each k from the first on, the states that
    the bookies' own steps lead to from ``befores[k]`` are replayed, fewest steps first: the
    first k and count that explain every observation from k on give ``(k, survivors)``;
    ``(-1, [])`` when none does. :class:`InternalSearchExhausted` past
    :data:`MAX_EARLIER_STATES` states of the bookies' steps in all."""
    visited = 0

    def counted() -> None:
        nonlocal visited
        visited += 1
        if visited > MAX_EARLIER_STATES:
            raise InternalSearchExhausted(
                f"more than {MAX_EARLIER_STATES} model states of the bookies' own steps "
                "placed earlier"
            )

    for k, before in enumerate(befores):
        for level in _internal_levels(cfg, invariants, before, counted):
            survivors = list(replay(level, k))
            if survivors:
                return k, survivors
    return -1, []


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
    "MAX_EARLIER_STATES",
    "MAX_INTERNAL_STATES",
    "MAX_INTERNAL_STEPS",
    "MAX_POSSIBLE_STATES",
    "InternalSearchExhausted",
    "Possible",
    "after_internal_steps",
    "certain_violations",
    "corresponding",
    "distinct",
    "with_internal_steps_earlier",
]
