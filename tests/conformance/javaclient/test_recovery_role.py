"""The recovering role's plans: what Hypothesis draws, what plans refuse, how a finding is
made smaller, and that a release that cannot be routed still plays (the metadata names the
proxies)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from adapters.javaclient import BookKeeperVersion
from conformance.javaclient.plans import (
    DEFECT_1_PLAN,
    DEFECT_1_WRITER,
    DROP,
    FrameKey,
    FrameSchedule,
    PlanError,
    RecoveryPlan,
    WriterPlan,
    hold,
    searched_frames,
)
from conformance.javaclient.recovery_role import (
    RecoveryRole,
    frame_schedules,
    generated_plans,
    smaller_plans,
)
from conformance.javaclient.roles import role_of_plan


@settings(max_examples=30, deadline=None)
@given(frame_schedules(DEFECT_1_WRITER))
def test_every_decision_names_a_searched_frame(schedule: FrameSchedule) -> None:
    assert set(schedule.decisions) <= set(searched_frames(DEFECT_1_WRITER))
    for choice in schedule.decisions.values():
        assert choice == DROP or (choice.action == "hold" and 1 <= choice.after <= 4)


@settings(max_examples=50, deadline=None)
@given(generated_plans())
def test_generated_plans_are_valid_and_round_trip(plan: RecoveryPlan) -> None:
    assert 1 <= plan.writer.entries <= 2 and plan.writer.acked in (0, 1)
    assert set(plan.schedule.decisions) <= set(searched_frames(plan.writer))
    assert RecoveryPlan.from_json(plan.to_json()) == plan
    assert isinstance(role_of_plan(plan.to_json()), RecoveryRole)


def test_searched_frames_follow_the_writer() -> None:
    two = WriterPlan(entries=2, acked=1)
    keys = searched_frames(two)
    assert {k.entry_id for k in keys if k.kind == "recovery read"} == {1, 2, 3}
    assert {k.entry_id for k in keys if k.kind == "recovery add"} == {1, 2}
    assert len(keys) == 3 * (1 + 3 + 2)


def test_plans_refuse_what_no_run_can_do() -> None:
    with pytest.raises(PlanError, match="b4"):
        WriterPlan(adds=(DEFECT_1_WRITER.adds[0].__class__(0, "b4", False),))
    with pytest.raises(PlanError, match="not one of its unconfirmed entries"):
        WriterPlan(entries=1, adds=(DEFECT_1_WRITER.adds[0].__class__(1, "b1", False),))
    with pytest.raises(PlanError, match="out of order"):
        WriterPlan.from_json({"entries": 2, "adds": [[0, "b1", "after"], [1, "b1", "before"]]})
    with pytest.raises(PlanError, match="no such frame"):
        FrameSchedule.from_json([{"kind": "fence read", "bookie": "b9", "entry": -1}])
    with pytest.raises(PlanError, match="needs 'writer'"):
        RecoveryPlan.from_json({"schedule": []})
    with pytest.raises(PlanError, match="role 'recovery'"):
        RecoveryPlan.from_json({**DEFECT_1_PLAN.to_json(), "role": "writer"})


def test_a_plan_recorded_before_roles_were_recorded_is_a_recovery_plan() -> None:
    old = {k: v for k, v in DEFECT_1_PLAN.to_json().items() if k != "role"}
    role = role_of_plan(old)
    assert isinstance(role, RecoveryRole) and role.plan_from_json(old) == DEFECT_1_PLAN


def test_smaller_plans_take_one_thing_away() -> None:
    smaller = list(smaller_plans(DEFECT_1_PLAN))
    read_e0_b2 = FrameKey("recovery read", "b2", 0)
    fence_b3 = FrameKey("fence read", "b3", -1)
    schedules = [p.schedule.decisions for p in smaller if p.writer == DEFECT_1_WRITER]
    assert {fence_b3: DROP} in schedules and {read_e0_b2: hold(2)} in schedules
    assert {fence_b3: DROP, read_e0_b2: hold(1)} in schedules
    assert sorted(len(p.writer.adds) for p in smaller if p.writer != DEFECT_1_WRITER) == [1, 1]
    assert all(p.origin == "shrunk from issue 8's recipe" for p in smaller)


def test_every_release_can_recover_through_the_proxies() -> None:
    role = RecoveryRole()
    assert role.layout().metadata_may_name_proxies
    assert role.refusal(BookKeeperVersion(4, 11, 1)) is None
    assert role.layout().bookies == 3 and role.layout().read_entry_timeout_s == 2
