"""Running a gated race (:mod:`conformance.targets.gated_race`) against a simulated bookie:
requests that walk through the gate points, a lock the handle's synchronized code takes, and a
gate agent whose holds the harness releases. Fast: no JVM."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest

from adapters.cluster.gates import (
    At,
    Gate,
    GateHoldExpired,
    GatePoint,
    GateTimeout,
    Hold,
)
from conformance.gated_races import Gated, GateSchedule, Stop
from conformance.observations import Observation
from conformance.races import Timed
from conformance.targets import gated_race
from conformance.targets.gated_race import run_gated_race

LEDGER = 7
LOCK = "lock"
UNLOCK = "unlock"

#: An add as BookieImpl.addEntry goes: the handle, then the fence check, the storage's write
#: and the journal's inside ``synchronized (handle)``.
ADD_PATH: tuple[GatePoint | str, ...] = (
    GatePoint.LEDGER_HANDLE,
    LOCK,
    GatePoint.FENCED_CHECK,
    GatePoint.STORAGE_ADD,
    GatePoint.JOURNAL_ADD,
    UNLOCK,
)
#: A fence read: its fence (synchronized on the handle too), then the read.
FENCE_PATH: tuple[GatePoint | str, ...] = (
    GatePoint.FENCE_LEDGER,
    GatePoint.LEDGER_HANDLE,
    LOCK,
    GatePoint.FENCE_AND_LOG,
    GatePoint.SET_FENCED,
    UNLOCK,
    GatePoint.BOOKIE_READ,
    GatePoint.STORAGE_READ,
)


@dataclass
class _Armed:
    gate: Gate
    left: int


class FakeBookie:
    """The gate agent and the bookie's request threads, in one: a request walks its path, and
    a gate armed at a point it reaches holds it until released or disarmed."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._armed: dict[int, _Armed] = {}
        self._holds: list[Hold] = []  # held, not yet waited for
        self._all_holds: list[Hold] = []
        self._released: set[int] = set()
        self._next = 0
        self.releases: list[int] = []  # hold ids, in the order released
        self.answer_order: list[int] = []
        self.fail_release = False
        self.handle = asyncio.Lock()

    # The agent's side (called from the harness's gate thread).
    def arm(
        self, point: GatePoint, at: At = At.ENTRY, *, ledger: int | None = None, count: int = 1
    ) -> Gate:
        with self._mutex:
            self._next += 1
            gate = Gate(self._next, point, at, ledger, count)
            self._armed[gate.id] = _Armed(gate, count)
            return gate

    def wait_held(self, gate: Gate | None = None, *, timeout: float | None = None) -> Hold:
        deadline = time.monotonic() + (timeout or 1.0)
        while time.monotonic() < deadline:
            with self._mutex:
                for hold in self._holds:
                    if gate is None or hold.gate == gate.id:
                        self._holds.remove(hold)
                        return hold
            time.sleep(0.001)
        raise GateTimeout("no hold")

    def release(self, hold: Hold, *, timeout: float | None = None) -> None:
        if self.fail_release:
            raise GateHoldExpired(f"hold {hold.id} expired")
        with self._mutex:
            self._released.add(hold.id)
            self.releases.append(hold.id)

    def disarm(self, gate: Gate, *, timeout: float | None = None) -> int:
        with self._mutex:
            self._armed.pop(gate.id, None)
            held = [h for h in self._all_holds if h.gate == gate.id and h.id not in self._released]
            self._released.update(h.id for h in held)
            return len(held)

    @property
    def holds_made(self) -> list[Hold]:
        return list(self._all_holds)

    @property
    def armed(self) -> list[Gate]:
        return [a.gate for a in self._armed.values()]

    # The bookie's side (request coroutines on the event loop).
    async def _pass(self, point: GatePoint, at: At, request: int) -> None:
        hold = None
        with self._mutex:
            for armed in self._armed.values():
                if armed.gate.point is point and armed.gate.at is at and armed.left > 0:
                    armed.left -= 1
                    self._next += 1
                    hold = Hold(self._next, armed.gate.id, point, at, LEDGER, None, f"r{request}")
                    self._holds.append(hold)
                    self._all_holds.append(hold)
                    break
        while hold is not None and hold.id not in self._released:
            await asyncio.sleep(0.001)

    async def serve(self, request: int, path: Sequence[GatePoint | str]) -> Observation:
        locked = False
        for step in path:
            if step == LOCK:
                await self.handle.acquire()
                locked = True
            elif step == UNLOCK:
                self.handle.release()
                locked = False
            else:
                assert isinstance(step, GatePoint)
                await self._pass(step, At.ENTRY, request)
                await self._pass(step, At.EXIT, request)
        if locked:
            self.handle.release()
        self.answer_order.append(request)
        return Observation("answer", f"r{request}")


@pytest.fixture
def gate_thread() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
        yield executor


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    # The blocked case waits THROUGH_WAIT_S once; keep the tests fast.
    monkeypatch.setattr(gated_race, "THROUGH_WAIT_S", 0.1)
    monkeypatch.setattr(gated_race, "HOLD_WAIT_S", 0.5)


def _race(
    bookie: FakeBookie,
    schedule: GateSchedule,
    paths: tuple[Sequence[GatePoint | str], Sequence[GatePoint | str]],
    executor: concurrent.futures.Executor,
) -> list[Timed]:
    async def send(i: int) -> Observation:
        return await bookie.serve(i, paths[i])

    return asyncio.run(run_gated_race(schedule, LEDGER, bookie, send, executor))


def test_the_first_held_the_other_runs_through_and_answers_first(
    gate_thread: concurrent.futures.Executor,
) -> None:
    bookie = FakeBookie()
    schedule = GateSchedule(0, Stop(GatePoint.LEDGER_HANDLE, At.EXIT))  # before the lock
    add, fence = _race(bookie, schedule, (ADD_PATH, FENCE_PATH), gate_thread)
    assert bookie.answer_order == [1, 0]  # the fence went through while the add was held
    assert add.gate is not None and add.gate.gated is Gated.HELD and add.gate.resumed == 1
    assert fence.gate is not None and fence.gate.gated is Gated.NOT_HELD
    assert add.invoked < fence.invoked < fence.completed < add.completed
    assert (add.observation, fence.observation) == (
        Observation("answer", "r0"),
        Observation("answer", "r1"),
    )
    assert bookie.armed == []  # every gate disarmed


def test_a_stop_the_first_never_reaches_is_disarmed_before_the_other_is_sent(
    gate_thread: concurrent.futures.Executor,
) -> None:
    bookie = FakeBookie()
    # A read never reaches the fence's setFenced; the fence behind it does, and must not be
    # caught by the first's gate.
    schedule = GateSchedule(0, Stop(GatePoint.SET_FENCED, At.ENTRY))
    read = (GatePoint.BOOKIE_READ, GatePoint.STORAGE_READ)
    first, second = _race(bookie, schedule, (read, FENCE_PATH), gate_thread)
    assert first.gate is not None and first.gate.gated is Gated.NOT_HELD
    assert second.gate is not None and second.gate.gated is Gated.NOT_HELD
    assert first.completed <= second.invoked  # sequential: nothing overlapped
    assert bookie.holds_made == []  # the fence went through setFenced unheld
    assert bookie.releases == [] and bookie.armed == []


@pytest.mark.parametrize("second_first", [False, True])
def test_both_held_are_released_in_the_schedule_s_order(
    gate_thread: concurrent.futures.Executor, second_first: bool
) -> None:
    bookie = FakeBookie()
    schedule = GateSchedule(
        1,
        Stop(GatePoint.BOOKIE_READ, At.ENTRY),  # the fence, after its fence
        Stop(GatePoint.LEDGER_HANDLE, At.EXIT),  # the add, before the handle's lock
        second_first,
    )
    add, fence = _race(bookie, schedule, (ADD_PATH, FENCE_PATH), gate_thread)
    assert fence.gate is not None and add.gate is not None
    assert fence.gate.gated is add.gate.gated is Gated.HELD
    assert (add.gate.resumed, fence.gate.resumed) == ((1, 2) if second_first else (2, 1))
    assert bookie.answer_order == ([0, 1] if second_first else [1, 0])


def test_a_request_waiting_for_the_held_thread_s_lock_is_blocked(
    gate_thread: concurrent.futures.Executor,
) -> None:
    bookie = FakeBookie()
    # The add is held inside synchronized (handle); the fence needs the handle to fence.
    schedule = GateSchedule(
        0, Stop(GatePoint.STORAGE_ADD, At.ENTRY), Stop(GatePoint.SET_FENCED, At.ENTRY)
    )
    add, fence = _race(bookie, schedule, (ADD_PATH, FENCE_PATH), gate_thread)
    assert add.gate is not None and add.gate.gated is Gated.HELD
    assert fence.gate is not None and fence.gate.gated is Gated.BLOCKED
    assert bookie.answer_order == [0, 1]  # the add first, then the fence it held back
    assert bookie.armed == []  # the fence's gate, which caught it later, disarmed: released


def test_a_hold_that_did_not_release_as_asked_is_raised_after_clean_up(
    gate_thread: concurrent.futures.Executor,
) -> None:
    bookie = FakeBookie()
    bookie.fail_release = True
    schedule = GateSchedule(0, Stop(GatePoint.LEDGER_HANDLE, At.EXIT))
    with pytest.raises(GateHoldExpired):
        _race(bookie, schedule, (ADD_PATH, FENCE_PATH), gate_thread)
    assert bookie.armed == []
    assert sorted(bookie.answer_order) == [0, 1]  # both ran to their answers
