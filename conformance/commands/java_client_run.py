"""``bkconform run --client java``: the search with the REAL Java client, and its replay.

The recovering client of every example is the Java client of the BookKeeper release named by
``--bookkeeper`` (installed from Maven Central on first use), against bookies of the same
release on a local cluster, each behind a frame proxy (:mod:`conformance.javaclient`). The
examples are recovery plans (w1's adds, the proxies' schedule): every other one the model's
explorer read off traces that reach a violation in the model (:mod:`~conformance.javaclient.
guidance`; ``--no-explore`` turns that off), the rest from Hypothesis' generator. The first
violation (else the first divergence) is shrunk on the cluster and written as the run's story.

The run directory streams as for every run (:mod:`conformance.javaclient.search_run`):
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
import json
import sys
from collections.abc import Callable
from pathlib import Path

from adapters.javaclient import BookKeeperVersion, distribution_version
from adapters.process_records import reap_orphans_once
from conformance.commands.java_client_scenario import CannotRun, bookkeeper_home
from conformance.engine import Outcome
from conformance.javaclient.plans import PlanError, RecoveryPlan
from conformance.javaclient.recording import save_record, writer_record_to_json
from conformance.javaclient.scenario import RecoverySession
from conformance.javaclient.search import run_plan
from conformance.javaclient.search_run import (
    CLIENT,
    INFRASTRUCTURE_ERRORS,
    RECORD_FILE,
    SearchRunOptions,
    SearchRunResult,
    frame_lines,
    java_client_system,
    search_run,
    session_options,
)
from conformance.javaclient.story import SPEC_CONFIG
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.javaclient.writer_search_run import (
    WriterSearchRunOptions,
    WriterSearchRunResult,
    writer_frame_lines,
    writer_search_run,
)
from conformance.javaclient.writer_session import (
    FIRST_ROUTABLE_WRITER,
    WriterSession,
    WriterSessionOptions,
    run_writer_plan,
)
from conformance.javaclient.writer_story import writer_config
from conformance.rundir import FINISHED, RunWriter, new_run_dir, read_results

EXIT_UNDECIDED = 2
ROLES = ("recovery", "writer", "both")
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
    role = getattr(args, "role", "recovery")
    if role == "both":
        raise CannotRun(
            "--role both (the Java client writing and another Java client recovering in one "
            "run) is not built yet; run --role writer and --role recovery"
        )
    _refuse_switches(args)
    if role == "writer":
        writer_shape(args)  # refuses a shape no writer run can have
        return bookkeeper_home(args)
    shape = (args.ensemble_size or args.wq, args.wq, args.aq, args.bookies, args.clients)
    if shape != (3, 3, 2, 3, 2):
        raise CannotRun(
            "--client java --role recovery runs E=WQ=3, AQ=2 on 3 bookies with 2 clients "
            "(w1 and the Java client); got "
            f"E={shape[0]} WQ={shape[1]} AQ={shape[2]}, {shape[3]} bookies, {shape[4]} clients"
        )
    return bookkeeper_home(args)


def _refuse_switches(args: argparse.Namespace) -> None:
    flags = ("no_recovery_read_fence", "no_recovery_fragment_fix", "no_limbo", "random_config")
    switches = [flag for flag in flags if getattr(args, flag, False)]
    if switches or getattr(args, "crash", None):
        raise CannotRun(
            "--client java takes no model switches or crashes: the distribution's client "
            f"decides (got {', '.join('--' + s.replace('_', '-') for s in switches) or '--crash'})"
        )


def writer_shape(args: argparse.Namespace) -> WriterShape:
    """The writer's ledger shape from ``--ensemble``/``--wq``/``--aq`` (E defaults to WQ)."""
    try:
        return WriterShape(args.ensemble_size or args.wq, args.wq, args.aq)
    except PlanError as exc:
        raise CannotRun(f"--role writer: {exc}") from exc


def run_java_client_search(args: argparse.Namespace) -> int:
    try:
        home = check_run_arguments(args)
        version = distribution_version(home)
        if getattr(args, "role", "recovery") == "writer" and version < FIRST_ROUTABLE_WRITER:
            raise CannotRun(
                f"--role writer needs BookKeeper >= {FIRST_ROUTABLE_WRITER} (a client that "
                f"resolves bookie ids, so that its adds go through the proxies); "
                f"{version} can be searched as the recovering client (--role recovery)"
            )
    except (CannotRun, ValueError) as exc:
        print(f"bkconform run: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
    if getattr(args, "role", "recovery") == "writer":
        return _run_writer_search(args, home, str(version))
    seconds = args.seconds
    if seconds is None and args.max_examples is None:
        seconds = DEFAULT_SECONDS
    max_examples = args.max_examples if args.max_examples is not None else DEFAULT_MAX_EXAMPLES
    run_dir = new_run_dir(args.runs_dir, "local", "run-java")
    options = SearchRunOptions(
        home,
        run_dir,
        seed=0 if args.seed is None else args.seed,
        seconds=seconds,
        max_examples=max_examples,
        model_guidance=not args.no_explore,
        say=_say(args.quiet),
    )
    system = java_client_system(home, str(version))
    print(f"Search: the real Java client {version} recovering, bookies {version}, local")
    budget = f"{max_examples} examples" if seconds is None else f"{seconds:.0f} s"
    guidance = "on" if options.model_guidance else "off"
    print(f"  budget {budget}, seed {options.seed}, model guidance {guidance}")
    print(
        f"  system: bookies {system.bookies}; client {system.client}; ZooKeeper {system.zookeeper}"
    )
    print(f"Run directory: {run_dir}", flush=True)
    result = search_run(options)
    _report(result)
    return result.outcome.exit_code


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
    if result.finding_plan is None:
        if "examples" in stats:
            print(
                f"{stats['examples']} examples ({stats['guided_examples']} from the model's "
                f"explorer), {stats['verdicts']}; stopped: {stats['stopped']}"
            )
        if outcome.error:
            print(f"could not decide: {outcome.error}", file=sys.stderr)
        print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
        return
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
    print(f"Sequence diagram: {run_dir / 'sequence.txt'}")
    print(f"Replay: bkconform replay {run_dir}")
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")


def _run_writer_search(args: argparse.Namespace, home: Path, version: str) -> int:
    shape = writer_shape(args)
    seconds = args.seconds
    if seconds is None and args.max_examples is None:
        seconds = DEFAULT_SECONDS
    max_examples = args.max_examples if args.max_examples is not None else DEFAULT_MAX_EXAMPLES
    run_dir = new_run_dir(args.runs_dir, "local", "run-java")
    options = WriterSearchRunOptions(
        home,
        run_dir,
        shape,
        seed=0 if args.seed is None else args.seed,
        seconds=seconds,
        max_examples=max_examples,
        model_guidance=not args.no_explore,
        say=_say(args.quiet),
    )
    system = java_client_system(home, version)
    print(
        f"Search: the real Java client {version} writing ({shape.describe()}, "
        f"{shape.bookies} bookies {version}, one spare), local"
    )
    budget = f"{max_examples} examples" if seconds is None else f"{seconds:.0f} s"
    guidance = "on" if options.model_guidance else "off"
    print(f"  budget {budget}, seed {options.seed}, model guidance {guidance}")
    print(
        f"  system: bookies {system.bookies}; client {system.client}; ZooKeeper {system.zookeeper}"
    )
    print(f"Run directory: {run_dir}", flush=True)
    result = writer_search_run(options)
    _report_writer(result)
    return result.outcome.exit_code


def _report_writer(result: WriterSearchRunResult) -> None:
    outcome, stats, run_dir = result.outcome, result.stats, result.run_dir
    coverage = stats.get("coverage")
    if "examples" in stats:
        print(
            f"{stats['examples']} examples ({stats['guided_examples']} from the model's "
            f"explorer), {stats['verdicts']}; stopped: {stats['stopped']}"
        )
    if coverage:
        print(f"Coverage: {json.dumps(coverage)}")
    if result.finding_plan is not None:
        origin = result.found_plan.origin if result.found_plan is not None else "?"
        print(
            f"First finding: example {stats['first_finding_example']} ({origin}) after "
            f"{stats['seconds_to_first_finding']:.1f} s of search; shrunk in "
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


def replay_java_run(args: argparse.Namespace, source: Path) -> int:
    """Run the recorded finding's plan once, on a fresh cluster of the recorded version
    (``--bookkeeper`` overrides it: the same plan against another release)."""
    try:
        results = read_results(source)
        if results["state"] != FINISHED or "finding_plan" not in results:
            raise CannotRun(f"{source} holds no finding to replay (verdict {results['verdict']})")
        finding = results["finding_plan"]
        plan: RecoveryPlan | WriterRunPlan = (
            WriterRunPlan.from_json(finding)
            if finding.get("role") == "writer"
            else RecoveryPlan.from_json(finding)
        )
        if args.target not in ("", "local"):
            raise CannotRun(f"a Java-client finding replays on --target local, not {args.target}")
        args.target = "local"
        if not getattr(args, "bookkeeper", None) and not getattr(args, "bookkeeper_home", None):
            args.bookkeeper = results["target"]["bookkeeper"]
        home = bookkeeper_home(args)
        version = distribution_version(home)
    except (CannotRun, PlanError, ValueError, KeyError, OSError) as exc:
        print(f"bkconform replay: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
    if isinstance(plan, WriterRunPlan):
        return _replay_writer(args, source, plan, home, str(version))
    system = java_client_system(home, str(version))
    print(f"Replaying {source} with the real Java client {version}:")
    for line in plan.describe():
        print(f"  {line}")
    run_dir = new_run_dir(args.runs_dir, "local", "replay-java")
    writer = RunWriter(
        run_dir,
        name="replay-java",
        cfg=SPEC_CONFIG,
        target={"target": "local", "bookkeeper": str(version), "client": CLIENT},
        system=system,
        extra={"replayed_from": str(source), "finding_plan": plan.to_json()},
    )
    with writer:
        writer.start()
        try:
            with RecoverySession(session_options(home, run_dir)) as session:
                run = run_plan(session, plan)
        except INFRASTRUCTURE_ERRORS as exc:
            print(f"could not decide: {type(exc).__name__}: {exc}", file=sys.stderr)
            writer.finish(
                Outcome("undecided", [], [], error=f"{type(exc).__name__}: {exc}"), story=None
            )
            return EXIT_UNDECIDED
        if run.judgement is None:
            error = run.unapplied or "the run was not judged"
            writer.finish(Outcome("undecided", [], [], error=error), story=None)
            print(f"could not decide: {error}", file=sys.stderr)
            return EXIT_UNDECIDED
        outcome = run.judgement.outcome
        for step in outcome.steps:
            writer.step(1, None, step)
        writer.example_done(1)
        (run_dir / "frames.txt").write_text(frame_lines(run))
        save_record(run.record, run_dir / RECORD_FILE)
        writer.finish(outcome, cfg=run.judgement.cfg, story=1)
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return outcome.exit_code


def _replay_writer(
    args: argparse.Namespace, source: Path, plan: WriterRunPlan, home: Path, version: str
) -> int:
    """The recorded writer finding's plan, once, on a fresh cluster."""
    if BookKeeperVersion.parse(version) < FIRST_ROUTABLE_WRITER:
        print(
            f"bkconform replay: a writer run needs BookKeeper >= {FIRST_ROUTABLE_WRITER}, "
            f"not {version}",
            file=sys.stderr,
        )
        return EXIT_UNDECIDED
    system = java_client_system(home, version)
    print(f"Replaying {source} with the real Java client {version} writing:")
    for line in plan.describe():
        print(f"  {line}")
    run_dir = new_run_dir(args.runs_dir, "local", "replay-java")
    writer = RunWriter(
        run_dir,
        name="replay-java",
        cfg=writer_config(plan.shape, plan.entries),
        target={"target": "local", "bookkeeper": version, "client": CLIENT, "role": "writer"},
        system=system,
        extra={"replayed_from": str(source), "finding_plan": plan.to_json()},
    )
    with writer:
        writer.start()
        try:
            with WriterSession(WriterSessionOptions(home, run_dir, plan.shape)) as session:
                run = run_writer_plan(session, plan)
        except INFRASTRUCTURE_ERRORS as exc:
            error = f"{type(exc).__name__}: {exc}"
            print(f"could not decide: {error}", file=sys.stderr)
            writer.finish(Outcome("undecided", [], [], error=error), story=None)
            return EXIT_UNDECIDED
        if run.judgement is None:
            error = run.unapplied or "the run was not judged"
            writer.finish(Outcome("undecided", [], [], error=error), story=None)
            print(f"could not decide: {error}", file=sys.stderr)
            return EXIT_UNDECIDED
        outcome = run.judgement.outcome
        for step in outcome.steps:
            writer.step(1, None, step)
        writer.example_done(1)
        (run_dir / "frames.txt").write_text(writer_frame_lines(run))
        (run_dir / RECORD_FILE).write_text(json.dumps(writer_record_to_json(run.record)) + "\n")
        writer.finish(outcome, cfg=run.judgement.cfg, story=1)
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return outcome.exit_code


__all__ = [
    "CLIENT",
    "ROLES",
    "check_run_arguments",
    "replay_java_run",
    "run_java_client_search",
]
