"""``bkconform qualify``: a release qualification, many shards of search over many
configurations, on a Spark master (``local[N]`` here, or any master URL) or in process
(``--master none``).

Each shard searches one configuration with its own seed and budget against its own target
(``local``: a ZooKeeper and real BookKeeper bookies started and stopped by the shard; the
bookies are chosen once, here, and every shard runs the same distribution). The run
directory gets Parquet datasets (steps/, findings/, shards/), aggregates.json, results.json and
report.html. Re-running with ``--run-dir`` of an earlier run resumes it: shards already in its
Parquet output are skipped.

Release matrix (--target local): --bookkeeper and --zookeeper each also take a comma-separated
list of releases (``--bookkeeper 4.17.3,4.18.0 --zookeeper 3.8.4,3.9.3``). Every pair of the
lists' cross product gets its own qualification, in bookkeeper-<r>/, zookeeper-<z>/ or
bookkeeper-<r>-zookeeper-<z>/ of the run directory (each resumable on its own), and the run
directory gets the matrix of their verdicts (results.json, report.html); its verdict is the
worst of theirs. ``--client java`` has its own matrix (docs/javaclient-search.md).

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
from conformance.distributed.release_matrix import (
    pair_title,
    release_label,
    release_pairs,
    release_row,
    row_directory,
    write_release_matrix,
)
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
        "--role",
        dest="roles",
        default=None,
        help="with --client java: the Java client's roles, comma-separated, from recovery, "
        "writer, both (default recovery); --role is the same option, as run spells it",
    )
    qualify.add_argument(
        "--writer-shapes",
        default=None,
        help="with --client java --roles ...,writer or both: the writer's ledger shapes "
        "E/WQ/AQ[+SPARES], comma-separated (default 3/2/2,2/1/1)",
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
    bookkeepers = _releases(args.bookkeeper)
    zookeepers = _releases(args.zookeeper)
    for option, text, names in (
        ("--bookkeeper", args.bookkeeper, bookkeepers),
        ("--zookeeper", args.zookeeper, zookeepers),
    ):
        problem = _list_problem(names)
        if problem is not None:
            print(f"bkconform qualify: {option} {text} {problem}", file=sys.stderr)
            return EXIT_UNDECIDED
    if len(bookkeepers) <= 1 and len(zookeepers) <= 1:
        return _qualify_once(args, args.run_dir)
    if args.target != "local":
        listed = " and ".join(
            product
            for product, names in (("BookKeeper", bookkeepers), ("ZooKeeper", zookeepers))
            if len(names) > 1
        )
        print(
            f"bkconform qualify: a list of {listed} releases needs --target local",
            file=sys.stderr,
        )
        return EXIT_UNDECIDED
    pairs = release_pairs(bookkeepers, zookeepers)
    try:  # bad options are refused before anything is made, as the first row would read them
        _plan(args)
        qualification_target(_row_args(args, *pairs[0]))
    except (PlanError, ShardFaultError, ValueError) as exc:
        print(f"bkconform qualify: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    # One qualification per release pair, each in its own directory (each resumable on its
    # own), then the matrix of their verdicts.
    run_dir = Path(args.run_dir or new_run_dir(args.runs_dir, args.target, "qualify"))
    rows = []
    for bookkeeper, zookeeper in pairs:
        row_dir = run_dir / row_directory(bookkeeper, zookeeper)
        print(f"== {pair_title(bookkeeper, zookeeper)}", flush=True)
        code = _qualify_once(_row_args(args, bookkeeper, zookeeper), row_dir)
        rows.append(release_row(bookkeeper, zookeeper, row_dir, code))
    verdict = write_release_matrix(run_dir, rows)
    print(f"Release matrix: {verdict}. Report: {run_dir / 'report.html'}")
    return verdict.exit_code


def _releases(text: str | None) -> list[str]:
    """``--bookkeeper``/``--zookeeper`` as a list: one name, or several comma-separated."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _list_problem(names: Sequence[str]) -> str | None:
    """Why a list of releases cannot be a matrix dimension (None when it can): a release
    named twice, or two names that would share a row's directory."""
    if len(names) != len(set(names)):
        return "names a release twice"
    labels: dict[str, str] = {}
    for name in names:
        other = labels.setdefault(release_label(name), name)
        if other != name:
            return f"names {other} and {name}, which would share the directory of a row"
    return None


def _row_args(
    args: argparse.Namespace, bookkeeper: str | None, zookeeper: str | None
) -> argparse.Namespace:
    """The options of one row's qualification: the row's single releases in place of the
    lists (a dimension that is no list, None, keeps the option as given)."""
    row = {"bookkeeper": bookkeeper, "zookeeper": zookeeper}
    return argparse.Namespace(
        **{**vars(args), **{key: value for key, value in row.items() if value is not None}}
    )


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
