"""One search of the real Java client, written as a run directory.

What ``bkconform run --client java`` does, and each shard of the version matrix
(:mod:`conformance.distributed.java_matrix`): the model's explorer reads plans off its
counterexamples while a local cluster of the release, its proxies and its Java client start;
the search runs (:func:`~conformance.javaclient.search.search`); the run directory streams as
for every run (``results.json`` running from the start, ``history.jsonl`` with each example's
judged steps, ``examples.jsonl``), and the finding, if any, is written with its plan, record,
frames and diagram. Nothing is printed here: ``say`` gets the progress lines.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from adapters.cluster import ClusterError
from adapters.installations.system import (
    BookieChoice,
    SystemUnderTest,
    describe_java_client,
    describe_zookeeper,
)
from adapters.installations.zookeeper import locate_zookeeper
from adapters.javaclient import JavaClientError, distribution_version
from adapters.netproxy import NetProxyError
from adapters.zookeeper.errors import MetadataError
from conformance.engine import Outcome
from conformance.errors import ConformanceError
from conformance.javaclient.plans import RecoveryPlan
from conformance.javaclient.recording import save_record
from conformance.javaclient.scenario import JavaScenarioOptions, RecoverySession, ScenarioUndecided
from conformance.javaclient.search import ExampleRun, SearchResult, search
from conformance.javaclient.story import SPEC_CONFIG
from conformance.rundir import FINDING, RunWriter
from conformance.verdict import Verdict

CLIENT = "java"
ROLE = "recovery"
PLAN_FILE = "plan.json"
#: The shrunk finding's run as observed (:mod:`conformance.javaclient.recording`).
RECORD_FILE = "record.json"
EXAMPLES_FILE = "examples.jsonl"
#: The explorer stops itself at 30 s; this bounds a hung one.
GUIDANCE_TIMEOUT_S = 120.0


class GuidanceError(ConformanceError, RuntimeError):
    """The model's explorer failed or did not answer in time (a bug: never retried)."""


#: What makes a run undecided instead of raising (the guidance's failure included: the run
#: says why and decides nothing).
INFRASTRUCTURE_ERRORS = (
    GuidanceError,
    ClusterError,
    NetProxyError,
    MetadataError,
    JavaClientError,
    ScenarioUndecided,
)


def java_client_system(home: Path, version: str) -> SystemUnderTest:
    """Bookies of ``home``, its Java client, and the local ZooKeeper."""
    try:
        install = locate_zookeeper()
        zookeeper = describe_zookeeper(install.classpath, install.source)
    except Exception as exc:
        zookeeper = f"unknown ({exc})"
    return SystemUnderTest(
        BookieChoice.bookkeeper(home).describe(), describe_java_client(version), zookeeper
    )


def session_options(home: Path, run_dir: Path) -> JavaScenarioOptions:
    # A short read timeout: a dropped read costs the client that long, every example.
    return JavaScenarioOptions(bookkeeper_home=home, log_dir=run_dir, read_entry_timeout_s=2)


def frame_lines(run: ExampleRun) -> str:
    """The example's frames as the proxies saw them, what became of each, and the end."""
    delivered = run.record.deliveries
    lines = []
    for frame in run.record.frames:
        delivery = delivered.get(frame.frame_id)
        fate = (
            "never delivered"
            if delivery is None or not delivery.delivered
            else f"delivered +{delivery.at - frame.at:.3f} s"
        )
        lines.append(f"{frame.at:.3f} {frame.describe()} ({fate})")
    if run.record.java_error:
        lines.append(f"Java client: {run.record.java_error}")
    if run.record.recovered_at is not None:
        lines.append(f"openLedger returned at {run.record.recovered_at:.3f}")
    lines.append(f"closed at {run.record.closed_last_entry}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SearchRunOptions:
    home: Path
    run_dir: Path
    seed: int = 0
    #: The time budget (None: ``max_examples`` only).
    seconds: float | None = 300.0
    max_examples: int = 10_000
    model_guidance: bool = True
    #: Progress lines (the command prints them; a shard keeps them quiet).
    say: Callable[[str], None] = field(default=lambda line: None, compare=False)

    def settings(self) -> dict[str, Any]:
        return {
            "client": CLIENT,
            "role": ROLE,
            "seed": self.seed,
            "seconds": self.seconds,
            "max_examples": self.max_examples,
            "model_guidance": self.model_guidance,
        }


@dataclass
class SearchRunResult:
    run_dir: Path
    version: str
    system: SystemUnderTest
    outcome: Outcome
    stats: dict[str, Any]
    #: The shrunk finding's plan, and the plan as found (None: no finding).
    finding_plan: RecoveryPlan | None = None
    found_plan: RecoveryPlan | None = None

    @property
    def verdict(self) -> str:
        return self.outcome.verdict

    def summary(self) -> dict[str, Any]:
        """What a matrix row keeps of the run."""
        plan = None if self.finding_plan is None else self.finding_plan.to_json()
        return run_summary(self.run_dir, self.version, self.system, self.outcome, self.stats, plan)


def run_summary(
    run_dir: Path,
    version: str,
    system: SystemUnderTest,
    outcome: Outcome,
    stats: dict[str, Any],
    finding_plan: dict[str, Any] | None,
) -> dict[str, Any]:
    """What a matrix row keeps of a Java-client search (either role)."""
    return {
        "verdict": outcome.verdict,
        "run_dir": str(run_dir),
        "bookkeeper": version,
        "system": f"{system.bookies}; {system.client}; {system.zookeeper}",
        "violations": list(outcome.violations),
        "divergences": len(outcome.divergences),
        "error": outcome.error,
        "examples": stats.get("examples", 0),
        "guided_examples": stats.get("guided_examples", 0),
        "first_finding_example": stats.get("first_finding_example"),
        "seconds_to_first_finding_from_start": stats.get("seconds_to_first_finding_from_start"),
        "finding_plan": finding_plan,
    }


def search_run(options: SearchRunOptions) -> SearchRunResult:
    """One search on a fresh cluster of ``options.home``, written to ``options.run_dir``. A
    cluster, proxy, JVM or ZooKeeper failure is an undecided result, never an exception."""
    home, run_dir, say = options.home, options.run_dir, options.say
    version = str(distribution_version(home))
    system = java_client_system(home, version)
    writer = RunWriter(
        run_dir,
        name="run-java",
        cfg=SPEC_CONFIG,
        target={"target": "local", "bookkeeper": version, "client": CLIENT},
        system=system,
        extra={"search": options.settings()},
    )
    started = time.monotonic()
    guided: list[RecoveryPlan] = []
    # The model's explorer runs while the cluster and the JVM start, in a process of its own:
    # in a thread it would hold this interpreter's lock for most of 30 s, and on a loaded
    # machine the ZooKeeper client's heartbeats here then came too late (sessions expired).
    with writer, contextlib.ExitStack() as stack:
        writer.start()
        planned = stack.enter_context(_Guidance(options.seed)) if options.model_guidance else None
        with (run_dir / EXAMPLES_FILE).open("w", encoding="utf-8") as examples_log:
            sink = _ExampleSink(writer, examples_log, started, say)
            try:
                with RecoverySession(session_options(home, run_dir)) as session:
                    if planned is not None:
                        guided = planned.result(GUIDANCE_TIMEOUT_S)
                        say(
                            f"Model explorer: {len(guided)} plans read off traces to a "
                            "violation (recovery reads unfenced)"
                        )
                    result = search(
                        session,
                        max_examples=options.max_examples,
                        seconds=options.seconds,
                        seed=options.seed,
                        guided=guided,
                        on_example=sink,
                    )
                    described = {"routing": session.routing_method.value, **session.routes()}
            except INFRASTRUCTURE_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                outcome = Outcome("undecided", [], [], error=error)
                writer.finish(outcome, story=None)
                return SearchRunResult(run_dir, version, system, outcome, {"error": error})
        return _finish(writer, result, described, guided, started, version, system)


class _Guidance:
    """``python -m conformance.javaclient.guidance`` in a process of its own; killed on exit
    if it is still running."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.process: subprocess.Popen[str] | None = None

    def __enter__(self) -> _Guidance:
        command = [
            sys.executable,
            "-m",
            "conformance.javaclient.guidance",
            "--seed",
            str(self.seed),
        ]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        return self

    def result(self, timeout: float) -> list[RecoveryPlan]:
        assert self.process is not None
        try:
            out, err = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise GuidanceError(
                f"the model's explorer gave no plans within {timeout:.0f} s"
            ) from exc
        if self.process.returncode != 0:
            raise GuidanceError(
                f"the model's explorer exited {self.process.returncode}: {err.strip()[-2000:]}"
            )
        return [RecoveryPlan.from_json(item) for item in json.loads(out)]

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


class _ExampleSink:
    """Each example as it ends: its steps to history.jsonl, its line to examples.jsonl, and
    (when it was not clean) its frames and record to frames/."""

    def __init__(
        self, writer: RunWriter, log: IO[str], started: float, say: Callable[[str], None]
    ) -> None:
        self.writer, self.log, self.started, self.say = writer, log, started, say

    def __call__(self, number: int, run: ExampleRun) -> None:
        writer = self.writer
        if run.judgement is not None:
            for step in run.judgement.outcome.steps:
                writer.step(number, None, step)
        writer.example_done(number)
        entry = {
            "example": number,
            "verdict": run.verdict,
            "seconds": round(run.seconds, 3),
            "at": round(time.monotonic() - self.started, 3),
            "plan": run.plan.to_json(),
            "unapplied": run.unapplied,
            "violations": run.judgement.outcome.violations if run.judgement else [],
            "divergences": run.judgement.outcome.divergences if run.judgement else [],
            "java_error": run.record.java_error,
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()
        if run.verdict != Verdict.CLEAN.value:
            # What the proxies saw, for every example that was not clean (the shrunk finding's
            # own is frames.txt).
            frames_dir = writer.path / "frames"
            frames_dir.mkdir(exist_ok=True)
            (frames_dir / f"example-{number}.txt").write_text(frame_lines(run))
            save_record(run.record, frames_dir / f"example-{number}.json")
        self.say(f"  example {number}: {run.verdict} ({run.plan.origin}; {run.seconds:.1f} s)")


def _finish(
    writer: RunWriter,
    result: SearchResult,
    described: dict[str, str],
    guided: list[RecoveryPlan],
    started: float,
    version: str,
    system: SystemUnderTest,
) -> SearchRunResult:
    run_dir = writer.path
    # From the start to the search's: cluster, proxies, JVM (and the model's explorer).
    startup = max(0.0, time.monotonic() - started - result.seconds)
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
        return SearchRunResult(run_dir, version, system, outcome, stats)
    shrunk = finding.shrunk
    judgement = finding.judgement
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
    (run_dir / "frames.txt").write_text(frame_lines(shrunk))
    save_record(shrunk.record, run_dir / RECORD_FILE)
    writer.finish(
        judgement.outcome,
        cfg=judgement.cfg,
        target=described,
        extra={
            "java_search": stats,
            "finding_plan": shrunk.plan.to_json(),
            "recovery_reads_fence": judgement.reads_fenced,
        },
        story=FINDING,
    )
    return SearchRunResult(
        run_dir,
        version,
        system,
        judgement.outcome,
        stats,
        finding_plan=shrunk.plan,
        found_plan=finding.found.plan,
    )


__all__ = [
    "CLIENT",
    "EXAMPLES_FILE",
    "INFRASTRUCTURE_ERRORS",
    "PLAN_FILE",
    "RECORD_FILE",
    "ROLE",
    "SearchRunOptions",
    "SearchRunResult",
    "frame_lines",
    "java_client_system",
    "run_summary",
    "search_run",
    "session_options",
]
