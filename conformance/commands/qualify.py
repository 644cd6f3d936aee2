"""``bkconform qualify``: a release qualification, many shards of search over many
configurations, on a Spark master (``local[N]`` here, or any master URL) or in process
(``--master none``).

Each shard searches one configuration with its own seed and budget against its own target
(``local``: a ZooKeeper and real BookKeeper bookies started and stopped by the shard; the
bookies are chosen once, here, and every shard runs the same distribution). The run
directory gets Parquet datasets (steps/, findings/, shards/), aggregates.json, results.json and
report.html. Re-running with ``--run-dir`` of an earlier run resumes it: shards already in its
Parquet output are skipped.

Exit codes: 0 = every configuration clean; 1 = a violation or a divergence; 2 = undecided (a
shard in error, a target that could not be reached, bad options).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.commands.options import (
    add_keep_ledgers_option,
    add_target_options,
    search_overrides,
    storages_from_text,
    target_spec_from_args,
)
from conformance.distributed.plan import (
    CONFIGURATIONS,
    CRASH_TIME_SHARE,
    RELEASE_CONFIGURATIONS,
    SHARD_BUDGET,
    Plan,
    PlanError,
    make_plan,
)
from conformance.distributed.qualification import PlanMismatch, run_qualification
from conformance.distributed.report import (
    ConfigurationEffort,
    configuration_efforts,
    storage_cells,
)
from conformance.distributed.shard import (
    FAULT_ENV,
    ExecutionOptions,
    ShardFaultError,
    parse_faults,
)
from conformance.distributed.zookeeper_matrix import write_zookeeper_matrix, zookeeper_row
from conformance.rundir import new_run_dir, system_header
from conformance.search.runner import PROFILES, SearchSettings
from conformance.targets.base import system_under_test
from conformance.targets.spec import TargetSpec
from conformance.verdict import Verdict

EXIT_UNDECIDED = Verdict.UNDECIDED.exit_code
BUDGETS: dict[str, SearchSettings] = {"shard": SHARD_BUDGET, **PROFILES}


def register(subparsers: Any) -> None:
    qualify = subparsers.add_parser(
        "qualify",
        help="release qualification: many search shards on Spark (or in process)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    qualify.add_argument(
        "--master",
        default="local[2]",
        help="Spark master URL (local[N], spark://..., yarn, k8s://...), or 'none' to run "
        "the shards in this process (default local[2])",
    )
    qualify.add_argument("--shards", type=int, default=16, help="shards (default 16)")
    qualify.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    qualify.add_argument(
        "--client",
        choices=("python", "java"),
        default="python",
        help="java: the version matrix of the real Java client's search, one release per "
        "--bookkeeper entry (--bookkeeper 4.11.1,4.17.3; --shards per release; --seconds "
        "per shard, default 120); docs/javaclient-search.md",
    )
    qualify.add_argument(
        "--roles",
        default=None,
        help="with --client java: the Java client's roles, comma-separated, from recovery, "
        "writer (default recovery)",
    )
    qualify.add_argument(
        "--writer-shapes",
        default=None,
        help="with --client java --roles ...,writer: the writer's ledger shapes E/WQ/AQ, "
        "comma-separated (default 3/2/2,2/1/1)",
    )
    qualify.add_argument(
        "--configs",
        default=",".join(RELEASE_CONFIGURATIONS),
        help=f"comma-separated configurations, from: {', '.join(CONFIGURATIONS)} "
        f"(default: {','.join(RELEASE_CONFIGURATIONS)})",
    )
    # Every target and fault capability of ``bkconform run``: each shard builds its own target
    # from the same TargetSpec (conformance/targets/spec.py).
    add_target_options(qualify, storage_list=True)
    add_keep_ledgers_option(qualify)
    budget = qualify.add_argument_group("per-shard budget")
    budget.add_argument(
        "--budget",
        choices=sorted(BUDGETS),
        default="shard",
        help="shard: 50 examples, 60 steps, 30 s (default); ci, nightly, qualify: the "
        "search profiles of bkconform run",
    )
    budget.add_argument("--max-examples", type=int, default=None, help="examples per shard")
    budget.add_argument("--steps", type=int, default=None, help="maximum steps per example")
    budget.add_argument("--seconds", type=float, default=None, help="search time per shard")
    budget.add_argument("--no-explore", action="store_true", help="Hypothesis only")
    budget.add_argument(
        "--crash-time-share",
        type=float,
        default=None,
        metavar="FACTOR",
        help="on a cluster target, shards of configurations that crash bookies (limbo-crash, "
        "no-limbo) get FACTOR x --seconds: a crash restarts a bookie and costs the time of "
        f"many steps (default {CRASH_TIME_SHARE:g}; 1: the same time as the others)",
    )
    budget.add_argument(
        "--shard-timeout",
        type=float,
        default=None,
        help="hard limit per shard attempt, s (default 4 x the shard's time + 120)",
    )
    output = qualify.add_argument_group("output")
    output.add_argument("--runs-dir", type=Path, default=Path("runs"), help="default ./runs")
    output.add_argument(
        "--run-dir", type=Path, default=None, help="this run directory (resumes an earlier run)"
    )
    output.add_argument("--quiet", action="store_true", help="no progress lines")
    qualify.add_argument(
        "--inject-fault",
        default=os.environ.get(FAULT_ENV, ""),
        metavar="KIND@SHARD",
        help="test hook: crash@N, crash-once@N, hang@N or hang-after-finding@N make shard N "
        f"fail (also {FAULT_ENV})",
    )
    qualify.set_defaults(func=qualify_command)


def _budget(args: argparse.Namespace) -> SearchSettings:
    return search_overrides(BUDGETS[args.budget], args)


def qualify_command(args: argparse.Namespace) -> int:
    if args.client == "java":
        # Imported here: the JVM adapter loads only when the Java client is chosen.
        from conformance.commands.java_client_qualify import java_qualify_command

        return java_qualify_command(args)
    if args.roles is not None or args.writer_shapes is not None:
        print("bkconform qualify: --roles and --writer-shapes need --client java", file=sys.stderr)
        return EXIT_UNDECIDED
    if getattr(args, "client_bookkeeper", None):
        print("bkconform qualify: --client-bookkeeper needs --client java", file=sys.stderr)
        return EXIT_UNDECIDED
    releases = [name.strip() for name in (args.zookeeper or "").split(",") if name.strip()]
    if len(releases) != len(set(releases)):
        print(
            f"bkconform qualify: --zookeeper {args.zookeeper} names a release twice",
            file=sys.stderr,
        )
        return EXIT_UNDECIDED
    if len(releases) <= 1:
        return _qualify_once(args, args.run_dir)
    if args.target != "local":
        print(
            "bkconform qualify: a list of ZooKeeper releases needs --target local", file=sys.stderr
        )
        return EXIT_UNDECIDED
    try:  # bad options are refused before anything is made
        _plan(args)
        qualification_target(args)
    except (PlanError, ShardFaultError, ValueError) as exc:
        print(f"bkconform qualify: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    # One qualification per ZooKeeper release, each in its own directory (each resumable on
    # its own), then the matrix of their verdicts.
    run_dir = args.run_dir or new_run_dir(args.runs_dir, args.target, "qualify")
    rows = []
    for release in releases:
        print(f"== ZooKeeper {release}", flush=True)
        one = argparse.Namespace(**{**vars(args), "zookeeper": release})
        code = _qualify_once(one, Path(run_dir) / f"zookeeper-{release}")
        rows.append(zookeeper_row(release, Path(run_dir) / f"zookeeper-{release}", code))
    verdict = write_zookeeper_matrix(Path(run_dir), rows)
    print(f"ZooKeeper matrix: {verdict}. Report: {Path(run_dir) / 'report.html'}")
    return verdict.exit_code


def _plan(args: argparse.Namespace) -> tuple[Plan, tuple[str, ...], Any]:
    """The shards, the configurations and the injected faults the options ask for."""
    configurations = tuple(c.strip() for c in args.configs.split(",") if c.strip())
    plan = make_plan(
        master_seed=args.seed,
        shards=args.shards,
        configurations=configurations,
        target=args.target,
        budget=_budget(args),
        crash_time_share=(
            CRASH_TIME_SHARE if args.crash_time_share is None else args.crash_time_share
        ),
        ledger_storages=storages_from_text(getattr(args, "ledger_storage", None)),
    )
    return plan, configurations, parse_faults(args.inject_fault)


def qualification_target(args: argparse.Namespace) -> TargetSpec:
    """The target every shard starts from (each shard of a plan with ledger storages runs its
    own storage on it): the options' target, its ``--ledger-storage`` checked as one run's
    would be (real bookies of --target local or docker) and left to the plan."""
    storages = storages_from_text(getattr(args, "ledger_storage", None))
    first = argparse.Namespace(
        **{**vars(args), "ledger_storage": storages[0] if storages else None}
    )
    return dataclasses.replace(target_spec_from_args(first), ledger_storage=None)


def _qualify_once(args: argparse.Namespace, run_dir: Path | None) -> int:
    """One qualification into ``run_dir`` (None: a new run directory, made once the options
    are known good)."""
    try:
        plan, configurations, faults = _plan(args)
        # The bookies and the ZooKeeper are chosen here, once (a version is installed now), and
        # travel to the executors as resolved homes, so that every shard runs the same.
        target_spec = qualification_target(args).resolved()
    except (PlanError, ShardFaultError, ValueError) as exc:
        print(f"bkconform qualify: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    run_dir = run_dir or new_run_dir(args.runs_dir, args.target, "qualify")
    options = ExecutionOptions(
        run_dir=str(run_dir),
        target=target_spec,
        shard_timeout=args.shard_timeout,
        faults=faults,
    )
    budget = plan.budget
    print(
        f"Qualification: {len(plan.shards)} shards over {', '.join(configurations)} on "
        f"{args.target}, master {args.master}; per shard "
        f"{budget.describe_examples(args.target)}, {budget.describe_budget()}"
        f"{plan.describe_time_shares()}, explorer "
        f"{'on' if budget.explore else 'off'}. Run directory: {run_dir}",
    )
    print(system_header(system_under_test(target_spec.build())), flush=True)
    findings = 0

    def progress(row: Mapping[str, Any], done: int, total: int) -> None:
        nonlocal findings
        findings += row["findings"]
        if not args.quiet:
            extra = f" ({row['error']})" if row["error"] else ""
            print(
                f"  [{done}/{total}] shard {row['shard']} {row['configuration']}: "
                f"{row['verdict']}{extra} in {row['wall']:.1f} s; findings so far {findings}",
                flush=True,
            )

    try:
        result = run_qualification(
            plan, run_dir, master=args.master, options=options, progress=progress
        )
    except PlanMismatch as exc:
        print(f"bkconform qualify: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    except Exception as exc:  # Spark could not start, or its job failed (a lost worker)
        print(
            f"bkconform qualify: {type(exc).__name__}: {exc}\nShards finished so far are in "
            f"{run_dir}; run again with --run-dir {run_dir} to resume.",
            file=sys.stderr,
        )
        return EXIT_UNDECIDED
    resumed = len(result.shards) - result.ran
    print(
        f"{result.ran} shards run in {result.elapsed:.1f} s ({result.shards_per_minute:.1f} "
        f"shards/min)" + (f", {resumed} resumed from {run_dir}" if resumed else "") + "."
    )
    efforts = {e.configuration: e for e in configuration_efforts(result.shards)}
    for row in result.aggregates["by_configuration"]:
        effort = efforts.get(row["configuration"])
        print(
            f"  {row['configuration']}: {row['verdict']} ({row['shards']} shards, "
            f"{row['findings']} findings, {row['errors']} in error, {row['steps']} target "
            f"steps, {row['divergences']} divergent)" + _effort_text(effort)
        )
    for line in storage_lines(result.shards, plan):
        print(line)
    for finding in result.aggregates["findings"]:
        problems = "; ".join([*finding["violations"], *finding["divergences"]])
        print(
            f"FINDING {finding['verdict']} in {finding['configuration']} (shards "
            f"{','.join(map(str, finding['shards']))}, {finding['shrunk_steps']} steps): "
            f"{problems}"
        )
    if result.ledgers is not None:
        print(ledgers_text(result.ledgers))
    for row in result.errors:
        print(f"ERROR shard {row['shard']} after {row['attempts']} attempts: {row['error']}")
    print(f"Verdict: {result.verdict}. Report: {run_dir / 'report.html'}")
    return result.exit_code


def storage_lines(shards: Sequence[Mapping[str, Any]], plan: Plan) -> list[str]:
    """The console's lines per configuration and ledger storage (none without storages)."""
    lines = []
    for cell in storage_cells(
        shards,
        storages=plan.ledger_storages,
        configurations=plan.configurations,
        not_applicable=plan.not_applicable(),
    ):
        where = f"  {cell.configuration} on {cell.ledger_storage}: "
        if cell.verdict is None:
            lines.append(where + str(cell.not_applicable))
        else:
            lines.append(
                where + f"{cell.verdict} ({cell.shards} shards, {cell.findings} findings, "
                f"{cell.errors} in error, {cell.steps_per_shard:,.0f} steps/shard)"
            )
    return lines


def ledgers_text(summary: Mapping[str, Any]) -> str:
    """The console's line on the ledgers the shards created on an external cluster."""
    text = (
        f"Ledgers on the cluster: {summary['created']} created by {summary['shards']} "
        f"shard{'' if summary['shards'] == 1 else 's'}, {summary['deleted']} deleted"
    )
    for why, ids in summary["kept"].items():
        text += f"; kept ({why}): {', '.join(map(str, ids))}"
    if summary["not_deleted"]:
        text += f"; {len(summary['not_deleted'])} could not be deleted"
    if summary["errors"]:
        text += f"; shards {', '.join(summary['errors'])} could not delete theirs"
    if summary["not_deleted"] or summary["errors"]:
        text += " (`bkconform cluster clean --zk ...` deletes what is left)"
    return text


def _effort_text(effort: ConfigurationEffort | None) -> str:
    """``; 740 steps/shard (39% of the most), 89 crashes of 0.53 s on average`` (on a
    cluster a crash is a bookie's restart: what crashes cost a configuration)."""
    if effort is None:
        return ""
    text = f"; {effort.steps_per_shard:,.0f} steps/shard ({effort.share_of_most:.0%} of the most)"
    if effort.restarts:
        text += f", {effort.restarts} crashes of {effort.mean_restart:.2f} s on average"
    own = effort.bookies_own
    if own is not None:
        text += (
            f"; the bookies' own recovery acted in {own.get('examples', 0)} examples "
            f"({own.get('recoveries', 0)} recoveries, {own.get('explained', 0)} observations "
            "explained)"
        )
    return text
