"""Named scenarios: the seeds' interleavings, replayed step by step on any target.

Each scenario runs with its protection on (the default) or off (its switch flag). With the
protection off the seed's violation is expected; with it on, none: either the interleaving
completes cleanly, or the model shows where the protection stops the story (the next scripted
step is not enabled), and the run ends there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.engine import Execution, Outcome, StepRecord
from conformance.targets.base import Target
from conformance.verdict import Verdict
from model.bookkeeper import interleavings
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.interleavings import Interleaving
from model.bookkeeper.scripted import take
from model.search.scripted import ScriptError


@dataclass(frozen=True)
class Scenario:
    interleaving: Interleaving
    switch_flag: str  # the CLI flag that turns the protection off

    @property
    def name(self) -> str:
        return self.interleaving.name

    def config(self, *, protected: bool) -> ModelConfig:
        """The model configuration with the scenario's protection on or off."""
        return self.interleaving.protected if protected else self.interleaving.unprotected

    def expected_verdict(self, protected: bool) -> Verdict:
        return Verdict.CLEAN if protected else Verdict.VIOLATION


SCENARIOS = {
    s.name: s
    for s in (
        Scenario(interleavings.DEFECT_1, "--no-recovery-read-fence"),
        Scenario(interleavings.DEFECT_2, "--no-recovery-fragment-fix"),
        Scenario(interleavings.LIMBO_CRASH, "--no-limbo"),
    )
}


def run_scenario(
    scenario: Scenario,
    target: Target,
    *,
    protected: bool,
    on_record: Callable[[StepRecord], None] | None = None,
) -> Outcome:
    """Replay the scenario on ``target``; the target must already be open for its config.
    ``on_record`` sees each step's record as soon as it is judged (the run directory)."""
    cfg = scenario.config(protected=protected)
    execution = Execution(cfg, target, on_record=on_record)
    note = None
    for number, scripted in enumerate(scenario.interleaving.steps, start=1):
        try:
            transition = take(cfg, execution.state, scripted)
        except ScriptError:
            note = (
                f"stopped before step {number} ({scripted.action}): the model does not allow it "
                "in this configuration"
            )
            break
        execution.apply(transition)
        if execution.stopped:
            break
    return execution.finish(note)
