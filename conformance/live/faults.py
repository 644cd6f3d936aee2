"""The one fault injector of live runs: one handler per fault kind, one record of what was done.

A :class:`FaultHandler` is one fault kind on one system (a bookie crashed, a ZooKeeper server
paused, a proxy stalled...): what its fault ends first on its target (``ends``: a crash ends a
pause, which is then never resumed), how it is triggered (``trigger``, which says what was done
and how to heal it, :class:`Injected`), and how its heal is named in the record
(``heal_verb``). The :class:`FaultInjector` composes a system's handlers: it carries out a fault
with its kind's handler, keeps what is still in effect, heals each effect when its time is up
(a pause's duration) or at :meth:`FaultInjector.heal` (the run's end: a crashed server started
again, once however often it was crashed), and writes a :class:`FaultEvent` into its record for
each fault it injected and each heal. Both the Java client's runs (``record.json``) and the Zab
runs (``history.jsonl``) keep these records.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

#: What a system's handlers are told of the fault to carry out (the plan's own form of it).
FaultT = TypeVar("FaultT")

#: The ``step`` of the heals the injector does at the end of a run.
HEAL_STEP = "heal"


@dataclass(frozen=True)
class FaultEvent:
    """One fault injected into a live run, or one healed: when (``time.monotonic()``, the
    run's clock), which step of the plan asked for it (``heal`` for the injector's heals),
    what kind (``verb``), the server it hit (a ZooKeeper server, a bookie; None: the fault
    names none, or none was there to hit), and what was done."""

    time: float
    step: str
    verb: str
    server: str | None
    detail: str = ""

    def describe(self) -> str:
        server = f" {self.server}" if self.server else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.time:.3f} {self.verb}{server}{detail} ({self.step})"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "fault",
            "time": self.time,
            "step": self.step,
            "verb": self.verb,
            "server": self.server,
            "detail": self.detail,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultEvent:
        server = data.get("server")
        return cls(
            float(data["time"]),
            str(data["step"]),
            str(data["verb"]),
            None if server is None else str(server),
            str(data.get("detail", "")),
        )


@dataclass(frozen=True)
class Injected:
    """What a handler's trigger did: ``detail`` for the record, and ``heal`` (None: nothing to
    heal) after ``heal_after_s`` or, with None, at the run's end (once per kind and server,
    however often the fault was injected)."""

    detail: str = ""
    heal: Callable[[], None] | None = None
    heal_after_s: float | None = None


@dataclass(frozen=True)
class FaultHandler(Generic[FaultT]):
    """One fault kind (see the module docstring). ``trigger(server, fault)`` carries the fault
    out (blocking until it has taken effect) and raises when it cannot; ``heal_rank`` orders
    the heals at the run's end (lowest first, then as injected)."""

    verb: str
    trigger: Callable[[str | None, FaultT], Injected]
    heal_verb: str = ""
    heal_rank: int = 0
    #: The kinds whose effects on the same server this fault ends (never healed afterwards).
    ends: frozenset[str] = frozenset()


@dataclass
class _Effect:
    key: str
    verb: str
    server: str | None
    heal: Callable[[], None]
    rank: int
    order: int
    timer: threading.Timer | None


class FaultInjector(Generic[FaultT]):
    """Carries out faults with one handler per kind and keeps their record (module docstring).
    ``on_event`` hears of each event as it is recorded (on the thread that recorded it: a heal
    timer's, for a fault that lasts)."""

    def __init__(
        self,
        handlers: Iterable[FaultHandler[FaultT]],
        *,
        on_event: Callable[[FaultEvent], None] | None = None,
    ) -> None:
        self.handlers = {handler.verb: handler for handler in handlers}
        self.on_event = on_event
        #: Every fault injected and healed, in order.
        self.events: list[FaultEvent] = []
        #: The heals that failed, as ``<heal> <server> while healing: <why>``.
        self.errors: list[str] = []
        self._effects: dict[str, _Effect] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def inject(self, verb: str, server: str | None, fault: FaultT, *, step: str = "") -> str:
        """Carry out ``fault`` of kind ``verb`` on ``server`` and record it; what was done."""
        handler = self.handlers.get(verb)
        if handler is None:
            raise ValueError(f"unknown fault verb {verb!r} (known: {', '.join(self.handlers)})")
        if handler.ends:
            self._end(handler.ends, server)
        done = handler.trigger(server, fault)
        if done.heal is not None:
            self._keep(handler, server, done)
        self.record(step, verb, server, done.detail)
        return done.detail

    def record(self, step: str, verb: str, server: str | None, detail: str = "") -> None:
        """One event into the record (also a fault found nothing to hit, or a heal)."""
        event = FaultEvent(time.monotonic(), step, verb, server, detail)
        with self._lock:
            self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def in_effect(self, verb: str, server: str | None) -> bool:
        """Whether a fault of kind ``verb`` on ``server`` is in effect, not yet healed."""
        with self._lock:
            return any(e.verb == verb and e.server == server for e in self._effects.values())

    def heal(self) -> None:
        """Heal now every effect still in effect (those with a timer too), in rank order then
        as injected, each recorded. Every heal is tried; each that failed is in
        :attr:`errors`, and the first is raised."""
        with self._lock:
            pending = sorted(self._effects.values(), key=lambda e: (e.rank, e.order))
        failed = [error for effect in pending if (error := self._heal_now(effect.key))]
        if failed:
            raise failed[0]

    def _keep(self, handler: FaultHandler[FaultT], server: str | None, done: Injected) -> None:
        assert done.heal is not None
        order = next(self._counter)
        # A fault that lasts has its own heal (a plan may pause a bookie twice, and each pause
        # is undone); one healed at the end is healed once however often it was injected.
        lasts = done.heal_after_s is not None
        key = f"{handler.verb} {server or ''} #{order}" if lasts else f"{handler.verb} {server}"
        timer = None
        if lasts:
            timer = threading.Timer(done.heal_after_s or 0.0, self._heal_later, args=(key,))
            timer.daemon = True
        with self._lock:
            if key not in self._effects:
                self._effects[key] = _Effect(
                    key, handler.verb, server, done.heal, handler.heal_rank, order, timer
                )
        if timer is not None:
            timer.start()

    def _end(self, verbs: frozenset[str], server: str | None) -> None:
        """Forget the effects of kinds ``verbs`` on ``server`` (the fault about to be injected
        ends them), their timers cancelled."""
        with self._lock:
            gone = [e for e in self._effects.values() if e.verb in verbs and e.server == server]
            for effect in gone:
                del self._effects[effect.key]
        for effect in gone:
            if effect.timer is not None:
                effect.timer.cancel()

    def _heal_later(self, key: str) -> None:
        self._heal_now(key)  # a failure is in ``errors``: a timer's thread has nobody to tell

    def _heal_now(self, key: str) -> Exception | None:
        """Heal one effect (None: healed, or already healed); what failed otherwise, also
        noted in :attr:`errors`."""
        with self._lock:
            effect = self._effects.pop(key, None)
        if effect is None:
            return None
        if effect.timer is not None:
            effect.timer.cancel()
        handler = self.handlers[effect.verb]
        heal_verb = handler.heal_verb or f"heal {effect.verb}"
        try:
            effect.heal()
        except Exception as exc:
            failure = f"{heal_verb} {effect.server or ''} while healing: {exc}"
            with self._lock:
                self.errors.append(failure)
            return exc
        self.record(HEAL_STEP, heal_verb, effect.server)
        return None


__all__ = ["HEAL_STEP", "FaultEvent", "FaultHandler", "FaultInjector", "Injected"]
