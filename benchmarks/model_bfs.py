"""Breadth-first model checking speed, next to TLC's figure for the same configuration.

Prints distinct states, depth, wall time and distinct states/s for the two configurations whose
TLC figures the model reproduces, and the ratio to TLC's single-worker time measured on this
machine kind (48 s for the first). Numbers only: nothing here asserts on time.

    python benchmarks/model_bfs.py [--only first|second] [--symmetry]
"""

from __future__ import annotations

import argparse
import time

from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively

CONFIGS = {
    "first": (ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1), 285_773, 28, 48.0),
    "second": (
        ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2),
        21_147,
        19,
        None,
    ),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=sorted(CONFIGS), default=None)
    parser.add_argument("--symmetry", action="store_true")
    args = parser.parse_args()
    for name, (cfg, tlc_states, tlc_depth, tlc_seconds) in CONFIGS.items():
        if args.only and name != args.only:
            continue
        started = time.perf_counter()
        result = check_exhaustively(cfg, symmetry=args.symmetry)
        elapsed = time.perf_counter() - started
        rate = result.distinct_states / elapsed
        print(f"{name}: {cfg.describe()}{' (symmetry)' if args.symmetry else ''}")
        print(
            f"  {result.distinct_states} distinct states, depth {result.depth} "
            f"(TLC: {tlc_states}, depth {tlc_depth}); "
            f"{elapsed:.1f} s wall, {rate:,.0f} distinct states/s"
        )
        if tlc_seconds is not None and not args.symmetry:
            print(
                f"  TLC with one worker: {tlc_seconds:.0f} s; "
                f"model/TLC time ratio {elapsed / tlc_seconds:.2f}"
            )


if __name__ == "__main__":
    main()
