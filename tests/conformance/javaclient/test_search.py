"""Every Java-client role searched by the kernel's one search-and-shrink loop
(:mod:`conformance.live.search`, tested on its own in tests/conformance/live): each role's
recorded runs stand in for the Java client (the plumbing of guidance, verdicts, coverage and
shrinking through :class:`~conformance.javaclient.search.JavaClientSearch`, not the client).
The search against the real Java client runs through its command:
tests/conformance/test_java_client_run_command.py."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from adapters.netproxy import BookieProxy, ProxyGroup
from conformance.javaclient.controller import ScheduleController
from conformance.javaclient.delivery_order import delivery_order
from conformance.javaclient.plans import (
    DEFECT_1_PLAN,
    DEFECT_1_WRITER,
    DROP,
    FrameSchedule,
    RecoveryPlan,
)
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.role import Arrangement, Example, same_failure
from conformance.javaclient.search import Coverage, SearchResult, search
from conformance.javaclient.story import RecoveryRecord
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import FaultSet, WriterRole
from conformance.javaclient.writer_story import WriterRecord
from conformance.live.search import StopAt
from conformance.verdict import Verdict
from tests.conformance.javaclient.recorded import defect1_record
from tests.conformance.javaclient.test_writer_story import RECORDED

SHAPE = WriterShape(3, 2, 2)


class FakeSession:
    """The proxies a controller needs, and nothing else: the roles below never start a client."""

    def __init__(self, group: ProxyGroup) -> None:
        self.group = group
        self.proxies: dict[str, BookieProxy] = {}
        self.coverage = None

    def measure_coverage(self) -> None:
        return None

    def ledger_writes(self, ledger_id: int) -> None:
        return None  # no ZooKeeper proxy in this layout


class _Recorded:
    """What both recorded roles do: every plan gets one recorded run. ``arrange=False``: the
    schedule is never arranged; ``break_controller``: the controller crashes;
    ``untriggered``: a fault's frame never comes."""

    arrange = True
    break_controller = False
    untriggered = False

    def _arranged(self, arrange: Arrangement, ledger_id: int) -> None:
        if not self.arrange:
            return
        with arrange(ledger_id, {}) as controller:
            assert isinstance(controller, ScheduleController)
            if self.break_controller:
                controller.errors.append("RuntimeError('proxy gone')")
            if self.untriggered:
                controller.untriggered.append("crash b1 when add e3 to b1 passes")


class RecordedRecovery(_Recorded, RecoveryRole):
    def __init__(self, reads_fence: bool, **flags: bool) -> None:
        super().__init__()
        self.reads_fence = reads_fence
        self.__dict__.update(flags)
        self.plans_run: list[RecoveryPlan] = []

    def perform(self, session: Any, plan: RecoveryPlan, arrange: Arrangement) -> RecoveryRecord:
        self.plans_run.append(plan)
        record = defect1_record(reads_fence=self.reads_fence)
        self._arranged(arrange, record.ledger_id)
        return record


class RecordedWriter(_Recorded, WriterRole):
    def __init__(self, record: WriterRecord, **flags: bool) -> None:
        # The recorded runs had requests dropped or held only: the plans drawn are such.
        super().__init__(SHAPE, faults=FaultSet.REQUESTS)
        self.record = record
        self.__dict__.update(flags)
        self.plans_run: list[WriterRunPlan] = []

    def perform(self, session: Any, plan: WriterRunPlan, arrange: Arrangement) -> WriterRecord:
        self.plans_run.append(plan)
        self._arranged(arrange, self.record.ledger_id)
        return self.record


def _writer_record(*, lose_e0: bool = False) -> WriterRecord:
    record = next(r for p, r in RECORDED if p.shape == SHAPE and len(r.segments) > 1)
    return dataclasses.replace(record, stored={**record.stored, 0: ()}) if lose_e0 else record


@contextlib.contextmanager
def _session() -> Iterator[Any]:
    with ProxyGroup(call_timeout=5.0) as group:
        yield FakeSession(group)


# The recovering role ----------------------------------------------------------------------


def test_the_search_stops_at_the_first_violation_and_shrinks_it() -> None:
    role = RecordedRecovery(reads_fence=False)
    with _session() as session:
        result = search(session, role, max_examples=5, seed=1)
    assert result.examples == 1 and result.stopped == "finding"
    assert result.finding is not None and result.finding.example == 1
    assert result.verdict is Verdict.VIOLATION
    assert result.verdicts == {Verdict.VIOLATION: 1}
    # The recorded run fails whatever the plan: shrinking takes every decision away.
    assert result.finding.shrink_runs == len(role.plans_run) - 1 > 0
    assert result.finding.plan.schedule.without_forwards().decisions == {}
    assert result.finding.plan.writer.adds == ()


def test_without_shrinking_the_finding_is_the_example_found() -> None:
    role = RecordedRecovery(reads_fence=False)
    with _session() as session:
        result = search(session, role, max_examples=5, seed=1, shrink=False)
    assert len(role.plans_run) == 1 and result.finding is not None
    assert result.finding.shrunk is result.finding.found


def test_a_clean_client_passes_every_plan() -> None:
    role = RecordedRecovery(reads_fence=True)
    with _session() as session:
        result = search(session, role, max_examples=5, seed=3)
    assert result.finding is None
    assert result.examples == len(role.plans_run) == 5  # nothing built in comes first
    assert result.verdicts == {Verdict.CLEAN: 5}
    assert result.verdict is Verdict.CLEAN and result.stopped == "examples"
    assert result.coverage.as_dict()["recoveries"] == {"OK": 5}


def test_guided_plans_come_every_other_example_cycling() -> None:
    guided = [dataclasses.replace(DEFECT_1_PLAN, origin="model")]
    role = RecordedRecovery(reads_fence=True)
    with _session() as session:
        result = search(session, role, max_examples=20, seed=3, guided=guided)
    assert result.guided_examples == 10 and result.examples == 20
    assert [p.writer for p in role.plans_run[::2]] == [DEFECT_1_WRITER] * 10


def test_a_spent_budget_with_nothing_run_is_undecided() -> None:
    role = RecordedRecovery(reads_fence=True)
    with _session() as session:
        result = search(session, role, max_examples=5, seconds=0.0)
    assert result.examples == 0 and result.stopped == "budget"
    assert result.verdict is Verdict.UNDECIDED


@pytest.mark.parametrize(
    ("arrange", "break_controller", "reason"),
    [(False, False, "never arranged"), (True, True, "controller failed")],
)
def test_an_unapplied_schedule_is_undecided_never_clean(
    arrange: bool, break_controller: bool, reason: str
) -> None:
    # A clean client: judged as if the schedule had been applied, every example passes.
    role = RecordedRecovery(reads_fence=True, arrange=arrange, break_controller=break_controller)
    with _session() as session:
        result = search(session, role, max_examples=5, seed=3)
    assert result.finding is None
    assert result.verdict is Verdict.UNDECIDED
    assert len(role.plans_run) == 1 and result.verdicts == {Verdict.UNDECIDED: 1}
    assert len(result.errors) == 1 and reason in result.errors[0]


def test_a_fault_whose_frame_never_came_is_judged_as_the_run_happened_and_counted() -> None:
    role = RecordedRecovery(reads_fence=True, untriggered=True)
    with _session() as session:
        result = search(session, role, max_examples=3, seed=3)
    assert result.verdict is Verdict.CLEAN and result.examples == 3
    assert result.untriggered_examples == 3 and result.errors == []
    # ... and a client that breaks the spec in such a run is still caught.
    broken = RecordedRecovery(reads_fence=False, untriggered=True)
    with _session() as session:
        found = search(session, broken, max_examples=3, seed=3, shrink=False)
    assert found.finding is not None and found.verdict is Verdict.VIOLATION


def test_search_verdicts() -> None:
    assert SearchResult().verdict is Verdict.UNDECIDED  # nothing ran
    clean: SearchResult[Any, Any] = SearchResult(examples=2)
    clean.verdicts[Verdict.CLEAN] = 2
    assert clean.verdict is Verdict.CLEAN
    assert SearchResult(examples=2, errors=["x"]).verdict is Verdict.UNDECIDED
    # One example the judge could not decide makes the search undecided, never clean.
    partly: SearchResult[Any, Any] = SearchResult(examples=2)
    partly.verdicts.update({Verdict.CLEAN: 1, Verdict.UNDECIDED: 1})
    assert partly.verdict is Verdict.UNDECIDED


def test_stop_at_is_checked() -> None:
    with _session() as session, pytest.raises(ValueError, match="stop_at"):
        search(session, RecordedRecovery(reads_fence=True), stop_at="divergence")  # type: ignore[arg-type]


# The writer -------------------------------------------------------------------------------


def test_clean_writer_runs_give_a_clean_verdict_and_their_coverage() -> None:
    role = RecordedWriter(_writer_record())
    with _session() as session:
        result = search(session, role, max_examples=4, seed=1)
    assert result.verdict is Verdict.CLEAN and result.examples == 4 and result.finding is None
    coverage = result.coverage.as_dict()
    assert coverage["examples"] == 4
    assert coverage["examples_with_an_ensemble_change"] == 4
    assert coverage["model_actions"]["ClientChangesEnsemble"] >= 4
    assert coverage["callbacks"] == {"OK": 4 * len(role.record.outcomes)}
    assert coverage["closes"] == {"OK": 4}


def test_an_unreadable_acknowledged_entry_stops_the_search_and_is_shrunk() -> None:
    role = RecordedWriter(_writer_record(lose_e0=True))
    with _session() as session:
        result = search(session, role, max_examples=10, seed=2)
    assert result.stopped == "finding" and result.verdict is Verdict.VIOLATION
    assert result.finding is not None and result.finding.example == 1
    # The recorded run fails whatever the plan: shrinking takes everything away it can.
    assert result.finding.shrunk.plan.schedule.decisions == {}
    assert result.finding.shrunk.plan.entries == 1


def test_each_smaller_plan_is_tried_in_the_delivery_order_its_parent_ran_in() -> None:
    # Shrinking keeps the interleaving that failed: a candidate that dropped the hold making
    # the window must not pass by chance once and be kept (#3005 from scratch, seed 4).
    record = _writer_record(lose_e0=True)
    order = delivery_order(record)
    assert order  # the recorded run's answers, as they reached the client
    role = RecordedWriter(record)
    guided = [WriterRunPlan(SHAPE, 2, FrameSchedule({add_key("b2", 0): DROP}), origin="model")]
    with _session() as session:
        result = search(session, role, max_examples=10, seed=2, guided=guided)
    assert result.finding is not None and result.finding.shrink_runs > 0
    found, *candidates = role.plans_run
    assert found.schedule.order == ()  # a search example runs as drawn
    assert candidates and all(plan.schedule.order == order for plan in candidates)


def test_writer_guided_plans_come_every_other_example() -> None:
    guided = [WriterRunPlan(SHAPE, 2, FrameSchedule({add_key("b2", 0): DROP}), origin="model")]
    role = RecordedWriter(_writer_record())
    with _session() as session:
        result = search(session, role, max_examples=4, seed=3, guided=guided)
    assert result.guided_examples == 2 and role.plans_run[0] == role.plans_run[2] == guided[0]


def test_a_writer_schedule_never_applied_is_undecided() -> None:
    role = RecordedWriter(_writer_record(), arrange=False)
    with _session() as session:
        result = search(session, role, max_examples=3, seed=1)
    assert result.verdict is Verdict.UNDECIDED and result.stopped == "undecided"
    assert "never arranged" in result.errors[0]


# Shrinking and coverage -------------------------------------------------------------------


def _judged(record: WriterRecord, violations: list[str]) -> Example[Any, Any]:
    judgement = WriterRole(SHAPE).judge(record)
    outcome = dataclasses.replace(judgement.outcome, violations=violations)
    if violations:
        outcome = dataclasses.replace(outcome, verdict=Verdict.VIOLATION)
    plan = WriterRunPlan(SHAPE, record.entries)
    return Example(plan, record, dataclasses.replace(judgement, outcome=outcome), [], 0.1)


def test_the_same_failure_is_the_same_verdict_and_the_same_invariants() -> None:
    record = _writer_record()
    a = _judged(record, ["AllAckedEntriesAreReadable (on the real cluster): e0"])
    b = _judged(record, ["AllAckedEntriesAreReadable (on the real cluster): e1"])
    c = _judged(record, ["NoDivergenceBetweenClientAndMetaData"])
    clean = _judged(record, [])
    assert same_failure(a, b) and not same_failure(a, c) and not same_failure(a, clean)
    unjudged: Example[Any, Any] = dataclasses.replace(a, judgement=None)
    assert not same_failure(a, unjudged)


def test_coverage_counts_names_and_sums_the_roles_tallies() -> None:
    coverage = Coverage()
    example = _judged(_writer_record(), [])
    assert example.judgement is not None
    changes = str(example.judgement.ensemble_changes)
    coverage.add(example, {"callbacks": ["OK", "OK", "TimeoutException"], "acknowledged": 2})
    coverage.add(example, {"callbacks": ["OK"], "acknowledged": 1})
    counted: Mapping[str, Any] = coverage.as_dict()
    assert counted["callbacks"] == {"OK": 3, "TimeoutException": 1}
    assert counted["acknowledged"] == 3 and counted["examples"] == 2
    assert counted["ensemble_changes_per_example"] == {changes: 2}
    assert counted["examples_with_an_ensemble_change"] == 2


def test_a_divergence_is_kept_while_the_search_goes_on_unless_it_stops_at_any_finding() -> None:
    record = _writer_record()
    # b3's proxy named as the spare b4: its adds go to a bookie outside the ensemble.
    proxy = next(p for p, b in record.bookie_of_proxy.items() if b == 2)
    spare = next(p for p, b in record.bookie_of_proxy.items() if b == 3)
    renamed = {**record.bookie_of_proxy, proxy: 3, spare: 2}
    diverging = dataclasses.replace(record, bookie_of_proxy=renamed)
    role = RecordedWriter(diverging)
    with _session() as session:
        going_on = search(session, role, max_examples=3, seed=1, shrink=False)
    assert going_on.verdict is Verdict.DIVERGENCE and going_on.stopped == "examples"
    assert going_on.examples == 3 and going_on.divergent_examples == 3
    assert going_on.finding is not None and going_on.finding.example == 1
    with _session() as session:
        stopped = search(session, role, max_examples=3, seed=1, stop_at=StopAt.FINDING)
    assert stopped.examples == 1 and stopped.stopped == "finding"
    assert stopped.verdict is Verdict.DIVERGENCE
