"""The plan vocabulary every role shares: frame decisions (requests and answers: forward, drop,
hold by frames or for a time, a forged error answer) and fault events (bookies, connections,
ZooKeeper), their checks and their JSON."""

from __future__ import annotations

import pytest

from conformance.javaclient.plans import (
    BOOKIES,
    DROP,
    FORWARD,
    Choice,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlanError,
    PlannedFault,
    forge,
    hold,
    hold_for,
)

ADD_E0_B2 = FrameKey("add", "b2", 0)
ANSWER_E0_B1 = FrameKey("add", "b1", 0, answer=True)


def test_every_choice_round_trips_and_says_what_it_does() -> None:
    schedule = FrameSchedule(
        {
            ADD_E0_B2: forge("EIO"),
            ANSWER_E0_B1: hold_for(6000),
            FrameKey("add", "b3", 1): hold(2),
            FrameKey("add", "b1", 1, answer=True): DROP,
        },
        (
            PlannedFault(FaultKind.CRASH, ANSWER_E0_B1, "b1"),
            PlannedFault(FaultKind.HOLD_METADATA, None, None, 500),
            PlannedFault(FaultKind.PAUSE, ADD_E0_B2, "b2", 1500),
        ),
    )
    again = FrameSchedule.from_json(schedule.to_json(), BOOKIES)
    assert again == schedule
    lines = schedule.describe()
    assert "add e0 to b2: answer EIO in its place" in lines
    assert "b1's answer to add e0: hold for 6000 ms" in lines
    assert "crash b1 when b1's answer to add e0 passes" in lines
    # Events as the run meets them: the start first.
    assert schedule.events[0].kind is FaultKind.HOLD_METADATA
    assert schedule.watches_answers()
    assert not FrameSchedule({ADD_E0_B2: DROP}).watches_answers()


def test_old_schedules_read_as_before() -> None:
    old = [{"kind": "fence read", "bookie": "b3", "entry": -1, "action": "drop"}]
    schedule = FrameSchedule.from_json(old)
    assert schedule.decisions == {FrameKey("fence read", "b3", -1): DROP}
    assert schedule.to_json() == old


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Choice("teleport"), "not 'teleport'"),
        (lambda: Choice("hold"), "one of them"),
        (lambda: Choice("hold", after=2, for_ms=10), "one of them"),
        (lambda: Choice("drop", after=2), "only a hold"),
        (lambda: Choice("forge"), "has a status"),
        (lambda: forge("EOK"), "not EOK"),
        (lambda: Choice("forward", status="EIO"), "has a status"),
        (lambda: PlannedFault(FaultKind.CRASH), "names a bookie"),
        (lambda: PlannedFault(FaultKind.EXPIRE_SESSION, bookie="b1"), "names no bookie"),
        (lambda: PlannedFault(FaultKind.PAUSE, bookie="b1"), "lasts >= 1 ms"),
        (lambda: PlannedFault(FaultKind.RESET, bookie="b1", duration_ms=5), "has no duration"),
    ],
)
def test_what_no_run_can_do_is_refused(make: object, says: str) -> None:
    with pytest.raises(PlanError, match=says):
        make()  # type: ignore[operator]


def test_a_schedule_from_json_names_only_the_runs_bookies_and_faults() -> None:
    with pytest.raises(PlanError, match="no fault 'meteor'"):
        FrameSchedule.from_json([{"fault": "meteor", "at": None}])
    with pytest.raises(PlanError, match="names bookie 'b9'"):
        FrameSchedule.from_json([{"fault": "crash", "at": None, "bookie": "b9"}])
    with pytest.raises(PlanError, match="no such frame"):
        FrameSchedule.from_json(
            [{"fault": "reset", "bookie": "b1", "at": {"kind": "add", "bookie": "b7", "entry": 0}}]
        )
    assert FrameSchedule().choice(ADD_E0_B2) == FORWARD


def test_a_smaller_schedule_takes_one_decision_or_fault_away_and_keeps_the_rest() -> None:
    crash = PlannedFault(FaultKind.CRASH, ANSWER_E0_B1, "b1")
    schedule = FrameSchedule({ADD_E0_B2: hold(3), ANSWER_E0_B1: forge("EIO")}, (crash,))
    smaller = list(schedule.smaller())
    assert FrameSchedule({ANSWER_E0_B1: forge("EIO")}, (crash,)) in smaller
    assert FrameSchedule({ADD_E0_B2: hold(2), ANSWER_E0_B1: forge("EIO")}, (crash,)) in smaller
    assert FrameSchedule({ADD_E0_B2: hold(3), ANSWER_E0_B1: forge("EIO")}) in smaller
    assert len(smaller) == 4
    # Restricted to e1 on: the decisions and faults of e0's frames go, the start's stay.
    start = PlannedFault(FaultKind.EXPIRE_SESSION)
    restricted = FrameSchedule(schedule.decisions, (crash, start)).restricted(
        lambda key: key.entry_id >= 1
    )
    assert restricted == FrameSchedule({}, (start,))
