"""The proxies' side of a plan: every request of the run's ledger is held on arrival, and each
is forwarded, dropped or held until ``k`` other frames have passed, as the plan's
:class:`~.plans.FrameSchedule` says.

Frames are named by what they are (the fence read to b3, the add of e1 to b2...), never by
arrival index or txnId: the client sends in no fixed order, so only a frame's meaning makes a
schedule replayable. A frame no decision names (a second read of the same entry to the same
bookie, a resend after an ensemble change) is forwarded. A hold is released after ``max_hold_s``
even if ``k`` frames never come (the client may be waiting on that very frame), so no run
hangs; a controller that fails makes its run undecided (:func:`unapplied_reason`), never clean.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping

from adapters.netproxy import BookieProxy, FrameRecord, Hold, NotHeld, Operation, ProxyGroup
from adapters.netproxy.policy import FrameMatch
from conformance.javaclient.observed import frame_kind
from conformance.javaclient.plans import FORWARD, FrameKey, FrameSchedule


def key_of(record: FrameRecord, names: Mapping[str, str] | None = None) -> FrameKey | None:
    """What ``record`` is, with its bookie named ``names[proxy]`` (default: the proxy's name)."""
    info = record.info
    if info.entry_id is None:
        return None
    bookie = record.proxy if names is None else names.get(record.proxy, record.proxy)
    return FrameKey(frame_kind(record).value, bookie, info.entry_id)


class ScheduleController:
    """Holds every request of ``ledger_id`` at the proxies and applies ``schedule`` to each.

    Use it as a context manager around the recovery; on exit the rules go and every frame
    still held is released (so the log ends with what really happened).
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
    ) -> None:
        """``names``: proxy name -> the model's name of the bookie behind it, which the
        schedule uses (the role decides it: a writer's bookies are named by their position in
        the ledger's first ensemble); without it a proxy's own name is the bookie's."""
        self.names = names
        self.group = group
        self.proxies = proxies
        self.ledger_id = ledger_id
        self.schedule = schedule
        self.max_hold_s = max_hold_s
        self.poll_s = poll_s
        #: ``(frame description, what was done)``, in the order decided.
        self.decisions: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self._seen: set[FrameKey] = set()
        self._decided: set[int] = set()
        self._holding: dict[int, tuple[FrameRecord, int, float]] = {}
        self._rules: list[tuple[BookieProxy, int]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ScheduleController:
        match = FrameMatch.request(ledger_id=self.ledger_id)
        for proxy in self.proxies.values():
            self._rules.append((proxy, proxy.add_rule(match, Hold())))
        self._thread = threading.Thread(target=self._run, name="schedule-controller", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
            if self._thread.is_alive():
                self.errors.append("the schedule controller did not stop within 10 s")
        for proxy, rule_id in self._rules:
            with contextlib.suppress(Exception):
                proxy.remove_rule(rule_id)
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.release_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as exc:  # the controller must not die silently
                self.errors.append(repr(exc))
                return
            time.sleep(self.poll_s)

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
            for frame_id, (frame, after, since) in sorted(self._holding.items()):
                passed = last - frame_id
                due = passed >= after or now - since > self.max_hold_s
                if due and self._behind(frame) is None:
                    del self._holding[frame_id]
                    self._release(frame)

    def _behind(self, frame: FrameRecord) -> int | None:
        """The earlier add still held on ``frame``'s connection, if ``frame`` is an add: it
        waits for it. A hold must not reorder a client's adds to one bookie: TCP keeps a
        connection's frames in order, and the spec's channels keep a client's adds to a
        bookie in order (``IsEarliestMsg``); a reordering the spec forbids would be the
        harness's divergence, not the client's. Reads may overtake (the spec keeps no order
        for them, and a bookie serves them on other threads anyway)."""
        if frame.info.operation is not Operation.ADD_ENTRY:
            return None
        for frame_id, (other, _after, _since) in self._holding.items():
            if (
                frame_id < frame.frame_id
                and other.proxy == frame.proxy
                and other.connection_id == frame.connection_id
                and other.info.operation is Operation.ADD_ENTRY
            ):
                return frame_id
        return None

    def _decide(self, frame: FrameRecord, now: float) -> None:
        self._decided.add(frame.frame_id)
        key = key_of(frame, self.names)
        choice = FORWARD
        if key is not None and key not in self._seen:
            self._seen.add(key)
            choice = self.schedule.choice(key)
        self.decisions.append((frame.describe(), choice.describe()))
        if choice.action == "drop":
            with contextlib.suppress(NotHeld):
                self.proxies[frame.proxy].discard(frame.frame_id)
        elif choice.action == "hold":
            self._holding[frame.frame_id] = (frame, choice.after, now)
        elif self._behind(frame) is not None:
            self._holding[frame.frame_id] = (frame, 0, now)  # released right after it
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


__all__ = ["ScheduleController", "key_of", "unapplied_reason"]
