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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from conformance.engine import Execution, Outcome, StepRecord
from conformance.search.choices import Chooser
from conformance.search.danger import danger
from conformance.targets.base import Target
from model.bookkeeper.action_table import ALL_ACTIONS
from model.bookkeeper.actions import Label, Transition, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import State
from model.bookkeeper.swarm import LOSS_RATES
from model.search.bfs import Step

#: Swarm level k switches each action kind off with probability about k / (2 * SWARM_LEVELS + 1).
SWARM_LEVELS = 4
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


def encode_trace(
    cfg: ModelConfig, trace: Sequence[Step[State, Label]], max_steps: int
) -> list[int]:
    """The choices of an example that takes exactly the steps of ``trace`` (a model trace from
    its initial state), so that Hypothesis can replay and shrink a trace found another way."""
    steps = [s for s in trace if s.label is not None]
    if len(steps) > max_steps:
        raise ValueError(f"the trace has {len(steps)} steps, more than the {max_steps} allowed")
    choices = [0, len(LOSS_RATES) - 1, len(steps)]
    state = trace[0].state
    for step in steps:
        assert step.label is not None
        choices += encode(successors(cfg, state), ENCODING_SWARM, step.label)
        state = step.state
    return choices


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
) -> ExampleRun:
    """Draw the swarm and the length, then step until a finding, a dead end or the length.

    The target gets a fresh ledger first. A target failure ends the example undecided.
    ``on_record`` sees each step's record as soon as it is judged (the run directory's
    history).
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
        execution.apply(decide(enabled, swarm, chooser))
        on_step()
        max_danger = max(max_danger, danger(cfg, execution.state))
        if execution.stopped:
            break
    return ExampleRun(execution.finish(), swarm, max_danger=max_danger)
