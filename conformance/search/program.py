"""One example: a sequence of model steps decided by choices, carried out on a target.

The encoding of a step is chosen so that Hypothesis can shrink well: a choice names an action
*kind* by its fixed position in the spec's list of actions (the nearest enabled kind at or after
it, cyclically), then which of that kind's enabled events (an actor and the message it
processes), then, message by message, whether what the step sends is lost. Removing one step
therefore leaves the meaning of the later choices mostly intact, and every choice shrinks toward
the simplest reading: the first kind, the first event, nothing lost.

An example starts with its *swarm* (Groce et al., ISSTA 2012): a set of action kinds switched
off for the whole example (say, the writer never closes) and a message-loss rate. Zero choices
mean "nothing switched off, nothing lost", the simplest swarm.

With races on (:mod:`conformance.races`), each step where two or more requests could be
processed next first draws whether it is a **race** instead: a first request, a second ranked
by how much a race with the first could matter (the same bookie and a different kind of
request first: a fence read against an add, an add against a read; then the same bookie; then
any), maybe a third, and each one's send offset. Choice 0 is "no race", so a race shrinks away
unless the finding needs it, and a kept race shrinks toward its most telling pair sent at
once.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from conformance.engine import Execution, Outcome, StepRecord
from conformance.gated_races import (
    GateSchedule,
    RequestKind,
    gateable,
    kind_of,
    schedules,
    stops_of,
)
from conformance.races import (
    MAX_RACE,
    Member,
    is_restart_step,
    member_of,
    order_sensitivity,
    raceable,
)
from conformance.search.choices import Chooser
from conformance.search.danger import danger
from conformance.targets.base import Target
from model.bookkeeper.action_table import ALL_ACTIONS
from model.bookkeeper.actions import Label, Transition, bookie_internal, driven_successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import Message, State
from model.bookkeeper.swarm import LOSS_RATES
from model.search.bfs import Step

#: Swarm level k switches each action kind off with probability about k / (2 * SWARM_LEVELS + 1).
SWARM_LEVELS = 4
#: A race's send offsets (seconds after its first send), by choice: at once first.
RACE_OFFSETS_S = (0.0, 0.0005, 0.001, 0.002, 0.005)
LOSS_CHOICES = 99  # a message is lost when its choice is at least 100 - the loss percentage


@dataclass(frozen=True)
class Swarm:
    """The action kinds an example never takes, and how often its messages are lost."""

    disabled: frozenset[str] = frozenset()
    loss_percent: int = 0

    @classmethod
    def draw(cls, chooser: Chooser) -> Swarm:
        # Each kind is switched off by a choice of its own, so that shrinking can switch
        # kinds back on one at a time; level 0 switches nothing off and draws nothing more.
        level = chooser.integer(0, SWARM_LEVELS)
        disabled = frozenset(
            a for a in ALL_ACTIONS if level and chooser.integer(0, SWARM_LEVELS * 2) < level
        )
        loss = chooser.integer(0, len(LOSS_RATES) - 1)
        return cls(disabled, round(LOSS_RATES[loss] * 100))

    def describe(self) -> str:
        off = ", ".join(sorted(self.disabled)) or "none"
        return f"loss {self.loss_percent}%, switched off: {off}"


def _event(label: Label) -> Hashable:
    return (label.client, label.bookie, label.received, label.detail)


def _kind_order(enabled: Sequence[Transition], swarm: Swarm) -> list[str]:
    kinds = {t.label.action for t in enabled}
    allowed = kinds - swarm.disabled or kinds
    return [a for a in ALL_ACTIONS if a in allowed]


def _events(enabled: Sequence[Transition], kind: str) -> dict[Hashable, list[Transition]]:
    events: dict[Hashable, list[Transition]] = {}
    for t in enabled:
        if t.label.action == kind:
            events.setdefault(_event(t.label), []).append(t)
    return events


def decide(enabled: Sequence[Transition], swarm: Swarm, chooser: Chooser) -> Transition:
    """The step the choices pick among ``enabled`` (not empty)."""
    kinds = _kind_order(enabled, swarm)
    wanted = chooser.integer(0, len(ALL_ACTIONS) - 1)
    position = {a: i for i, a in enumerate(ALL_ACTIONS)}
    kind = min(kinds, key=lambda a: (position[a] - wanted) % len(ALL_ACTIONS))
    events = list(_events(enabled, kind).values())
    variants = events[chooser.integer(0, len(events) - 1)] if len(events) > 1 else events[0]
    for i in range(len(variants[0].label.sent)):
        outcomes = {t.label.sent[i][1] for t in variants}
        if len(outcomes) > 1:
            lost = chooser.integer(0, LOSS_CHOICES) >= 100 - swarm.loss_percent
            variants = [t for t in variants if t.label.sent[i][1] is not lost]
    return variants[0]


def draw_schedule(pair: tuple[Message, Message], chooser: Chooser) -> GateSchedule | None:
    """A schedule of ``pair`` from an example's choices (None: the race is not gated).
    Choice 0 everywhere is: no gate; then the first request held at its first stop, the other
    running through."""
    if chooser.integer(0, 1) == 0:
        return None
    held = chooser.integer(0, 1)
    firsts = stops_of(kind_of(pair[held]))
    first = firsts[chooser.integer(0, len(firsts) - 1)]
    seconds = stops_of(kind_of(pair[1 - held]))
    which = chooser.integer(0, len(seconds))
    if which == 0:
        return GateSchedule(held, first)
    return GateSchedule(held, first, seconds[which - 1], bool(chooser.integer(0, 1)))


def encode_schedule(pair: tuple[Message, Message], schedule: GateSchedule | None) -> list[int]:
    """The choices with which :func:`draw_schedule` draws ``schedule`` for ``pair``."""
    if schedule is None:
        return [0]
    firsts = stops_of(kind_of(pair[schedule.held]))
    seconds = stops_of(kind_of(pair[schedule.other]))
    choices = [1, schedule.held, firsts.index(schedule.first)]
    if schedule.second is None:
        return [*choices, 0]
    return [
        *choices,
        seconds.index(schedule.second) + 1,
        int(schedule.second_resumes_first),
    ]


@dataclass(frozen=True)
class Race:
    """The requests a step races (bookie steps enabled together), with their send offsets."""

    steps: tuple[Transition, ...]
    offsets_s: tuple[float, ...]
    #: Two requests to one bookie, run by a gate schedule (None: sent at their offsets).
    gates: GateSchedule | None = None


@dataclass(frozen=True)
class RacePair:
    """Two requests that may race, with how many of their answers the model says depend on
    their order (:func:`~conformance.races.order_sensitivity`; 0 at different bookies)."""

    first: Transition
    second: Transition
    same_bookie: bool
    sensitivity: int

    @property
    def members(self) -> tuple[Member, Member]:
        return member_of(self.first), member_of(self.second)

    @property
    def rank(self) -> int:
        """Lower ranks first: both answers order-sensitive, one, same bookie, different."""
        return 2 - self.sensitivity if self.same_bookie else 3


@dataclass(frozen=True)
class RaceChoices:
    """What a race could be drawn from at one state (:func:`race_choices`): the one place that
    says which requests may race there, so that drawing a race (:func:`draw_race`) and
    encoding one (:func:`encode_race`, :func:`encode_trace`) cannot disagree about where a
    race choice is drawn (two encoding bugs came from writing that condition twice)."""

    candidates: tuple[Transition, ...]
    #: Every pair of candidates that may race (never two restarts: one restart a race), the
    #: most telling first (:attr:`RacePair.rank`), in ``candidates``' order within a rank.
    pairs: tuple[RacePair, ...]

    def joiners(self, members: Sequence[Transition]) -> list[Transition]:
        """The candidates that could join a race of ``members`` (a restart only while the
        race has none)."""
        restarts = any(is_restart_step(t) for t in members)
        return [
            t for t in self.candidates if t not in members and not (restarts and is_restart_step(t))
        ]


@functools.lru_cache(maxsize=4096)
def race_choices(cfg: ModelConfig, state: State) -> RaceChoices:
    """The requests that may race from ``state`` (among every step the model enables there),
    and their pairs, ranked. Remembered: a search meets the same states again and again
    (shrinking replays, the explorer's traces share prefixes), and each costs the model's
    successors of every same-bookie pair, both ways round."""
    candidates = tuple(raceable(driven_successors(cfg, state)))
    pairs = []
    for a, b in itertools.combinations(candidates, 2):
        if is_restart_step(a) and is_restart_step(b):
            continue
        same_bookie = member_of(a).bookie == member_of(b).bookie
        sensitivity = (
            order_sensitivity(cfg, state, member_of(a), member_of(b)) if same_bookie else 0
        )
        pairs.append(RacePair(a, b, same_bookie, sensitivity))
    return RaceChoices(candidates, tuple(sorted(pairs, key=lambda pair: pair.rank)))


def draw_race(
    cfg: ModelConfig, state: State, chooser: Chooser, *, gates: bool = False
) -> Race | None:
    """Whether the step from ``state`` races requests, and which (None: an ordinary step).
    Draws nothing where no pair could race (fewer than two requests, or only restarts).
    ``gates``: a race of two requests to one bookie then draws a gate schedule too
    (:func:`~conformance.gated_races.draw_schedule`: none first, so it shrinks away)."""
    at = race_choices(cfg, state)
    if not at.pairs or chooser.integer(0, 1) == 0:
        return None
    pair = at.pairs[chooser.integer(0, len(at.pairs) - 1)]
    members = [pair.first, pair.second]
    rest = at.joiners(members)
    while rest and len(members) < MAX_RACE and chooser.integer(0, 1):
        members.append(rest.pop(chooser.integer(0, len(rest) - 1)))
        rest = at.joiners(members)
    offsets = tuple(RACE_OFFSETS_S[chooser.integer(0, len(RACE_OFFSETS_S) - 1)] for _ in members)
    schedule = None
    requests = tuple(member_of(t) for t in members)
    if gates and gateable(requests):
        schedule = draw_schedule(requests, chooser)  # type: ignore[arg-type]
    return Race(tuple(members), offsets, schedule)


def encode_race(
    at: RaceChoices,
    pair: tuple[Member, Member],
    offsets: tuple[int, int] = (0, 0),
    *,
    gates: bool = False,
    schedule: GateSchedule | None = None,
) -> list[int]:
    """The choices with which :func:`draw_race` races the two requests of ``pair`` (from the
    state ``at`` describes), nothing more, ``pair[i]`` sent ``RACE_OFFSETS_S[offsets[i]]``
    after the race starts; ``gates``: as ``draw_race``'s, the race run by ``schedule``, whose
    ``held`` is a place in ``pair`` (None: not gated)."""
    if schedule is not None and not gates:
        raise ValueError("a gate schedule needs an example that may gate its races")
    for index, candidate in enumerate(at.pairs):
        if set(candidate.members) != set(pair):
            continue
        # draw_race asks "a third?" only when one could join.
        third = [0] if at.joiners([candidate.first, candidate.second]) else []
        same_order = candidate.members[0] == pair[0]
        ahead = offsets if same_order else (offsets[1], offsets[0])
        choices = [1, index, *third, *ahead]
        if gates and gateable(candidate.members):
            if schedule is not None and not same_order:
                schedule = dataclasses.replace(schedule, held=schedule.other)
            choices += encode_schedule(candidate.members, schedule)  # type: ignore[arg-type]
        elif schedule is not None:
            raise ValueError(f"{pair} cannot be gated: two requests to one bookie can")
        return choices
    raise ValueError(f"{pair} cannot race from this state")


def encode(enabled: Sequence[Transition], swarm: Swarm, label: Label) -> list[int]:
    """The choices with which :func:`decide` picks the step labelled ``label``."""
    kinds = _kind_order(enabled, swarm)
    if label.action not in kinds:
        raise ValueError(f"{label.action} is not enabled under this swarm")
    choices = [ALL_ACTIONS.index(label.action)]
    events = _events(enabled, label.action)
    keys = list(events)
    if len(keys) > 1:
        choices.append(keys.index(_event(label)))
    variants = events[_event(label)]
    for i, (_message, delivered) in enumerate(label.sent):
        if len({t.label.sent[i][1] for t in variants}) > 1:
            if not delivered and swarm.loss_percent == 0:
                raise ValueError("a lost message cannot be encoded with no loss")
            choices.append(0 if delivered else LOSS_CHOICES)
            variants = [t for t in variants if t.label.sent[i][1] is delivered]
    return choices


#: The swarm an encoded trace runs under: nothing switched off, losses possible.
ENCODING_SWARM = Swarm(frozenset(), round(LOSS_RATES[-1] * 100))


def bookies_own_steps_in(cfg: ModelConfig, trace: Sequence[Step[State, Label]]) -> bool:
    """Whether ``trace`` has steps of the bookies' own (their recovery of a limbo ledger): no
    example can make a bookie's service act, so such a trace cannot be encoded or replayed;
    the judge observes those steps instead."""
    return any(s.label is not None and bookie_internal(cfg, s.label) for s in trace)


def encode_trace(
    cfg: ModelConfig,
    trace: Sequence[Step[State, Label]],
    max_steps: int,
    *,
    races: bool = False,
    then_race: tuple[Member, Member] | None = None,
    race_offsets: tuple[int, int] = (0, 0),
    gates: bool = False,
    schedule: GateSchedule | None = None,
) -> list[int]:
    """The choices of an example that takes exactly the steps of ``trace`` (a model trace from
    its initial state), so that Hypothesis can replay and shrink a trace found another way
    (``races``: for an example that may race, each step then says "no race"; ``then_race``:
    and after the trace, races these two requests, sent at ``race_offsets``: indices of
    ``RACE_OFFSETS_S``; ``gates``: the example may gate its races, and ``then_race`` is run
    by ``schedule``, its ``held`` a place in ``then_race``)."""
    steps = [s for s in trace if s.label is not None]
    length = len(steps) + (then_race is not None)
    if length > max_steps:
        raise ValueError(f"the trace has {length} steps, more than the {max_steps} allowed")
    choices = [0, len(LOSS_RATES) - 1, length]
    state = trace[0].state
    for step in steps:
        assert step.label is not None
        if (races or then_race is not None) and race_choices(cfg, state).pairs:
            choices.append(0)  # no race here: draw_race draws this choice where pairs exist
        choices += encode(driven_successors(cfg, state), ENCODING_SWARM, step.label)
        state = step.state
    if then_race is not None:
        choices += encode_race(
            race_choices(cfg, state), then_race, race_offsets, gates=gates, schedule=schedule
        )
    return choices


def _order_sensitive_pair(
    cfg: ModelConfig, trace: Sequence[Step[State, Label]], max_steps: int
) -> tuple[int, int, tuple[Member, Member]] | None:
    """The first state on ``trace`` with two requests whose answers each depend on their order
    (else with one such answer): (how many depend, its depth, the pair); None: no such state."""
    best: tuple[int, int, tuple[Member, Member]] | None = None
    for depth, point in enumerate(trace[:max_steps]):
        at = race_choices(cfg, point.state)
        # Ranked: the first pair is the most order-sensitive one here.
        if at.pairs and at.pairs[0].sensitivity:
            first = at.pairs[0]
            if best is None or first.sensitivity > best[0]:
                best = (first.sensitivity, depth, first.members)
        if best is not None and best[0] == 2:
            break
    return best


def race_proposals(
    cfg: ModelConfig,
    traces: Sequence[Sequence[Step[State, Label]]],
    max_steps: int,
    *,
    limit: int | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    gates: bool = False,
) -> list[list[int]]:
    """Examples that race where the model says the order matters: for each trace, the first
    state on it with two requests whose answers each depend on their order (else with one
    such answer), as the choices of the example that follows the trace there and races them;
    those of the first kind first. The explorer's traces reach deep states that random
    choices rarely do (a writer's add that raises a bookie's LAC while a recovery's fence read
    waits at the same bookie). At most ``limit`` (two per trace: each request of the pair sent
    first); the scan ends early with that many of the first kind, or when ``should_stop``.
    ``gates``: encoded for an example that may gate its races (these are not gated:
    :func:`gate_proposals` lists the gated ones)."""
    found: dict[int, list[list[int]]] = {2: [], 1: []}
    for trace in traces:
        if should_stop() or (limit is not None and len(found[2]) >= limit):
            break
        best = _order_sensitive_pair(cfg, trace, max_steps)
        if best is not None:
            sensitivity, depth, pair = best
            # Which request reaches the bookie first is the race: each first, 1 ms ahead.
            for ahead in ((0, 2), (2, 0)):
                found[sensitivity].append(
                    encode_trace(
                        cfg,
                        trace[: depth + 1],
                        max_steps,
                        then_race=pair,
                        race_offsets=ahead,
                        gates=gates,
                    )
                )
    return (found[2] + found[1])[:limit]


def gate_proposals(
    cfg: ModelConfig,
    traces: Sequence[Sequence[Step[State, Label]]],
    max_steps: int,
    *,
    should_stop: Callable[[], bool] = lambda: False,
) -> list[list[int]]:
    """Every gate schedule (:func:`~conformance.gated_races.schedules`), systematically, of
    the first race the traces reach (as :func:`race_proposals` finds them) of two requests to
    one bookie for each pair of request kinds (an add and a fence read, a fence read and a
    read, ...): the choices of an example that may gate its races, one per schedule, the
    pairs of kinds in the order found."""
    gated: dict[frozenset[RequestKind], list[list[int]]] = {}
    for trace in traces:
        if should_stop():
            break
        best = _order_sensitive_pair(cfg, trace, max_steps)
        if best is None or not gateable(best[2]):
            continue
        _sensitivity, depth, pair = best
        kinds = frozenset((kind_of(pair[0]), kind_of(pair[1])))  # type: ignore[arg-type]
        if kinds in gated:
            continue
        gated[kinds] = [
            encode_trace(
                cfg, trace[: depth + 1], max_steps, then_race=pair, gates=True, schedule=schedule
            )
            for schedule in schedules(pair)  # type: ignore[arg-type]
        ]
    return [choices for each in gated.values() for choices in each]


class ExampleRun:
    """What one example did. (Not a dataclass: Hypothesis pretty-prints dataclasses field by
    field, and an example's whole history is far too long for a failure message.)"""

    def __init__(
        self,
        outcome: Outcome,
        swarm: Swarm,
        choices: list[int] | None = None,
        max_danger: int = 0,
    ) -> None:
        self.outcome = outcome
        self.swarm = swarm
        self.choices = choices if choices is not None else []
        self.max_danger = max_danger

    @property
    def finding(self) -> bool:
        return self.outcome.verdict.finding

    def __repr__(self) -> str:  # what Hypothesis prints for a failing example
        return (
            f"ExampleRun({self.outcome.verdict}, {len(self.outcome.steps)} steps, "
            f"{self.swarm.describe()})"
        )


def run_example(
    cfg: ModelConfig,
    target: Target,
    chooser: Chooser,
    *,
    max_steps: int,
    on_step: Callable[[], None] = lambda: None,
    on_record: Callable[[StepRecord], None] | None = None,
    races: bool = False,
    race_jitter: Callable[[], float] | None = None,
    gates: bool = False,
) -> ExampleRun:
    """Draw the swarm and the length, then step until a finding, a dead end or the length.

    The target gets a fresh ledger first. A target failure ends the example undecided.
    ``on_record`` sees each step's record as soon as it is judged (the run directory's
    history). ``races``: steps may race requests (:func:`draw_race`; the target must be able
    to, :func:`~conformance.targets.base.supports_races`); a race counts as one step.
    ``race_jitter``: seconds added to each raced request's send offset (a replay of the same
    race at neighbouring send times: a race is a probability). ``gates``: a race of two
    requests to one bookie may be run by a gate schedule (the target must support gates,
    :func:`~conformance.targets.base.supports_gates`).
    """
    swarm = Swarm.draw(chooser)
    length = chooser.integer(1, max_steps)
    execution = Execution(cfg, target, on_record=on_record)
    max_danger = 0
    if not execution.begin():
        return ExampleRun(execution.finish(), swarm)
    for _ in range(length):
        enabled = execution.enabled()
        if not enabled:
            break
        race = draw_race(cfg, execution.state, chooser, gates=gates) if races else None
        if race is not None:
            offsets = race.offsets_s
            if race_jitter is not None:
                offsets = tuple(offset + race_jitter() for offset in offsets)
            execution.apply_race(race.steps, offsets, race.gates)
        else:
            execution.apply(decide(enabled, swarm, chooser))
        on_step()
        max_danger = max(max_danger, danger(cfg, execution.state))
        if execution.stopped:
            break
    return ExampleRun(execution.finish(), swarm, max_danger=max_danger)
