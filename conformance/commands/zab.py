"""``bkconform zab run``: Zab's properties on a real ZooKeeper ensemble under faults.

Starts an ensemble of --servers local ZooKeeper JVMs on loopback, runs --ops generated client
operations (create, conditional set, delete, multi, sync, reads) from --clients sessions while
the fault schedule kills, restarts, pauses and resumes the leader or a follower, or cuts it off
the network (partition: network namespaces, needs root; skipped with the reason otherwise),
then reads every server's transaction log and checks the Zab properties and the client
guarantees.
A run directory ``<runs-dir>/<UTC time>-zab/`` keeps results.json, history.jsonl and the
servers' data and logs. It is written as the run goes: results.json says running (undecided)
until the end, and history.jsonl gets every client invoke and completion, leader sample and
fault event as it happens, then the servers' logged transactions; a run killed midway leaves
its history and reads undecided.

Exit codes: 0 = every property held; 1 = a finding (an anomaly, with evidence); 2 = could not
decide (ZooKeeper missing or not starting, or nothing to check).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from adapters.cluster.errors import ClusterError
from adapters.installations.system import describe_zookeeper
from adapters.process_records import reap_orphans_once
from adapters.zookeeper.errors import MetadataError
from conformance.commands import zab_model, zab_search
from conformance.commands.options import add_zookeeper_option, zookeeper_from_args
from conformance.rundir import new_run_dir
from conformance.verdict import Verdict, worst
from conformance.zab.faults import SCENARIOS, scenario_steps
from conformance.zab.known_bugs import KNOWN_BUGS
from conformance.zab.program import FAULT_KINDS, random_program
from conformance.zab.rundir import ZabRunWriter
from conformance.zab.runner import RunOutcome, RunSettings, run_program

EXIT_OK = Verdict.CLEAN.exit_code
EXIT_FINDING = Verdict.VIOLATION.exit_code
EXIT_UNDECIDED = Verdict.UNDECIDED.exit_code


def register(subparsers: Any) -> None:
    zab = subparsers.add_parser("zab", help="Zab conformance of a real ZooKeeper ensemble")
    commands = zab.add_subparsers(
        dest="zab_command", metavar="{run,scenarios,bug,search,model}", required=True
    )
    run = commands.add_parser(
        "run",
        help="run a generated workload under faults and check the Zab properties",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--servers", type=int, default=3, help="ensemble size (default 3)")
    run.add_argument(
        "--faults",
        default="kill,pause",
        help=f"comma-separated from {','.join(FAULT_KINDS)}, or 'none' (default kill,pause)",
    )
    run.add_argument("--ops", type=int, default=1000, help="client operations (default 1000)")
    run.add_argument("--clients", type=int, default=5, help="client sessions (default 5)")
    run.add_argument("--seed", type=int, default=0, help="workload and fault seed (default 0)")
    run.add_argument(
        "--scenario",
        choices=sorted(SCENARIOS),
        default=None,
        help="a named fault schedule after seed 003's issues instead of generated faults",
    )
    run.add_argument(
        "--rate",
        type=float,
        default=100.0,
        help="client operations per second in total, so faults overlap the workload "
        "(default 100; 0 = unpaced)",
    )
    run.add_argument(
        "--op-timeout", type=float, default=5.0, help="seconds per client request (default 5)"
    )
    run.add_argument(
        "--quorum-proxy",
        action="store_true",
        help="route the servers' quorum traffic through the quorum proxy and validate every "
        "packet against the Zab spec's actions (conformance/zab/quorum_trace.py); not with "
        "partitions",
    )
    run.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where run directories go")
    add_zookeeper_option(run)
    run.set_defaults(func=run_zab)
    scenarios = commands.add_parser("scenarios", help="list the named fault scenarios")
    scenarios.set_defaults(func=list_scenarios)
    bug = commands.add_parser(
        "bug",
        help="drive a known ZooKeeper bug's schedule through the quorum proxy",
        description="A known bug's schedule of holds and releases on real servers' quorum "
        "traffic (conformance/zab/known_bugs.py), repeated --attempts times: each attempt's "
        "verdict, the packets of the window and the servers' evidence. Exit 1 when an attempt "
        "hit the bug (a divergence or a violation) or a server could not start again from its "
        "own data after a crash (a violation, as in zab search), 0 when every attempt reached "
        "the window cleanly, 2 otherwise.",
    )
    bug.add_argument("name", choices=sorted(KNOWN_BUGS), help="the bug")
    bug.add_argument("--attempts", type=int, default=3, help="attempts (default 3)")
    add_zookeeper_option(bug)
    bug.set_defaults(func=run_known_bug)
    zab_search.register(commands)
    zab_model.register(commands)


def list_scenarios(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    for name, (description, actions) in sorted(SCENARIOS.items()):
        steps = ", ".join(f"{verb} {target}" for verb, target in actions)
        print(f"{name}: {description}\n    {steps}", file=out)
    return EXIT_OK


@contextlib.contextmanager
def _kazoo_log(path: Path) -> Iterator[None]:
    # kazoo warns on every dropped connection; under faults that is expected, so while a run
    # lasts its log goes to the run directory instead of the terminal.
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    kazoo = logging.getLogger("kazoo")
    level, propagate = kazoo.level, kazoo.propagate
    kazoo.addHandler(handler)
    kazoo.setLevel(logging.INFO)
    kazoo.propagate = False
    try:
        yield
    finally:
        kazoo.removeHandler(handler)
        handler.close()
        kazoo.setLevel(level)
        kazoo.propagate = propagate


def parse_faults(text: str) -> tuple[str, ...]:
    if text.strip() in ("", "none"):
        return ()
    faults = tuple(f.strip() for f in text.split(",") if f.strip())
    unknown = sorted(set(faults) - set(FAULT_KINDS))
    if unknown:
        raise ValueError(f"--faults takes {','.join(FAULT_KINDS)} or none; unknown: {unknown}")
    return faults


def run_zab(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        faults = parse_faults(args.faults)
        if args.servers < 3 or args.servers % 2 == 0:
            raise ValueError(f"--servers must be odd and at least 3, got {args.servers}")
        if args.ops < 1 or args.clients < 1:
            raise ValueError("--ops and --clients must be at least 1")
        program = random_program(args.seed, ops=args.ops, clients=args.clients, faults=faults)
        if args.scenario:
            program = type(program)(
                program.clients, program.keys, program.ops, scenario_steps(args.scenario, args.ops)
            )
        isolates = any(verb == "isolate" for step in program.faults for verb, _ in step.actions)
        if args.quorum_proxy and ("partition" in faults or isolates):
            raise ValueError(
                "--quorum-proxy runs without partitions: leave partition out of --faults "
                f"and choose a scenario that isolates no server (not {args.scenario})"
                if isolates and args.scenario
                else "--quorum-proxy runs without partitions: leave partition out of --faults"
            )
        install = zookeeper_from_args(args)
    except ValueError as exc:
        print(f"bkconform zab run: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    for reaped in reap_orphans_once():
        print(f"bkconform: a run that died left {reaped.describe()}", file=sys.stderr)
    run_dir = new_run_dir(args.runs_dir.resolve(), "zab")
    system = describe_zookeeper(install.classpath, install.source)
    config = {
        "zookeeper": system,
        "servers": args.servers,
        "faults": list(faults),
        "ops": args.ops,
        "clients": args.clients,
        "seed": args.seed,
        "scenario": args.scenario,
        "op_timeout": args.op_timeout,
        "rate": args.rate,
        "quorum_proxy": args.quorum_proxy,
        "fault_steps": [
            {"after_ops": s.after_ops, "name": s.name, "actions": [list(a) for a in s.actions]}
            for s in program.faults
        ],
    }
    print(f"System under test: {system}", file=out)
    print(f"Run directory: {run_dir}", file=out, flush=True)
    settings = RunSettings(
        servers=args.servers,
        op_timeout=args.op_timeout,
        faults=faults,
        rate=args.rate,
        quorum_proxy=args.quorum_proxy,
    )
    with ZabRunWriter(run_dir, config) as writer:
        writer.start()
        try:
            with _kazoo_log(run_dir / "kazoo.log"):
                outcome = run_program(
                    program,
                    run_dir / "cluster",
                    settings,
                    install=install,
                    on_progress=lambda message: print(message, file=out, flush=True),
                    stream=writer,
                )
        except (ClusterError, MetadataError) as exc:
            print(f"bkconform zab run: could not run the ensemble: {exc}", file=sys.stderr)
            writer.fail(f"could not run the ensemble: {exc}")
            return EXIT_UNDECIDED
        writer.config["client_servers"] = {str(k): v for k, v in outcome.client_servers.items()}
        writer.finish(outcome)
    return report(outcome, run_dir, out)


def run_known_bug(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        if args.attempts < 1:
            raise ValueError(f"--attempts must be at least 1, got {args.attempts}")
        install = zookeeper_from_args(args)
    except ValueError as exc:
        print(f"bkconform zab bug: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    print(f"System under test: {describe_zookeeper(install.classpath, install.source)}", file=out)
    runs = []
    for attempt in range(1, args.attempts + 1):
        try:
            run = KNOWN_BUGS[args.name](install)
        except (ClusterError, MetadataError) as exc:
            # The harness's failure. A server that cannot start again from its own data never
            # gets here: the scenario judges it a violation (conformance/zab/durability.py).
            print(f"  attempt {attempt}: undecided: the ensemble failed: {exc}", file=out)
            continue
        runs.append(run)
        print(f"  attempt {attempt}: {run.describe()}", file=out, flush=True)
    # A server that could not start again from its own data is a finding, but not this bug
    # (ZOOKEEPER-2332 at ZOOKEEPER-4785's kill): counted apart, so a hit is the bug's own.
    restarts = sum(1 for run in runs if run.cannot_restart)
    hits = sum(1 for run in runs if run.verdict.finding and not run.cannot_restart)
    # A finding in any attempt is the verdict; clean needs every attempt run and clean.
    failed = [Verdict.UNDECIDED] * (args.attempts - len(runs))
    verdict = worst([run.verdict for run in runs] + failed)
    unrestarted = (
        f"; a server could not start again from its own data in {restarts}" if restarts else ""
    )
    print(
        f"{args.name}: hit in {hits} of {args.attempts} attempts{unrestarted}. Verdict: {verdict}",
        file=out,
    )
    return verdict.exit_code


def report(outcome: RunOutcome, run_dir: Path, out: TextIO) -> int:
    sizes = outcome.sizes()
    for skipped in outcome.skipped:
        print(f"Skipped {skipped}", file=out)
    for note in outcome.notes:
        print(f"Note: {note}", file=out)
    print(
        f"History: {sizes['client_ops']} client ops ({sizes['ok']} ok, {sizes['fail']} fail, "
        f"{sizes['unknown']} unknown); server txns {sizes['server_txns']}; "
        f"{sizes['leader_samples']} leader samples over {sizes['epochs_led']} epochs; "
        f"{sizes['fault_events']} fault events",
        file=out,
    )
    for result in outcome.report.results:
        print(
            f"  {result.name:<26} {result.valid!s:<8} checked {result.checked}"
            + (f", {result.anomalies} anomalies" if result.anomalies else ""),
            file=out,
        )
        for evidence in result.evidence[:3]:
            print(f"      {evidence}", file=out)
    if outcome.quorum_trace is not None:
        trace = outcome.quorum_trace
        print(f"  {trace.summary()}", file=out)
        for finding in (trace.violations + trace.divergences)[:3]:
            print(f"      {finding}", file=out)
    timings = {k: v for k, v in outcome.timings.items() if k.endswith("_s")}
    print(
        "Timings: "
        + ", ".join(f"{k.removesuffix('_s')} {v:.1f}s" for k, v in timings.items())
        + f"; {outcome.timings.get('ops_per_second', 0.0):.0f} ops/s",
        file=out,
    )
    print(f"Verdict: {outcome.verdict} ({run_dir / 'results.json'})", file=out)
    return outcome.verdict.exit_code
