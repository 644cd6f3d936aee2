"""Breadth-first model checking speed, next to TLC's figures for the same configuration.

Prints distinct states, depth, wall time and distinct states/s, and the ratio to TLC's time
measured on this machine kind, for:

* ``first``, ``second``: the two configurations whose TLC counts the model reproduces (TLC, one
  worker: 48 s for the first);
* ``defect1``: 3 bookies, 2 clients, WQ 3, AQ 2, recovery reads unfenced, to the first
  violation (TLC, 2 workers, symmetry, v4_13 spec: 1,936,496 states in 156 s, an 18-state
  trace; the master spec about 6 minutes);
* ``seed-repo``: the seed repository's ``BookKeeperProtocol.cfg`` (4 bookies, 2 clients, WQ 3,
  AQ 2, SendLimit 1, InflightLimit 1, the fix on, no symmetry), which TLC does not exhaust:
  7.8 M distinct states seen in 20 minutes. Run with ``--seconds 1200`` to put the model's
  figure next to it; the search stops there and prints how far it got.

Numbers only: nothing here asserts on time.

    python benchmarks/model_bfs.py [--config first|second|defect1|seed-repo]
                                   [--symmetry] [--workers N] [--seconds S]
"""

from __future__ import annotations

import argparse
import signal
import time
from dataclasses import dataclass
from types import FrameType

from conformance.exploration.parallel_bfs import ParallelBreadthFirst
from conformance.exploration.spill import spilling
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.search.bfs import Progress


@dataclass(frozen=True)
class Tlc:
    """What TLC did with this configuration on this machine kind."""

    states: int | None
    depth: int | None
    seconds: float | None
    how: str


CONFIGS: dict[str, tuple[ModelConfig, dict[bool, Tlc]]] = {
    "first": (
        ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1),
        {False: Tlc(285_773, 28, 48.0, "one worker, exhausted")},
    ),
    "second": (
        ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2),
        {False: Tlc(21_147, 19, None, "exhausted")},
    ),
    "defect1": (
        ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, recovery_reads_fence=False),
        {
            True: Tlc(1_936_496, 18, 156.0, "2 workers, symmetry, v4_13 spec, to the violation"),
            False: Tlc(None, 18, 360.0, "the issue's bar without symmetry"),
        },
    ),
    "seed-repo": (
        ModelConfig(bookies=4, clients=2, write_quorum=3, ack_quorum=2),
        {False: Tlc(7_800_000, None, 1200.0, "distinct states seen in 20 minutes, not exhausted")},
    ),
}


class OutOfTime(Exception):
    pass


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise OutOfTime


def run(name: str, symmetry: bool, workers: int, seconds: float | None) -> None:
    cfg, tlc_by_symmetry = CONFIGS[name]
    tlc = tlc_by_symmetry.get(symmetry)
    print(
        f"{name}: {cfg.describe()}{' (symmetry)' if symmetry else ''}, "
        f"{workers} worker{'s' if workers > 1 else ''}",
        flush=True,
    )
    last: list[Progress] = []
    started = time.perf_counter()

    printed = [0.0]

    def progress(p: Progress) -> None:
        last[:] = [p]
        if time.perf_counter() - printed[0] < 10:
            return
        printed[0] = time.perf_counter()
        print(
            f"  ... {p.distinct_states:,} states, depth {p.depth}, "
            f"{time.perf_counter() - started:.0f} s",
            flush=True,
        )

    if seconds is not None:
        signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        result = check_exhaustively(
            cfg,
            symmetry=symmetry,
            progress=progress,
            new_level=spilling(workers=workers),
            search=ParallelBreadthFirst(workers),
        )
    except OutOfTime:
        elapsed = time.perf_counter() - started
        got = last[0] if last else Progress(0, 0, 0)
        print(
            f"  stopped after {elapsed:.0f} s: at least {got.distinct_states:,} distinct states, "
            f"depth {got.depth}, {got.queue:,} queued (the last progress report)"
        )
        if tlc is not None and tlc.states is not None:
            print(f"  TLC: {tlc.states:,} states, {tlc.how}")
        return
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - started
    rate = result.distinct_states / elapsed
    outcome = (
        f"violation {result.violation.invariants}, trace of {len(result.violation.trace)} states"
        if result.violation
        else "exhausted"
        if result.complete
        else result.stopped_reason
    )
    print(
        f"  {result.distinct_states:,} distinct states, depth {result.depth}; {outcome}; "
        f"{elapsed:.1f} s wall, {rate:,.0f} distinct states/s"
    )
    if tlc is not None:
        figures = ", ".join(
            part
            for part in (
                f"{tlc.states:,} states" if tlc.states is not None else "",
                f"depth {tlc.depth}" if tlc.depth is not None else "",
                f"{tlc.seconds:.0f} s" if tlc.seconds is not None else "",
            )
            if part
        )
        print(f"  TLC: {figures} ({tlc.how})")
        if tlc.seconds is not None:
            print(f"  model/TLC time ratio {elapsed / tlc.seconds:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", "--only", choices=sorted(CONFIGS), default=None)
    parser.add_argument("--symmetry", action="store_true")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--seconds", type=float, default=None, help="stop there and print how far it got"
    )
    args = parser.parse_args()
    names = [args.config] if args.config else ["first", "second"]
    for name in names:
        run(name, args.symmetry, args.workers, args.seconds)


if __name__ == "__main__":
    main()
