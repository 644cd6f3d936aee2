"""Containerized cluster vs local processes: start time, and scenario steps per second.

    .venv/bin/python benchmarks/container_cluster.py [--rounds 2] [--scenario-runs 3]

1. Start time of 3 ZooKeeper + 3 reference-bookie containers (``ContainerCluster``, images
   already built: the engine and images are set up first and not timed), next to
   ``LocalCluster`` with the same shape (3 ZooKeeper + 3 bookies as local processes).
2. Scenario steps per second: the seed's ``limbo-crash`` scenario replayed by the conformance
   engine, frame by frame, on each cluster (one cluster per target, a fresh ledger per run).
   The ``docker`` target (``conformance/targets/docker_target.py``, one ZooKeeper container)
   and the ``local`` target differ only in the provider they start.

Numbers only: nothing here asserts on time. Machines are noisy; compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.cluster import LocalCluster, LocalClusterOptions
from adapters.cluster.container_engine import (
    ContainerEngine,
    EnginePaths,
    ensure_engine,
    stop_service,
)
from adapters.cluster.container_images import ImageBuilder, ImageSet
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions
from adapters.cluster.provider import ClusterProvider
from conformance.operations import FreshLedger
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.targets.cluster_target import ClusterTarget
from conformance.targets.docker_target import DockerTarget
from conformance.targets.local_target import LocalTarget

SCENARIO = SCENARIOS["limbo-crash"]


def _time_start(make: Callable[[], ClusterProvider]) -> tuple[float, float]:
    cluster = make()
    started = time.monotonic()
    try:
        cluster.start()
        up = time.monotonic() - started
    finally:
        stopping = time.monotonic()
        cluster.stop()
    return up, time.monotonic() - stopping


def _starts(label: str, make: Callable[[], ClusterProvider], rounds: int) -> float:
    ups, downs = [], []
    for _ in range(rounds):
        up, down = _time_start(make)
        ups.append(up)
        downs.append(down)
    median = statistics.median(ups)
    print(
        f"  {label:<34} start {median:6.1f} s (median of {rounds}: "
        f"{', '.join(f'{u:.1f}' for u in ups)}), stop {statistics.median(downs):4.1f} s"
    )
    return median


def _steps_per_second(label: str, target: ClusterTarget, runs: int) -> float:
    cfg = SCENARIO.config(protected=True)
    opened = time.monotonic()
    target.open(cfg)
    try:
        open_seconds = time.monotonic() - opened
        steps = 0
        started = time.monotonic()
        verdicts = []
        for run in range(runs):
            if run:
                target.invoke(FreshLedger())
            outcome = run_scenario(SCENARIO, target, protected=True)
            steps += len(outcome.steps)
            verdicts.append(outcome.verdict)
        elapsed = time.monotonic() - started
    finally:
        target.close()
    rate = steps / elapsed if elapsed else 0.0
    print(
        f"  {label:<34} {steps} steps in {elapsed:5.1f} s = {rate:6.1f} steps/s "
        f"(cluster up in {open_seconds:.1f} s; verdicts {sorted(set(map(str, verdicts)))})"
    )
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="cluster starts per provider")
    parser.add_argument("--scenario-runs", type=int, default=3, help="scenario replays")
    args = parser.parse_args()

    prepared = time.monotonic()
    setup = ensure_engine(log=lambda line: print(f"  setup: {line}"))
    try:
        images = ImageBuilder(setup.engine).ensure_all().image_set()
        print(f"engine and images ready in {time.monotonic() - prepared:.1f} s (not timed below)")
        _measure(setup.engine, images, args.rounds, args.scenario_runs)
    finally:
        if setup.started_pid is not None:  # leave the machine as we found it
            stop_service(EnginePaths.default())
    return 0


def _measure(engine: ContainerEngine, images: ImageSet, rounds: int, scenario_runs: int) -> None:

    print("cluster start, 3 ZooKeeper + 3 bookies:")
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as scratch:
        containers = _starts(
            "containers (podman/docker)",
            lambda: ContainerCluster(
                ContainerClusterOptions(
                    zookeepers=3,
                    bookies=3,
                    images=images,
                    engine=engine,
                    work_dir=Path(tempfile.mkdtemp(dir=scratch)),
                )
            ),
            rounds,
        )
        local = _starts(
            "local processes (LocalCluster)",
            lambda: LocalCluster(
                LocalClusterOptions(bookies=3, zookeepers=3, use_bookkeeper_home_env=False)
            ),
            rounds,
        )
    print(f"  containers / local start time: {containers / local:.2f}x")

    print(f"scenario {SCENARIO.interleaving.name} (limbo on), {scenario_runs} replays:")
    container_rate = _steps_per_second("containers", DockerTarget(), scenario_runs)
    local_rate = _steps_per_second("local processes", LocalTarget(), scenario_runs)
    if container_rate and local_rate:
        print(f"  containers / local steps per second: {container_rate / local_rate:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
