"""The fail-over role (``--role both``): its plans (the writer's, with the recovery's point),
their JSON, the roles by name, the session it asks for; and, on the real client (cluster), a
fail-over carried out: the second client recovers the ledger the writer is writing."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from conformance.javaclient.failover_role import (
    RECOVERING_READ_TIMEOUT_S,
    FailoverRole,
    smaller_failover_plans,
    with_takeover,
)
from conformance.javaclient.observed import FrameKind, java_events
from conformance.javaclient.plans import DROP, FaultKind, FrameSchedule, PlanError, PlannedFault
from conformance.javaclient.roles import ROLE_NAMES, role_named, role_of_plan
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import WriterRole
from conformance.verdict import Verdict

SHAPE = WriterShape(3, 2, 2)
ROLE = FailoverRole(SHAPE)


def _plan(entries: int = 4, after: int = 2, delay_ms: int = 300, **more: Any) -> WriterRunPlan:
    return WriterRunPlan(SHAPE, entries, recover_after=after, recover_delay_ms=delay_ms, **more)


def test_a_fail_over_plan_is_role_both_and_survives_json() -> None:
    plan = _plan(schedule=FrameSchedule({add_key("b2", 1): DROP}))
    assert plan.role == "both"
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert "a second client recovers the ledger" in plan.describe()[0]
    assert "the writer adds e2..e3, then closes" in plan.describe()[0]
    assert "nothing more" in _plan(after=4).describe()[0]


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"recover_after": 0}, "starts after 1..4"),
        ({"recover_after": 5}, "starts after 1..4"),
        ({"recover_delay_ms": -1}, "a recovery delay of 0.."),
        ({"recover_delay_ms": 3001}, "a recovery delay of 0.."),
        ({"recover_after": None, "recover_delay_ms": 100}, "goes with a recovery"),
    ],
)
def test_a_recovery_point_outside_the_writer_s_adds_is_refused(
    changes: dict[str, Any], says: str
) -> None:
    with pytest.raises(PlanError, match=says):
        dataclasses.replace(_plan(), **changes)


WIPE_B1 = PlannedFault(FaultKind.RESTART_EMPTY, None, "b1")


def test_faults_after_the_recovery_are_plan_data() -> None:
    plan = _plan(after_recovery=(WIPE_B1, PlannedFault(FaultKind.CRASH, None, "b2")))
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert plan.has_fault_events and plan.faults() == 2
    assert "recovers the ledger; then restart empty b1; then crash b2;" in plan.describe()[0]
    assert not _plan().has_fault_events


@pytest.mark.parametrize(
    ("after", "says"),
    [
        ((PlannedFault(FaultKind.RESTART_EMPTY, add_key("b1", 0), "b1"),), "at no frame"),
        ((PlannedFault(FaultKind.RESTART_EMPTY, None, "b9"),), "has b1, b2, b3, b4"),
    ],
)
def test_a_fault_after_the_recovery_at_a_frame_or_elsewhere_is_refused(
    after: tuple[PlannedFault, ...], says: str
) -> None:
    with pytest.raises(PlanError, match=says):
        _plan(after_recovery=after)


def test_several_writers_ledgers_are_plan_data() -> None:
    plan = WriterRunPlan(SHAPE, 2, ledgers=3, writers=2)
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert "3 ledgers written together by 2 writer clients" in plan.describe()[0]
    with pytest.raises(PlanError, match=r"clients for 2 ledger\(s\): 1\.\.2"):
        WriterRunPlan(SHAPE, 2, ledgers=2, writers=3)
    with pytest.raises(PlanError, match=r"writes 1\.\.3 ledgers"):
        WriterRunPlan(SHAPE, 2, ledgers=4)
    assert ROLE.layout().more_writers == 2


def test_faults_around_the_recovery_need_a_recovery() -> None:
    with pytest.raises(PlanError, match="go with a recovery"):
        WriterRunPlan(SHAPE, 2, after_recovery=(WIPE_B1,))
    with pytest.raises(PlanError, match="go with a recovery"):
        WriterRunPlan(SHAPE, 2, before_recovery=(WIPE_B1,))


def test_faults_before_the_recovery_are_plan_data_and_shrink_away() -> None:
    crash = PlannedFault(FaultKind.CRASH, None, "b2")
    plan = _plan(before_recovery=(crash,), after_recovery=(WIPE_B1,))
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert plan.has_fault_events and plan.faults() == 2
    assert "300 ms later crash b2; a second client recovers" in plan.describe()[0]
    assert dataclasses.replace(plan, before_recovery=()) in list(smaller_failover_plans(plan))


def test_a_plan_s_role_must_match_its_recovery() -> None:
    both = _plan().to_json()
    with pytest.raises(PlanError, match="has no recover_after"):
        WriterRunPlan.from_json({**both, "role": "writer"})
    writer = WriterRunPlan(SHAPE, 2).to_json()
    with pytest.raises(PlanError, match="needs recover_after"):
        WriterRunPlan.from_json({**writer, "role": "both"})


def test_each_role_refuses_the_other_s_plans() -> None:
    with pytest.raises(PlanError, match="for --role both; this run is --role writer"):
        WriterRole(SHAPE).plan_from_json(_plan().to_json())
    with pytest.raises(PlanError, match="for --role writer; this run is --role both"):
        ROLE.plan_from_json(WriterRunPlan(SHAPE, 2).to_json())


def test_both_is_a_role_by_name_and_by_recorded_plan() -> None:
    assert "both" in ROLE_NAMES
    assert isinstance(role_named("both", SHAPE), FailoverRole)
    recorded = role_of_plan(_plan().to_json(), ROLE.settings())
    assert isinstance(recorded, FailoverRole) and recorded.shape == SHAPE
    assert recorded.settings() == {**ROLE.settings(), "role": "both"}


def test_the_session_has_a_second_client_that_recovers() -> None:
    layout = ROLE.layout()
    assert layout.recovering_client_read_timeout_s == RECOVERING_READ_TIMEOUT_S
    assert layout.records_adds and layout.bookies == SHAPE.bookies
    assert WriterRole(SHAPE).layout().recovering_client_read_timeout_s == 0
    assert "a second client recovers the ledger" in ROLE.describe()


@settings(max_examples=60, deadline=None)
@given(ROLE.plans())
def test_drawn_plans_are_fail_overs_within_the_writer_s_adds(plan: WriterRunPlan) -> None:
    assert plan.recover_after is not None and 1 <= plan.recover_after <= plan.entries
    assert plan.delayed == 0
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    # Bookies are crashed or replaced only when the writer has adds left after the recovery.
    assert not plan.after_recovery or plan.recover_after < plan.entries
    assert not plan.before_recovery or plan.recover_after < plan.entries
    assert all(event.kind is FaultKind.CRASH for event in plan.before_recovery)
    assert len({event.bookie for event in plan.after_recovery}) == len(plan.after_recovery)


def test_smaller_plans_keep_the_recovery() -> None:
    plan = _plan(schedule=FrameSchedule({add_key("b2", 3): DROP}), after_recovery=(WIPE_B1,))
    smaller = list(smaller_failover_plans(plan))
    assert smaller and all(p.recover_after is not None for p in smaller)
    assert dataclasses.replace(plan, recover_delay_ms=0) in smaller
    assert dataclasses.replace(plan, after_recovery=()) in smaller
    assert dataclasses.replace(plan, recover_after=plan.entries, after_recovery=()) in smaller
    last_taken = next(p for p in smaller if p.entries == 3)
    assert last_taken.recover_after == 2 and not last_taken.schedule.decisions


def test_with_takeover_fits_the_recovery_within_the_adds() -> None:
    writer = WriterRunPlan(SHAPE, 3, delayed=1, delay_ms=800)
    plan = with_takeover(writer, 9, 1000)
    assert (plan.recover_after, plan.recover_delay_ms, plan.delayed) == (3, 1000, 0)
    assert with_takeover(writer, 0, 0).recover_after == 1


def test_guided_plans_are_the_writer_s_with_the_recovery_after_the_last_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writer = [WriterRunPlan(SHAPE, 2, origin="the model's writer")]
    monkeypatch.setattr(WriterRole, "guided_plans", lambda self, seed, budget: writer)
    guided = ROLE.guided_plans(0, 1.0)
    assert [(p.recover_after, p.recover_delay_ms) for p in guided] == [(2, 0), (2, 1000)]


# On the real client -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def session(bookkeeper_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from conformance.javaclient.run import session_options
    from conformance.javaclient.session import ClientSession

    run_dir = tmp_path_factory.mktemp("failover")
    with ClientSession(session_options(ROLE, bookkeeper_home, run_dir)) as started:
        yield started


@pytest.mark.cluster
@pytest.mark.slow
def test_the_second_client_recovers_the_ledger_while_the_writer_writes(session: Any) -> None:
    from conformance.javaclient.search import run_plan

    # No fault in this plan: e0 and e1, sent before the 300 ms delay, have that long to reach
    # their bookies before the recovery fences and reads; the assertions need them there.
    example = run_plan(session, ROLE, _plan(entries=4, after=2, delay_ms=300))
    assert example.unapplied is None, example.unapplied
    record = example.record
    assert record.takeover is not None and record.takeover.error is None
    # The recovery closed the ledger at the writer's two acknowledged entries; the writer's
    # later adds were refused by the fenced bookies, and its close failed or agreed.
    assert record.takeover.last_entry == 1 == record.closed_last_entry
    callbacks = [o.describe() for o in record.outcomes]
    assert callbacks[:2] == ["add 0 (e0): OK", "add 1 (e1): OK"], callbacks
    assert all("LedgerFenced" in c or "LedgerClosed" in c for c in callbacks[2:]), callbacks
    kinds = {
        e.kind
        for e in java_events(
            record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id
        )
    }
    assert {FrameKind.ADD, FrameKind.FENCE_READ, FrameKind.RECOVERY_READ} <= kinds
    assert example.verdict is Verdict.CLEAN, example.judgement
