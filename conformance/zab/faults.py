"""Fault schedules on a live ensemble: kill -9 and restart, SIGSTOP and SIGCONT, of the
leader or a follower, fired as the workload progresses; and the named scenarios after
seed 003's three issues, which all live in the window where a follower (re)joins while the
leader keeps broadcasting.

Network partitions isolate one server (the leader or a follower) from the others and from
the clients, using the ensemble's network namespaces; where namespaces cannot be created the
runner drops those steps and reports them as skipped, with the reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from conformance.zab.program import FaultAction, FaultStep

# Seed 003's issues as schedules. Each repeats its window under the running workload.
SCENARIOS: dict[str, tuple[str, tuple[FaultAction, ...]]] = {
    "join-during-broadcast": (
        "Issue 1: a follower rejoins (NEWLEADER .. COMMIT-LD) while the leader commits "
        "new proposals; it must not miss any of them",
        (("kill", "follower"), ("sleep", "0.3"), ("restart", "@0")),
    ),
    "commit-before-entry": (
        "Issue 2/7: a rejoining follower is frozen right after it starts syncing, so "
        "COMMITs and duplicate PROPOSEs for entries it lacks queue up behind its sync",
        (
            ("kill", "follower"),
            ("sleep", "0.2"),
            ("start", "@0"),
            ("sleep", "0.8"),
            ("pause", "@0"),
            ("sleep", "1.0"),
            ("resume", "@0"),
        ),
    ),
    "commit-ld-zxid": (
        "Issue 3: the other follower is frozen, so commits wait for the rejoining "
        "follower's ACK-LD; the leader must bring it up to its latest commit, not the "
        "zxid it acknowledged",
        (
            ("pause", "follower"),
            ("kill", "follower"),
            ("sleep", "0.3"),
            ("restart", "@1"),
            ("sleep", "0.5"),
            ("resume", "@0"),
        ),
    ),
    "rejoin-after-partition": (
        "Issue 1 without a restart: a follower cut off long enough to be dropped rejoins "
        "with its old log while the leader broadcasts (needs network namespaces)",
        (("isolate", "follower"), ("sleep", "3.5"), ("reconnect", "@0")),
    ),
}


def scenario_steps(name: str, ops: int, repeats: int = 3) -> tuple[FaultStep, ...]:
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}")
    _description, actions = SCENARIOS[name]
    return tuple(
        FaultStep(ops * (i + 1) // (repeats + 1), actions, f"{name} #{i + 1}")
        for i in range(repeats)
    )


@dataclass
class FaultEvent:
    time: float
    step: str
    verb: str
    server: str | None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "fault",
            "time": self.time,
            "step": self.step,
            "verb": self.verb,
            "server": self.server,
            "detail": self.detail,
        }


@dataclass
class FaultInjector:
    """Runs the steps on its own thread; :meth:`finish` heals whatever it left broken.
    ``on_event`` gets each event as it is recorded (on the thread that recorded it)."""

    ensemble: ZooKeeperEnsemble
    steps: tuple[FaultStep, ...]
    progress: Callable[[], int]
    restart_timeout: float = 60.0
    on_event: Callable[[FaultEvent], None] | None = None
    events: list[FaultEvent] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _killed: set[str] = field(default_factory=set)
    _paused: set[str] = field(default_factory=set)
    _isolated: set[str] = field(default_factory=set)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="zab-faults", daemon=True)
        self._thread.start()

    def finish(self, timeout: float = 120.0) -> None:
        """Stop firing new steps, let the current one end, and heal every server."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.heal()

    def heal(self) -> None:
        for name in sorted(self._isolated):
            try:
                self.ensemble.reconnect(name)
                self._event("heal", "reconnect", name)
            except Exception as exc:
                self.errors.append(f"reconnect {name} while healing: {exc}")
        self._isolated.clear()
        for name in sorted(self._paused):
            try:
                self.ensemble.resume(name)
                self._event("heal", "resume", name)
            except Exception as exc:
                self.errors.append(f"resume {name} while healing: {exc}")
        self._paused.clear()
        for name in sorted(self._killed):
            try:
                self.ensemble.restart(name, timeout=self.restart_timeout)
                self._event("heal", "restart", name)
            except Exception as exc:
                self.errors.append(f"restart {name} while healing: {exc}")
        self._killed.clear()

    def _event(self, step: str, verb: str, server: str | None, detail: str = "") -> None:
        event = FaultEvent(time.monotonic(), step, verb, server, detail)
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def _run(self) -> None:
        for step in self.steps:
            while self.progress() < step.after_ops:
                if self._stop.wait(0.05):
                    return
            if self._stop.is_set():
                return  # the workload is over: a fault now would test nothing
            try:
                self._apply(step)
            except Exception as exc:
                self.errors.append(f"{step.name}: {type(exc).__name__}: {exc}")
                self.heal()

    def _pick(self, target: str, chosen: list[str | None]) -> str | None:
        if target.startswith("@"):
            return chosen[int(target[1:])]
        leader = self.ensemble.leader()
        if target == "leader":
            return leader
        touched = set(chosen) | self._killed | self._paused | self._isolated
        followers = [n for n in self.ensemble.servers if n != leader and n not in touched]
        return followers[0] if followers else None

    def _apply(self, step: FaultStep) -> None:
        chosen: list[str | None] = []
        for verb, target in step.actions:
            if verb == "sleep":
                chosen.append(None)
                self._stop.wait(float(target))
                continue
            name = self._pick(target, chosen)
            chosen.append(name)
            if name is None:
                self._event(step.name, verb, None, f"no {target} to {verb}")
                continue
            if verb == "kill":
                self.ensemble.crash(name)
                self._killed.add(name)
            elif verb == "restart":
                self.ensemble.restart(name, timeout=self.restart_timeout)
                self._killed.discard(name)
            elif verb == "start":
                # Started without waiting: the next actions hit it while it joins.
                self.ensemble.restart(name, wait=False)
                self._killed.discard(name)
            elif verb == "pause":
                self.ensemble.pause(name)
                self._paused.add(name)
            elif verb == "resume":
                self.ensemble.resume(name)
                self._paused.discard(name)
            elif verb == "isolate":
                self.ensemble.isolate(name)
                self._isolated.add(name)
            elif verb == "reconnect":
                self.ensemble.reconnect(name)
                self._isolated.discard(name)
            else:
                raise ValueError(f"unknown fault verb {verb!r}")
            self._event(step.name, verb, name)
