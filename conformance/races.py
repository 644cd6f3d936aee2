"""Races: requests in flight to bookies together, judged by the serial orders the model allows.

A *race* is a set of requests the model's bookies could each process next, and at most one
restart of a bookie (:class:`Restart`), sent to the target at once, each request on a
connection of its own, their invocation and completion times recorded (:class:`Timed`). A real
bookie serves them on its thread pools, concurrently; the spec's bookie steps are atomic. The
answers are accepted when some **serial order** of the race explains them (Jepsen's
linearizability, with the model as the specification): an order consistent with real time (an
operation completed before another was invoked comes first) in which each request, processed by
the model's bookie step in turn, gets exactly the answer observed. Otherwise the race is a
divergence that names the requests and, for each order tried, the first answer it could not
explain (:func:`explain`).

Every explaining order is found, not only the first (the invocation order is tried first):
a bookie step's effect is a function of its request and its answer (an add answered EOK stores
its entry, a fence read fences, an add answered EFENCED and a read change nothing, each answer
joins its channel, a restart's place is shown by the answers of the requests it lost), and
these effects commute (a set union, a flag set), except the bookie's LAC, which is the last
add's in the spec and, with ``lac_of_highest_entry``, the highest entry's: two adds racing at
one bookie (with the switch: two copies of one entry, the writer's and a write-back) leave the
LAC of whichever the order puts last, and only a later fence read of that bookie shows it. So
the engine keeps the state of every explaining order (:mod:`conformance.possible_states`) and
lets the later answers choose; a race is judged from each state still possible
(:func:`explain_from`).

Refinement, where the spec's step is not BookKeeper's: the spec's bookie takes a client's adds
in entry order (``IsEarliestMsg``), so a race never holds two adds of one client's stream to
one bookie (only the earliest is enabled); the spec takes a client's other requests to a
bookie in any order, and a race sends each on a connection of its own. A bookie that serves a
fence read and an add concurrently must still act as if one came first: that is what the judge
checks.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.gated_races import GateReport, GateTally
from conformance.observations import Observation, differences, predicted
from model.bookkeeper.action_table import Effect, spec_action
from model.bookkeeper.actions import Transition, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import BOOKIE_AS_IMPLEMENTED
from model.bookkeeper.records import LOST, Message, State, bookie_name, client_name
from model.bookkeeper.render import describe_message

#: At most this many requests race at once: 4! = 24 serial orders at most to try.
MAX_RACE = 4

#: A writer and a recovering client on three bookies, two entries: the configuration the race
#: search is tested and measured on (tests/conformance/test_races_on_reference_bookies.py,
#: benchmarks/false_alarms.py). The writer's second add carries LAC 1, so a fence read that
#: misses it answers a LAC no serial order gives. The bookie's LAC is its highest entry's, as
#: the reference bookie's and real BookKeeper's are (``bkconform run``'s default): with the
#: spec's (the last add's), a write-back of e1 after e2 leaves LAC 0 in the model and 1 on a
#: correct bookie, a false divergence (issue 46).
TWO_CLIENTS_TWO_ENTRIES = BOOKIE_AS_IMPLEMENTED.apply(
    ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2, inflight_limit=2)
)


@dataclass(frozen=True)
class Timed:
    """One raced operation's answer, with when it was sent and answered (``time.monotonic``).
    ``observation`` None: no answer came, the connection closed under a restart of its bookie
    in the same race."""

    observation: Observation | None
    invoked: float
    completed: float
    #: In a gated race (:mod:`conformance.gated_races`): what its gate did to this request.
    gate: GateReport | None = None


@dataclass(frozen=True)
class Restart:
    """A member of a race that is no request: the bookie restarts without its data (the
    spec's ``BookieRestartsEmpty``) while the race's requests to it are in flight."""

    bookie: int


#: What a race is made of: requests, and at most one restart.
Member = Message | Restart
#: What a restart's operation answers (the target's ``Crash``).
RESTARTED = Observation("crash", "restarted")


def describe_request(request: Member) -> str:
    """A raced request, named with its client and its bookie (``c1's add e2 (lac=1) to b1``),
    or a restart (``b1 restarts empty``)."""
    if isinstance(request, Restart):
        return f"{bookie_name(request.bookie)} restarts empty"
    sender = client_name(request.cid)
    return f"{sender}'s {describe_message(request)} to {bookie_name(request.bookie)}"


def is_bookie_step(transition: Transition) -> bool:
    """Whether the step is a bookie processing a request and answering it (what can race)."""
    return spec_action(transition.label.action).effect is Effect.ANSWER


def is_restart_step(transition: Transition) -> bool:
    """Whether the step is a bookie restarting without its data (a crash)."""
    return spec_action(transition.label.action).effect is Effect.CRASH


def member_of(transition: Transition) -> Member:
    """What a race step is: the request it processes, or the restart."""
    if is_restart_step(transition):
        assert transition.label.bookie is not None
        return Restart(transition.label.bookie)
    assert transition.label.received is not None
    return transition.label.received


def raceable(enabled: Sequence[Transition]) -> list[Transition]:
    """The steps of ``enabled`` that may race: the bookie steps, one per request (its answer
    delivered, the variant a race takes), and the bookie restarts, in ``enabled``'s order."""
    chosen: dict[Member, Transition] = {}
    for t in enabled:
        if is_restart_step(t) or (
            t.label.received is not None and is_bookie_step(t) and not t.label.lost
        ):
            chosen.setdefault(member_of(t), t)
    return list(chosen.values())


def bookie_step_for(cfg: ModelConfig, state: State, request: Member) -> Transition | None:
    """The model's step that processes ``request`` from ``state``, its answer delivered, or
    carries out the restart; None when the model has none (the request is not its channel's
    next, or a restart lost it)."""
    for t in successors(cfg, state):
        if isinstance(request, Restart):
            if is_restart_step(t) and t.label.bookie == request.bookie:
                return t
        elif t.label.received == request and is_bookie_step(t) and not t.label.lost:
            return t
    return None


def _lost(state: State, request: Member) -> bool:
    """Whether a restart lost ``request`` (the spec's lost message)."""
    return any(m == request and count == LOST for m, count in state.messages)


def predicted_answers(
    cfg: ModelConfig, state: State, requests: Sequence[Member]
) -> tuple[Observation | None, ...] | None:
    """The answers the model gives ``requests`` carried out in this order from ``state``
    (None for a request a restart before it lost; None for all: the model cannot so)."""
    answers: list[Observation | None] = []
    for request in requests:
        step = bookie_step_for(cfg, state, request)
        if step is None:
            if _lost(state, request):
                answers.append(None)
                continue
            return None
        answers.append(_answer_of(step))
        state = step.state
    return tuple(answers)


def _answer_of(step: Transition) -> Observation:
    if is_restart_step(step):
        return RESTARTED
    ((reply, _delivered),) = step.label.sent
    return predicted(reply)


def order_sensitivity(cfg: ModelConfig, state: State, a: Member, b: Member) -> int:
    """How many of the two answers the model gives ``a`` and ``b`` depend on which a bookie
    processes first: 2 when each sees the other (a fence read and an add that raises the
    bookie's LAC: the add is fenced, or the fence read returns its LAC), 1 when one does (a
    fence read and an add that leaves the LAC as it was), 0 when neither does. Only where both
    see each other can a bookie that serves them non-atomically (neither seeing the other) be
    caught by its answers."""
    first = predicted_answers(cfg, state, (a, b))
    second = predicted_answers(cfg, state, (b, a))
    if first is None or second is None:
        return 0
    return (first[0] != second[1]) + (first[1] != second[0])


def order_sensitive(cfg: ModelConfig, state: State, a: Member, b: Member) -> bool:
    """Whether the model's answers to ``a`` and ``b`` depend on their order at all."""
    return order_sensitivity(cfg, state, a, b) > 0


@dataclass(frozen=True)
class ExplainingOrder:
    """A serial order that explains a race's answers: from which of the states still possible
    it starts (an index into the states judged), the order (indices into the race's
    requests) and its model steps, each with its member's index (a request a restart lost has
    none)."""

    start: int
    order: tuple[int, ...]
    steps: tuple[tuple[int, Transition], ...]


@dataclass
class Explanation:
    """What the judge found for one race: every explaining order, from every state judged."""

    requests: tuple[Member, ...]
    explaining: list[ExplainingOrder] = field(default_factory=list)
    #: How many orders were tried, and for each one that failed from the first state, why.
    tried: int = 0
    failures: list[str] = field(default_factory=list)
    #: How many states still possible the race was judged from.
    states: int = 1
    seconds: float = 0.0

    @property
    def explained(self) -> bool:
        return bool(self.explaining)

    @property
    def order(self) -> tuple[int, ...] | None:
        """The first explaining order (None: none explains)."""
        return self.explaining[0].order if self.explaining else None

    @property
    def steps(self) -> list[tuple[int, Transition]]:
        """The first explaining order's steps."""
        return list(self.explaining[0].steps) if self.explaining else []

    def describe_order(self, order: Sequence[int]) -> str:
        return " then ".join(describe_request(self.requests[i]) for i in order)

    def finding(self) -> str:
        """The divergence of a race no order explains."""
        names = "; ".join(describe_request(r) for r in self.requests)
        judged = (
            f" from any of the {self.states} model states still possible" if self.states > 1 else ""
        )
        return (
            f"no serial order of the {len(self.requests)} concurrent requests ({names}) "
            f"explains their answers{judged} ({self.tried} orders tried): "
            + " | ".join(self.failures)
        )


def _respects_real_time(order: Sequence[int], answers: Sequence[Timed]) -> bool:
    """Whether no operation comes after one that was invoked only after it completed."""
    return not any(
        answers[later].completed < answers[earlier].invoked
        for position, earlier in enumerate(order)
        for later in order[position + 1 :]
    )


def _orders(answers: Sequence[Timed]) -> list[tuple[int, ...]]:
    """Every real-time order, the invocation order first (then as itertools gives them)."""
    by_invocation = tuple(sorted(range(len(answers)), key=lambda i: (answers[i].invoked, i)))
    rest = [
        o
        for o in itertools.permutations(range(len(answers)))
        if o != by_invocation and _respects_real_time(o, answers)
    ]
    first = [by_invocation] if _respects_real_time(by_invocation, answers) else []
    return first + rest


def explain(
    cfg: ModelConfig,
    state: State,
    requests: Sequence[Member],
    answers: Sequence[Timed],
) -> Explanation:
    """Every serial order of ``requests`` (raced from ``state``) whose model steps predict
    exactly ``answers`` (``answers[i]`` is ``requests[i]``'s)."""
    return explain_from(cfg, (state,), requests, answers)


def explain_from(
    cfg: ModelConfig,
    states: Sequence[State],
    requests: Sequence[Member],
    answers: Sequence[Timed],
) -> Explanation:
    """Every serial order of ``requests``, raced from any of ``states`` (the model states
    still possible), that predicts exactly ``answers``; the failures are the first state's."""
    if len(requests) != len(answers):
        raise ValueError(f"{len(requests)} requests raced, {len(answers)} answers")
    if not states:
        raise ValueError("a race is judged from at least one model state")
    started = time.perf_counter()
    result = Explanation(tuple(requests), states=len(states))
    orders = _orders(answers)
    for start, state in enumerate(states):
        for order in orders:
            result.tried += 1
            steps, why = _serial(cfg, state, requests, answers, order)
            if why is None:
                result.explaining.append(ExplainingOrder(start, order, tuple(steps)))
            elif start == 0:
                result.failures.append(f"{result.describe_order(order)}: {why}")
    result.seconds = time.perf_counter() - started
    return result


def _serial(
    cfg: ModelConfig,
    state: State,
    requests: Sequence[Member],
    answers: Sequence[Timed],
    order: Sequence[int],
) -> tuple[list[tuple[int, Transition]], str | None]:
    """The model's steps for ``order``, or why it does not explain the answers. A request
    with no answer is explained only where a restart before it in the order lost it."""
    steps: list[tuple[int, Transition]] = []
    for i in order:
        name, observed = describe_request(requests[i]), answers[i].observation
        step = bookie_step_for(cfg, state, requests[i])
        if step is None:
            if observed is None and _lost(state, requests[i]):
                continue  # lost in the restart, as the spec's crash loses it
            return steps, f"the model cannot carry out {name}"
        if observed is None:
            return steps, f"{name}: no answer, where the model's bookie answers"
        diffs = differences(_answer_of(step), observed)
        if diffs:
            return steps, f"{name}: {'; '.join(diffs)}"
        steps.append((i, step))
        state = step.state
    return steps, None


@dataclass
class RaceTally:
    """How much racing a run did: its concurrent steps, the orders the judge checked, and its
    longest search for an explaining order."""

    races: int = 0
    concurrent_steps: int = 0
    orders_checked: int = 0
    longest_search: int = 0
    longest_search_s: float = 0.0
    unexplained: int = 0
    #: Races whose explaining orders left more than one model state, and the most model
    #: states the judge kept at once (:mod:`conformance.possible_states`).
    ambiguous: int = 0
    most_states: int = 1
    #: What the gated races (:mod:`conformance.gated_races`) among them reached.
    gates: GateTally = field(default_factory=GateTally)

    def add(self, explanation: Explanation, kept: int = 1) -> None:
        """Count a race; ``kept``: the model states still possible after it."""
        self.races += 1
        self.concurrent_steps += len(explanation.requests)
        self.orders_checked += explanation.tried
        self.longest_search = max(self.longest_search, explanation.tried)
        self.longest_search_s = max(self.longest_search_s, explanation.seconds)
        self.unexplained += not explanation.explained
        self.ambiguous += kept > 1
        self.most_states = max(self.most_states, kept)

    def merge(self, other: RaceTally) -> None:
        self.races += other.races
        self.concurrent_steps += other.concurrent_steps
        self.orders_checked += other.orders_checked
        self.longest_search = max(self.longest_search, other.longest_search)
        self.longest_search_s = max(self.longest_search_s, other.longest_search_s)
        self.unexplained += other.unexplained
        self.ambiguous += other.ambiguous
        self.most_states = max(self.most_states, other.most_states)
        self.gates.merge(other.gates)

    def as_dict(self) -> dict[str, Any]:
        counts: dict[str, Any] = {k: v for k, v in self.__dict__.items() if k != "gates"}
        if self.gates.gated:
            counts["gates"] = self.gates.as_dict()
        return counts

    def describe(self) -> str:
        return (
            f"{self.concurrent_steps} concurrent steps in {self.races} races, "
            f"{self.orders_checked} serial orders checked, the longest search "
            f"{self.longest_search} orders ({self.longest_search_s * 1000:.1f} ms)"
            + (
                f", {self.ambiguous} left more than one model state possible (at most "
                f"{self.most_states} kept at once)"
                if self.ambiguous
                else ""
            )
            + (f", {self.unexplained} unexplained" if self.unexplained else "")
            + (f"; {self.gates.describe()}" if self.gates.gated else "")
        )


__all__ = [
    "MAX_RACE",
    "RESTARTED",
    "TWO_CLIENTS_TWO_ENTRIES",
    "ExplainingOrder",
    "Explanation",
    "Member",
    "RaceTally",
    "Restart",
    "Timed",
    "bookie_step_for",
    "describe_request",
    "explain",
    "explain_from",
    "is_bookie_step",
    "is_restart_step",
    "member_of",
    "order_sensitive",
    "order_sensitivity",
    "predicted_answers",
    "raceable",
]
