"""Execution: model transitions carried out on a target, step by step, and judged.

For each step the engine runs the model's chosen transition on the target:

- a bookie action: the request goes to the real bookie now, its answer is compared with the
  model's predicted reply (a mismatch is a *divergence*); if the model loses the reply, the
  real answer is discarded;
- a client step that sends: nothing on the wire yet (the requests wait in the outbox; lost
  ones are never sent); a client step that receives: nothing on the wire (the answer was
  taken at the bookie step and held);
- a metadata step (create, recovery start, ensemble change, close): a compare-and-set on the
  real ledger znode, whose success or failure is compared with the model's;
- a crash: the provider's crash with data loss.

After each step the model's invariants are checked (a broken one is a *violation*). At the end,
each bookie's stored entries and the ledger metadata are compared with the model's state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from conformance.observations import Observation, differences, predicted
from conformance.targets.base import Target, TargetError, TargetSnapshot
from model.bookkeeper.actions import BOOKIE_ACTIONS, Label, Transition, init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.records import STATUS_CLOSED, STATUS_NAMES, State, bookies_of
from model.bookkeeper.render import describe_message, describe_step
from model.search.bfs import Step

METADATA_ACTIONS = frozenset(
    {
        "ClientCreatesLedger",
        "ClientStartsRecovery",
        "ClientChangesEnsemble",
        "ClientClosesLedgerSuccess",
        "ClientClosesLedgerFail",
        "RecoveryClientClosesLedger",
    }
)
#: The metadata writes the model expects to fail.
FAILING_METADATA_ACTIONS = frozenset({"ClientClosesLedgerFail"})

#: Verdicts and exit codes, for every command: a result is clean only when something was
#: checked and passed; anything the run could not decide is ``undecided`` (exit 2).
VERDICTS = ("clean", "violation", "divergence", "undecided")
EXIT_CODES = {"clean": 0, "violation": 1, "divergence": 1, "undecided": 2}


def exit_code_for(verdict: str) -> int:
    """0 clean, 1 a finding (violation or divergence), 2 anything else (undecided, error)."""
    return EXIT_CODES.get(verdict, 2)


@dataclass
class StepRecord:
    """One line of ``history.jsonl``."""

    index: int
    action: str
    description: str
    request: str | None = None
    predicted: dict[str, Any] | None = None
    observed: dict[str, Any] | None = None
    divergence: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    error: str | None = None  # the target failed: this step decided nothing

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass
class Outcome:
    """``verdict``: clean, violation, divergence or undecided (the target failed us)."""

    verdict: str
    steps: list[StepRecord]
    trace: list[Step[State, Label]]
    violations: list[str] = field(default_factory=list)
    divergences: list[str] = field(default_factory=list)
    error: str | None = None
    note: str | None = None

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.verdict)


class Execution:
    """One run of the model on one target. ``apply`` steps; ``finish`` judges the end."""

    def __init__(self, cfg: ModelConfig, target: Target) -> None:
        self.cfg = cfg
        self.target = target
        self.state = init_state(cfg)
        self.trace: list[Step[State, Label]] = [Step(None, self.state)]
        self.records: list[StepRecord] = []
        self.invariants = invariants_for(cfg)
        self.violations: list[str] = []
        self.divergences: list[str] = []
        self.error: str | None = None

    @property
    def stopped(self) -> bool:
        """A finding or an error ends the run: after a divergence the model no longer
        describes the target, and after a violation the story has been told."""
        return bool(self.violations or self.divergences or self.error)

    def enabled(self) -> list[Transition]:
        return successors(self.cfg, self.state)

    def apply(self, transition: Transition) -> StepRecord:
        label, before = transition.label, self.state
        record = StepRecord(len(self.records) + 1, label.action, describe_step(label))
        try:
            self._on_target(label, before, transition.state, record)
        except TargetError as exc:
            self.error = record.error = str(exc)
        self.state = transition.state
        self.trace.append(Step(label, self.state))
        record.violations = violated(self.cfg, self.state, self.invariants)
        self.violations.extend(v for v in record.violations if v not in self.violations)
        self.divergences.extend(f"step {record.index}: {d}" for d in record.divergence)
        self.records.append(record)
        return record

    def _on_target(self, label: Label, before: State, after: State, record: StepRecord) -> None:
        if label.action in BOOKIE_ACTIONS:
            assert label.received is not None
            ((reply, _delivered),) = label.sent
            expected = predicted(reply)
            record.request = describe_message(label.received)
            record.predicted = expected.as_dict()
            observed = self.target.deliver(label.received, reply)
            record.observed = observed.as_dict()
            record.divergence = differences(expected, observed)
        elif label.action in METADATA_ACTIONS:
            observed_meta = self.target.metadata(label, before, after)
            if observed_meta is not None:
                ok = label.action not in FAILING_METADATA_ACTIONS
                expected = Observation(
                    "metadata", "OK" if ok else "MetadataVersionMismatch", success=ok
                )
                record.predicted = expected.as_dict()
                record.observed = observed_meta.as_dict()
                record.divergence = differences(expected, observed_meta)
        elif label.action == "BookieRestartsEmpty":
            assert label.bookie is not None
            self.target.crash(label.bookie, after)

    def finish(self, note: str | None = None) -> Outcome:
        """Compare the target's final state with the model's and give the verdict."""
        if not self.error and not self.divergences:
            try:
                snapshot = self.target.snapshot(self.cfg)
            except TargetError as exc:
                self.error = str(exc)
                snapshot = None
            if snapshot is not None:
                self.divergences.extend(state_differences(self.cfg, self.state, snapshot))
        if self.error:
            verdict = "undecided"
        elif self.divergences:
            verdict = "divergence"
        elif self.violations:
            verdict = "violation"
        else:
            verdict = "clean"
        return Outcome(
            verdict, self.records, self.trace, self.violations, self.divergences, self.error, note
        )


def state_differences(cfg: ModelConfig, s: State, snapshot: TargetSnapshot) -> list[str]:
    """Where the target's bookies and metadata differ from the model's state."""
    diffs = []
    for bookie in range(cfg.bookies):
        model_held = {e.id for e in s.b_entries[bookie]}
        held = snapshot.entries.get(bookie, set())
        if model_held != held:
            diffs.append(
                f"final state: bookie b{bookie + 1} holds {sorted(held)}, "
                f"model {sorted(model_held)}"
            )
    if s.meta_status is None:
        if snapshot.meta_status is not None:
            diffs.append(
                f"final state: ledger metadata exists ({snapshot.meta_status}), model has none"
            )
        return diffs
    status = STATUS_NAMES[s.meta_status]
    if snapshot.meta_status != status:
        diffs.append(f"final state: metadata status {snapshot.meta_status}, model {status}")
    if s.meta_status == STATUS_CLOSED and snapshot.meta_last_entry != s.meta_last_entry:
        diffs.append(
            f"final state: metadata last entry {snapshot.meta_last_entry}, "
            f"model {s.meta_last_entry}"
        )
    fragments = [(f.first_entry_id, bookies_of(f.ensemble)) for f in s.meta_fragments]
    if snapshot.meta_fragments != fragments:
        diffs.append(
            f"final state: metadata fragments {snapshot.meta_fragments}, model {fragments}"
        )
    return diffs
