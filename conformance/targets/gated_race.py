"""Running a gated race: two requests to one bookie, sent and held by a gate schedule.

:func:`run_gated_race` carries out a :class:`~conformance.gated_races.GateSchedule` with a
bookie's gate client (:class:`~adapters.cluster.gates.GateClient`, driven from one thread of
its own: the client is not thread-safe, and every call blocks) and a function that sends one
request and awaits its answer. The steps, each wait bounded:

1. arm the first stop's gate (this ledger, one thread), send the first request, and wait until
   it is held there, or has answered (it did not reach the stop: disarmed at once, so that the
   other request cannot be caught by it), or :data:`HOLD_WAIT_S` passed (not held);
2. with the first held, arm the second stop's gate if the schedule has one, send the other
   request, and wait until it is held, or has answered, or :data:`THROUGH_WAIT_S` passed: it
   waits for something the held thread has (blocked: a lock, a queue);
3. release the holds in the schedule's order, each followed by up to :data:`RESUME_WAIT_S` for
   its answer before the next release (it may wait for the other, still held);
4. disarm every gate armed (which releases what a gate caught since), and await both answers.

Whatever happens, every gate armed is disarmed and both requests run to their answer or their
timeout before this returns or raises: nothing is left held or in flight behind the engine's
next step. A gate error (a hold the agent ended itself, a lost connection, an answer that did
not come) is raised as it is: the schedule did not run as asked.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from adapters.cluster.gates import At, Gate, GateError, GatePoint, GateTimeout, Hold
from conformance.gated_races import Gated, GateReport, GateSchedule, Stop
from conformance.observations import Observation
from conformance.races import Timed

#: How long the request sent first may take to reach its stop.
HOLD_WAIT_S = 2.0
#: How long the other request may take to answer, or to reach its stop, while the first is
#: held, before it counts as blocked behind it (a request not blocked takes a millisecond or
#: two; one slower than this on a loaded machine is labelled blocked, and its answer is
#: judged all the same).
THROUGH_WAIT_S = 0.2
#: After a release, how long its request may take to answer before the next release.
RESUME_WAIT_S = 1.0
#: How often a wait for a hold looks at the request's answer too.
POLL_S = 0.01

T = TypeVar("T")


class GateDriver(Protocol):
    """What a gated race asks of a bookie's gate client."""

    def arm(
        self, point: GatePoint, at: At = At.ENTRY, *, ledger: int | None = None, count: int = 1
    ) -> Gate: ...

    def wait_held(self, gate: Gate | None = None, *, timeout: float | None = None) -> Hold: ...

    def release(self, hold: Hold, *, timeout: float | None = None) -> None: ...

    def disarm(self, gate: Gate, *, timeout: float | None = None) -> int: ...


async def run_gated_race(
    schedule: GateSchedule,
    ledger: int,
    gates: GateDriver,
    send: Callable[[int], Awaitable[Observation | None]],
    executor: concurrent.futures.Executor,
) -> list[Timed]:
    """Run the race of requests 0 and 1 by ``schedule``; ``send(i)`` sends request ``i`` and
    awaits its answer. The answers in request order, each with its gate's report."""
    loop = asyncio.get_running_loop()

    async def call(method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await loop.run_in_executor(executor, functools.partial(method, *args, **kwargs))

    answered: dict[int, tuple[Observation | None, float, float]] = {}

    async def timed(i: int) -> None:
        invoked = time.monotonic()
        answer = await send(i)
        answered[i] = (answer, invoked, time.monotonic())

    async def arm(stop: Stop) -> Gate:
        gate = await call(gates.arm, stop.point, stop.at, ledger=ledger, count=1)
        armed.append(gate)
        return gate

    async def await_hold(gate: Gate, task: asyncio.Task[None], within: float) -> Hold | None:
        deadline = time.monotonic() + within
        while True:
            try:
                return await call(gates.wait_held, gate, timeout=POLL_S)
            except GateTimeout:
                pass
            if task.done() or time.monotonic() >= deadline:
                return None

    async def disarm(gate: Gate) -> None:
        armed.remove(gate)
        await call(gates.disarm, gate)

    armed: list[Gate] = []
    tasks: dict[int, asyncio.Task[None]] = {}
    reports: dict[int, GateReport] = {}
    held, other = schedule.held, schedule.other
    try:
        first_gate = await arm(schedule.first)
        tasks[held] = asyncio.ensure_future(timed(held))
        first_hold = await await_hold(first_gate, tasks[held], HOLD_WAIT_S)
        if first_hold is None:
            # Not reached: the gate must not catch the other request instead.
            await disarm(first_gate)
            reports[held] = GateReport(schedule.first, Gated.NOT_HELD)
            reports[other] = GateReport(schedule.second, Gated.NOT_HELD)
            tasks[other] = asyncio.ensure_future(timed(other))
        else:
            second_hold = None
            if schedule.second is None:
                tasks[other] = asyncio.ensure_future(timed(other))
                await asyncio.wait({tasks[other]}, timeout=THROUGH_WAIT_S)
            else:
                second_gate = await arm(schedule.second)
                tasks[other] = asyncio.ensure_future(timed(other))
                second_hold = await await_hold(second_gate, tasks[other], THROUGH_WAIT_S)
            blocked = second_hold is None and not tasks[other].done()
            holds = [(held, first_hold), (other, second_hold)]
            if schedule.second_resumes_first:
                holds.reverse()
            rank = 0
            for i, hold in holds:
                if hold is None:
                    continue
                rank += 1
                await call(gates.release, hold)
                stop = schedule.first if i == held else schedule.second
                reports[i] = GateReport(stop, Gated.HELD, rank)
                await asyncio.wait({tasks[i]}, timeout=RESUME_WAIT_S)
            if other not in reports:
                gated = Gated.BLOCKED if blocked else Gated.NOT_HELD
                reports[other] = GateReport(schedule.second, gated)
    except BaseException:
        # The first error is the story; what the clean-up meets after it is not.
        with contextlib.suppress(Exception):
            await _clean_up(armed, tasks, call, gates)
        raise
    await _clean_up(armed, tasks, call, gates)
    return [Timed(answered[i][0], answered[i][1], answered[i][2], gate=reports[i]) for i in (0, 1)]


async def _clean_up(
    armed: Sequence[Gate],
    tasks: dict[int, asyncio.Task[None]],
    call: Callable[..., Awaitable[Any]],
    gates: GateDriver,
) -> None:
    """Disarm what is armed (releasing what it holds), then let every request finish; the
    first error met is raised after both."""
    error: BaseException | None = None
    for gate in list(armed):
        try:
            await call(gates.disarm, gate)
        except GateError as exc:
            error = error or exc
    results = await asyncio.gather(*tasks.values(), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            error = error or result
    if error is not None:
        raise error


__all__ = ["HOLD_WAIT_S", "RESUME_WAIT_S", "THROUGH_WAIT_S", "GateDriver", "run_gated_race"]
