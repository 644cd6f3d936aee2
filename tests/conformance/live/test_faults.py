"""The kernel's one fault injector: handlers per kind, their heals (timed, at the end, ended by
another fault), and the record of both. The Java client's and the Zab handler sets are tested
with their systems (tests/conformance/javaclient/test_session.py, test_fault_records.py;
tests/conformance/zab/test_faults.py)."""

from __future__ import annotations

import time

import pytest

from conformance.live.faults import HEAL_STEP, FaultEvent, FaultHandler, FaultInjector, Injected


class Box:
    """A system of named servers whose faults and heals are recorded as calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def handlers(self, pause_s: float | None = None) -> list[FaultHandler[str]]:
        def crash(server: str | None, why: str) -> Injected:
            self.calls.append(f"crash {server}")
            return Injected(f"crashed ({why})", heal=lambda: self.calls.append(f"start {server}"))

        def pause(server: str | None, why: str) -> Injected:
            self.calls.append(f"pause {server}")
            resume = lambda: self.calls.append(f"resume {server}")  # noqa: E731
            return Injected(heal=resume, heal_after_s=pause_s)

        def restart(server: str | None, why: str) -> Injected:
            self.calls.append(f"restart {server}")
            return Injected()

        return [
            FaultHandler("crash", crash, "start", heal_rank=1, ends=frozenset({"pause"})),
            FaultHandler("pause", pause, "resume", heal_rank=0),
            FaultHandler("restart", restart, ends=frozenset({"crash"})),
        ]


def test_each_fault_and_each_heal_is_recorded_with_its_handlers_words() -> None:
    box = Box()
    seen: list[FaultEvent] = []
    injector = FaultInjector(box.handlers(), on_event=seen.append)
    assert injector.inject("crash", "s1", "plan step 1", step="step 1") == "crashed (plan step 1)"
    assert injector.in_effect("crash", "s1") and not injector.in_effect("crash", "s2")
    injector.heal()
    assert box.calls == ["crash s1", "start s1"]
    assert [(e.step, e.verb, e.server, e.detail) for e in injector.events] == [
        ("step 1", "crash", "s1", "crashed (plan step 1)"),
        (HEAL_STEP, "start", "s1", ""),
    ]
    assert seen == injector.events
    assert not injector.in_effect("crash", "s1")


def test_heals_at_the_end_go_by_rank_once_per_server_however_often_injected() -> None:
    box = Box()
    injector = FaultInjector(box.handlers())
    injector.inject("crash", "s1", "")
    injector.inject("crash", "s1", "")
    injector.inject("pause", "s2", "")
    injector.heal()
    assert box.calls == ["crash s1", "crash s1", "pause s2", "resume s2", "start s1"]


def test_a_fault_ends_the_effects_it_makes_moot_without_healing_them() -> None:
    box = Box()
    injector = FaultInjector(box.handlers(pause_s=60.0))
    injector.inject("pause", "s1", "")
    injector.inject("crash", "s1", "")  # a killed server has no pause left to resume
    injector.inject("restart", "s1", "")  # and a restarted one no crash left to heal
    injector.heal()
    assert box.calls == ["pause s1", "crash s1", "restart s1"]


def test_a_fault_that_lasts_is_healed_by_its_timer_each_time() -> None:
    box = Box()
    injector = FaultInjector(box.handlers(pause_s=0.05))
    injector.inject("pause", "s1", "")
    injector.inject("pause", "s1", "")
    deadline = time.monotonic() + 5
    while box.calls.count("resume s1") < 2:
        assert time.monotonic() < deadline, box.calls
        time.sleep(0.01)
    injector.heal()  # nothing left
    assert box.calls == ["pause s1", "pause s1", "resume s1", "resume s1"]
    assert [e.verb for e in injector.events] == ["pause", "pause", "resume", "resume"]


def test_every_heal_is_tried_and_the_first_failure_raised_with_all_of_them_named() -> None:
    def crash(server: str | None, why: str) -> Injected:
        def fail() -> None:
            raise OSError(f"{server} will not start")

        return Injected(heal=fail)

    injector = FaultInjector([FaultHandler("crash", crash, "start")])
    injector.inject("crash", "s1", "")
    injector.inject("crash", "s2", "")
    with pytest.raises(OSError, match="s1 will not start"):
        injector.heal()
    assert injector.errors == [
        "start s1 while healing: s1 will not start",
        "start s2 while healing: s2 will not start",
    ]
    with pytest.raises(ValueError, match="unknown fault verb 'flood'"):
        injector.inject("flood", "s1", "")


def test_a_fault_event_reads_back_from_its_json() -> None:
    event = FaultEvent(1.25, "kill follower", "kill", "zk2", "done")
    assert event.to_json() == {
        "type": "fault",
        "time": 1.25,
        "step": "kill follower",
        "verb": "kill",
        "server": "zk2",
        "detail": "done",
    }
    assert FaultEvent.from_json(event.to_json()) == event
    nobody = FaultEvent(2.0, "s", "hold metadata", None)
    assert FaultEvent.from_json(nobody.to_json()) == nobody
    assert "hold metadata" in nobody.describe()
