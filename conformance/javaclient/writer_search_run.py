"""One writer search of the real Java client, written as a run directory.

What ``bkconform run --client java --role writer`` does: the model's explorer reads the
writer's danger plans off the writer configuration (:mod:`.writer_guidance`, bounded, before
the cluster starts), a local cluster of E + 1 bookies of the release starts with its proxies
and its Java client, and :func:`~.writer_search.writer_search` runs. The run directory streams
as every run's does (``results.json`` running from the start, ``history.jsonl`` with each
example's judged steps, ``examples.jsonl`` with each example's plan, verdict, ensemble changes
and callbacks); every example that was not clean keeps its frames and record under
``frames/``; a finding is written with its plan, record, frames and diagram, and
``results.json`` carries the coverage the examples reached (``java_search.coverage``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from adapters.installations.system import SystemUnderTest
from adapters.javaclient import distribution_version
from conformance.engine import Outcome
from conformance.javaclient.recording import writer_record_to_json
from conformance.javaclient.search_run import (
    CLIENT,
    EXAMPLES_FILE,
    INFRASTRUCTURE_ERRORS,
    PLAN_FILE,
    RECORD_FILE,
    java_client_system,
    run_summary,
)
from conformance.javaclient.writer_guidance import writer_guided_plans
from conformance.javaclient.writer_plans import MAX_ENTRIES, WriterRunPlan, WriterShape
from conformance.javaclient.writer_search import WriterSearchResult, writer_search
from conformance.javaclient.writer_session import (
    WriterExample,
    WriterSession,
    WriterSessionOptions,
)
from conformance.javaclient.writer_story import writer_config
from conformance.rundir import FINDING, RunWriter
from conformance.verdict import Verdict

ROLE = "writer"
#: The model's explorer's budget for the danger plans (before the cluster starts).
GUIDANCE_BUDGET_S = 10.0


def writer_frame_lines(run: WriterExample) -> str:
    """The example's frames, what became of each, the callbacks and the metadata."""
    record = run.record
    names = {proxy: f"b{index + 1}" for proxy, index in record.bookie_of_proxy.items()}
    lines = [f"bookies: {', '.join(f'{p} = {n}' for p, n in sorted(names.items()))}"]
    for frame in record.frames:
        delivery = record.deliveries.get(frame.frame_id)
        fate = (
            "never delivered"
            if delivery is None or not delivery.delivered
            else f"delivered +{delivery.at - frame.at:.3f} s"
        )
        lines.append(f"{frame.at:.3f} [{names.get(frame.proxy, '?')}] {frame.describe()} ({fate})")
    for outcome in record.outcomes:
        at = "" if outcome.at is None else f"{outcome.at:.3f} "
        lines.append(f"{at}callback: {outcome.describe()}")
    segments = "; ".join(
        f"from e{first}: {','.join(f'b{b + 1}' for b in bookies)}"
        for first, bookies in record.segments
    )
    lines.append(f"ensembles: {segments}")
    if record.close_error:
        lines.append(f"close failed: {record.close_error}")
    else:
        lines.append(f"closed at e{record.closed_last_entry} ({record.closed_at:.3f})")
    stored = "; ".join(
        f"e{entry}: {','.join(f'b{b + 1}' for b in bookies) or 'nowhere'}"
        for entry, bookies in sorted(record.stored.items())
    )
    lines.append(f"read back: {stored}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class WriterSearchRunOptions:
    home: Path
    run_dir: Path
    shape: WriterShape
    seed: int = 0
    seconds: float | None = 300.0
    max_examples: int = 10_000
    model_guidance: bool = True
    say: Callable[[str], None] = field(default=lambda line: None, compare=False)

    def settings(self) -> dict[str, Any]:
        return {
            "client": CLIENT,
            "role": ROLE,
            "shape": self.shape.key(),
            "seed": self.seed,
            "seconds": self.seconds,
            "max_examples": self.max_examples,
            "model_guidance": self.model_guidance,
        }


@dataclass
class WriterSearchRunResult:
    run_dir: Path
    version: str
    system: SystemUnderTest
    outcome: Outcome
    stats: dict[str, Any]
    finding_plan: WriterRunPlan | None = None
    found_plan: WriterRunPlan | None = None

    @property
    def verdict(self) -> str:
        return self.outcome.verdict

    def summary(self) -> dict[str, Any]:
        """What a matrix row keeps of the run (the recovering role's keys, and the coverage)."""
        plan = None if self.finding_plan is None else self.finding_plan.to_json()
        return {
            **run_summary(self.run_dir, self.version, self.system, self.outcome, self.stats, plan),
            "coverage": self.stats.get("coverage"),
        }


def writer_search_run(options: WriterSearchRunOptions) -> WriterSearchRunResult:
    """One writer search on a fresh cluster, written to ``options.run_dir``; a cluster,
    proxy, JVM or ZooKeeper failure is an undecided result, never an exception."""
    home, run_dir, say, shape = options.home, options.run_dir, options.say, options.shape
    version = str(distribution_version(home))
    system = java_client_system(home, version)
    writer = RunWriter(
        run_dir,
        name="run-java",
        cfg=writer_config(shape, MAX_ENTRIES),
        target={"target": "local", "bookkeeper": version, "client": CLIENT, "role": ROLE},
        system=system,
        extra={"search": options.settings()},
    )
    started = time.monotonic()
    with writer:
        writer.start()
        guided: list[WriterRunPlan] = []
        if options.model_guidance:
            guided = writer_guided_plans(shape, budget_s=GUIDANCE_BUDGET_S)
            say(
                f"Model explorer: {len(guided)} writer plans read off the model's most "
                "dangerous interleavings (ensemble changes with entries in flight)"
            )
        with (run_dir / EXAMPLES_FILE).open("w", encoding="utf-8") as examples_log:
            sink = _WriterExampleSink(writer, examples_log, started, say)
            try:
                session_options = WriterSessionOptions(home, run_dir, shape)
                with WriterSession(session_options) as session:
                    result = writer_search(
                        session,
                        max_examples=options.max_examples,
                        seconds=options.seconds,
                        seed=options.seed,
                        guided=guided,
                        on_example=sink,
                    )
                    described = {"shape": shape.describe(), **session.routes()}
            except INFRASTRUCTURE_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                outcome = Outcome("undecided", [], [], error=error)
                writer.finish(outcome, story=None)
                return WriterSearchRunResult(run_dir, version, system, outcome, {"error": error})
        return _finish(writer, result, described, guided, started, version, system)


class _WriterExampleSink:
    def __init__(
        self, writer: RunWriter, log: IO[str], started: float, say: Callable[[str], None]
    ) -> None:
        self.writer, self.log, self.started, self.say = writer, log, started, say

    def __call__(self, number: int, run: WriterExample) -> None:
        writer = self.writer
        judgement = run.judgement
        if judgement is not None:
            for step in judgement.outcome.steps:
                writer.step(number, None, step)
        writer.example_done(number)
        entry = {
            "example": number,
            "verdict": run.verdict,
            "seconds": round(run.seconds, 3),
            "at": round(time.monotonic() - self.started, 3),
            "plan": run.plan.to_json(),
            "unapplied": run.unapplied,
            "ensemble_changes": judgement.ensemble_changes if judgement else None,
            "callbacks": [o.describe() for o in run.record.outcomes],
            "close_error": run.record.close_error,
            "violations": judgement.outcome.violations if judgement else [],
            "divergences": judgement.outcome.divergences if judgement else [],
        }
        self.log.write(json.dumps(entry) + "\n")
        self.log.flush()
        if run.verdict != Verdict.CLEAN.value:
            frames_dir = writer.path / "frames"
            frames_dir.mkdir(exist_ok=True)
            (frames_dir / f"example-{number}.txt").write_text(writer_frame_lines(run))
            (frames_dir / f"example-{number}.json").write_text(
                json.dumps(writer_record_to_json(run.record)) + "\n"
            )
        changes = judgement.ensemble_changes if judgement else "?"
        self.say(
            f"  example {number}: {run.verdict} ({run.plan.origin}; {changes} ensemble "
            f"changes; {run.seconds:.1f} s)"
        )


def _finish(
    writer: RunWriter,
    result: WriterSearchResult,
    described: dict[str, str],
    guided: list[WriterRunPlan],
    started: float,
    version: str,
    system: SystemUnderTest,
) -> WriterSearchRunResult:
    run_dir = writer.path
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
        "coverage": result.coverage.as_dict(),
    }
    finding = result.finding
    if finding is None:
        error = None
        if result.verdict == Verdict.UNDECIDED.value:
            error = "; ".join(result.errors) or "no example ran within the budget"
        outcome = Outcome(result.verdict, [], [], error=error)
        writer.finish(outcome, target=described, extra={"java_search": stats}, story=None)
        return WriterSearchRunResult(run_dir, version, system, outcome, stats)
    shrunk = finding.shrunk
    judgement = shrunk.judgement
    assert judgement is not None
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
    (run_dir / "frames.txt").write_text(writer_frame_lines(shrunk))
    (run_dir / RECORD_FILE).write_text(json.dumps(writer_record_to_json(shrunk.record)) + "\n")
    writer.finish(
        judgement.outcome,
        cfg=judgement.cfg,
        target=described,
        extra={"java_search": stats, "finding_plan": shrunk.plan.to_json()},
        story=FINDING,
    )
    return WriterSearchRunResult(
        run_dir,
        version,
        system,
        judgement.outcome,
        stats,
        finding_plan=shrunk.plan,
        found_plan=finding.found.plan,
    )


__all__ = [
    "ROLE",
    "WriterSearchRunOptions",
    "WriterSearchRunResult",
    "writer_frame_lines",
    "writer_search_run",
]
