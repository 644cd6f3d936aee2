"""Breadth-first model checking speed of the Zab protocol model (``model/zab/protocol``).

Prints distinct states, depth, wall time and distinct states/s for the issue's "Must show"
configuration (3 servers, MaxTransactionNum 2, MaxEpoch 2, MaxTimeoutFailures 1, MaxRestarts 1,
every fix), with and without symmetry reduction over servers, and for the same bounds without
timeouts (seed 003's traces need none). ``--compare`` also times the BookKeeper model's BFS
(``benchmarks/model_bfs.py``'s first configuration, 285,773 states) and the Zab model on the
same number of states, and prints the ratio of their rates; then both models' uniform
simulation (TLC's simulation mode: whole walks of at most 100 states, every fix, so no walk
stops early on a violation) in steps/s and their ratio. Numbers only: nothing here asserts on
time.

    python benchmarks/zab_model.py [--only must-show|no-timeout] [--symmetry off|on|both]
                                   [--compare]

The full "Must show" search takes about 2 minutes without symmetry and 1.5 with it on this
machine kind.
"""

from __future__ import annotations

import argparse
import time

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively as check_bookkeeper
from model.bookkeeper.explore import simulate_randomly as simulate_bookkeeper
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.explore import check_exhaustively, simulate_randomly

CONFIGS = {
    "must-show": ZabConfig(
        servers=3, max_transaction_num=2, max_epoch=2, max_timeout_failures=1, max_restarts=1
    ),
    "no-timeout": ZabConfig(
        servers=3, max_transaction_num=2, max_epoch=2, max_timeout_failures=0, max_restarts=0
    ),
}

BOOKKEEPER_FIRST = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
BOOKKEEPER_FIRST_STATES = 285_773
SIMULATION_WALKS = 3_000
SIMULATION_DEPTH = 100


def run(cfg: ZabConfig, symmetry: bool, max_states: int | None = None) -> float:
    started = time.perf_counter()
    result = check_exhaustively(cfg, symmetry=symmetry, max_states=max_states)
    elapsed = time.perf_counter() - started
    rate = result.distinct_states / elapsed
    verdict = (
        f"violation {result.violation.invariants}"
        if result.violation
        else "exhausted, no violation"
        if result.complete
        else result.stopped_reason
    )
    print(
        f"  {'symmetry' if symmetry else 'plain':8s} {result.distinct_states:>10,} distinct "
        f"states, depth {result.depth}, {result.states_generated:,} generated; {verdict}; "
        f"{elapsed:.1f} s wall, {rate:,.0f} distinct states/s",
        flush=True,
    )
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=sorted(CONFIGS), default=None)
    parser.add_argument("--symmetry", choices=("off", "on", "both"), default="both")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="time the BookKeeper model's BFS and the Zab model's on as many states",
    )
    args = parser.parse_args()
    modes = {"off": (False,), "on": (True,), "both": (False, True)}[args.symmetry]
    for name, cfg in CONFIGS.items():
        if args.only and name != args.only:
            continue
        print(f"{name}: {cfg.describe()}", flush=True)
        for symmetry in modes:
            run(cfg, symmetry)
    if args.compare:
        started = time.perf_counter()
        result = check_bookkeeper(BOOKKEEPER_FIRST)
        elapsed = time.perf_counter() - started
        bookkeeper = result.distinct_states / elapsed
        print(
            f"BookKeeper model ({BOOKKEEPER_FIRST.describe()}): {result.distinct_states:,} "
            f"states in {elapsed:.1f} s, {bookkeeper:,.0f} distinct states/s",
            flush=True,
        )
        print(f"Zab model, first {BOOKKEEPER_FIRST_STATES:,} states of must-show:")
        zab = run(CONFIGS["must-show"], False, max_states=BOOKKEEPER_FIRST_STATES)
        print(f"Zab/BookKeeper rate ratio: {zab / bookkeeper:.2f}")
        compare_simulation()


def compare_simulation() -> None:
    """Steps/s of uniform simulation, the other fast path, for both models."""
    rates = []
    for name, simulate, cfg in (
        ("BookKeeper model", simulate_bookkeeper, BOOKKEEPER_FIRST),
        ("Zab model", simulate_randomly, CONFIGS["must-show"]),
    ):
        started = time.perf_counter()
        result = simulate(
            cfg, seed=0, depth=SIMULATION_DEPTH, walks=SIMULATION_WALKS, strategy="uniform"
        )
        elapsed = time.perf_counter() - started
        rates.append(result.steps / elapsed)
        print(
            f"{name} ({cfg.describe()}): uniform simulation, {result.walks:,} walks of at most "
            f"{SIMULATION_DEPTH} states, {result.steps:,} steps in {elapsed:.1f} s, "
            f"{result.steps / elapsed:,.0f} steps/s"
            f"{'; VIOLATION' if result.violation is not None else ''}",
            flush=True,
        )
    print(f"Zab/BookKeeper simulation rate ratio: {rates[1] / rates[0]:.2f}")


if __name__ == "__main__":
    main()
