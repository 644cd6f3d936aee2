"""Fault schedules as data: their JSON, their checks, and what the draw makes (fast)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance.cli import main
from conformance.live.search import shrink_greedily
from conformance.zab.schedule import (
    ScheduleError,
    ZabStep,
    from_json,
    schedules,
    smaller_schedules,
    to_json,
    validate_step,
    window_templates,
)

SCHEDULE = (
    ZabStep("crash", "zk1"),
    ZabStep("write", count=5),
    ZabStep("crash_at", "zk1", "ACK"),
    ZabStep("restart", "zk1"),
    ZabStep("hold", "leader", "UPTODATE"),
    ZabStep("wait", count=100),
    ZabStep("release"),
    ZabStep("await", "follower-a", "FOLLOWERINFO"),
    ZabStep("release", "follower-a", "ACKEPOCH"),
)


def test_a_schedule_round_trips_through_json_and_describes_itself() -> None:
    assert from_json(to_json(SCHEDULE)) == SCHEDULE
    assert [s.describe() for s in SCHEDULE] == [
        "crash zk1",
        "write 5",
        "crash_at zk1's next ACK (to-leader)",
        "restart zk1",
        "hold leader's next UPTODATE (to-learner)",
        "wait 100 ms",
        "release held packets",
        "await follower-a's FOLLOWERINFO (to-leader)",
        "release follower-a's held ACKEPOCH (to-leader)",
    ]


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("not json", "JSON list"),
        ('{"verb": "write"}', "JSON list"),
        ('[{"verb": "flood"}]', "step 1: unknown verb 'flood'"),
        ('[{"verb": "crash", "server": "zk9"}]', "unknown server 'zk9'"),
        ('[{"verb": "hold", "server": "zk1", "packet": "PING"}]', "unknown packet 'PING'"),
        ('[{"verb": "write", "count": 0}]', "count must be 1..50"),
        ('[{"verb": "wait", "count": 99999}]', "count must be 0..2000"),
        ('[{"verb": "write", "count": 1, "extra": 1}]', "step 1 is not a step"),
        ('[{"verb": "write", "count": "many"}]', "count must be"),
        ("[3]", "step 1 is not a step"),
        ('[{"verb": "await", "server": "zk1"}]', "unknown packet ''"),
        ('[{"verb": "await"}]', "await: name a server and a packet"),
        ('[{"verb": "await", "server": "zk7", "packet": "ACK"}]', "unknown server 'zk7'"),
        ('[{"verb": "release", "server": "zk1"}]', "name both a server and a packet"),
        ('[{"verb": "release", "packet": "ACK"}]', "name both a server and a packet"),
        ('[{"verb": "release", "server": "zk1", "packet": "PING"}]', "unknown packet 'PING'"),
    ],
)
def test_a_bad_schedule_says_what_is_wrong(text: str, why: str) -> None:
    with pytest.raises(ScheduleError, match=why):
        from_json(text)


def test_a_five_server_schedule_may_name_zk5() -> None:
    assert validate_step(ZabStep("crash", "zk5"), servers=5).server == "zk5"
    with pytest.raises(ScheduleError):
        validate_step(ZabStep("crash", "zk5"), servers=3)


@settings(max_examples=200, deadline=None)
@given(schedules())
def test_every_drawn_schedule_is_valid_and_bounded(schedule: tuple[ZabStep, ...]) -> None:
    assert 1 <= len(schedule) <= 24
    for step in schedule:
        validate_step(step, servers=3)
    assert from_json(to_json(schedule)) == schedule


@settings(max_examples=100, deadline=None)
@given(window_templates())
def test_a_window_template_restarts_what_it_crashed(path: tuple[ZabStep, ...]) -> None:
    crashed = path[0]
    assert crashed.verb == "crash" and crashed.server.startswith("follower-")
    assert path.index(ZabStep("restart", crashed.server)) > 1
    assert any(step.verb in ("hold", "cut", "crash_at") for step in path)
    if ZabStep("crash", "first-leader") in path:  # the new leader's DIFF
        assert path[-2:] == (ZabStep("restart", crashed.server), ZabStep("settle"))
        assert path.count(ZabStep("crash", "first-leader")) == 2
    else:
        assert ZabStep("release") in path


def minimise(
    schedule: tuple[ZabStep, ...],
    fails: Callable[[tuple[ZabStep, ...]], bool],
    more: Callable[[], bool] = lambda: True,
) -> tuple[ZabStep, ...]:
    """What ``zab search`` does with a finding: the kernel's greedy shrinking over
    :func:`smaller_schedules` (``conformance/zab/guided.py``)."""
    return shrink_greedily(schedule, smaller_schedules, fails, more=more)[0]


def test_minimise_takes_out_every_step_that_does_not_matter_and_shrinks_writes() -> None:
    def fails(schedule: tuple[ZabStep, ...]) -> bool:
        verbs = [s.verb for s in schedule]
        return "crash_at" in verbs and "write" in verbs[verbs.index("crash_at") :]

    tried: list[int] = []

    def counted(schedule: tuple[ZabStep, ...]) -> bool:
        tried.append(len(schedule))
        return fails(schedule)

    schedule = (*SCHEDULE, ZabStep("write", count=7))
    minimal = minimise(schedule, counted)
    assert minimal == (ZabStep("crash_at", "zk1", "ACK"), ZabStep("write", count=1))
    assert all(n < len(schedule) for n in tried[:-1])
    # Out of time: nothing is tried and the schedule stays as it was.
    assert minimise(schedule, counted, more=lambda: False) == schedule


def test_a_try_that_does_not_fail_again_is_not_taken() -> None:
    flaky = iter([False, True, True, True, True, True, True, True, True, True])
    two = (ZabStep("crash", "zk1"), ZabStep("write", count=3))
    # The first removal does not repeat (not taken); the second does.
    assert minimise(two, lambda _s: next(flaky)) == (ZabStep("crash", "zk1"),)


def test_the_command_refuses_a_bad_schedule_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schedule = tmp_path / "schedule.json"
    schedule.write_text('[{"verb": "flood"}]')
    runs = tmp_path / "runs"
    assert main(["zab", "search", "--replay", str(schedule), "--runs-dir", str(runs)]) == 2
    assert "step 1: unknown verb 'flood'" in capsys.readouterr().err
    assert main(["zab", "search", "--seconds", "0", "--runs-dir", str(runs)]) == 2
    assert "--seconds must be positive" in capsys.readouterr().err
    # A search's run directory goes to ``bkconform replay`` with its schedule.
    run_dir = tmp_path / "found"
    run_dir.mkdir()
    (run_dir / "results.json").write_text('{"kind": "zab-search", "zookeeper_version": "3.9.3"}')
    (run_dir / "schedule.json").write_text("not json")
    assert main(["replay", str(run_dir), "--runs-dir", str(runs)]) == 2
    assert "a schedule is a JSON list of steps" in capsys.readouterr().err
    assert not runs.exists()
