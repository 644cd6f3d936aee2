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

A schedule with a recorded delivery ``order`` (a finding replayed: ``delivery_order.py``) holds
the first frame of each key of it, once its own decision lets it go, until the key before it
in the order has gone on (released or answered by a forgery). A predecessor that does not come
within ``order_wait_s`` lets the frame go and leaves the run undecided
(:attr:`ScheduleController.order_broken`): the order could not be enforced, so the run says
nothing about the finding, and a clean run would be a silent miss.
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
from conformance.javaclient.metadata_writes import LedgerWrites, MetadataWrite, write_key
from conformance.javaclient.observed import FrameKind, frame_kind, pairing_key
from conformance.javaclient.plans import (
    FORWARD,
    METADATA_WRITE,
    ZOOKEEPER,
    FrameKey,
    FrameSchedule,
    PlannedFault,
)

#: How long the controller's threads may take to stop, and a fault to take effect.
FAULT_TIMEOUT_S = 60.0

#: How long a frame of the recorded order waits for its predecessor to go on. Longer than any
#: hold a plan makes (a scenario holds an answer 1.5 s and metadata writes 3 s) and than the
#: client's timeouts with a resend, so a predecessor that is only late is still waited for.
ORDER_WAIT_S = 10.0

#: How long after its predecessor in the recorded order a frame on another connection goes on.
#: Each connection has its own event-loop thread in the client, so two deliveries close
#: together may be processed in either order (the judges' ``CONCURRENT_AT_CLIENT_S``, 2 ms):
#: the gap makes the client take them in the recorded order, not just the proxies send them
#: so. A window may be short: #3005's (from the forged EIO's processing to the end of the
#: change's metadata write) was missed with 5 ms (the client had not taken the EIO yet) and
#: with 20 ms plus the controller's 5 ms pass (the write had completed): 3 and 2 times in 10.
ORDER_GAP_S = 0.012

#: How long a forgery in the recorded order waits for the frame after it to come. A forgery's
#: moment is the harness's to choose: sent right before the answer recorded after it, the two
#: reach the client as close together as they were recorded (#3005 from scratch: b1's answer
#: to e0 must come while the change the forged EIO started is being written, and the bookie's
#: answer may come 40 ms after the forged one's frame). Short, as it delays the client.
FORGE_WAIT_S = 0.5


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
    #: Its key when it is in the schedule's recorded order (it then waits for its predecessor).
    key: FrameKey | None = None
    #: The status to answer it with when it goes on (a forgery held for the order), else None.
    forge: str | None = None
    #: Since when it waits for its predecessor in the order only (None: not yet).
    order_since: float | None = None

    @property
    def connection(self) -> tuple[str, int]:
        return (self.frame.proxy, self.frame.connection_id)

    def faults_done(self) -> bool:
        return all(done.is_set() for done in self.waits_for)


@dataclass
class _HeldWrite:
    """A write of the ledger's metadata held at the ZooKeeper proxy for the recorded order:
    it goes on once the keys before its answer (``key``) went on."""

    record_id: int
    key: FrameKey
    since: float
    connection: tuple[str, int]
    order_since: float | None = None
    forge: None = None


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
        order_wait_s: float = ORDER_WAIT_S,
        order_gap_s: float = ORDER_GAP_S,
        forge_wait_s: float = FORGE_WAIT_S,
        metadata: LedgerWrites | None = None,
    ) -> None:
        """``names``: proxy name -> the model's name of the bookie behind it, which the
        schedule uses (the role decides it: a writer's bookies are named by their position in
        the ledger's first ensemble); without it a proxy's own name is the bookie's.
        ``executor``: carries out the schedule's fault events (needed when it has any).
        ``order_wait_s``: how long a frame of the schedule's order waits for its predecessor;
        ``order_gap_s``: how long after it, when they are on different connections;
        ``forge_wait_s``: how long a forgery of the order waits for the frame after it.
        ``metadata``: the ledger's metadata writes at the ZooKeeper proxy: recorded
        (:attr:`metadata_writes`), and held for the order when it names them."""
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
        self.order_wait_s = order_wait_s
        self.order_gap_s = order_gap_s
        self.forge_wait_s = forge_wait_s
        #: Why the recorded order was not kept (a predecessor never came in time): the run is
        #: then undecided (:func:`unapplied_reason`).
        self.order_broken: list[str] = []
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
        self._place = {key: index for index, key in reversed(list(enumerate(schedule.order)))}
        #: Each key of the order -> the nearest key before it (after it) at another bookie:
        #: a bookie's own answers keep its order on their connection (TCP; a bookie answers
        #: adds in journal order), so holding one for another of the same bookie adds nothing
        #: and, when the bookie answered in another order this time, waits for nothing (seen
        #: in #4097's scenario: b5's answer to e6 held for its answer to e5, which came later).
        self._before = _nearest_at_another_bookie(schedule.order)
        # A forgery waits for the bookie frame after it, not for a metadata write: the client
        # sends that only once it has taken the forged answer.
        self._after = _nearest_at_another_bookie(
            [key for key in schedule.order[::-1] if key.kind != METADATA_WRITE]
        )
        self.metadata = metadata
        #: The ledger's metadata writes while the controller ran (after it exits).
        self.metadata_writes: tuple[MetadataWrite, ...] = ()
        self._orders_writes = metadata is not None and any(
            key.kind == METADATA_WRITE for key in schedule.order
        )
        #: Write request record id -> its number (from 0) in the run, as the order counts.
        self._write_numbers: dict[int, int] = {}
        self._writes_held: dict[int, _HeldWrite] = {}
        #: Writes gone on whose answer has not come yet: record id -> (answer key, connection).
        self._writes_unanswered: dict[int, tuple[FrameKey, tuple[str, int]]] = {}
        #: The keys of the order whose first frame went on: when, and on which connection.
        self._gone: dict[FrameKey, tuple[float, tuple[str, int] | None]] = {}
        self._decided: set[int] = set()
        self._holding: dict[int, _Held] = {}
        self._request_kinds: dict[tuple[str, int, object], FrameKind] = {}
        self._rules: list[tuple[BookieProxy, int]] = []
        self._pending_events = list(schedule.events)
        #: How many faults :meth:`carry_out` was asked for so far (``faults_after``'s index).
        self._carried = 0
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
        if self._orders_writes:
            assert self.metadata is not None
            self.metadata.hold()
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
        if self.metadata is not None:
            try:
                self.metadata.close()
                self.metadata_writes = self.metadata.writes()
            except Exception as exc:  # a record without its writes would mislead a replay
                self.errors.append(f"the ledger's metadata writes: {exc!r}")
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
            self._await_order_before(event)
            self.decisions.append(("fault", event.describe()))
            done = threading.Event()
            failed = len(self.errors)
            self._events.put((event, done))
            if not done.wait(FAULT_TIMEOUT_S):
                raise FaultsFailed(f"fault {event.describe()} took more than {FAULT_TIMEOUT_S} s")
            if len(self.errors) > failed:
                raise FaultsFailed(self.errors[-1])

    def _await_order_before(self, event: PlannedFault) -> None:
        """In a replay with a recorded order: wait until the keys the recorded run delivered
        before this fault (the schedule's ``faults_after``, one per fault carried out, in
        turn) have gone on; one that does not within ``order_wait_s`` breaks the order (the
        run is undecided) and the fault goes on."""
        turn = self._carried
        self._carried += 1
        if turn >= len(self.schedule.faults_after):
            return
        wanted = self.schedule.order[: self.schedule.faults_after[turn]]
        deadline = time.monotonic() + self.order_wait_s
        while (missing := [key for key in wanted if key not in self._gone]) and (
            time.monotonic() < deadline
        ):
            self._stop.wait(self.poll_s)
        if missing:
            self.order_broken.append(
                f"fault {event.describe()} waited {self.order_wait_s:g} s for "
                f"{missing[0].describe()}, which never went on"
            )

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
        if self._orders_writes:
            self._step_writes(now)
        if self._holding:
            last = self.group.mark()
            for frame_id, held_frame in sorted(self._holding.items()):
                if held_frame.until is not None:
                    due = now >= held_frame.until
                else:
                    passed = last - frame_id
                    due = passed >= held_frame.after or now - held_frame.since > self.max_hold_s
                if due and held_frame.faults_done() and self._behind(held_frame.frame) is None:
                    if self._waits_for_order(held_frame, now):
                        continue
                    del self._holding[frame_id]
                    self._go_on(held_frame)

    def _step_writes(self, now: float) -> None:
        """The ledger's metadata writes in the recorded order: each new write request is the
        client's next write sent (its key goes on as it comes: only the client makes it
        happen); a held one goes on once the keys before its answer went on; an answer that
        has come is its key gone on."""
        assert self.metadata is not None
        # Record ids are one sequence in arrival order: only the requests after the last seen.
        requests = self.metadata.requests(after=max(self._write_numbers, default=0))
        held = {packet.record_id for packet in self.metadata.held()}
        for packet in requests:
            number = len(self._write_numbers)
            self._write_numbers[packet.record_id] = number
            connection = (ZOOKEEPER, packet.connection_id)
            sent, answered = write_key(number, answered=False), write_key(number, answered=True)
            self._seen.update((sent, answered))
            self._gone[sent] = (now, connection)
            self.decisions.append((sent.describe(), "recorded order"))
            if packet.record_id in held:
                self._writes_held[packet.record_id] = _HeldWrite(
                    packet.record_id, answered, now, connection
                )
            else:
                self._went_without_the_order(packet.record_id, answered, connection)
        for record_id, write in sorted(self._writes_held.items()):
            if write.key in self._place and self._waits_for_order(write, now):
                continue
            del self._writes_held[record_id]
            if not self.metadata.release(record_id):
                self._went_without_the_order(record_id, write.key, write.connection)
            else:
                self._writes_unanswered[record_id] = (write.key, write.connection)
        for record_id, (key, connection) in sorted(self._writes_unanswered.items()):
            if self.metadata.answered(record_id):
                del self._writes_unanswered[record_id]
                self._gone[key] = (time.monotonic(), connection)

    def _went_without_the_order(
        self, record_id: int, key: FrameKey, connection: tuple[str, int]
    ) -> None:
        """A metadata write went on without the controller (another hold's release, or a rule
        before its own): the order was not kept if a key before its answer had not gone on."""
        before = self._predecessor(key) if key in self._place else None
        if before is not None:
            self.order_broken.append(
                f"{key.describe()}: the write went on before {before.describe()} (released "
                "by something other than the recorded order)"
            )
        self._writes_unanswered[record_id] = (key, connection)

    def _waits_for_order(self, held: _Held | _HeldWrite, now: float) -> bool:
        """Whether ``held``, otherwise due, still waits for its predecessor in the recorded
        order; a predecessor that did not go on within ``order_wait_s`` is given up on (the
        order is broken: recorded, and the frame goes on)."""
        if held.key is None:
            return False
        before = self._predecessor(held.key)
        if before is None:
            forging = held.forge is not None and now - held.since < self.forge_wait_s
            if forging and self._successor_to_come(held.key):
                return True
            return self._too_soon(held.key, held.connection)
        if held.order_since is None:
            held.order_since = now
        if now - held.order_since <= self.order_wait_s:
            return True
        self.order_broken.append(
            f"{held.key.describe()} waited {self.order_wait_s:g} s for {before.describe()}, "
            "which never went on"
        )
        # Given up: later frames no longer wait for it either.
        self._gone[before] = (now, None)
        return False

    def _too_soon(self, key: FrameKey, connection: tuple[str, int]) -> bool:
        """Whether the frame of ``key`` on ``connection``, its predecessor gone on, must still
        wait for the gap the client needs to take them in that order (predecessor on another
        connection)."""
        before = self._before.get(key)
        went = None if before is None else self._gone.get(before)
        if went is None or went[1] is None or went[1] == connection:
            return False
        # The clock now, not the pass's start: the predecessor may have gone on in this pass.
        return time.monotonic() - went[0] < self.order_gap_s

    def _successor_to_come(self, key: FrameKey) -> bool:
        """Whether the frame after ``key`` in the recorded order (at another bookie) has not
        come yet."""
        after = self._after.get(key)
        return after is not None and after not in self._seen

    def _waits_in_order(self, key: FrameKey | None, frame: FrameRecord) -> bool:
        """Whether ``frame`` (of ``key`` in the recorded order) may not go on yet."""
        if key is None:
            return False
        return self._predecessor(key) is not None or self._too_soon(
            key, (frame.proxy, frame.connection_id)
        )

    def _went_on(self, key: FrameKey | None, frame: FrameRecord) -> None:
        if key is not None:
            self._gone[key] = (time.monotonic(), (frame.proxy, frame.connection_id))

    def _predecessor(self, key: FrameKey) -> FrameKey | None:
        """The key before ``key`` in the recorded order (at another bookie) that has not gone
        on yet, if any."""
        before = self._before.get(key)
        return None if before is None or before in self._gone else before

    def _go_on(self, held: _Held) -> None:
        """Let a held frame go on: released, or answered by its forgery."""
        if held.forge is not None:
            with contextlib.suppress(NotHeld):
                self.proxies[held.frame.proxy].forge(held.frame.frame_id, StatusCode[held.forge])
        else:
            self._release(held.frame)
        self._went_on(held.key, held.frame)

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
        # Only the first frame of a key is decided, and only it is in the recorded order.
        ordered: FrameKey | None = None
        if key is not None and key not in self._seen:
            self._seen.add(key)
            choice = self.schedule.choice(key)
            waits = self._trigger(key)
            ordered = key if key in self._place else None
        self.decisions.append((frame.describe(), choice.describe()))
        proxy = self.proxies[frame.proxy]
        if choice.action == "drop":
            with contextlib.suppress(NotHeld):
                proxy.discard(frame.frame_id)
        elif choice.action == "forge":
            assert choice.status is not None
            if ordered is not None and (
                self._waits_in_order(ordered, frame) or self._successor_to_come(ordered)
            ):
                # The forgery is this frame's delivery: it too waits for its predecessor (and,
                # a while, for the frame after it: FORGE_WAIT_S).
                self._holding[frame.frame_id] = _Held(
                    frame, 0, now, None, waits, ordered, choice.status
                )
                return
            with contextlib.suppress(NotHeld):
                proxy.forge(frame.frame_id, StatusCode[choice.status])
            self._went_on(ordered, frame)
        elif choice.action == "hold" and choice.for_ms:
            until = now + choice.for_ms / 1000
            self._holding[frame.frame_id] = _Held(frame, 0, now, until, waits, ordered)
        elif choice.action == "hold":
            self._holding[frame.frame_id] = _Held(frame, choice.after, now, None, waits, ordered)
        elif waits or self._behind(frame) is not None or self._waits_in_order(ordered, frame):
            # Released once its faults took effect, right after an earlier add it follows,
            # and after its predecessor in the recorded order.
            self._holding[frame.frame_id] = _Held(frame, 0, now, None, waits, ordered)
        else:
            self._release(frame)
            self._went_on(ordered, frame)

    def _release(self, frame: FrameRecord) -> None:
        with contextlib.suppress(NotHeld):
            self.proxies[frame.proxy].release(frame.frame_id)


def _nearest_at_another_bookie(order: Sequence[FrameKey]) -> dict[FrameKey, FrameKey]:
    """Each key of ``order`` -> the nearest key before it that names another bookie."""
    nearest: dict[FrameKey, FrameKey] = {}
    for index, key in enumerate(order):
        for before in reversed(order[:index]):
            if before.bookie != key.bookie:
                nearest.setdefault(key, before)
                break
    return nearest


def unapplied_reason(controllers: list[ScheduleController]) -> str | None:
    """Why the schedule was not applied to the run, or None."""
    if not controllers:
        return "the recovery never arranged the schedule (no controller ran)"
    errors = [e for c in controllers for e in c.errors]
    if errors:
        return "the schedule controller failed: " + "; ".join(errors)
    broken = [e for c in controllers for e in c.order_broken]
    if broken:
        return "the recorded delivery order could not be enforced: " + "; ".join(broken)
    return None


__all__ = [
    "FORGE_WAIT_S",
    "ORDER_GAP_S",
    "ORDER_WAIT_S",
    "FaultExecutor",
    "FaultsFailed",
    "ScheduleController",
    "key_of",
    "unapplied_reason",
]
