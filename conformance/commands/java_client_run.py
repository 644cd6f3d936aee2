"""``bkconform run --client java [--role R]``: the search with the REAL Java client, and its replay.

The Java client of every example is the one of the BookKeeper release named by
``--bookkeeper`` (installed from Maven Central on first use), against bookies of the same
release on a local cluster, each behind a frame proxy (:mod:`conformance.javaclient`), in the
role ``--role`` names (:mod:`conformance.javaclient.roles`: ``recovery``, it recovers a ledger
w1 left open; ``writer``, it writes a ledger of ``--ensemble``/``--wq``/``--aq``; ``both``, that
writer and a second client recovering its ledger), built by the role's class from the command's
settings (each role refuses what it cannot run). Every other
example is a plan the model's explorer proposes (``--no-explore`` turns that off), the rest come
from Hypothesis' generator. The first violation (else the first divergence) is shrunk on the
cluster and written as the run's story.

The run directory streams as for every run (:mod:`conformance.javaclient.run`):
``results.json`` running from the start, ``history.jsonl`` with each example's judged steps as
it ends (``examples.jsonl``: each example's plan, verdict and time), then the shrunk finding's
steps, trace, sequence diagram, ``frames.txt``, ``record.json`` (the run as observed, to judge
again offline) and ``plan.json`` (what ``bkconform replay RUN_DIR`` runs again);
``frames/example-N.txt`` and ``.json`` for every other example that was not clean.

Exit codes: 0 = examples ran and none failed; 1 = a violation or a divergence; 2 = could not
decide (no distribution, not ``--target local``, a configuration or role not supported, the
cluster or the JVM failed, nothing ran within the budget).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from adapters.cluster.bookie_profiles import DEFAULT_PROFILE
from adapters.javaclient import distribution_version
from adapters.process_records import reap_orphans_once
from conformance.commands.java_client_scenario import CannotRun, bookkeeper_home, client_home
from conformance.commands.options import bookie_settings_from_args, zookeeper_from_args
from conformance.javaclient.delivery_order import faults_after
from conformance.javaclient.plans import PlanError
from conformance.javaclient.role import Role
from conformance.javaclient.roles import (
    DEFAULT_ROLE,
    ROLE_NAMES,
    role_from_settings,
    role_of_plan,
)
from conformance.javaclient.run import (
    RECORD_FILE,
    SearchRunOptions,
    SearchRunResult,
    java_client_system,
    replay_run,
    search_run,
)
from conformance.javaclient.side_by_side import run_side_by_side
from conformance.rundir import FINISHED, new_run_dir, read_results
from conformance.verdict import Verdict

EXIT_UNDECIDED = Verdict.UNDECIDED.exit_code
#: What --role accepts: the roles (``both``: a writer and a recovering client on one ledger).
ROLES = ROLE_NAMES
#: The budget when neither --seconds nor --max-examples is given.
DEFAULT_SECONDS = 300.0
DEFAULT_MAX_EXAMPLES = 10_000


def check_run_arguments(args: argparse.Namespace) -> Path:
    """The distribution to run; :class:`CannotRun` for what this search cannot do (yet)."""
    if args.target != "local":
        raise CannotRun(
            "--client java runs on --target local only (bookies, proxies and the Java client "
            f"are started here); got --target {args.target}"
        )
    _refuse_switches(args)
    role_from_args(args)  # refuses a role or shape no run can have
    return bookkeeper_home(args)


def _refuse_switches(args: argparse.Namespace) -> None:
    flags = ("no_recovery_read_fence", "no_recovery_fragment_fix", "no_limbo", "random_config")
    switches = [flag for flag in flags if getattr(args, flag, False)]
    if switches or getattr(args, "crash", None):
        raise CannotRun(
            "--client java takes no model switches or crashes: the distribution's client "
            f"decides (got {', '.join('--' + s.replace('_', '-') for s in switches) or '--crash'})"
        )


def role_from_args(args: argparse.Namespace) -> Role[Any, Any]:
    """The role ``--role`` names, built by its class from the command's settings
    (:func:`role_settings_from_args`); :class:`CannotRun` for settings it refuses."""
    settings = role_settings_from_args(args)
    try:
        return role_from_settings(settings)
    except PlanError as exc:
        raise CannotRun(f"--role {settings['role']}: {exc}") from exc


def role_settings_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """What the command line says of the role, in :meth:`Role.settings`' terms: its name, the
    ledger ``--ensemble``/``--wq``/``--aq`` (E defaults to WQ), the model's ``--bookies`` and
    ``--clients``, and ``--java-faults`` when given. Each role takes what it can and refuses
    what it cannot run."""
    settings: dict[str, Any] = {
        "role": getattr(args, "role", DEFAULT_ROLE),
        "shape": f"{args.ensemble_size or args.wq}/{args.wq}/{args.aq}",
        "bookies": args.bookies,
        "clients": args.clients,
    }
    if getattr(args, "java_faults", None) is not None:
        settings["faults"] = args.java_faults
    return settings


def run_java_client_search(args: argparse.Namespace) -> int:
    try:
        home = check_run_arguments(args)
        zookeeper = zookeeper_from_args(args) if getattr(args, "zookeeper", None) else None
        role = role_from_args(args)
        client = client_home(args)
        version = distribution_version(client or home)
        bookie_version = distribution_version(home)
        refusal = role.refusal(version)
        if refusal is not None:
            raise CannotRun(f"--role {role.name}: {refusal}")
        bookie_settings = bookie_settings_from_args(args)
        side_by_side = getattr(args, "side_by_side", 1)
        if side_by_side < 1:
            raise CannotRun(f"--side-by-side {side_by_side}: one search or more")
    except (CannotRun, ValueError) as exc:
        print(f"bkconform run: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
    run_dir = new_run_dir(args.runs_dir, "local", "run-java")
    options = _search_options(args, _seed(args), run_dir)
    system = java_client_system(
        home, str(version), zookeeper, client_home=client, bookie_settings=bookie_settings
    )
    print(
        f"Search: the real Java client {version} {role.describe()}, bookies {bookie_version}, local"
    )
    seconds = options.seconds
    budget = f"{options.max_examples} examples" if seconds is None else f"{seconds:.0f} s"
    guidance = "on" if options.model_guidance else "off"
    print(f"  budget {budget}, seed {options.seed}, model guidance {guidance}")
    print(
        f"  system: bookies {system.bookies}; client {system.client}; ZooKeeper "
        f"{system.zookeeper}; bookie settings {system.bookie_settings}"
    )
    print(f"Run directory: {run_dir}", flush=True)
    if side_by_side > 1:
        return _run_side_by_side(args, options, side_by_side, run_dir)
    result = search_run(options)
    _report(result)
    return result.outcome.verdict.exit_code


def _seed(args: argparse.Namespace) -> int:
    return 0 if args.seed is None else int(args.seed)


def _search_options(args: argparse.Namespace, seed: int, run_dir: Path) -> SearchRunOptions:
    """The search the command line asks for, with ``seed`` into ``run_dir`` (the arguments
    checked already: :func:`check_run_arguments`). A module-level function of picklable
    arguments: a search side by side builds its own in its process."""
    seconds = args.seconds
    if seconds is None and args.max_examples is None:
        seconds = DEFAULT_SECONDS
    max_examples = args.max_examples if args.max_examples is not None else DEFAULT_MAX_EXAMPLES
    return SearchRunOptions(
        check_run_arguments(args),
        run_dir,
        role_from_args(args),
        zookeeper=zookeeper_from_args(args) if getattr(args, "zookeeper", None) else None,
        seed=seed,
        seconds=seconds,
        max_examples=max_examples,
        model_guidance=not args.no_explore,
        client_coverage=not getattr(args, "no_client_coverage", False),
        say=_say(args.quiet),
        client_home=client_home(args),
        bookie_settings=bookie_settings_from_args(args),
    )


def _run_side_by_side(
    args: argparse.Namespace, options: SearchRunOptions, searches: int, run_dir: Path
) -> int:
    seeds = [options.seed + number for number in range(searches)]
    print(
        f"Side by side: {searches} searches, seeds {', '.join(map(str, seeds))}, each with its "
        f"own cluster and Java client (job-<n>/, its output in job-<n>.log); the first finding "
        "stops the others",
        flush=True,
    )
    result = run_side_by_side(
        functools.partial(_search_options, args),
        seeds,
        run_dir,
        budget_s=options.seconds,
        search=_search_and_report,
    )
    for job in result.jobs:
        print(f"  {job.describe()}")
    rate = result.examples / result.seconds if result.seconds else 0.0
    print(f"{result.examples} examples in {result.seconds:.1f} s ({rate:.2f} a second)")
    finder = result.finder
    if finder is not None:
        print(f"Finding: job {finder.number}; replay: bkconform replay {finder.run_dir}")
    print(f"Verdict: {result.verdict}. Run directory: {run_dir}")
    return result.verdict.exit_code


def _search_and_report(options: SearchRunOptions) -> SearchRunResult:
    """A job's search, its report in its log as a single search prints it."""
    result = search_run(options)
    _report(result)
    return result


def _say(quiet: bool) -> Callable[[str], None]:
    def say(line: str) -> None:
        # Each example's line is progress (stderr, off with --quiet); the rest is the story.
        if line.startswith("  example "):
            if not quiet:
                print(line, file=sys.stderr, flush=True)
        else:
            print(line, flush=True)

    return say


def _report(result: SearchRunResult) -> None:
    outcome, stats, run_dir = result.outcome, result.stats, result.run_dir
    if "examples" in stats:
        print(
            f"{stats['examples']} examples ({stats['guided_examples']} from the model's "
            f"explorer), {stats['verdicts']}; stopped: {stats['stopped']}"
        )
    if stats.get("untriggered_examples"):
        print(
            f"  {stats['untriggered_examples']} of them had a fault whose frame never came "
            "(it did nothing; judged as they happened: examples.jsonl 'untriggered')"
        )
    if stats.get("coverage"):
        print(f"Coverage: {json.dumps(stats['coverage'])}")
    client = stats.get("client_coverage")
    if client:
        total = client["total"]
        lines, branches = total["lines"], total["branches"]
        print(
            "Client coverage (JaCoCo): lines "
            f"{lines['covered']}/{lines['covered'] + lines['missed']}, branches "
            f"{branches['covered']}/{branches['covered'] + branches['missed']} of "
            f"{', '.join(client['units'])} (results.json: java_search.client_coverage)"
        )
    if result.finding_plan is not None:
        origin = result.found_plan.origin if result.found_plan is not None else "?"
        print(
            f"First finding: example {stats['first_finding_example']} ({origin}) after "
            f"{stats['seconds_to_first_finding']:.1f} s of search, "
            f"{stats['seconds_to_first_finding_from_start']:.1f} s from the start; shrunk in "
            f"{stats['shrink_runs']} runs to:"
        )
        for line in result.finding_plan.describe():
            print(f"  {line}")
        for violation in outcome.violations:
            print(f"VIOLATION {violation}")
        for divergence in outcome.divergences:
            print(f"DIVERGENCE {divergence}")
        print(f"Frames: {run_dir / 'frames.txt'}; diagram: {run_dir / 'sequence.txt'}")
        print(f"Replay: bkconform replay {run_dir}")
    if outcome.error:
        print(f"could not decide: {outcome.error}", file=sys.stderr)
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")


# Replay -------------------------------------------------------------------------------------


def _faults_placed(role: Any, plan: Any, source: Path) -> Any:
    """``plan`` with its faults carried out at moments of their own placed in its recorded
    order, read from the run's ``record.json``, when the run directory was written before
    plans said where (``FrameSchedule.faults_after``); as it is otherwise."""
    schedule = getattr(plan, "schedule", None)
    record_file = source / RECORD_FILE
    if schedule is None or not schedule.order or schedule.faults_after:
        return plan
    if not record_file.is_file():
        return plan
    record = role.record_from_json(json.loads(record_file.read_text()))
    carried = (*getattr(plan, "before_recovery", ()), *getattr(plan, "after_recovery", ()))
    placed = faults_after(record, carried)
    if not placed:
        return plan
    return dataclasses.replace(plan, schedule=schedule.with_order(schedule.order, placed))


def replay_java_run(args: argparse.Namespace, source: Path) -> int:
    """Run the recorded finding's plan once, in its role, on a fresh cluster of the recorded
    versions (``--bookkeeper`` and ``--zookeeper`` override them: the same plan against
    another release)."""
    try:
        results = read_results(source)
        if results["state"] != FINISHED or "finding_plan" not in results:
            raise CannotRun(f"{source} holds no finding to replay (verdict {results['verdict']})")
        finding = results["finding_plan"]
        role = role_of_plan(finding, results.get("role_settings"))
        plan = _faults_placed(role, role.plan_from_json(finding), source)
        if args.target not in ("", "local"):
            raise CannotRun(f"a Java-client finding replays on --target local, not {args.target}")
        args.target = "local"
        if not getattr(args, "bookkeeper", None) and not getattr(args, "bookkeeper_home", None):
            args.bookkeeper = results["target"]["bookkeeper"]
            # The recorded client's release too, when it was not the bookies'.
            recorded_client = results["target"].get("client_bookkeeper")
            if not getattr(args, "client_bookkeeper", None) and recorded_client not in (
                None,
                args.bookkeeper,
            ):
                args.client_bookkeeper = recorded_client
        home = bookkeeper_home(args)
        client = client_home(args)
        # The recorded ZooKeeper release, unless --zookeeper names another.
        if not getattr(args, "zookeeper", None) and results["target"].get("zookeeper"):
            args.zookeeper = results["target"]["zookeeper"]
        zookeeper = zookeeper_from_args(args) if getattr(args, "zookeeper", None) else None
        version = distribution_version(client or home)
        refusal = role.refusal(version)
        if refusal is not None:
            raise CannotRun(refusal)
        # The recorded storage and settings profile, unless the options name others.
        if getattr(args, "ledger_storage", None) is None:
            args.ledger_storage = results["target"].get("ledger_storage")
        if getattr(args, "settings_profile", None) in (None, DEFAULT_PROFILE):
            args.settings_profile = results["target"].get("settings_profile", DEFAULT_PROFILE)
        bookie_settings = bookie_settings_from_args(args)
    except (CannotRun, PlanError, ValueError, KeyError, OSError) as exc:
        print(f"bkconform replay: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
    print(f"Replaying {source} with the real Java client {version} {role.describe()}:")
    for line in plan.describe():
        print(f"  {line}")
    run_dir = new_run_dir(args.runs_dir, "local", "replay-java")
    outcome = replay_run(
        role, plan, home, run_dir, source, zookeeper, client, bookie_settings=bookie_settings
    )
    if outcome.error:
        print(f"could not decide: {outcome.error}", file=sys.stderr)
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return outcome.verdict.exit_code


__all__ = [
    "ROLES",
    "check_run_arguments",
    "replay_java_run",
    "role_from_args",
    "role_settings_from_args",
    "run_java_client_search",
]
