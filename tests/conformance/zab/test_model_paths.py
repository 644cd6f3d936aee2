"""The model's paths into the window compiled into schedules for real servers (fast)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance.zab.model_paths import (
    ModelSchedule,
    compile_path,
    model_schedules,
    model_windows,
)
from conformance.zab.schedule import ZabStep, from_json, to_json, validate_step
from model.zab.protocol.windows import WINDOW_GOALS


def _by_goal() -> dict[str, ModelSchedule]:
    return {found.name: found for found in model_schedules()}


def test_every_goal_has_a_path_and_a_valid_schedule() -> None:
    found = _by_goal()
    assert set(found) == set(WINDOW_GOALS) | {f"{goal}+committed" for goal in WINDOW_GOALS}
    for model in found.values():
        for step in model.schedule:
            validate_step(step, servers=3)
        assert from_json(to_json(model.schedule)) == model.schedule
        assert model.goal in model.describe() and "the schedule:" in model.describe()


def test_a_follower_killed_once_its_ack_of_newleader_is_at_the_proxy() -> None:
    # ZOOKEEPER-4785's window, from the model: the follower is away while the leader writes;
    # its ACKEPOCH is held across the write, so its NEWLEADER carries the write (a DIFF); its
    # ACK of NEWLEADER is held, and once it is at the proxy the follower dies. The path never
    # proposes the write, so its PROPOSAL to the other follower is held for good.
    assert _by_goal()["follower-restarts-after-diff"].schedule == (
        ZabStep("hold", "follower-a", "ACKEPOCH"),
        ZabStep("crash", "follower-a"),
        ZabStep("restart", "follower-a"),
        ZabStep("await", "follower-a", "ACKEPOCH"),
        ZabStep("hold", "follower-a", "ACK"),
        ZabStep("hold", "follower-b", "PROPOSAL"),
        ZabStep("write", count=1),
        ZabStep("release", "follower-a", "ACKEPOCH"),
        ZabStep("await", "follower-a", "ACK"),
        ZabStep("crash", "follower-a"),
    )


def test_the_new_leader_is_elected_with_what_would_outvote_it_down() -> None:
    # s2 (follower-a) leads at the end: the first leader, which would outvote it, is down; the
    # other follower, needed for a quorum, is started again; the election settles.
    schedule = _by_goal()["restarted-follower-leads"].schedule
    assert schedule[-4:] == (
        ZabStep("crash", "first-leader"),
        ZabStep("restart", "follower-a"),
        ZabStep("restart", "follower-b"),
        ZabStep("settle"),
    )


def test_a_committed_variant_starts_with_an_acknowledged_write() -> None:
    # The shortest paths commit nothing (no acknowledged write could be found lost); each
    # variant starts after a write committed everywhere: the schedule's first step.
    for goal in WINDOW_GOALS:
        plain, written = _by_goal()[goal], _by_goal()[f"{goal}+committed"]
        assert written.written and not plain.written
        assert written.schedule[0] == ZabStep("write", count=1)
        assert plain.schedule[0] != ZabStep("write", count=1)
        assert "after a write committed everywhere" in written.describe()


@pytest.mark.parametrize(
    "goal", [f"{goal}{suffix}" for goal in WINDOW_GOALS for suffix in ("", "+committed")]
)
def test_holds_come_before_what_they_hold_and_releases_after(goal: str) -> None:
    schedule = _by_goal()[goal].schedule
    held: set[tuple[str, str]] = set()
    down: set[str] = set()
    for step in schedule:
        if step.verb == "hold":
            held.add((step.server, step.packet))
        elif step.verb == "release":
            assert (step.server, step.packet) in held, step
        elif step.verb == "crash":
            assert step.server not in down
            down.add(step.server)
        elif step.verb == "restart":
            assert step.server in down
            down.discard(step.server)
    writes = sum(step.count for step in schedule if step.verb == "write")
    model = _by_goal()[goal]
    requests = sum("LeaderProcessRequest" in line for line in model.path)
    assert writes == requests + model.written  # the committed write before the path


def test_a_path_without_outside_steps_compiles_to_nothing() -> None:
    from model.zab.protocol.config import ZabConfig
    from model.zab.protocol.windows import path_into

    path = path_into(
        ZabConfig(max_epoch=3, max_transaction_num=2, max_timeout_failures=3, record_pc=False),
        "propose-in-window",
    )
    assert path is not None
    assert compile_path(path.steps[:1]) == ()


@settings(max_examples=20, deadline=None)
@given(model_windows())
def test_the_draw_gives_the_compiled_schedules(schedule: tuple[ZabStep, ...]) -> None:
    assert schedule in {model.schedule for model in model_schedules()}


@pytest.mark.cluster
def test_the_models_path_drives_real_servers_into_the_window(tmp_path: Path) -> None:
    # propose-in-window on the default release: follower-a is crashed and restarted, its ACK
    # of NEWLEADER held, a write made: the leader's PROPOSAL reaches it inside the window, as
    # on the model's path; every await found its packet, the crash and restart are in the
    # trace, and nothing is lost.
    from adapters.installations.zookeeper import locate_zookeeper
    from conformance.verdict import Verdict
    from conformance.zab.guided import run_schedule

    schedule = _by_goal()["propose-in-window"].schedule
    outcome = run_schedule(locate_zookeeper(progress=False), schedule, tmp_path)
    assert outcome.verdict is Verdict.CLEAN, (outcome.findings, outcome.shortfalls)
    assert any(shape.startswith("DIFF:PROPOSAL") for shape in outcome.shapes), outcome.shapes
    assert [e.kind for e in outcome.events][:2] == ["crash", "restart"]
    assert outcome.trace is not None and outcome.trace.server_events >= 2
