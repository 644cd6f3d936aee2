"""Fault schedules on a live ensemble: kill -9 and restart, SIGSTOP and SIGCONT, of the
leader or a follower, fired as the workload progresses; and the named scenarios after
seed 003's three issues, which all live in the window where a follower (re)joins while the
leader keeps broadcasting.

Network partitions isolate one server (the leader or a follower) from the others and from
the clients, using the ensemble's network namespaces; where namespaces cannot be created the
runner drops those steps and reports them as skipped, with the reason.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from conformance.live.faults import FaultEvent, FaultHandler, FaultInjector, Injected
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


def zab_handlers(ensemble: ZooKeeperEnsemble, restart_timeout: float) -> list[FaultHandler[None]]:
    """The handlers of a ZooKeeper ensemble's faults, one per verb: what each leaves broken is
    healed at the end, partitions first, then pauses, then crashes (a server restarted while
    another is still stopped could not join)."""

    def crash(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.crash(name)
        return Injected(heal=lambda: ensemble.restart(name, timeout=restart_timeout))

    def restart(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.restart(name, timeout=restart_timeout)
        return Injected()

    def start(name: str | None, _fault: None) -> Injected:
        assert name is not None
        # Started without waiting: the next actions hit it while it joins.
        ensemble.restart(name, wait=False)
        return Injected()

    def pause(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.pause(name)
        return Injected(heal=lambda: ensemble.resume(name))

    def resume(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.resume(name)
        return Injected()

    def isolate(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.isolate(name)
        return Injected(heal=lambda: ensemble.reconnect(name))

    def reconnect(name: str | None, _fault: None) -> Injected:
        assert name is not None
        ensemble.reconnect(name)
        return Injected()

    return [
        FaultHandler("kill", crash, "restart", heal_rank=2),
        FaultHandler("restart", restart, ends=frozenset({"kill"})),
        FaultHandler("start", start, ends=frozenset({"kill"})),
        FaultHandler("pause", pause, "resume", heal_rank=1),
        FaultHandler("resume", resume, ends=frozenset({"pause"})),
        FaultHandler("isolate", isolate, "reconnect", heal_rank=0),
        FaultHandler("reconnect", reconnect, ends=frozenset({"isolate"})),
    ]


#: The verbs whose server stays touched until healed (a follower picked later is another).
_LASTING = ("kill", "pause", "isolate")


class ScheduledFaults:
    """Fires a run's fault steps on its own thread as the workload progresses, each action by
    the one fault injector (:class:`~conformance.live.faults.FaultInjector`, with
    :func:`zab_handlers`); :meth:`finish` heals whatever it left broken. ``on_event`` gets
    each event as it is recorded (on the thread that recorded it)."""

    def __init__(
        self,
        ensemble: ZooKeeperEnsemble,
        steps: tuple[FaultStep, ...],
        progress: Callable[[], int],
        restart_timeout: float = 60.0,
        on_event: Callable[[FaultEvent], None] | None = None,
    ) -> None:
        self.ensemble = ensemble
        self.steps = steps
        self.progress = progress
        #: What the harness could not do (a step that failed, a heal).
        self.errors: list[str] = []
        self._injector: FaultInjector[None] = FaultInjector(
            zab_handlers(ensemble, restart_timeout), on_event=on_event
        )
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def events(self) -> list[FaultEvent]:
        """Every fault injected and healed, in order (the run's record of them)."""
        return list(self._injector.events)

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
        """Heal every server the steps left broken; each failure is one of :attr:`errors`."""
        before = len(self._injector.errors)
        # The failures are in the injector's errors, each named: none is lost by going on.
        with contextlib.suppress(Exception):
            self._injector.heal()
        self.errors.extend(self._injector.errors[before:])

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
        touched = set(chosen) | {
            name
            for name in self.ensemble.servers
            if any(self._injector.in_effect(verb, name) for verb in _LASTING)
        }
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
                self._injector.record(step.name, verb, None, f"no {target} to {verb}")
                continue
            self._injector.inject(verb, name, None, step=step.name)
