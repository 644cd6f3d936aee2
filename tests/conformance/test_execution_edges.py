"""engine.Execution step by step on a recording stand-in target: what each step sends to the
target, what it records, how steps are numbered, and what ``finish`` hands back."""

from __future__ import annotations

from conformance.engine import Execution
from conformance.observations import Observation
from conformance.operations import Crash, CreateLedger, Deliver, LedgerView, Operation
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.actions import Transition, init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import STATUS_OPEN

CFG = ModelConfig(max_crashes=1)


class RecordingTarget(ModelTarget):
    """The model target, answering bookie requests with ``answer`` when given, and
    remembering every operation it was asked to carry out."""

    name = "recording"

    def __init__(self, answer: Observation | None = None) -> None:
        super().__init__()
        self.answer = answer
        self.operations: list[Operation] = []
        self.open(CFG)

    def invoke(self, op: Operation) -> Observation:
        self.operations.append(op)
        honest = super().invoke(op)
        if isinstance(op, Deliver) and self.answer is not None:
            return self.answer
        return honest


def pick(execution: Execution, action: str) -> Transition:
    return next(t for t in execution.enabled() if t.label.action == action)


def test_the_trace_starts_with_the_initial_state_and_no_label() -> None:
    execution = Execution(CFG, RecordingTarget())
    assert len(execution.trace) == 1
    assert execution.trace[0].label is None
    assert execution.trace[0].state == init_state(CFG)


def test_steps_are_numbered_from_one_in_order() -> None:
    execution = Execution(CFG, RecordingTarget())
    first = execution.apply(pick(execution, "ClientCreatesLedger"))
    second = execution.apply(pick(execution, "ClientSendsAddEntryRequests"))
    third = execution.apply(pick(execution, "BookieSendsAddConfirmedResponse"))
    assert [first.index, second.index, third.index] == [1, 2, 3]
    assert [r.index for r in execution.records] == [1, 2, 3]


def test_a_divergence_is_named_by_its_step_number() -> None:
    execution = Execution(CFG, RecordingTarget(Observation("add", "EFENCED", success=False)))
    execution.apply(pick(execution, "ClientCreatesLedger"))
    execution.apply(pick(execution, "ClientSendsAddEntryRequests"))
    record = execution.apply(pick(execution, "BookieSendsAddConfirmedResponse"))
    assert record.index == 3
    assert record.divergence != []
    assert execution.divergences == [f"step 3: {d}" for d in record.divergence]


def test_a_bookie_step_records_its_request_prediction_and_answer() -> None:
    target = RecordingTarget(Observation("add", "EFENCED", success=False))
    execution = Execution(CFG, target)
    execution.apply(pick(execution, "ClientCreatesLedger"))
    execution.apply(pick(execution, "ClientSendsAddEntryRequests"))
    transition = pick(execution, "BookieSendsAddConfirmedResponse")
    record = execution.apply(transition)
    assert target.operations[-1] == Deliver(transition.label.received)  # type: ignore[arg-type]
    assert record.request == "add e1 (lac=0)"
    assert record.predicted == {"kind": "add", "status": "EOK", "success": True}
    assert record.observed == {"kind": "add", "status": "EFENCED", "success": False}


def test_a_metadata_step_records_the_predicted_and_observed_write() -> None:
    target = RecordingTarget()
    execution = Execution(CFG, target)
    transition = pick(execution, "ClientCreatesLedger")
    before = execution.state
    record = execution.apply(transition)
    assert before.meta_status is None
    (fragment,) = transition.state.meta_fragments
    assert target.operations == [CreateLedger(0, LedgerView(STATUS_OPEN, (fragment,), 0))]
    assert record.predicted == {"kind": "metadata", "status": "OK", "success": True}
    assert record.observed == {"kind": "metadata", "status": "OK", "success": True}
    assert record.divergence == []


def test_a_crash_step_hands_the_target_the_bookie() -> None:
    target = RecordingTarget()
    execution = Execution(CFG, target)
    execution.apply(pick(execution, "ClientCreatesLedger"))
    transition = pick(execution, "BookieRestartsEmpty")
    execution.apply(transition)
    assert transition.label.bookie is not None
    assert target.operations[-1] == Crash(transition.label.bookie)
    assert execution.state == transition.state


def test_finish_hands_back_the_note_it_was_given() -> None:
    execution = Execution(CFG, RecordingTarget())
    execution.apply(pick(execution, "ClientCreatesLedger"))
    outcome = execution.finish(note="stopped at the length drawn")
    assert outcome.verdict == "clean"
    assert outcome.note == "stopped at the length drawn"
    assert Execution(CFG, RecordingTarget()).finish().note is None
