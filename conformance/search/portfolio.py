"""The search's explorer as a portfolio: one archive explorer per core, each seeded its own way.

The explorer's time to a violation varies tenfold with its seed (issue 32: Defect 1 after
25,000 to 378,000 model steps), and a run's explorer left every core but one idle: while it
runs, the target waits. So ``workers`` explorers run at once (swarm verification: Holzmann,
Joshi and Groce, 2008): worker 0 is the search's own explorer, in this process, with the
search's seed (its archive is the corpus a cluster search replays); workers 1 and up run in
forked processes, each with a seed derived from the search's and its number.

The first violation found bounds the rest: every worker stops once its steps reach the fewest
steps a violation took so far, and the finding is the one with the fewest steps (ties: the
lowest worker). Each worker is deterministic for its seed, and the one with the fewest steps
always reaches them, so the finding depends on the seed and the number of workers, not on
which process ran faster (but for the time budget, as for one explorer). One worker is the
explorer as it was, step for step.

While they run, every worker writes its counts (rounds, model steps, archived cells) to shared
memory once a round, and the search's process tells ``progress`` the portfolio's counts
(:class:`ExplorerProgress`) after each round of its own worker and at each look while it waits
for the others: a search that explores for half an hour says so as it goes (issue 48).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.context import ForkProcess
from typing import Any

from conformance.exploration.worker_processes import end_worker
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import simulate_randomly
from model.bookkeeper.records import State
from model.search.bfs import Violation
from model.search.simulation import SimulationResult

#: No violation found yet: no bound on a worker's steps.
UNBOUNDED = 2**62
#: How often the waiting process looks at the clock while the other workers finish (s).
_POLL_S = 0.05
#: The most workers a search starts by default (``default_workers``).
MAX_DEFAULT_WORKERS = 4


def worker_seed(seed: int, worker: int) -> int:
    """Worker ``worker``'s seed: the search's own for worker 0, then far-apart others."""
    return seed if worker == 0 else seed + 1_000_003 * worker


def default_workers() -> int:
    """The cores this process may use, at most ``MAX_DEFAULT_WORKERS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


@dataclass(frozen=True)
class ExplorerProgress:
    """The portfolio's counts so far, read while it runs: every worker's rounds and model
    steps, worker 0's archived cells (the corpus a cluster search replays), how many workers
    are still exploring, and each worker's step bound (None: bounded by time)."""

    workers: int
    running: int
    walks: int
    steps: int
    cells: int
    max_steps: int | None = None

    def describe(self) -> str:
        """``2 workers running, 10,432 walks, 198,233 model steps, 1,204 cells``."""
        plural = "s" if self.workers > 1 else ""
        if self.running == self.workers:
            running = f"{self.workers} worker{plural} running"
        elif self.running:
            running = f"{self.running} of {self.workers} workers running"
        else:
            running = f"{self.workers} worker{plural} done"
        steps = f"{self.steps:,}"
        if self.max_steps is not None:
            steps += f" of {self.max_steps * self.workers:,}"
        return f"{running}, {self.walks:,} walks, {steps} model steps, {self.cells:,} cells"


class _Counts:
    """Every worker's counts in shared memory: each worker writes its own slots, once a
    round (no lock: one writer a slot; a reader may see one worker's counts a round late)."""

    _SLOTS = 4  # rounds, steps, cells, done

    def __init__(self, context: Any, workers: int, max_steps: int | None) -> None:
        self.workers = workers
        self.max_steps = max_steps
        self._values = context.Array("q", self._SLOTS * workers, lock=False)

    def record(self, worker: int, walks: int, steps: int, cells: int) -> None:
        at = self._SLOTS * worker
        self._values[at] = walks
        self._values[at + 1] = steps
        self._values[at + 2] = cells

    def finish(self, worker: int, result: SimulationResult[State, Label]) -> None:
        self.record(worker, result.walks, result.steps, result.cells or 0)
        self._values[self._SLOTS * worker + 3] = 1

    def snapshot(self) -> ExplorerProgress:
        values = self._values[:]
        slots = range(0, len(values), self._SLOTS)
        return ExplorerProgress(
            workers=self.workers,
            running=sum(1 for at in slots if not values[at + 3]),
            walks=sum(values[at] for at in slots),
            steps=sum(values[at + 1] for at in slots),
            cells=values[2],
            max_steps=self.max_steps,
        )


@dataclass(frozen=True)
class WorkerFinding:
    """A worker's violation: after how many of its steps, and the trace."""

    worker: int
    steps: int
    violation: Violation[State, Label]


@dataclass(frozen=True)
class WorkerReport:
    """What a worker in another process sends back: its counts and its violation, if any."""

    walks: int
    steps: int
    finding: WorkerFinding | None = None
    error: str | None = None


def first_finding(findings: list[WorkerFinding]) -> WorkerFinding | None:
    """The finding with the fewest steps; among equals, the lowest worker's."""
    return min(findings, key=lambda f: (f.steps, f.worker), default=None)


class _Bound:
    """The fewest steps a violation took so far, shared by every worker's process; at first
    the steps a worker may take at most (a search bounded by steps, not by time)."""

    def __init__(self, context: Any, initial: int = UNBOUNDED) -> None:
        self._value = context.Value("q", initial)

    def get(self) -> int:
        return int(self._value.value)

    def lower(self, steps: int) -> None:
        with self._value.get_lock():
            if steps < self._value.value:
                self._value.value = steps


def _explore(
    cfg: ModelConfig,
    seed: int,
    depth: int,
    bound: _Bound,
    should_stop: Callable[[], bool],
    on_round: Callable[[int, int, int], None],
) -> SimulationResult[State, Label]:
    result = simulate_randomly(
        cfg,
        seed=seed,
        depth=depth,
        walks=None,
        strategy="archive",
        should_stop=should_stop,
        steps_allowed=bound.get,
        on_round=on_round,
    )
    if result.violation is not None:
        bound.lower(result.steps)
    return result


def _serve(
    conn: Connection,
    worker: int,
    cfg: ModelConfig,
    seed: int,
    depth: int,
    bound: _Bound,
    stop: Any,
    should_stop: Callable[[], bool],
    counts: _Counts,
) -> None:
    """A worker process: explore (its counts in ``counts`` once a round), then send a
    WorkerReport (an error as its text)."""
    # Ctrl-C reaches the whole process group: the search's process stops its workers (the
    # stop event, then a kill), and a worker's own KeyboardInterrupt would only print a trace.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = _explore(
            cfg,
            seed,
            depth,
            bound,
            lambda: stop.is_set() or should_stop(),
            lambda walks, steps, cells: counts.record(worker, walks, steps, cells),
        )
        counts.finish(worker, result)
        finding = (
            None
            if result.violation is None
            else WorkerFinding(worker, result.steps, result.violation)
        )
        report = WorkerReport(result.walks, result.steps, finding)
    except Exception as exc:  # sent to the search, which raises it
        report = WorkerReport(0, 0, error=f"{type(exc).__name__}: {exc}")
        stop.set()  # the others stop at once: the explorer fails with this error
    with contextlib.suppress(OSError):
        conn.send(report)
    conn.close()


@dataclass
class _Helper:
    worker: int
    process: ForkProcess
    conn: Connection

    def collect(
        self, should_stop: Callable[[], bool], stop: Any, waiting: Callable[[], None]
    ) -> WorkerReport:
        """Wait for this worker's report, telling it to stop when ``should_stop()``;
        ``waiting()`` at each look (the progress reports of the wait)."""
        while not self.conn.poll(_POLL_S):
            waiting()
            if should_stop():
                stop.set()
            if not self.process.is_alive() and not self.conn.poll(0):
                raise self._gone()
        try:
            report: WorkerReport = self.conn.recv()
        except EOFError:
            raise self._gone() from None
        if report.error is not None:
            raise RuntimeError(f"explorer worker {self.worker} failed: {report.error}")
        return report

    def _gone(self) -> RuntimeError:
        return RuntimeError(
            f"explorer worker {self.worker} ended without a report "
            f"(exit code {self.process.exitcode})"
        )

    def stop(self) -> None:
        end_worker(self.process, self.conn)


def explore_portfolio(
    cfg: ModelConfig,
    *,
    seed: int,
    depth: int,
    workers: int,
    should_stop: Callable[[], bool] = lambda: False,
    max_steps: int | None = None,
    progress: Callable[[ExplorerProgress], None] | None = None,
) -> SimulationResult[State, Label]:
    """Run ``workers`` archive explorers (see the module docstring) until one finds a
    violation (and the others have taken as many steps), ``should_stop()``, or each has taken
    ``max_steps`` (a round started before goes to its end: seeded, the same steps each time).
    The result's steps and walks are every worker's; its cells and archive worker 0's; its
    violation the portfolio's finding. ``progress``: the counts so far, after each round of
    worker 0 and at each look (every few hundredths of a second) while the others finish; it
    decides itself how often to report them."""
    if workers < 1:
        raise ValueError(f"the explorer needs at least one worker, not {workers}")
    context = multiprocessing.get_context("fork")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"the explorer needs at least one step, not {max_steps}")
    bound = _Bound(context, UNBOUNDED if max_steps is None else max_steps)
    stop = context.Event()
    counts = _Counts(context, workers, max_steps)

    def tell() -> None:
        if progress is not None:
            progress(counts.snapshot())

    def own_round(walks: int, steps: int, cells: int) -> None:
        counts.record(0, walks, steps, cells)
        tell()

    helpers: list[_Helper] = []
    try:
        for worker in range(1, workers):
            ours, theirs = context.Pipe(duplex=False)
            process = context.Process(
                target=_serve,
                args=(
                    theirs,
                    worker,
                    cfg,
                    worker_seed(seed, worker),
                    depth,
                    bound,
                    stop,
                    should_stop,
                    counts,
                ),
                name=f"bkconform-explorer-{worker}",
                daemon=True,  # never outlives the search's process
            )
            process.start()
            theirs.close()
            helpers.append(_Helper(worker, process, ours))
        own = _explore(cfg, seed, depth, bound, lambda: stop.is_set() or should_stop(), own_round)
        counts.finish(0, own)
        if own.violation is None and should_stop():
            stop.set()
        reports = [helper.collect(should_stop, stop, tell) for helper in helpers]
    finally:
        stop.set()
        for helper in helpers:
            helper.stop()
    findings = [f for f in (r.finding for r in reports) if f is not None]
    if own.violation is not None:
        findings.append(WorkerFinding(0, own.steps, own.violation))
    found = first_finding(findings)
    walks = own.walks + sum(r.walks for r in reports)
    steps = own.steps + sum(r.steps for r in reports)
    if found is None:
        return SimulationResult(walks, steps, cells=own.cells, archive=own.archive)
    return SimulationResult(walks, steps, found.violation, cells=own.cells)
