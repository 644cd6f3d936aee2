"""What the gate agent costs when no gate is armed: real local bookies with the agent loaded
(``BookieSettings(gates=True)``) against the same bookies without it, in one run.

Two local clusters of the same release run side by side, one with the agent in every bookie's
JVM, one without (ZooKeeper and three bookies each, the suite's settings). Both are warmed up,
then measured in rounds that alternate the two, A B B A (so neither always goes first; the
rounds cancel drift in the machine's load), each round one block of each workload on each
cluster:

- **steps**: model steps, one at a time (the unfaulted writer and recovering client of
  ``benchmarks/race_steps.py``'s sequential pass, each example on a fresh ledger): target steps
  per second, harness included, as a search sees them;
- **adds**: pipelined adds of 1 KiB straight to one bookie (``--window`` in flight, a fresh
  ledger per block, no proxy and no model): adds per second, the bookie's add path, where four
  of the agent's points are passed on every add (the handle's lookup, the fenced check, the
  storage write, the journal record).

Printed: each block's rate, and per workload the ratio agent/no agent of each round (the two
blocks of a round divided), their median, the smallest and largest, mean and standard
deviation. Written: ``--out`` (JSON, every block). Numbers only: nothing here asserts on time.

    python benchmarks/gate_agent_overhead.py [--bookkeeper 4.17.3] [--rounds 8]
        [--steps 1500] [--adds 20000] [--window 64] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from race_steps import CFG, Pass
from race_steps import _example as race_example

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.cluster.gates import GateClient
from adapters.cluster.local import LocalCluster
from adapters.cluster.provider import ClusterProvider
from adapters.installations.system import choose_bookies
from conformance.targets.bookie_settings import bookie_settings_for
from conformance.targets.local_target import LocalTarget
from model.bookkeeper.config import ModelConfig

PAYLOAD = b"x" * 1024
KEY = master_key(b"bench")
ARMS = ("without", "agent")


class Target(LocalTarget):
    """:class:`LocalTarget` whose bookies load the gate agent (``gates``) or not."""

    def __init__(self, *, gates: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gates = gates

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        settings = dataclasses.replace(
            bookie_settings_for(
                cfg, self.bookie_extra, profile=self.settings_profile, storage=self.ledger_storage
            ),
            in_jvm_restarts=self.in_jvm_restarts,
            gates=self.gates,
        )
        self._local = LocalCluster(self._options(cfg.bookies, settings))
        self._local.start()
        return self._local

    def local(self) -> LocalCluster:
        assert self._local is not None
        return self._local


def steps_block(target: Target, rng: random.Random, steps: int) -> float:
    """Target steps per second of sequential model examples, at least ``steps`` of them."""
    tally = Pass()
    while tally.steps < steps:
        race_example(target, rng, race=False, tally=tally)
    if tally.findings:
        raise SystemExit(f"not clean: {tally.findings}")
    return tally.per_second


async def _adds(addresses: list[tuple[str, int]], ledger: int, adds: int, window: int) -> float:
    """Every add to every bookie (as a write quorum of all of them), ``window`` in flight."""
    bodies = [
        package_entry(DigestType.CRC32C, b"bench", ledger, e, e - 1, (e + 1) * 1024, PAYLOAD)
        for e in range(adds)
    ]
    entries = iter(range(adds))
    bookies = [await BookieClient.connect(*a, request_timeout=60) for a in addresses]
    try:

        async def worker() -> None:
            for entry in entries:
                results = await asyncio.gather(
                    *(bookie.add(ledger, entry, KEY, bodies[entry]) for bookie in bookies)
                )
                for result in results:
                    if result.status is not StatusCode.EOK:
                        raise RuntimeError(f"add {ledger}/{entry}: {result.status.name}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(window)))
        return adds / (time.perf_counter() - started)
    finally:
        for bookie in bookies:
            await bookie.close()


def adds_block(target: Target, ledger: int, adds: int, window: int) -> float:
    """Entries added per second, each to every bookie of the cluster, ``window`` in flight."""
    bookies = target.local().endpoints().bookies
    return asyncio.run(_adds([bookies[b] for b in sorted(bookies)], ledger, adds, window))


def loaded_points(target: Target) -> dict[str, str]:
    """What the agent of each bookie says of its points (connecting arms nothing; closing
    disarms everything: no gate is left)."""
    states: dict[str, str] = {}
    for bookie_id in sorted(target.local().endpoints().bookies):
        with GateClient.connect(*target.local().gate_address(bookie_id)) as gates:
            for point, state in gates.points().items():
                states[f"{bookie_id} {point}"] = state
    return states


def summary(ratios: list[float]) -> str:
    spread = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    return (
        f"median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}; "
        f"mean {statistics.mean(ratios):.3f} +- {spread:.3f} sd, {len(ratios)} rounds)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bookkeeper", default="4.17.3")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1500, help="model steps per block")
    parser.add_argument("--adds", type=int, default=20_000, help="adds per block")
    parser.add_argument("--window", type=int, default=64, help="adds in flight")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="JSON of every block")
    args = parser.parse_args()
    bookies = choose_bookies(bookkeeper=args.bookkeeper, progress=True)
    rng = random.Random(args.seed)
    blocks: list[dict[str, Any]] = []
    # Each cluster's data where a search's go (tmpfs when it has room: cluster/scratch.py).
    targets = {arm: Target(gates=arm == "agent", bookies=bookies) for arm in ARMS}
    try:
        for target in targets.values():
            target.open(CFG)
        for arm, target in targets.items():
            print(f"{arm}: data in {target.local().work_dir}")
        points = loaded_points(targets["agent"])
        installed = sum(state == "installed" for state in points.values())
        print(
            f"{targets['agent'].system_under_test().render()}; model: {CFG.describe()}\n"
            f"agent: {installed} of {len(points)} points installed (bookie x point); "
            f"no gate armed",
            flush=True,
        )
        ledger = 1 << 40  # far above the model's ledger ids
        for target in targets.values():  # warm-up: JIT, caches, the first ledgers
            steps_block(target, rng, args.steps // 2)
            ledger += 1
            adds_block(target, ledger, args.adds // 2, args.window)
        for number in range(args.rounds):
            order = ARMS if number % 2 == 0 else ARMS[::-1]
            for workload in ("steps", "adds"):
                for arm in order:
                    if workload == "steps":
                        rate = steps_block(targets[arm], rng, args.steps)
                    else:
                        ledger += 1
                        rate = adds_block(targets[arm], ledger, args.adds, args.window)
                    blocks.append({"round": number, "workload": workload, "arm": arm, "rate": rate})
                    print(f"round {number} {workload:5} {arm:7} {rate:9.1f}/s", flush=True)
    finally:
        for target in targets.values():
            target.close()
    results: dict[str, Any] = {}
    for workload in ("steps", "adds"):
        ratios = []
        rates: dict[str, list[float]] = {arm: [] for arm in ARMS}
        for number in range(args.rounds):
            by_arm = {
                b["arm"]: b["rate"]
                for b in blocks
                if b["round"] == number and b["workload"] == workload
            }
            ratios.append(by_arm["agent"] / by_arm["without"])
            for arm in ARMS:
                rates[arm].append(by_arm[arm])
        unit = "target steps/s" if workload == "steps" else "adds/s"
        print(
            f"{workload}: without {statistics.median(rates['without']):.1f} {unit}, "
            f"agent {statistics.median(rates['agent']):.1f} (medians); "
            f"agent / without: {summary(ratios)}"
        )
        results[workload] = {"ratios": ratios, "rates": rates}
    if args.out is not None:
        args.out.write_text(
            json.dumps(
                {"args": vars(args) | {"out": str(args.out)}, "blocks": blocks, "results": results},
                indent=1,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
