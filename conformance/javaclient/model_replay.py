"""What every Java-client judge shares: the model fed with what was observed, step by step.

A judge (the recovering client's :mod:`.story`, the writer's :mod:`.writer_story`) turns the
frames, callbacks and metadata of a run into the model's steps. :class:`ModelReplay` takes each
step where the run shows it (:meth:`~conformance.engine.Execution.apply_observed`: its answer
judged against the model's prediction, the invariants checked after it), records an event the
model allows no step for as a divergence that ends the story (:class:`Stuck`), and collects the
findings that look at more than one step (frames the spec's client would not send). Its result
is a :class:`Judgement`, the same for every role.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from conformance.engine import Execution, Outcome
from conformance.errors import ConformanceError
from conformance.observations import Observation
from conformance.verdict import Verdict
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import State
from model.bookkeeper.scripted import ScriptedStep, take
from model.search.scripted import ScriptError


class Stuck(ConformanceError):
    """The model allows no step for what happened: the replay cannot go on."""


@dataclass
class Judgement:
    """A run judged: the model's story of it and what it found."""

    outcome: Outcome
    #: The configuration the story ran under.
    cfg: ModelConfig
    #: The findings against the spec's client frame by frame (also in ``outcome.divergences``).
    frame_divergences: list[str] = field(default_factory=list)
    #: Ensemble changes the client made (the model's steps that explain them).
    ensemble_changes: int = 0
    #: Answers that reached the client when the model's client no longer took them.
    stale_answers: int = 0
    #: Whether the client's recovery reads carried FENCE_LEDGER (None: it sent none, or the
    #: role sends no recovery read).
    reads_fenced: bool | None = None

    @property
    def verdict(self) -> Verdict:
        return self.outcome.verdict

    @property
    def actions(self) -> dict[str, int]:
        """How often the story took each of the model's actions."""
        return dict(Counter(step.action for step in self.outcome.steps))


class ModelReplay:
    """The model's execution, fed with observed events instead of a target's answers."""

    def __init__(self, cfg: ModelConfig) -> None:
        self.cfg = cfg
        self.execution = Execution(cfg, None)
        self.frame_divergences: list[str] = []
        self.notes: list[str] = []

    @property
    def state(self) -> State:
        return self.execution.state

    def take(
        self,
        scripted: ScriptedStep,
        *,
        request: str | None = None,
        observed: Observation | None = None,
    ) -> Label:
        """Take the model's step for what happened; :class:`Stuck` (after recording the
        divergence) when the model allows none."""
        try:
            transition = take(self.cfg, self.state, scripted)
        except ScriptError as exc:
            finding = f"the model allows no step for {request or scripted.action}: {exc}"
            self.execution.no_step(str(scripted.action), finding, request=request)
            raise Stuck(finding) from None
        self.execution.apply_observed(transition, observed=observed, request=request)
        self.taken(transition.label)
        return transition.label

    def taken(self, label: Label) -> None:
        """Called after each step taken (a judge that tracks what the model sent overrides it)."""

    def diverge(self, finding: str) -> None:
        self.execution.add_divergence(finding)

    def finish(self) -> Outcome:
        """The verdict: the frame findings join the divergences, the notes the outcome."""
        for finding in self.frame_divergences:
            self.execution.add_divergence(finding, on_last_step=False)
        return self.execution.finish(note="\n".join(self.notes) or None)


__all__ = ["Judgement", "ModelReplay", "Stuck"]
