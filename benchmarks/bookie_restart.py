"""What a crash costs on a local cluster, in one run: a real bookie restarted as a new process,
the same bookie restarted inside its JVM (the bookie host, ``in_jvm_restarts``), and the
reference bookie (the test double), each after losing its disks (``DataLoss.WIPE``) with the
limbo configuration (DbLedgerStorage, data-integrity checking). Then the effect on the search:
a limbo-crash search of ``--search-seconds`` on real bookies with either kind of restart, its
steps and crashes.

Printed: per kind, the restarts' median, mean and slowest, and the ratio of each median to the
process restart's; per search, steps, crashes and the mean crash. Numbers only: nothing here
asserts on time.

    python benchmarks/bookie_restart.py [--restarts 10] [--search-seconds 30] [--no-search]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path

from adapters.cluster import (
    BookieSettings,
    DataLoss,
    LedgerStorage,
    LocalCluster,
    LocalClusterOptions,
    Node,
)
from adapters.installations.system import BookieChoice, choose_bookies
from conformance.distributed.plan import CONFIGURATIONS, SHARD_BUDGET
from conformance.distributed.shard import LedgerRecorder
from conformance.search.runner import run_search
from conformance.targets.local_target import LocalTarget

LIMBO = BookieSettings(
    ledger_storage=LedgerStorage.DB, data_integrity_checking=True, stamp_missing_cookies=True
)


def restart_times(home: Path | None, in_jvm: bool, restarts: int) -> list[float]:
    settings = dataclasses.replace(LIMBO, in_jvm_restarts=in_jvm)
    with tempfile.TemporaryDirectory(prefix="bkconform-restart-") as work:
        options = LocalClusterOptions(
            bookies=2,
            bookkeeper_home=home,
            use_bookkeeper_home_env=False,
            bookie_settings=settings,
            work_dir=Path(work),
            start_timeout=120.0,
        )
        with LocalCluster(options) as cluster:
            node = Node.bookie(sorted(cluster.endpoints().bookies)[0])
            times = []
            for _ in range(restarts):
                started = time.monotonic()
                cluster.restart_with_data_loss(node, DataLoss.WIPE)
                times.append(time.monotonic() - started)
                time.sleep(0.3)  # a few steps between crashes, as in a search
            return times


def search(bookies: BookieChoice, in_jvm: bool, seconds: float) -> tuple[int, list[float]]:
    cfg = CONFIGURATIONS["limbo-crash"]
    recorder = LedgerRecorder(LocalTarget(bookies=bookies, in_jvm_restarts=in_jvm))
    recorder.open(cfg)
    try:
        settings = dataclasses.replace(SHARD_BUDGET, time_budget=seconds, seed=1)
        report = run_search(cfg, recorder, settings)
    finally:
        recorder.close()
    return report.steps, recorder.restarts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=10)
    parser.add_argument("--search-seconds", type=float, default=30.0)
    parser.add_argument("--no-search", action="store_true")
    args = parser.parse_args()
    bookies = choose_bookies(progress=True)
    print(f"bookies: {bookies.describe()}; {args.restarts} restarts each, disks lost, limbo on")
    kinds = [
        ("BookKeeper, process restart", bookies.home, False),
        ("BookKeeper, restart inside the JVM", bookies.home, True),
        ("reference bookie (test double)", None, False),
    ]
    medians: dict[str, float] = {}
    for name, home, in_jvm in kinds:
        times = restart_times(home, in_jvm, args.restarts)
        medians[name] = statistics.median(times)
        print(
            f"  {name:38s} median {medians[name]:.2f} s, mean {statistics.mean(times):.2f} s, "
            f"slowest {max(times):.2f} s"
        )
    base = medians[kinds[0][0]]
    for name in medians:
        print(f"  {name:38s} {medians[name] / base:.2f}x the process restart")
    if args.no_search:
        return
    print(f"limbo-crash search, {args.search_seconds:.0f} s, seed 1, real bookies:")
    for label, in_jvm in (("process restarts", False), ("restarts inside the JVM", True)):
        steps, restarts = search(bookies, in_jvm, args.search_seconds)
        mean = statistics.mean(restarts) if restarts else 0.0
        print(f"  {label:24s} {steps} steps, {len(restarts)} crashes of {mean:.2f} s on average")


if __name__ == "__main__":
    main()
