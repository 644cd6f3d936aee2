"""``bkconform run --client java``: the search with the REAL Java client, and its replay.

The recovering client of every example is the Java client of the BookKeeper release named by
``--bookkeeper`` (installed from Maven Central on first use), against bookies of the same
release on a local cluster, each behind a frame proxy (:mod:`conformance.javaclient`). The
examples are recovery plans (w1's adds, the proxies' schedule): half of them the model's
explorer read off traces that reach a violation in the model (:mod:`~conformance.javaclient.
guidance`; ``--no-explore`` turns that off), the rest from Hypothesis' generator. The first
example that fails is shrunk on the cluster and written as the run's story.

The run directory streams as for every run: ``results.json`` running from the start,
``history.jsonl`` with each example's judged steps as it ends (``examples.jsonl``: each
example's plan, verdict and time), then the shrunk finding's steps, trace, sequence diagram,
``frames.txt``, ``record.json`` (the run as observed, to judge again offline) and
``plan.json`` (what ``bkconform replay RUN_DIR`` runs again); ``frames/example-N.txt`` and
``.json`` for every other example that was not clean.

Exit codes: 0 = examples ran and none failed; 1 = a violation or a divergence; 2 = could not
decide (no distribution, not ``--target local``, a configuration or role not supported, the
cluster or the JVM failed, nothing ran within the budget).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from adapters.cluster import ClusterError
from adapters.javaclient import JavaClientError, distribution_version
from adapters.netproxy import NetProxyError
from adapters.process_records import reap_orphans_once
from adapters.zookeeper.errors import MetadataError
from conformance.commands.java_client_scenario import (
    CannotRun,
    bookkeeper_home,
    java_client_system,
)
from conformance.engine import Outcome
from conformance.javaclient.guidance import model_guided_plans
from conformance.javaclient.plans import PlanError, RecoveryPlan
from conformance.javaclient.recording import save_record
from conformance.javaclient.scenario import (
    JavaScenarioOptions,
    RecoverySession,
    ScenarioUndecided,
)
from conformance.javaclient.search import ExampleRun, SearchResult, run_plan, search
from conformance.javaclient.story import SPEC_CONFIG
from conformance.rundir import FINDING, FINISHED, RunWriter, new_run_dir, read_results
from conformance.verdict import Verdict

EXIT_UNDECIDED = 2
CLIENT = "java"
ROLES = ("recovery", "writer", "both")
#: The budget when neither --seconds nor --max-examples is given.
DEFAULT_SECONDS = 300.0
DEFAULT_MAX_EXAMPLES = 10_000
PLAN_FILE = "plan.json"
#: The shrunk finding's run as observed (:mod:`conformance.javaclient.recording`).
RECORD_FILE = "record.json"
EXAMPLES_FILE = "examples.jsonl"
_INFRASTRUCTURE_ERRORS = (
    ClusterError,
    NetProxyError,
    MetadataError,
    JavaClientError,
    ScenarioUndecided,
)


def check_run_arguments(args: argparse.Namespace) -> Path:
    """The distribution to run; :class:`CannotRun` for what this search cannot do (yet)."""
    if args.target != "local":
        raise CannotRun(
            "--client java runs on --target local only (bookies, proxies and the Java client "
            f"are started here); got --target {args.target}"
        )
    role = getattr(args, "role", "recovery")
    if role != "recovery":
        raise CannotRun(
            f"--role {role}: only the recovering role is searched so far (the Java client "
            "recovers the ledger w1 wrote); the writer role (addEntry pipelining, ensemble "
            "changes) is not built yet"
        )
    shape = (args.ensemble_size or args.wq, args.wq, args.aq, args.bookies, args.clients)
    if shape != (3, 3, 2, 3, 2):
        raise CannotRun(
            "--client java --role recovery runs E=WQ=3, AQ=2 on 3 bookies with 2 clients "
            "(w1 and the Java client); got "
            f"E={shape[0]} WQ={shape[1]} AQ={shape[2]}, {shape[3]} bookies, {shape[4]} clients"
        )
    flags = ("no_recovery_read_fence", "no_recovery_fragment_fix", "no_limbo", "random_config")
    switches = [flag for flag in flags if getattr(args, flag, False)]
    if switches or getattr(args, "crash", None):
        raise CannotRun(
            "--client java takes no model switches or crashes: the distribution's client "
            f"decides (got {', '.join('--' + s.replace('_', '-') for s in switches) or '--crash'})"
        )
    return bookkeeper_home(args)


def run_java_client_search(args: argparse.Namespace) -> int:
    try:
        home = check_run_arguments(args)
        version = distribution_version(home)
    except (CannotRun, ValueError) as exc:
        print(f"bkconform run: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
    seed = 0 if args.seed is None else args.seed
    seconds = (
        args.seconds
        if args.seconds is not None
        else (None if args.max_examples is not None else DEFAULT_SECONDS)
    )
    max_examples = args.max_examples if args.max_examples is not None else DEFAULT_MAX_EXAMPLES
    guided_by_model = not args.no_explore
    system = java_client_system(home, str(version))
    settings = {
        "client": CLIENT,
        "role": "recovery",
        "seed": seed,
        "seconds": seconds,
        "max_examples": max_examples,
        "model_guidance": guided_by_model,
    }
    print(f"Search: the real Java client {version} recovering, bookies {version}, local")
    print(
        f"  budget {_budget(seconds, max_examples)}, seed {seed}, model guidance "
        f"{'on' if guided_by_model else 'off'}"
    )
    print(
        f"  system: bookies {system.bookies}; client {system.client}; ZooKeeper {system.zookeeper}",
        flush=True,
    )
    run_dir = new_run_dir(args.runs_dir, "local", "run-java")
    print(f"Run directory: {run_dir}", flush=True)
    writer = RunWriter(
        run_dir,
        name="run-java",
        cfg=SPEC_CONFIG,
        target={"target": "local", "bookkeeper": str(version), "client": CLIENT},
        system=system,
        extra={"search": settings},
    )
    started = time.monotonic()
    guided: list[RecoveryPlan] = []
    with writer, ThreadPoolExecutor(1, thread_name_prefix="model-guidance") as pool:
        writer.start()
        # The model's explorer runs while the cluster and the JVM start (they wait on other
        # processes; the explorer computes).
        planned = (
            pool.submit(model_guided_plans, reads_fence=False, seed=seed)
            if (guided_by_model)
            else None
        )
        examples_log = (run_dir / EXAMPLES_FILE).open("w", encoding="utf-8")
        on_example = _example_sink(writer, examples_log, started, args.quiet)
        try:
            with RecoverySession(_session_options(home, run_dir)) as session:
                if planned is not None:
                    guided = planned.result()
                    print(
                        f"Model explorer: {len(guided)} plans read off traces to a violation "
                        "(recovery reads unfenced)",
                        flush=True,
                    )
                result = search(
                    session,
                    max_examples=max_examples,
                    seconds=seconds,
                    seed=seed,
                    guided=guided,
                    on_example=on_example,
                )
                described = {"routing": session.routing_method.value, **session.routes()}
        except _INFRASTRUCTURE_ERRORS as exc:
            print(f"could not decide: {type(exc).__name__}: {exc}", file=sys.stderr)
            writer.finish(
                Outcome("undecided", [], [], error=f"{type(exc).__name__}: {exc}"), story=None
            )
            print(f"Verdict: undecided. Run directory: {run_dir}")
            return EXIT_UNDECIDED
        finally:
            examples_log.close()
        return _finish(writer, result, described, guided, run_dir, started)


def _session_options(home: Path, run_dir: Path) -> JavaScenarioOptions:
    # A short read timeout: a dropped read costs the client that long, every example.
    return JavaScenarioOptions(bookkeeper_home=home, log_dir=run_dir, read_entry_timeout_s=2)


def _budget(seconds: float | None, max_examples: int) -> str:
    if seconds is None:
        return f"{max_examples} examples"
    return f"{seconds:.0f} s (at most {max_examples} examples)"


def _example_sink(
    writer: RunWriter, log: Any, started: float, quiet: bool
) -> Callable[[int, ExampleRun], None]:
    def record(number: int, run: ExampleRun) -> None:
        if run.judgement is not None:
            for step in run.judgement.outcome.steps:
                writer.step(number, None, step)
        writer.example_done(number)
        entry = {
            "example": number,
            "verdict": run.verdict,
            "seconds": round(run.seconds, 3),
            "at": round(time.monotonic() - started, 3),
            "plan": run.plan.to_json(),
            "unapplied": run.unapplied,
            "violations": run.judgement.outcome.violations if run.judgement else [],
            "divergences": run.judgement.outcome.divergences if run.judgement else [],
            "java_error": run.record.java_error,
        }
        log.write(json.dumps(entry) + "\n")
        log.flush()
        if run.verdict != Verdict.CLEAN.value:
            # What the proxies saw, for every example that was not clean (the shrunk finding's
            # own is frames.txt).
            frames_dir = writer.path / "frames"
            frames_dir.mkdir(exist_ok=True)
            (frames_dir / f"example-{number}.txt").write_text(_frame_lines(run))
            save_record(run.record, frames_dir / f"example-{number}.json")
        if not quiet:
            print(
                f"  example {number}: {run.verdict} ({run.plan.origin}; {run.seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )

    return record


def _frame_lines(run: ExampleRun) -> str:
    delivered = run.record.deliveries
    lines = []
    for frame in run.record.frames:
        delivery = delivered.get(frame.frame_id)
        fate = (
            "never delivered"
            if delivery is None or not delivery.delivered
            else (f"delivered +{delivery.at - frame.at:.3f} s")
        )
        lines.append(f"{frame.at:.3f} {frame.describe()} ({fate})")
    if run.record.java_error:
        lines.append(f"Java client: {run.record.java_error}")
    if run.record.recovered_at is not None:
        lines.append(f"openLedger returned at {run.record.recovered_at:.3f}")
    lines.append(f"closed at {run.record.closed_last_entry}")
    return "\n".join(lines) + "\n"


def _finish(
    writer: RunWriter,
    result: SearchResult,
    described: dict[str, str],
    guided: Sequence[RecoveryPlan],
    run_dir: Path,
    started: float,
) -> int:
    startup = _startup_seconds(result, started)
    stats: dict[str, Any] = {
        "startup_seconds": round(startup, 3),
        "examples": result.examples,
        "guided_examples": result.guided_examples,
        "guided_plans": len(guided),
        "verdicts": result.verdicts,
        "stopped": result.stopped,
        "search_seconds": round(result.seconds, 3),
        "errors": result.errors,
    }
    finding = result.finding
    if finding is None:
        error = None
        if result.verdict == Verdict.UNDECIDED.value:
            error = "; ".join(result.errors) or "no example ran within the budget"
        outcome = Outcome(result.verdict, [], [], error=error)
        writer.finish(outcome, target=described, extra={"java_search": stats}, story=None)
        print(
            f"{result.examples} examples ({result.guided_examples} from the model's explorer), "
            f"{result.verdicts}; stopped: {result.stopped}"
        )
        if error:
            print(f"could not decide: {error}", file=sys.stderr)
        print(f"Verdict: {result.verdict}. Run directory: {run_dir}")
        return outcome.exit_code
    shrunk = finding.shrunk
    judgement = finding.judgement
    outcome = judgement.outcome
    stats.update(
        {
            "first_finding_example": finding.example,
            "seconds_to_first_finding": round(finding.seconds_to_find, 3),
            "seconds_to_first_finding_from_start": round(startup + finding.seconds_to_find, 3),
            "found_plan": finding.found.plan.to_json(),
            "shrink_runs": finding.shrink_runs,
        }
    )
    (run_dir / PLAN_FILE).write_text(json.dumps(shrunk.plan.to_json(), indent=2) + "\n")
    (run_dir / "frames.txt").write_text(_frame_lines(shrunk))
    save_record(shrunk.record, run_dir / RECORD_FILE)
    writer.finish(
        outcome,
        cfg=judgement.cfg,
        target=described,
        extra={
            "java_search": stats,
            "finding_plan": shrunk.plan.to_json(),
            "recovery_reads_fence": judgement.reads_fenced,
        },
        story=FINDING,
    )
    print(
        f"First finding: example {finding.example} ({finding.found.plan.origin}) after "
        f"{finding.seconds_to_find:.1f} s of search, {startup + finding.seconds_to_find:.1f} s "
        f"from the start; shrunk in {finding.shrink_runs} runs to:"
    )
    for line in shrunk.plan.describe():
        print(f"  {line}")
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    print(f"Sequence diagram: {run_dir / 'sequence.txt'}")
    print(f"Replay: bkconform replay {run_dir}")
    print(f"Verdict: {outcome.verdict}. Run directory: {run_dir}")
    return outcome.exit_code


def _startup_seconds(result: SearchResult, started: float) -> float:
    """Seconds from the command's start to the search's (cluster, proxies, JVM, model)."""
    return max(0.0, time.monotonic() - started - result.seconds)


# Replay -------------------------------------------------------------------------------------


def replay_java_run(args: argparse.Namespace, source: Path) -> int:
    """Run the recorded finding's plan once, on a fresh cluster of the recorded version
    (``--bookkeeper`` overrides it: the same plan against another release)."""
    try:
        results = read_results(source)
        if results["state"] != FINISHED or "finding_plan" not in results:
            raise CannotRun(f"{source} holds no finding to replay (verdict {results['verdict']})")
        plan = RecoveryPlan.from_json(results["finding_plan"])
        if not getattr(args, "bookkeeper", None) and not getattr(args, "bookkeeper_home", None):
            args.bookkeeper = results["target"]["bookkeeper"]
        home = bookkeeper_home(args)
        version = distribution_version(home)
    except (CannotRun, PlanError, ValueError, KeyError, OSError) as exc:
        print(f"bkconform replay: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    reap_orphans_once()
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
            with RecoverySession(_session_options(home, run_dir)) as session:
                run = run_plan(session, plan)
        except _INFRASTRUCTURE_ERRORS as exc:
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
        (run_dir / "frames.txt").write_text(_frame_lines(run))
        save_record(run.record, run_dir / RECORD_FILE)
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
