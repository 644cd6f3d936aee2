"""Java-client searches side by side: one command, several searches at once, each with its own
cluster, proxies and Java client, the first finding stopping the others.

Why (``benchmarks/profiles/java-client-example-2026-11-30.md``, item 1): an example of the
real client is mostly waiting, for its add timeout, a held answer, a restart; the machine is
idle meanwhile. One search cannot run two examples at once: the Hypothesis loop is one stream
of examples, the client's coverage (JaCoCo) is the whole JVM's, and half the faults (a crash,
a pause, a session expiry, held metadata writes) touch every ledger of the cluster. Whole
searches side by side have none of those problems: each is a Python process of its own
(:class:`adapters.processes.ManagedProcess`: recorded, stopped on every exit path, reaped by
the next run if this one died) running :func:`~.run.search_run` with its own seed (the
command's, then the next ones) into a run directory of its own (``job-<n>`` in the command's).
When one finds something (an example stops its search, before it is shrunk) it creates the
file ``found`` in the command's directory, which the others look for before each of their
examples (:attr:`~conformance.live.search.Stopped.HALTED`); the finder shrinks and writes its
finding as a single search does. (A file, not a ``multiprocessing`` event: no semaphore, no
resource tracker process left behind.)

A job's own output (its progress and story) goes to ``job-<n>.log`` beside it. The jobs'
verdicts together are the worst (:func:`conformance.verdict.worst`): a finding if any job
found one, undecided if a job could not decide, clean only if every job checked examples and
passed. ``side_by_side.json`` in the command's directory lists the jobs.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from adapters.processes import ManagedProcess
from conformance.javaclient.run import SearchRunOptions, search_run
from conformance.rundir import read_results
from conformance.verdict import Verdict, worst

#: After the budget, how long a job may go on (its last example, shrinking a finding: at most
#: 30 runs of a minute or so, the cluster's stop) before it is stopped (SIGTERM: its exit hooks
#: stop its cluster). A job that does not stop then is killed.
OVERRUN_S = 1800.0
KILL_AFTER_S = 60.0
SUMMARY_FILE = "side_by_side.json"
#: Created by the first job that finds something; the others stop when they see it.
FOUND_FILE = "found"
#: How often the command looks whether a job has ended.
POLL_S = 0.2

#: Builds a job's search options from its seed and run directory, in the job's process (a
#: module-level function or a partial of one: it is pickled to the job).
OptionsBuilder = Callable[[int, Path], SearchRunOptions]
#: A job's search: :func:`~.run.search_run`, writing the job's ``results.json``.
Search = Callable[[SearchRunOptions], Any]


@dataclass(frozen=True)
class JobResult:
    """One search of the side-by-side run, as its run directory and exit code tell it."""

    number: int
    seed: int
    run_dir: Path
    exit_code: int | None
    results: dict[str, Any]

    @property
    def verdict(self) -> Verdict:
        verdict = self.results.get("verdict")
        return Verdict.named(verdict) if verdict else Verdict.UNDECIDED

    @property
    def stats(self) -> dict[str, Any]:
        stats = self.results.get("java_search")
        return stats if isinstance(stats, dict) else {}

    def describe(self) -> str:
        stats = self.stats
        examples = stats.get("examples", 0)
        said = f"job {self.number} (seed {self.seed}): {self.verdict}, {examples} examples"
        if stats.get("first_finding_example") is not None:
            said += (
                f", first finding at example {stats['first_finding_example']} after "
                f"{stats['seconds_to_first_finding']:.1f} s of search"
            )
        if stats.get("stopped"):
            said += f"; stopped: {stats['stopped']}"
        if self.exit_code is None:
            said += "; did not end in time (stopped)"
        elif not self.results:
            said += f"; exited {self.exit_code} without results (see its log)"
        return said

    def as_dict(self) -> dict[str, Any]:
        return {
            "job": self.number,
            "seed": self.seed,
            "run_dir": str(self.run_dir),
            "exit_code": self.exit_code,
            "verdict": str(self.verdict),
            "examples": self.stats.get("examples", 0),
            "stopped": self.stats.get("stopped"),
        }


@dataclass(frozen=True)
class SideBySideResult:
    run_dir: Path
    jobs: tuple[JobResult, ...]
    seconds: float

    @property
    def verdict(self) -> Verdict:
        """The worst of the jobs' (a job without results is undecided)."""
        return worst(job.verdict for job in self.jobs)

    @property
    def examples(self) -> int:
        return sum(int(job.stats.get("examples", 0)) for job in self.jobs)

    @property
    def finder(self) -> JobResult | None:
        """The job whose finding is the verdict (the first such, by job number)."""
        for job in self.jobs:
            if job.verdict.finding and job.verdict is self.verdict:
                return job
        return None


def run_side_by_side(
    build: OptionsBuilder,
    seeds: Sequence[int],
    run_dir: Path,
    *,
    budget_s: float | None,
    search: Search = search_run,
) -> SideBySideResult:
    """Run one search per seed at once (see the module docstring), each in ``run_dir /
    job-<n>``; wait for them (bounded: the budget, then :data:`OVERRUN_S`). ``search``: what
    a job runs (a module-level function: it is pickled to the job; a test gives its own)."""
    if len(seeds) < 2:
        raise ValueError("side by side means two searches or more")
    run_dir.mkdir(parents=True, exist_ok=True)
    found = run_dir / FOUND_FILE
    found.unlink(missing_ok=True)
    started = time.monotonic()
    processes: list[tuple[int, int, Path, ManagedProcess]] = []
    jobs = []
    try:
        for number, seed in enumerate(seeds, start=1):
            job_dir = run_dir / f"job-{number}"
            spec = run_dir / f"job-{number}.pickle"
            spec.write_bytes(pickle.dumps(_JobSpec(build, search, seed, job_dir, found)))
            process = ManagedProcess(
                f"search job {number}",
                [sys.executable, "-m", __name__, str(spec)],
                log_path=run_dir / f"job-{number}.log",
                env={**os.environ, "PYTHONPATH": _import_path()},
                cwd=Path.cwd(),
            )
            process.start()
            processes.append((number, seed, job_dir, process))
        deadline = None if budget_s is None else started + budget_s + OVERRUN_S
        for number, seed, job_dir, process in processes:
            while process.is_running() and (deadline is None or time.monotonic() < deadline):
                time.sleep(POLL_S)
            exit_code = process.returncode
            jobs.append(JobResult(number, seed, job_dir, exit_code, _results(job_dir)))
    finally:
        for _, _, _, process in processes:
            process.stop(KILL_AFTER_S)  # SIGTERM: its exit hooks stop its cluster
    result = SideBySideResult(run_dir, tuple(jobs), time.monotonic() - started)
    (run_dir / SUMMARY_FILE).write_text(
        json.dumps(
            {
                "verdict": str(result.verdict),
                "examples": result.examples,
                "seconds": round(result.seconds, 3),
                "jobs": [job.as_dict() for job in jobs],
            },
            indent=2,
        )
        + "\n"
    )
    return result


@dataclass(frozen=True)
class _JobSpec:
    build: OptionsBuilder
    search: Search
    seed: int
    job_dir: Path
    found: Path


def _import_path() -> str:
    """The job's ``PYTHONPATH``: this process's import path, so that the job imports the same
    modules (the project, and a test's stand-in search)."""
    return os.pathsep.join(entry or os.getcwd() for entry in sys.path)


def _results(job_dir: Path) -> dict[str, Any]:
    try:
        return read_results(job_dir)
    except (OSError, ValueError, KeyError):
        return {}


def _job(spec: _JobSpec) -> int:
    """A job's process: its search (output on standard output, the job's log); its verdict's
    exit code."""
    found = spec.found
    try:
        spec.job_dir.mkdir(parents=True, exist_ok=True)
        options = replace(
            spec.build(spec.seed, spec.job_dir), halt=found.exists, on_finding=found.touch
        )
        result = spec.search(options)
    except Exception:  # a bug, not a verdict: in the job's log, and undecided
        traceback.print_exc()
        return Verdict.UNDECIDED.exit_code
    return int(result.verdict.exit_code)


__all__ = [
    "FOUND_FILE",
    "KILL_AFTER_S",
    "OVERRUN_S",
    "SUMMARY_FILE",
    "JobResult",
    "OptionsBuilder",
    "Search",
    "SideBySideResult",
    "run_side_by_side",
]


if __name__ == "__main__":
    sys.exit(_job(pickle.loads(Path(sys.argv[1]).read_bytes())))
