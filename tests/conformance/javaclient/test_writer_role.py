"""The writer role: its plans, how a finding is made smaller, the model's danger plans, its
tallies, and writer runs on a real cluster (the default BookKeeper release): the Java client
writes through the proxies, a dropped add makes it change its ensemble, the run judges clean."""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings

from adapters.javaclient import BookKeeperVersion
from conformance.javaclient.controller import FaultsFailed, ScheduleController
from conformance.javaclient.plans import (
    DROP,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlanError,
    PlannedFault,
    forge,
    hold,
    hold_for,
)
from conformance.javaclient.role import Example
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.run import session_options
from conformance.javaclient.search import run_plan
from conformance.javaclient.session import SETTLE_S, ClientSession
from conformance.javaclient.writer_guidance import Realization, writer_guided_plans
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import (
    FaultCarrier,
    FaultSet,
    WriterRole,
    _payload,
    fault_carrier,
    late_hold_bounds,
    smaller_writer_plans,
    writer_run_plans,
)
from conformance.javaclient.writer_story import timeout_check_interval_s
from conformance.verdict import Verdict
from tests.conformance.javaclient.test_writer_story import RECORDED

SHAPE = WriterShape(3, 2, 2)


def test_smaller_plans_take_one_thing_away() -> None:
    plan = WriterRunPlan(
        SHAPE, 3, FrameSchedule({add_key("b2", 0): DROP, add_key("b1", 2): hold(3)})
    )
    smaller = list(smaller_writer_plans(plan))
    assert all(p.faults() <= plan.faults() and p.entries <= plan.entries for p in smaller)
    assert any(p.faults() == 1 and p.entries == 3 for p in smaller)
    assert any(p.choice("b1", 2) == hold(2) for p in smaller)
    assert any(p.entries == 2 and p.faults() == 1 for p in smaller)
    delayed = dataclasses.replace(plan, delayed=1, delay_ms=1000)
    assert any(p == plan for p in smaller_writer_plans(delayed))  # the delay goes


@settings(max_examples=50, deadline=None)
@given(writer_run_plans(SHAPE))
def test_drawn_plans_are_valid_and_round_trip(plan: WriterRunPlan) -> None:
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert plan.faults() <= 3


def test_the_model_guides_towards_ensemble_changes_with_entries_in_flight() -> None:
    plans = writer_guided_plans(SHAPE, budget_s=2.0, entries=(2,))
    assert plans and all(p.entries == 2 and p.faults() >= 1 for p in plans)
    assert all(p.origin.startswith("the model's writer") for p in plans)
    # Highest danger first: #3005's precondition (a change failing a bookie that confirmed
    # e1 while e0's answer from a bookie that stays is on its way), with the fewest faults;
    # two changes (a bookie lost, then its replacement) come too.
    assert plans[0].origin == "the model's writer (danger 10)" and plans[0].faults() == 1
    assert any(p.faults() == 2 for p in plans)


def test_the_explorer_s_first_plan_for_3005_s_shape_is_its_window_held() -> None:
    # E=2 WQ=AQ=1, e0 and e2 to b1, e1 and e3 to b2: the change that fails b2 (which
    # confirmed e1) while b1's answer to e0 is on its way meets #3005's precondition; its held
    # change forges b2's answer to e3, holds the change's metadata write and b1's answers.
    shape = WriterShape(2, 1, 1)
    plans = writer_guided_plans(shape, budget_s=5.0, realizations=tuple(Realization))
    first = plans[0]
    assert first.origin == "the model's writer (danger 10)" and first.entries == 4
    answer = functools.partial(FrameKey, "add", answer=True)
    assert first.schedule.decisions == {
        answer("b1", 0): hold_for(400),
        answer("b1", 2): hold_for(400),
        answer("b2", 3): forge("EIO"),
    }
    assert first.schedule.events == (
        PlannedFault(FaultKind.HOLD_METADATA, answer("b2", 3), None, 1500),
    )


def _realization(plan: WriterRunPlan) -> tuple[frozenset[tuple[str, int]], str]:
    """The adds a guided plan makes lost, and how: dropped, answered EIO, answered late, or
    answered EIO with the change's metadata write held (its other holds: answers in flight)."""
    choices = plan.schedule.decisions
    if plan.schedule.events:
        lost = frozenset((k.bookie, k.entry_id) for k, c in choices.items() if c.action == "forge")
        return lost, "held change"
    lost = frozenset((key.bookie, key.entry_id) for key in choices)
    actions = {c.action for c in choices.values()}
    assert len(actions) == 1
    return lost, {"drop": "drop", "forge": "forge", "hold": "late"}[actions.pop()]


def test_the_model_s_dangers_are_made_by_every_realization_with_the_extended_faults() -> None:
    every = writer_guided_plans(
        SHAPE, budget_s=2.0, entries=(2,), realizations=tuple(Realization), limit=1000
    )
    # Each danger three times at least: its lost adds dropped, answered EIO, answered late;
    # and answered EIO with the change held when the trace had answers in flight at it.
    by_danger: dict[frozenset[tuple[str, int]], set[str]] = {}
    for plan in every:
        lost, how = _realization(plan)
        by_danger.setdefault(lost, set()).add(how)
    assert by_danger and all({"drop", "forge", "late"} <= ways for ways in by_danger.values())
    held = [plan for plan in every if plan.schedule.events]
    assert held and any("held change" in ways for ways in by_danger.values())
    for plan in held:
        (event,) = plan.schedule.events
        forged = {k for k, c in plan.schedule.decisions.items() if c.action == "forge"}
        waiting = {k for k, c in plan.schedule.decisions.items() if c.action == "hold"}
        # The write held from the first forged answer on, longer than the answers in flight.
        assert event.kind is FaultKind.HOLD_METADATA and event.at in forged
        assert waiting and not waiting & forged
        assert all(0 < plan.schedule.decisions[k].for_ms < event.duration_ms for k in waiting)
    kinds = {
        (key.answer, choice.action, choice.for_ms > 0)
        for plan in every
        for key, choice in plan.schedule.decisions.items()
    }
    assert kinds == {(False, "drop", False), (True, "forge", False), (True, "hold", True)}
    guided = WriterRole(SHAPE).guided_plans(0, 2.0)
    assert {c.action for p in guided for c in p.schedule.decisions.values()} == {
        "drop",
        "forge",
        "hold",
    }
    requests_only = WriterRole(SHAPE, faults=FaultSet.REQUESTS).guided_plans(0, 2.0)
    assert {c.action for p in requests_only for c in p.schedule.decisions.values()} == {"drop"}
    assert not any(p.schedule.events for p in requests_only)


def test_the_tallies_count_a_bookie_coming_back() -> None:
    record = next(r for _p, r in RECORDED if r.segments == [(0, (1, 3, 2))])
    back = dataclasses.replace(record, segments=[(0, (0, 1, 2)), (1, (3, 1, 2)), (2, (0, 1, 2))])
    role = WriterRole(SHAPE)
    tallies = role.tallies(Example(RECORDED[0][0], back, None, [], 0.1))
    assert tallies["examples_where_a_bookie_came_back"] == 1
    assert (
        role.tallies(Example(RECORDED[0][0], record, None, [], 0.1))[
            "examples_where_a_bookie_came_back"
        ]
        == 0
    )


def test_a_writer_plan_names_its_role_and_shape() -> None:
    plan = WriterRunPlan(WriterShape(2, 1, 1), 2)
    role = role_of_plan(plan.to_json())
    assert isinstance(role, WriterRole) and role.shape == WriterShape(2, 1, 1)
    assert role.plan_from_json(plan.to_json()) == plan
    with pytest.raises(PlanError, match="E=3 WQ=2 AQ=2"):
        WriterRole(SHAPE).plan_from_json(plan.to_json())


def test_the_writer_needs_a_routable_client_and_holds_within_its_add_timeout() -> None:
    role = WriterRole(SHAPE)
    refusal = role.refusal(BookKeeperVersion(4, 11, 1))
    assert refusal is not None and "--role recovery" in refusal
    assert role.refusal(BookKeeperVersion(4, 17, 3)) is None
    assert role.max_hold_s < role.add_entry_timeout_s
    assert role.layout().bookies == SHAPE.bookies and role.layout().records_adds


@pytest.mark.cluster
def test_a_dropped_add_makes_the_client_replace_that_bookie_in_place(
    bookkeeper_home: Path, tmp_path: Path
) -> None:
    role = WriterRole(SHAPE)
    plain = WriterRunPlan(SHAPE, 3)
    dropped = WriterRunPlan(SHAPE, 3, FrameSchedule({add_key("b2", 0): DROP}))
    # The dropped add is never answered, so the client times it out on any machine, 1-2 s
    # after the send (1 s add timeout, checked every 1 s); the role waits 20 s for callbacks.
    with ClientSession(session_options(role, bookkeeper_home, tmp_path)) as session:
        first = run_plan(session, role, plain)
        second = run_plan(session, role, dropped)
    assert first.verdict is Verdict.CLEAN, first.judgement
    assert first.record.segments == [(0, (0, 1, 2))]
    assert [o.describe() for o in first.record.outcomes] == [
        "add 0 (e0): OK",
        "add 1 (e1): OK",
        "add 2 (e2): OK",
    ]
    assert second.verdict is Verdict.CLEAN, second.judgement
    assert second.judgement is not None and second.judgement.ensemble_changes == 1
    # b2 (position 1) replaced by the spare b4, in its position.
    assert second.record.segments == [(0, (0, 3, 2))]
    assert second.record.closed_last_entry == 2
    assert 3 in second.record.stored[0] and 1 not in second.record.stored[0]


@settings(max_examples=80, deadline=None)
@given(writer_run_plans(SHAPE, faults=FaultSet.EXTENDED))
def test_the_extended_faults_are_valid_plans_that_round_trip(plan: WriterRunPlan) -> None:
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert len(plan.schedule.events) <= 2 and len(plan.schedule.decisions) <= 3
    # A hold for a time ends within half the add timeout (1 s) or after its first check
    # that surely fired (2 s): never where both readings of the add's fate are possible; and
    # past the timeout, within the settle window after the earliest end of the example (the
    # timeout, 1 s, and SETTLE_S, 2 s), so that the held frame is delivered and judged.
    for choice in plan.schedule.decisions.values():
        assert choice.for_ms == 0 or choice.for_ms <= 500 or 2300 <= choice.for_ms <= 3000
    for smaller in smaller_writer_plans(plan):
        assert (
            smaller.faults() < plan.faults()
            or smaller.entries < plan.entries
            or (smaller.delayed < plan.delayed)
            or smaller != plan
        )


def test_the_extended_faults_reach_answers_forgeries_and_events() -> None:
    seen: set[str] = set()

    @settings(max_examples=200, deadline=None, database=None)
    @given(writer_run_plans(SHAPE, faults=FaultSet.EXTENDED))
    def collect(plan: WriterRunPlan) -> None:
        for key, choice in plan.schedule.decisions.items():
            seen.add(f"{'answer' if key.answer else 'request'} {choice.action}")
        seen.update(event.kind.value for event in plan.schedule.events)

    collect()
    assert {"answer forge", "request forge", "answer drop", "crash", "hold metadata"} <= seen
    assert {"pause", "stall", "answer hold", "request hold"} <= seen


@pytest.mark.parametrize("add_timeout_s", [1, 2, 5])
def test_a_hold_past_the_add_timeout_ends_within_the_settle_window(add_timeout_s: int) -> None:
    least, most = late_hold_bounds(add_timeout_s)
    check_s = timeout_check_interval_s(add_timeout_s)
    assert least > (add_timeout_s + check_s) * 1000  # the add has surely timed out
    assert most == add_timeout_s * 1000 + SETTLE_S * 1000  # the earliest end of the settle
    assert least < most


def test_the_extended_faults_hold_frames_past_the_add_timeout() -> None:
    held_for: set[str] = set()

    @settings(max_examples=300, deadline=None, database=None)
    @given(writer_run_plans(SHAPE, faults=FaultSet.EXTENDED))
    def collect(plan: WriterRunPlan) -> None:
        for choice in plan.schedule.decisions.values():
            if choice.for_ms:
                held_for.add("within" if choice.for_ms <= 500 else "past")

    collect()
    assert held_for == {"within", "past"}


def test_a_role_remembers_its_faults_for_replay() -> None:
    role = WriterRole(SHAPE, faults=FaultSet.REQUESTS)
    again = role_of_plan(WriterRunPlan(SHAPE, 2).to_json(), role.settings())
    assert isinstance(again, WriterRole) and again.faults is FaultSet.REQUESTS


def test_a_writers_client_settings_and_entry_size_reach_the_client_and_are_remembered() -> None:
    role = WriterRole(SHAPE, client_properties={"throttle": "1"}, entry_bytes=300_000)
    assert ("throttle", "1") in role.layout().client_properties
    assert "throttle=1" in role.describe() and "300000-byte entries" in role.describe()
    again = role_of_plan(WriterRunPlan(SHAPE, 2).to_json(), role.settings())
    assert isinstance(again, WriterRole)
    assert again.client_properties == {"throttle": "1"} and again.entry_bytes == 300_000
    plain = WriterRole(SHAPE)
    assert plain.layout().client_properties == ()
    assert "client_properties" not in plain.settings() and "entry_bytes" not in plain.settings()
    with pytest.raises(PlanError, match="an entry has"):
        WriterRole(SHAPE, entry_bytes=0)
    assert len(_payload(7, 1, 300_000)) == 300_000
    assert _payload(7, 1).startswith(b"bkconform writer ledger 7 add 1")


def test_the_writer_reaches_its_controller_s_faults_through_a_typed_interface() -> None:
    controller = ScheduleController(cast(Any, None), {}, 1, FrameSchedule())
    assert isinstance(controller, FaultCarrier) and fault_carrier(controller) is controller
    # A stand-in's arrangement (no controller of faults): none done, none can be asked for.
    stand_in = fault_carrier(object())
    assert stand_in.events_done == []
    with pytest.raises(FaultsFailed, match="carries out no faults"):
        stand_in.carry_out((PlannedFault(FaultKind.CRASH, None, "b1"),))
