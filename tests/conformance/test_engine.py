"""The engine's judgement, on a scripted target: the operation each kind of step becomes, each
verdict, and each precedence case between findings and errors.

The rule under test (``Execution.finish``, ``conformance.verdict.run_verdict``): a target
error makes the run undecided whatever else was seen (the step that failed was not judged, and
the run stopped there); otherwise a violation outranks a divergence (both are reported); a
divergence alone is a divergence; nothing at all is clean. The final state is read only when
nothing stopped the run first.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.engine import Execution, operation_for, state_differences
from conformance.observations import Observation
from conformance.operations import (
    Crash,
    CreateLedger,
    Deliver,
    FreshLedger,
    LedgerView,
    Operation,
    WriteMetadata,
)
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.base import TargetError, TargetSnapshot
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.actions import Transition, init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import STATUS_CLOSED, STATUS_IN_RECOVERY, STATUS_OPEN
from tests.conformance.lying_target import path_to

CFG = ModelConfig(max_crashes=1, crash_when_open=True)

Script = Callable[[int, Operation, Observation], Observation]


class ScriptedTarget(ModelTarget):
    """The model target, with its ``n``-th answer (1-based, counting every operation) replaced
    by ``script(n, op, honest)``; a script may raise ``TargetError`` for "no answer"."""

    name = "scripted"

    def __init__(self, script: Script | None = None, snapshot_fails: bool = False) -> None:
        super().__init__()
        self.script = script
        self.snapshot_fails = snapshot_fails
        self.operations: list[Operation] = []
        self.snapshots = 0

    def invoke(self, op: Operation) -> Observation:
        self.operations.append(op)
        honest = super().invoke(op)
        return self.script(len(self.operations), op, honest) if self.script else honest

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        self.snapshots += 1
        if self.snapshot_fails:
            raise TargetError("the final state could not be read")
        return super().snapshot(cfg)


def run(cfg: ModelConfig, path: list[Transition], target: ScriptedTarget) -> Execution:
    target.open(cfg)
    execution = Execution(cfg, target)
    assert execution.begin()
    for transition in path:
        if execution.stopped:
            break
        execution.apply(transition)
    return execution


def lie_on(kind: type, answer: Observation | None = None, *, nth: int = 1) -> Script:
    """Replace the ``nth`` answer to an operation of ``kind`` (or raise when ``answer`` is
    None)."""
    seen = [0]

    def script(_n: int, op: Operation, honest: Observation) -> Observation:
        if not isinstance(op, kind):
            return honest
        seen[0] += 1
        if seen[0] != nth:
            return honest
        if answer is None:
            raise TargetError(f"{type(op).__name__}: no answer")
        return answer

    return script


WRONG_ADD = Observation("add", "EFENCED", success=False)


# Operations ------------------------------------------------------------------------------------


def test_each_kind_of_step_becomes_its_operation_or_none() -> None:
    path = path_to(CFG, "BookieRestartsEmpty", after="BookieSendsAddConfirmedResponse")
    kinds = {}
    before = init_state(CFG)
    for transition in path:
        planned = operation_for(transition.label, before, transition.state)
        kinds[transition.label.action] = None if planned is None else type(planned[0])
        before = transition.state
    assert kinds["ClientCreatesLedger"] is CreateLedger
    assert kinds["ClientSendsAddEntryRequests"] is None  # nothing on the wire yet
    assert kinds["BookieSendsAddConfirmedResponse"] is Deliver
    assert kinds["BookieRestartsEmpty"] is Crash


def test_a_crash_has_no_prediction_and_a_bookie_answer_the_models_reply() -> None:
    path = path_to(CFG, "BookieRestartsEmpty", after="BookieSendsAddConfirmedResponse")
    execution = run(CFG, path, ScriptedTarget())
    by_action = {r.action: r for r in execution.records}
    crash = by_action["BookieRestartsEmpty"]
    assert crash.predicted is None and crash.observed == {"kind": "crash", "status": "restarted"}
    add = by_action["BookieSendsAddConfirmedResponse"]
    assert add.predicted == add.observed == {"kind": "add", "status": "EOK", "success": True}
    assert add.operation is not None and add.operation["type"] == "Deliver"


def test_a_write_that_should_succeed_is_at_the_specs_version_and_writes_the_state_after() -> None:
    path = path_to(CFG, "ClientStartsRecovery")
    before = path[-2].state if len(path) > 1 else None
    assert before is not None
    planned = operation_for(path[-1].label, before, path[-1].state)
    assert planned is not None
    op, expected = planned
    assert isinstance(op, WriteMetadata)
    assert op.expected_version == op.known_version == before.meta_version
    assert op.metadata.status == STATUS_IN_RECOVERY
    assert expected == Observation("metadata", "OK", success=True)


def test_a_write_that_should_fail_holds_the_clients_stale_version_and_writes_nothing_new() -> None:
    path = path_to(CFG, "ClientClosesLedgerFail")
    before = path[-2].state
    label = path[-1].label
    planned = operation_for(label, before, path[-1].state)
    assert planned is not None
    op, expected = planned
    assert isinstance(op, WriteMetadata) and label.client is not None
    assert op.expected_version == before.clients[label.client].meta_version
    assert op.expected_version != op.known_version == before.meta_version
    assert op.metadata == LedgerView(
        before.meta_status or 0, before.meta_fragments, before.meta_last_entry
    )
    assert expected == Observation("metadata", "MetadataVersionMismatch", success=False)
    # The model target's store refuses it, as ZooKeeper does: the run stays clean.
    assert run(CFG, path, ScriptedTarget()).finish().verdict == "clean"


def test_each_example_begins_with_a_fresh_ledger() -> None:
    target = ScriptedTarget()
    run(CFG, path_to(CFG, "ClientCreatesLedger"), target)
    assert target.operations[0] == FreshLedger()


def test_a_fresh_ledger_that_cannot_be_had_leaves_the_example_undecided() -> None:
    target = ScriptedTarget(lie_on(FreshLedger))
    target.open(CFG)
    execution = Execution(CFG, target)
    assert not execution.begin()
    outcome = execution.finish()
    assert outcome.verdict == "undecided" and "FreshLedger: no answer" in (outcome.error or "")


# Verdicts and their precedence -----------------------------------------------------------------


def test_an_honest_target_is_clean_and_its_final_state_is_compared() -> None:
    target = ScriptedTarget()
    path = path_to(CFG, "ClientClosesLedgerSuccess", after="BookieSendsAddConfirmedResponse")
    outcome = run(CFG, path, target).finish()
    assert (outcome.verdict, outcome.exit_code, target.snapshots) == ("clean", 0, 1)


def test_a_wrong_answer_is_a_divergence_named_by_its_step() -> None:
    path = path_to(CFG, "BookieSendsAddConfirmedResponse")
    execution = run(CFG, path, ScriptedTarget(lie_on(Deliver, WRONG_ADD)))
    outcome = execution.finish()
    assert outcome.verdict == "divergence" and outcome.exit_code == 1
    assert outcome.divergences == [
        f"step {len(path)}: success: predicted True, observed False (EFENCED)"
    ]


def test_a_run_stops_at_its_first_finding() -> None:
    path = path_to(CFG, "ClientReceivesAddConfirmedResponse")
    execution = run(CFG, path, ScriptedTarget(lie_on(Deliver, WRONG_ADD)))
    assert execution.stopped
    assert len(execution.records) < len(path)


def test_a_broken_invariant_alone_is_a_violation() -> None:
    scenario = SCENARIOS["defect1-fencing"]
    target = ScriptedTarget()
    target.open(scenario.config(protected=False))
    outcome = run_scenario(scenario, target, protected=False)
    assert outcome.verdict == "violation" and outcome.violations and not outcome.divergences


def test_a_violation_outranks_a_divergence_and_both_are_reported() -> None:
    # The one precedence rule (conformance.verdict): a broken invariant is the worse news.
    execution = Execution(CFG, ScriptedTarget())
    execution.violations.append("NoDivergenceBetweenClientAndMetaData")
    execution.divergences.append("step 3: success: predicted True, observed False (EFENCED)")
    outcome = execution.finish()
    assert outcome.verdict == "violation"
    assert outcome.violations and outcome.divergences


@pytest.mark.parametrize("finding", ["violation", "divergence"])
def test_a_target_error_makes_any_run_undecided(finding: str) -> None:
    target = ScriptedTarget()
    execution = Execution(CFG, target)
    if finding == "violation":
        execution.violations.append("NoDivergenceBetweenClientAndMetaData")
    else:
        execution.divergences.append("step 1: success: predicted True, observed False")
    execution.error = "bookie b1: connection reset"
    outcome = execution.finish()
    assert (outcome.verdict, outcome.exit_code) == ("undecided", 2)
    assert target.snapshots == 0  # nothing more is asked of a target that failed


def test_an_error_in_a_step_is_recorded_on_the_step_and_stops_the_run() -> None:
    path = path_to(CFG, "BookieSendsAddConfirmedResponse")
    execution = run(CFG, path, ScriptedTarget(lie_on(Deliver)))
    assert execution.stopped
    assert execution.records[-1].error == "Deliver: no answer"
    assert execution.finish().verdict == "undecided"


def test_an_unreadable_final_state_is_undecided() -> None:
    path = path_to(CFG, "ClientCreatesLedger")
    outcome = run(CFG, path, ScriptedTarget(snapshot_fails=True)).finish()
    assert outcome.verdict == "undecided" and outcome.error is not None


def test_the_final_state_is_not_read_after_a_divergence() -> None:
    path = path_to(CFG, "BookieSendsAddConfirmedResponse")
    target = ScriptedTarget(lie_on(Deliver, WRONG_ADD), snapshot_fails=True)
    assert run(CFG, path, target).finish().verdict == "divergence"
    assert target.snapshots == 0


def test_a_final_state_that_differs_is_a_divergence() -> None:
    path = path_to(CFG, "BookieSendsAddConfirmedResponse")

    class Forgetful(ScriptedTarget):
        def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
            taken = super().snapshot(cfg)
            taken.entries = {b: set() for b in taken.entries}
            return taken

    outcome = run(CFG, path, Forgetful()).finish()
    assert outcome.verdict == "divergence"
    assert any("final state: bookie" in d for d in outcome.divergences)


# The model target's store, which the verdicts above rely on ------------------------------------


def test_the_model_targets_store_is_a_compare_and_set_register() -> None:
    target = ModelTarget()
    target.open(CFG)
    view = LedgerView(STATUS_OPEN, (), 0)
    closed = LedgerView(STATUS_CLOSED, (), 0)
    assert target.invoke(WriteMetadata("X", 0, 1, 1, closed)).status == "NoSuchLedger"
    assert target.invoke(CreateLedger(0, view)).success
    assert target.invoke(CreateLedger(1, view)).status == "LedgerExists"
    assert target.invoke(WriteMetadata("X", 0, 0, 1, closed)).status == "MetadataVersionMismatch"
    assert target.invoke(WriteMetadata("X", 0, 1, 1, closed)).success
    assert target.invoke(WriteMetadata("X", 1, 1, 2, closed)).status == "MetadataVersionMismatch"
    assert target.snapshot(CFG).meta_status == "CLOSED"


def test_state_differences_of_an_agreeing_model_target_are_none() -> None:
    path = path_to(CFG, "ClientClosesLedgerSuccess", after="BookieSendsAddConfirmedResponse")
    execution = run(CFG, path, ScriptedTarget())
    snapshot = execution.target.snapshot(CFG)
    assert snapshot is not None
    assert state_differences(CFG, execution.state, snapshot) == []


def test_an_undecided_outcome_keeps_what_lay_under_the_error_for_the_report() -> None:
    def refuse(_n: int, op: Operation, honest: Observation) -> Observation:
        if isinstance(op, Deliver):
            try:
                raise ConnectionResetError("connection reset by peer")
            except ConnectionResetError as exc:
                raise TargetError("bookie b1: no answer", retriable=True) from exc
        return honest

    path = path_to(CFG, "BookieSendsAddConfirmedResponse")
    outcome = run(CFG, path, ScriptedTarget(refuse)).finish()
    assert (outcome.verdict, outcome.error) == ("undecided", "bookie b1: no answer")
    assert outcome.cause == "ConnectionResetError: connection reset by peer"
    assert outcome.retriable is True
    clean = run(CFG, path, ScriptedTarget()).finish()
    assert (clean.cause, clean.retriable) == (None, None)
