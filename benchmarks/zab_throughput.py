"""Client operations per second against a local 3-node ZooKeeper ensemble, without and
with faults (kill -9/restart and SIGSTOP/SIGCONT of the leader or a follower).

    .venv/bin/python benchmarks/zab_throughput.py [--ops 3000] [--fault-ops 20000] [--clients 8]

Each case starts a fresh ensemble in a temporary directory, runs the generated workload
unpaced (as fast as the ensemble answers), prints ops/s, the outcome mix and the verdict,
and stops every server on every exit path.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from conformance.zab.program import random_program
from conformance.zab.runner import RunSettings, run_program


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=3000, help="operations without faults")
    parser.add_argument(
        "--fault-ops",
        type=int,
        default=20000,
        help="operations with faults (more, so that several fault steps overlap the load)",
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    cases: tuple[tuple[str, tuple[str, ...], int], ...] = (
        ("no faults", (), args.ops),
        ("kill,pause", ("kill", "pause"), args.fault_ops),
    )
    for label, faults, ops in cases:
        program = random_program(args.seed, ops=ops, clients=args.clients, faults=faults)
        with tempfile.TemporaryDirectory(prefix="zab-bench-") as work:
            outcome = run_program(
                program, Path(work), RunSettings(servers=args.servers, faults=faults)
            )
        sizes = outcome.sizes()
        print(
            f"{label:<11} {args.servers} servers, {args.clients} clients: "
            f"{outcome.timings['ops_per_second']:,.0f} ops/s "
            f"({sizes['client_ops']} ops in {outcome.timings['workload_s']:.1f} s; "
            f"{sizes['ok']} ok, {sizes['fail']} fail, {sizes['unknown']} unknown; "
            f"{sizes['fault_events']} fault events; check {outcome.timings['check_s']:.2f} s; "
            f"verdict {outcome.verdict.valid})"
        )


if __name__ == "__main__":
    main()
