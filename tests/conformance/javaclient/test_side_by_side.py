"""Searches side by side: processes of their own, the first finding halting the others, the
verdicts together. The jobs here run a stand-in search (no cluster) that writes a run
directory's ``results.json`` as the real one does; the real one is the cluster test."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.javaclient.run import SearchRunOptions
from conformance.javaclient.side_by_side import (
    SUMMARY_FILE,
    JobResult,
    SideBySideResult,
    run_side_by_side,
)
from conformance.javaclient.writer_plans import WriterShape
from conformance.javaclient.writer_role import WriterRole
from conformance.rundir import FINISHED
from conformance.verdict import Verdict

#: The seed whose stand-in search finds something at once.
FINDER = 11
#: How long a stand-in search that finds nothing waits to be halted, at most.
PATIENCE_S = 60.0


def options(seed: int, run_dir: Path) -> SearchRunOptions:
    return SearchRunOptions(Path("/nowhere"), run_dir, WriterRole(WriterShape(2, 1, 1)), seed=seed)


def stand_in(options: SearchRunOptions) -> Any:
    """Finds at once with seed FINDER; else an example every 50 ms until halted. A seed of 99
    fails outright (a job that ends without results)."""
    assert options.halt is not None and options.on_finding is not None
    if options.seed == 99:
        raise RuntimeError("this job breaks")
    examples, stopped, verdict = 0, "examples", Verdict.CLEAN
    if options.seed == FINDER:
        examples, stopped, verdict = 1, "finding", Verdict.VIOLATION
        options.on_finding()
    else:
        deadline = time.monotonic() + PATIENCE_S
        while not options.halt() and time.monotonic() < deadline:
            examples += 1
            time.sleep(0.05)
        stopped = "halted" if options.halt() else "budget"
    results = {
        "state": FINISHED,
        "verdict": str(verdict),
        "java_search": {"examples": examples, "stopped": stopped},
    }
    (options.run_dir / "results.json").write_text(json.dumps(results))
    return SimpleNamespace(verdict=verdict)


def test_the_first_finding_halts_the_other_searches(tmp_path: Path) -> None:
    result = run_side_by_side(options, [10, FINDER, 12], tmp_path, budget_s=120, search=stand_in)
    assert result.verdict is Verdict.VIOLATION
    assert result.finder is not None and result.finder.seed == FINDER
    assert result.finder.run_dir == tmp_path / "job-2" and result.finder.exit_code == 1
    others = [job for job in result.jobs if job.seed != FINDER]
    assert [job.stats["stopped"] for job in others] == ["halted", "halted"]
    assert all(job.verdict is Verdict.CLEAN and job.exit_code == 0 for job in others)
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["verdict"] == "violation" and len(summary["jobs"]) == 3
    assert summary["examples"] == result.examples
    assert (tmp_path / "job-1.log").is_file()


def test_a_job_without_results_makes_the_run_undecided_unless_another_found(
    tmp_path: Path,
) -> None:
    broken = run_side_by_side(options, [99, FINDER], tmp_path / "a", budget_s=120, search=stand_in)
    assert broken.verdict is Verdict.VIOLATION  # the finding stands
    assert broken.jobs[0].results == {} and broken.jobs[0].exit_code != 0
    assert "without results" in broken.jobs[0].describe()
    assert "RuntimeError: this job breaks" in (tmp_path / "a" / "job-1.log").read_text()
    assert broken.jobs[0].exit_code == Verdict.UNDECIDED.exit_code


def test_the_verdicts_together_are_the_worst() -> None:
    def job(verdict: str | None) -> JobResult:
        results = {} if verdict is None else {"verdict": verdict}
        return JobResult(1, 1, Path("/j"), 0, results)

    def together(*verdicts: str | None) -> Verdict:
        return SideBySideResult(Path("/r"), tuple(job(v) for v in verdicts), 1.0).verdict

    assert together("clean", "clean") is Verdict.CLEAN
    assert together("clean", None) is Verdict.UNDECIDED
    assert together("clean", "undecided") is Verdict.UNDECIDED
    assert together("undecided", "divergence") is Verdict.DIVERGENCE
    assert together("divergence", "violation", "clean") is Verdict.VIOLATION
    assert SideBySideResult(Path("/r"), (job("clean"), job("clean")), 1.0).finder is None


def test_side_by_side_means_two_searches_or_more(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="two searches or more"):
        run_side_by_side(options, [1], tmp_path, budget_s=1, search=stand_in)
