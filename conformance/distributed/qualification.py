"""A qualification run: the plan's shards on a Spark master or in process, the diff, the
Parquet results, ``aggregates.json``, ``results.json``, ``report.html`` and ``report.json`` in
the run directory.

Resumable: the run directory keeps ``plan.json``; running again with the same directory skips
every shard that already has its ``shards/`` row (the plan must be the same).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from conformance.distributed.diff import Aggregates, aggregate
from conformance.distributed.plan import Plan
from conformance.distributed.report import (
    report_data,
    shard_systems,
    storage_cells,
    write_report,
)
from conformance.distributed.schema import RowStatus, ShardRow
from conformance.distributed.shard import ExecutionOptions, execute_shard
from conformance.distributed.store import (
    PLAN_FILE,
    finished_shards,
    read_rows,
    read_shard_rows,
)
from conformance.errors import ConformanceError
from conformance.rundir import system_record, versions
from conformance.verdict import Verdict, worst

IN_PROCESS = "none"
ProgressCallback = Callable[[ShardRow, int, int], None]  # (shard row, done, total)


class PlanMismatch(ConformanceError, ValueError):
    """Resuming a run directory with a different plan."""


@dataclass
class QualificationResult:
    run_dir: Path
    plan: Plan
    master: str
    verdict: Verdict
    aggregates: Aggregates
    shards: list[ShardRow]
    ran: int  # shards run now (the others were resumed from Parquet)
    elapsed: float  # running the shards, s
    timings: dict[str, float]  # startup (Spark's), shards, diff: s

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def errors(self) -> list[ShardRow]:
        return [row for row in self.shards if row["status"] is RowStatus.ERROR]

    @property
    def shards_per_minute(self) -> float:
        return self.ran / self.elapsed * 60 if self.elapsed > 0 else 0.0

    @cached_property
    def ledgers(self) -> dict[str, Any] | None:
        """:func:`ledger_summary` of the shards (parsed once: the summary and the console
        both read it)."""
        return ledger_summary(self.shards)


def ledger_summary(shards: list[ShardRow]) -> dict[str, Any] | None:
    """What became of the ledgers the shards created on a cluster that outlives them (the
    external target), summed over the shards that say (``results.json``'s ``ledgers``); None
    when no shard ran on such a cluster. A shard that could not delete its ledgers is named
    with its error; ``bkconform cluster clean`` deletes what it left."""
    records = [
        (row["shard"], record)
        for row in shards
        if (text := row.get("ledger_records")) is not None
        for record in json.loads(text)
    ]
    if not records:
        return None
    kept: dict[str, list[int]] = {}
    for _, record in records:
        if record.get("kept"):
            kept.setdefault(record.get("kept_because") or "unknown", []).extend(record["kept"])
    return {
        "shards": len({shard for shard, _ in records}),
        "attempts": len(records),
        "created": sum(int(record.get("created", 0)) for _, record in records),
        "deleted": sum(int(record.get("deleted", 0)) for _, record in records),
        "kept": {why: sorted(ids) for why, ids in sorted(kept.items())},
        "finding_ledgers": sorted(i for _, r in records for i in r.get("finding_ledgers", [])),
        "not_deleted": {
            ledger: reason
            for _, r in records
            for ledger, reason in r.get("not_deleted", {}).items()
        },
        "errors": {str(shard): r["error"] for shard, r in records if r.get("error")},
    }


def _read_plan(plan_file: Path) -> Plan | None:
    """The plan in ``plan_file``, as :meth:`Plan.from_json` reads it (a plan written before a
    field existed gets that field's old meaning); None when it is not a plan."""
    try:
        return Plan.from_json(plan_file.read_text())
    except (ValueError, KeyError, TypeError):  # JSONDecodeError and PlanError are ValueErrors
        return None


def prepare_run_dir(run_dir: Path, plan: Plan) -> set[int]:
    """Write the plan, or check it against the one already there; the shards already done."""
    run_dir.mkdir(parents=True, exist_ok=True)
    plan_file = run_dir / PLAN_FILE
    if plan_file.exists():
        existing = _read_plan(plan_file)
        if existing is None or existing.to_json() != plan.to_json():
            raise PlanMismatch(
                f"{run_dir} holds a different plan, or one that cannot be read ({plan_file}); "
                "resume it with the same options, or give a new run directory"
            )
    else:
        plan_file.write_text(plan.to_json())
    return finished_shards(run_dir)


class _Watcher:
    """Reports shards as their rows appear in the run directory (Spark runs them elsewhere)."""

    def __init__(
        self, run_dir: Path, known: set[int], total: int, progress: ProgressCallback
    ) -> None:
        self.run_dir = run_dir
        self.known = set(known)
        self.total = total
        self.progress = progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="qualify-progress", daemon=True)

    def __enter__(self) -> _Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.poll()

    def _loop(self) -> None:
        while not self._stop.wait(1.0):
            self.poll()

    def poll(self) -> None:
        try:
            done = finished_shards(self.run_dir)
        except OSError:
            return
        new = sorted(done - self.known)
        if not new:
            return
        rows = {r["shard"]: r for r in read_shard_rows(self.run_dir)}
        for shard in new:
            self.known.add(shard)
            if shard in rows:
                self.progress(rows[shard], len(self.known), self.total)


def run_qualification(
    plan: Plan,
    run_dir: Path,
    *,
    master: str,
    options: ExecutionOptions,
    progress: ProgressCallback | None = None,
) -> QualificationResult:
    """Run what is left of ``plan`` in ``run_dir`` on ``master`` (``none``: in this process)."""
    if Path(options.run_dir) != run_dir:
        raise ValueError("the execution options must name the same run directory")
    done = prepare_run_dir(run_dir, plan)
    todo = [shard for shard in plan.shards if shard.shard not in done]
    report_progress = progress or (lambda row, count, total: None)
    timings: dict[str, float] = {"startup": 0.0}
    started = time.monotonic()
    if master == IN_PROCESS:
        count = len(done)
        for shard in todo:
            row = execute_shard(shard, options)
            count += 1
            report_progress(row, count, len(plan.shards))
        timings["shards"] = time.monotonic() - started
        aggregates = aggregate(
            read_rows(run_dir, "steps"), read_shard_rows(run_dir), read_rows(run_dir, "findings")
        )
    else:
        from conformance.distributed.spark_job import aggregate_spark, run_shards, spark_session

        with spark_session(master) as spark:
            timings["startup"] = time.monotonic() - started
            with _Watcher(run_dir, done, len(plan.shards), report_progress):
                run_shards(spark, todo, options)
            timings["shards"] = time.monotonic() - started - timings["startup"]
            aggregates = aggregate_spark(spark, run_dir)
    timings["diff"] = time.monotonic() - started - timings["startup"] - timings["shards"]
    shards = read_shard_rows(run_dir)
    verdict = overall_verdict(aggregates)
    result = QualificationResult(
        run_dir, plan, master, verdict, aggregates, shards, len(todo), timings["shards"], timings
    )
    _write_summary(result, time.monotonic() - started)
    write_report(
        result.run_dir,
        report_data(
            plan=plan,
            master=master,
            verdict=verdict,
            aggregates=aggregates,
            shards=shards,
            elapsed=timings["shards"],
        ),
    )
    return result


def overall_verdict(aggregates: Aggregates) -> Verdict:
    """The configurations' verdicts together, by the one precedence rule."""
    return worst(row["verdict"] for row in aggregates["by_configuration"])


def _write_summary(result: QualificationResult, total_elapsed: float) -> None:
    (result.run_dir / "aggregates.json").write_text(
        json.dumps(_slim(result.aggregates), indent=2, sort_keys=True) + "\n"
    )
    summary = {
        "name": "qualify",
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "master": result.master,
        "plan": result.plan.as_dict(),
        "shards_run_now": result.ran,
        "shards_resumed": len(result.shards) - result.ran,
        "shard_errors": [row["shard"] for row in result.errors],
        "findings": len(result.aggregates["findings"]),
        "elapsed_seconds": round(result.elapsed, 3),
        "elapsed_total_seconds": round(total_elapsed, 3),
        "timings_seconds": {k: round(v, 3) for k, v in result.timings.items()},
        "shards_per_minute": round(result.shards_per_minute, 2),
        "configurations": {
            row["configuration"]: row["verdict"] for row in result.aggregates["by_configuration"]
        },
        "system_under_test": [system_record(s) for s in shard_systems(result.shards)],
        "versions": versions(),
    }
    if result.ledgers is not None:
        summary["ledgers"] = result.ledgers
    cells = storage_cells(
        result.shards,
        storages=result.plan.ledger_storages,
        configurations=result.plan.configurations,
        not_applicable=result.plan.not_applicable(),
    )
    if cells:
        # storage -> configuration -> its verdict, or why it has no shard there.
        by_storage: dict[str, dict[str, str]] = {}
        for cell in cells:
            by_storage.setdefault(cell.ledger_storage, {})[cell.configuration] = (
                str(cell.verdict) if cell.verdict is not None else str(cell.not_applicable)
            )
        summary["ledger_storages"] = by_storage
    (result.run_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n")


def _slim(aggregates: Aggregates) -> Aggregates:
    """The aggregates without the findings' large text fields (they are in findings/)."""
    heavy = ("sequence_svg", "sequence_text", "trace_text")
    findings = [{k: v for k, v in f.items() if k not in heavy} for f in aggregates["findings"]]
    return {**aggregates, "findings": findings}
