"""Fault schedules: the named scenarios, and the injector's choices and healing, against a
stand-in ensemble that records the calls (the real ensemble is in the cluster tests)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from conformance.zab.faults import SCENARIOS, ScheduledFaults, scenario_steps
from conformance.zab.program import FaultStep


class RecordingEnsemble:
    def __init__(self) -> None:
        self.servers = {"zk1": None, "zk2": None, "zk3": None}
        self.calls: list[tuple[str, str]] = []

    def leader(self) -> str:
        return "zk2"

    def __getattr__(self, verb: str) -> Any:
        if verb not in ("crash", "restart", "pause", "resume", "isolate", "reconnect"):
            raise AttributeError(verb)

        def call(name: str, **_kw: object) -> None:
            self.calls.append((verb, name))

        return call


def run_steps(*steps: FaultStep) -> tuple[RecordingEnsemble, ScheduledFaults]:
    ensemble = RecordingEnsemble()
    injector = ScheduledFaults(ensemble, steps, lambda: 10**9)  # type: ignore[arg-type]
    injector.start()
    deadline = time.monotonic() + 10
    while len(injector.events) < sum(v != "sleep" for s in steps for v, _ in s.actions):
        assert time.monotonic() < deadline, injector.errors
        time.sleep(0.01)
    injector.finish()
    return ensemble, injector


def test_scenarios_after_seed_003() -> None:
    assert set(SCENARIOS) == {
        "join-during-broadcast",
        "commit-before-entry",
        "commit-ld-zxid",
        "rejoin-after-partition",
    }
    steps = scenario_steps("commit-ld-zxid", ops=400, repeats=3)
    assert [s.after_ops for s in steps] == [100, 200, 300]
    assert all(s.name.startswith("commit-ld-zxid #") for s in steps)
    with pytest.raises(ValueError, match="unknown scenario"):
        scenario_steps("nope", ops=10)


def test_kill_leader_then_restart_it() -> None:
    step = FaultStep(0, (("kill", "leader"), ("sleep", "0"), ("restart", "@0")), "k")
    ensemble, injector = run_steps(step)
    assert ensemble.calls == [("crash", "zk2"), ("restart", "zk2")]
    assert [(e.verb, e.server) for e in injector.events] == [("kill", "zk2"), ("restart", "zk2")]


def test_commit_ld_scenario_touches_two_different_followers() -> None:
    _description, actions = SCENARIOS["commit-ld-zxid"]
    ensemble, _injector = run_steps(FaultStep(0, actions, "c"))
    assert ensemble.calls == [
        ("pause", "zk1"),
        ("crash", "zk3"),
        ("restart", "zk3"),
        ("resume", "zk1"),
    ]


def test_finish_heals_what_a_step_left_broken() -> None:
    # A step that never heals: the injector must resume and restart on finish.
    step = FaultStep(0, (("pause", "follower"), ("kill", "leader")), "broken")
    ensemble, _injector = run_steps(step)
    assert ensemble.calls == [
        ("pause", "zk1"),
        ("crash", "zk2"),
        ("resume", "zk1"),
        ("restart", "zk2"),
    ]


def test_steps_wait_for_progress_and_stop_when_the_workload_ends() -> None:
    ensemble = RecordingEnsemble()
    step = FaultStep(5, (("kill", "leader"),), "late")
    injector = ScheduledFaults(ensemble, (step,), lambda: 0)  # type: ignore[arg-type]
    injector.start()
    time.sleep(0.2)
    injector.finish(timeout=5)
    assert ensemble.calls == []


def test_partition_is_healed_on_finish() -> None:
    step = FaultStep(0, (("isolate", "leader"),), "cut")
    ensemble, _injector = run_steps(step)
    assert ensemble.calls == [("isolate", "zk2"), ("reconnect", "zk2")]


class FailingResumeEnsemble(RecordingEnsemble):
    def resume(self, name: str, **_kw: object) -> None:
        raise OSError(f"kill -CONT {name}: no such process")


def test_a_failed_resume_while_healing_is_recorded_not_suppressed() -> None:
    ensemble = FailingResumeEnsemble()
    step = FaultStep(0, (("pause", "follower"),), "pause")
    injector = ScheduledFaults(ensemble, (step,), lambda: 10**9)  # type: ignore[arg-type]
    injector.start()
    deadline = time.monotonic() + 10
    while not injector.events:  # the pause happened (then finish heals it)
        assert time.monotonic() < deadline, injector.errors
        time.sleep(0.01)
    injector.finish(timeout=10)
    assert injector.errors == ["resume zk1 while healing: kill -CONT zk1: no such process"]
