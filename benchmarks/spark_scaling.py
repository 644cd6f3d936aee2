"""Spark scaling of a qualification: the same 16 shards on the model target run in process
(``--master none``), on ``local[1]`` and on ``local[2]``.

    .venv/bin/python benchmarks/spark_scaling.py [--shards 16] [--examples 300] [--masters ...]

Each shard does a fixed amount of work (``--examples`` Hypothesis examples, explorer off, no
time budget), so the figures measure the scheduler, not a time budget. Prints shards/min for
each master (over the shards phase, and end to end with Spark's start and the diff), the
efficiency of local[2] over local[1] (goal >= 0.8: shards/min of local[2] / (2 x local[1]))
and Spark's overhead over in-process (goal <= 25%: local[1]'s time / none's time - 1). "Shards in
flight" is the shards' summed wall time over the shards phase: about N on local[N] when Spark
runs N tasks at once; if it is N but throughput does not grow, the machine had fewer free cores
than workers (see the load average printed with each line).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.distributed.plan import make_plan
from conformance.distributed.qualification import QualificationResult, run_qualification
from conformance.distributed.shard import ExecutionOptions
from conformance.search.runner import SearchSettings


def run(master: str, shards: int, examples: int, root: Path) -> QualificationResult:
    plan = make_plan(
        master_seed=0,
        shards=shards,
        configurations=("fenced-recovery",),
        target="model",
        budget=SearchSettings(max_examples=examples, max_steps=60, time_budget=None, explore=False),
    )
    run_dir = root / master.replace("[", "-").replace("]", "")
    return run_qualification(
        plan, run_dir, master=master, options=ExecutionOptions(run_dir=str(run_dir))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--examples", type=int, default=300, help="examples per shard")
    parser.add_argument("--masters", default="none,local[1],local[2]")
    args = parser.parse_args()
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]
    load = os.getloadavg()
    print(
        f"{args.shards} shards x {args.examples} examples (model target, fenced-recovery); "
        f"{os.cpu_count()} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    results: dict[str, QualificationResult] = {}
    with tempfile.TemporaryDirectory(prefix="bkconform-spark-scaling-") as root:
        for master in masters:
            result = run(master, args.shards, args.examples, Path(root))
            results[master] = result
            timings = result.timings
            total = sum(timings.values())
            steps = sum(row["target_steps"] for row in result.shards)
            # Shards in flight on average: ~N on local[N] when Spark runs N tasks at once.
            in_flight = sum(row["wall"] for row in result.shards) / timings["shards"]
            print(
                f"  {master:>9}: {result.shards_per_minute:6.1f} shards/min over the shards "
                f"({timings['shards']:.1f} s), {args.shards / total * 60:6.1f} shards/min end "
                f"to end ({total:.1f} s: start {timings['startup']:.1f} s, diff "
                f"{timings['diff']:.1f} s); {in_flight:.2f} shards in flight; {steps} target "
                f"steps; verdict {result.verdict}; load average {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    if "local[1]" in results and "local[2]" in results:
        one, two = results["local[1]"], results["local[2]"]
        efficiency = two.shards_per_minute / (2 * one.shards_per_minute)
        print(f"efficiency local[2] / (2 x local[1]): {efficiency:.2f} (goal >= 0.8)")
    if "none" in results and "local[1]" in results:
        none, one = results["none"], results["local[1]"]
        overhead = one.timings["shards"] / none.timings["shards"] - 1
        total_none = sum(none.timings.values())
        total_one = sum(one.timings.values())
        print(
            f"Spark overhead over in-process (local[1] vs none): {overhead:+.0%} over the "
            f"shards (goal <= 25%), {total_one / total_none - 1:+.0%} end to end with the JVM "
            "start and the diff"
        )


if __name__ == "__main__":
    main()
