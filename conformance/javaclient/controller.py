"""The proxies' side of a plan: every request of the run's ledger is held on arrival (and every
answer, when the plan decides or triggers on answers), and each is forwarded, dropped, held until
``k`` other frames have passed or for a time, or answered by a forged error, as the plan's
:class:`~.plans.FrameSchedule` says; the plan's fault events (a bookie crashed, paused or
restarted, a connection reset, refused or stalled, the client's ZooKeeper writes held or its
session expired) are carried out by the session's :class:`FaultExecutor` when their frame
passes.

Frames are named by what they are (the fence read to b3, the add of e1 to b2...), never by
arrival index or txnId: the client sends in no fixed order, so only a frame's meaning makes a
schedule replayable. A frame no decision names (a second read of the same entry to the same
bookie, a resend after an ensemble change) is forwarded. A hold is released after ``max_hold_s``
even if ``k`` frames never come (the client may be waiting on that very frame), so no run
hangs; a controller that fails makes its run undecided (:func:`unapplied_reason`), never clean.
A fault event whose frame never came did nothing (as a decision for a frame that never came
does): it is listed in ``untriggered``, and the run is judged as it happened.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    BookieProxy,
    Direction,
    FrameRecord,
    Hold,
    NotHeld,
    Operation,
    ProxyGroup,
)
from adapters.netproxy.policy import FrameMatch
from conformance.errors import ConformanceError
from conformance.javaclient.observed import FrameKind, frame_kind, pairing_key
from conformance.javaclient.plans import FORWARD, FrameKey, FrameSchedule, PlannedFault

#: How long the controller's threads may take to stop, and a fault to take effect.
FAULT_TIMEOUT_S = 60.0


def key_of(
    record: FrameRecord, names: Mapping[str, str] | None = None, kind: FrameKind | None = None
) -> FrameKey | None:
    """What ``record`` is, with its bookie named ``names[proxy]`` (default: the proxy's name);
    an answer is named by its request's ``kind`` (what the request was, which the answer alone
    may not show: a fence read's answer carries no fence flag)."""
    info = record.info
    if info.entry_id is None:
        return None
    bookie = record.proxy if names is None else names.get(record.proxy, record.proxy)
    if info.direction is Direction.RESPONSE:
        answered = kind or frame_kind(record)
        return FrameKey(answered.value, bookie, info.entry_id, answer=True)
    return FrameKey(frame_kind(record).value, bookie, info.entry_id)


class FaultExecutor(Protocol):
    """Carries out the faults of a run that are not a frame's fate (a session provides it)."""

    def execute(self, event: PlannedFault) -> str:
        """Carry out ``event`` (blocking until it has taken effect; a fault with a duration
        is undone after it by the executor); what was done. Raises when it cannot be done."""

    def close(self) -> None:
        """Undo whatever is still in effect (resume a paused bookie, accept connections again,
        release held metadata writes), bounded."""


@dataclass
class _Held:
    frame: FrameRecord
    #: Released once this many other frames passed (0: as soon as nothing holds it back) ...
    after: int
    since: float
    #: ... or at this time whatever passed (a hold for a time); None: at ``max_hold_s``.
    until: float | None = None
    #: The faults this frame triggered: it goes on only once they have taken effect.
    waits_for: tuple[threading.Event, ...] = ()

    def faults_done(self) -> bool:
        return all(done.is_set() for done in self.waits_for)


class FaultsFailed(ConformanceError):
    """A fault the run asked for now was not carried out."""


class ScheduleController:
    """Holds every request of ``ledger_id`` at the proxies (and their answers when the schedule
    decides or triggers on one) and applies ``schedule`` to each; carries out the schedule's
    fault events through ``executor`` when their frame passes.

    Use it as a context manager around the client's part; on exit the rules go, every frame
    still held is released (so the log ends with what really happened) and every fault still in
    effect is undone.
    """

    def __init__(
        self,
        group: ProxyGroup,
        proxies: Mapping[str, BookieProxy],
        ledger_id: int,
        schedule: FrameSchedule,
        *,
        max_hold_s: float = 2.0,
        poll_s: float = 0.005,
        names: Mapping[str, str] | None = None,
        executor: FaultExecutor | None = None,
    ) -> None:
        """``names``: proxy name -> the model's name of the bookie behind it, which the
        schedule uses (the role decides it: a writer's bookies are named by their position in
        the ledger's first ensemble); without it a proxy's own name is the bookie's.
        ``executor``: carries out the schedule's fault events (needed when it has any)."""
        if schedule.events and executor is None:
            raise ValueError("the schedule has fault events and no executor carries them out")
        self.names = names
        self.group = group
        self.proxies = proxies
        self.ledger_id = ledger_id
        self.schedule = schedule
        self.max_hold_s = max_hold_s
        self.poll_s = poll_s
        self.executor = executor
        #: ``(frame description, what was done)``, in the order decided (faults too).
        self.decisions: list[tuple[str, str]] = []
        self.errors: list[str] = []
        #: The plan's fault events whose frame never came (so they never took effect).
        self.untriggered: list[str] = []
        #: ``(when, what)`` of each fault carried out (``time.monotonic()``, when it was done).
        self.faults: list[tuple[float, str]] = []
        #: ``(when it was done, the event)`` of each fault carried out, as plan data.
        self.events_done: list[tuple[float, PlannedFault]] = []
        self._seen: set[FrameKey] = set()
        self._decided: set[int] = set()
        self._holding: dict[int, _Held] = {}
        self._request_kinds: dict[tuple[str, int, object], FrameKind] = {}
        self._rules: list[tuple[BookieProxy, int]] = []
        self._pending_events = list(schedule.events)
        self._events: queue.Queue[tuple[PlannedFault, threading.Event] | None] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fault_thread: threading.Thread | None = None

    def __enter__(self) -> ScheduleController:
        matches = [FrameMatch.request(ledger_id=self.ledger_id)]
        if self.schedule.watches_answers():
            matches.append(FrameMatch.response(ledger_id=self.ledger_id))
        for proxy in self.proxies.values():
            for match in matches:
                self._rules.append((proxy, proxy.add_rule(match, Hold())))
        if self.executor is not None:
            self._fault_thread = threading.Thread(
                target=self._run_faults, name="schedule-faults", daemon=True
            )
            self._fault_thread.start()
        # The faults "as the client starts" take effect before it starts.
        for done in self._trigger(None):
            if not done.wait(FAULT_TIMEOUT_S):
                self.errors.append(f"a fault at the start took more than {FAULT_TIMEOUT_S} s")
        self._thread = threading.Thread(target=self._run, name="schedule-controller", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._events.put(None)
        for thread, what in ((self._thread, "controller"), (self._fault_thread, "fault thread")):
            if thread is not None:
                thread.join(FAULT_TIMEOUT_S)
                if thread.is_alive():
                    self.errors.append(f"the schedule's {what} did not stop in {FAULT_TIMEOUT_S} s")
        # A fault whose frame never came did nothing, as a decision for a frame that never
        # came does: the run is what happened, judged as such; the example says so.
        self.untriggered.extend(event.describe() for event in self._pending_events)
        for proxy, rule_id in self._rules:
            with contextlib.suppress(Exception):
                proxy.remove_rule(rule_id)
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.release_all()
        if self.executor is not None:
            try:
                self.executor.close()
            except Exception as exc:
                self.errors.append(f"undoing the faults failed: {exc!r}")

    def carry_out(self, events: Sequence[PlannedFault]) -> None:
        """Carry out ``events`` now, one after another, on the fault thread (after any fault a
        frame set off before them: two faults are never carried out at once); recorded as the
        frames' faults are. :class:`FaultsFailed` if one failed or took too long."""
        if self.executor is None or self._fault_thread is None:
            raise FaultsFailed("this run's controller carries out no faults")
        for event in events:
            self.decisions.append(("fault", event.describe()))
            done = threading.Event()
            failed = len(self.errors)
            self._events.put((event, done))
            if not done.wait(FAULT_TIMEOUT_S):
                raise FaultsFailed(f"fault {event.describe()} took more than {FAULT_TIMEOUT_S} s")
            if len(self.errors) > failed:
                raise FaultsFailed(self.errors[-1])

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as exc:  # the controller must not die silently
                self.errors.append(repr(exc))
                return
            self._stop.wait(self.poll_s)

    def _run_faults(self) -> None:
        """Faults one after another, off the controller's thread: a crash or a restart takes
        seconds, during which frames must still be decided."""
        assert self.executor is not None
        while (item := self._events.get()) is not None:
            event, done = item
            try:
                what = self.executor.execute(event)
            except Exception as exc:
                self.errors.append(f"fault {event.describe()} failed: {exc!r}")
            else:
                finished = time.monotonic()
                self.faults.append((finished, what))
                self.events_done.append((finished, event))
            finally:
                done.set()

    def _trigger(self, key: FrameKey | None) -> tuple[threading.Event, ...]:
        """Queue the fault events waiting for ``key`` (None: the start); what tells when each
        has taken effect."""
        waits: list[threading.Event] = []
        for event in [e for e in self._pending_events if e.at == key]:
            self._pending_events.remove(event)
            self.decisions.append(("fault", event.describe()))
            done = threading.Event()
            self._events.put((event, done))
            waits.append(done)
        return tuple(waits)

    def step(self) -> None:
        """Decide the newly held frames and release the holds that are due (one pass)."""
        now = time.monotonic()
        held = sorted(
            (frame for proxy in self.proxies.values() for frame in proxy.held()),
            key=lambda frame: frame.frame_id,
        )
        for frame in held:
            if frame.frame_id not in self._decided:
                self._decide(frame, now)
        if self._holding:
            last = self.group.mark()
            for frame_id, held_frame in sorted(self._holding.items()):
                if held_frame.until is not None:
                    due = now >= held_frame.until
                else:
                    passed = last - frame_id
                    due = passed >= held_frame.after or now - held_frame.since > self.max_hold_s
                if due and held_frame.faults_done() and self._behind(held_frame.frame) is None:
                    del self._holding[frame_id]
                    self._release(held_frame.frame)

    def _behind(self, frame: FrameRecord) -> int | None:
        """The earlier add (or add answer) still held on ``frame``'s connection in the same
        direction, if ``frame`` is one: it waits for it. A hold must not reorder a client's
        adds to one bookie: TCP keeps a connection's frames in order, and the spec's channels
        keep a client's adds to a bookie in order (``IsEarliestMsg``); a reordering the spec
        forbids would be the harness's divergence, not the client's. A bookie's add answers on
        one connection stay in order for the same reason (TCP; the bookie answers adds in
        journal order). Reads may overtake (the spec keeps no order for them, and a bookie
        serves them on other threads anyway)."""
        if frame.info.operation is not Operation.ADD_ENTRY:
            return None
        for frame_id, held in self._holding.items():
            other = held.frame
            if (
                frame_id < frame.frame_id
                and other.proxy == frame.proxy
                and other.connection_id == frame.connection_id
                and other.info.direction is frame.info.direction
                and other.info.operation is Operation.ADD_ENTRY
            ):
                return frame_id
        return None

    def _kind_of_answered(self, frame: FrameRecord) -> FrameKind | None:
        return self._request_kinds.get(pairing_key(frame))

    def _decide(self, frame: FrameRecord, now: float) -> None:
        self._decided.add(frame.frame_id)
        if frame.info.direction is Direction.REQUEST:
            self._request_kinds[pairing_key(frame)] = frame_kind(frame)
            key = key_of(frame, self.names)
        else:
            key = key_of(frame, self.names, self._kind_of_answered(frame))
        choice = FORWARD
        waits: tuple[threading.Event, ...] = ()
        if key is not None and key not in self._seen:
            self._seen.add(key)
            choice = self.schedule.choice(key)
            waits = self._trigger(key)
        self.decisions.append((frame.describe(), choice.describe()))
        proxy = self.proxies[frame.proxy]
        if choice.action == "drop":
            with contextlib.suppress(NotHeld):
                proxy.discard(frame.frame_id)
        elif choice.action == "forge":
            assert choice.status is not None
            with contextlib.suppress(NotHeld):
                proxy.forge(frame.frame_id, StatusCode[choice.status])
        elif choice.action == "hold" and choice.for_ms:
            until = now + choice.for_ms / 1000
            self._holding[frame.frame_id] = _Held(frame, 0, now, until, waits)
        elif choice.action == "hold":
            self._holding[frame.frame_id] = _Held(frame, choice.after, now, None, waits)
        elif waits or self._behind(frame) is not None:
            # Released once its faults took effect, and right after an earlier add it follows.
            self._holding[frame.frame_id] = _Held(frame, 0, now, None, waits)
        else:
            self._release(frame)

    def _release(self, frame: FrameRecord) -> None:
        with contextlib.suppress(NotHeld):
            self.proxies[frame.proxy].release(frame.frame_id)


def unapplied_reason(controllers: list[ScheduleController]) -> str | None:
    """Why the schedule was not applied to the run, or None."""
    if not controllers:
        return "the recovery never arranged the schedule (no controller ran)"
    errors = [e for c in controllers for e in c.errors]
    if errors:
        return "the schedule controller failed: " + "; ".join(errors)
    return None


__all__ = ["FaultExecutor", "FaultsFailed", "ScheduleController", "key_of", "unapplied_reason"]
