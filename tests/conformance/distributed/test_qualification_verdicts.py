"""What decides a qualification's verdict, exactly: the aggregates, the per-configuration and
overall verdicts, the exit code, ``results.json`` and ``aggregates.json`` as a user reads them,
the run directory's plan, and the progress of shards run elsewhere (Spark, faked here).

No shard really runs: ``execute_shard`` and the Spark job are replaced by fakes that write
hand-made rows (``rows.py``), and the clock is a script, so every timing is exact.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance.distributed import qualification, spark_job
from conformance.distributed.diff import aggregate, unique_findings
from conformance.distributed.plan import Plan, Shard, make_plan
from conformance.distributed.qualification import (
    PlanMismatch,
    QualificationResult,
    _slim,
    _Watcher,
    overall_verdict,
    prepare_run_dir,
    run_qualification,
)
from conformance.distributed.report import shard_systems
from conformance.distributed.schema import RowStatus
from conformance.distributed.shard import ExecutionOptions
from conformance.distributed.store import PLAN_FILE, read_dataset, write_part
from conformance.rundir import system_record, versions
from conformance.search.runner import SearchSettings
from conformance.verdict import Verdict
from tests.conformance.distributed import rows

QUICK = SearchSettings(max_examples=3, max_steps=15, time_budget=None, explore=False)
CONFIGS = ("fenced-recovery", "no-limbo")  # shard n: CONFIGS[n % 2], as rows.py has it
HEAVY = ("sequence_svg", "sequence_text", "trace_text")


# --- the aggregates -------------------------------------------------------------------------


def counts(
    steps: int, compared: int, divergences: int, violations: int, errors: int
) -> dict[str, int]:
    return {
        "steps": steps,
        "compared": compared,
        "divergences": divergences,
        "violations": violations,
        "errors": errors,
    }


def test_aggregates_count_every_step_shard_and_response_exactly() -> None:
    steps = [
        # shard 0 (fenced-recovery, local): an agreeing and a divergent add, same answer twice
        rows.step(0, 1, "A", predicted=rows.ADD_OK, observed=rows.ADD_OK, response="EOK"),
        rows.step(0, 2, "A", predicted=rows.ADD_FENCED, observed=rows.ADD_OK, response="EOK"),
        # a prediction without an observation: not compared
        rows.step(0, 3, "B", predicted=rows.ADD_OK),
        # shard 1 (no-limbo, local): an observation without a prediction, and an error
        rows.step(1, 1, "B", observed=rows.ADD_OK, error="connection refused"),
        rows.step(1, 2, "C", violations=["NoDivergenceBetweenClientAndMetaData"]),
    ]
    shards = [
        rows.shard_row(0, Verdict.DIVERGENCE, findings=2),
        rows.shard_row(1, Verdict.UNDECIDED, status=RowStatus.ERROR),
        rows.shard_row(2, Verdict.DIVERGENCE, findings=1),  # external: shards there, no steps
        rows.shard_row(3, Verdict.CLEAN),
    ]
    result = aggregate(steps, shards, [])
    assert result["by_action"] == [
        {"action": "A", **counts(2, 2, 1, 0, 0)},
        {"action": "B", **counts(2, 0, 0, 0, 1)},
        {"action": "C", **counts(1, 0, 0, 1, 0)},
    ]
    assert result["by_target"] == [
        {"target": "external", **counts(0, 0, 0, 0, 0), "shards": 2},
        {"target": "local", **counts(5, 2, 1, 1, 1), "shards": 2},
    ]
    assert result["responses"] == [{"action": "A", "response": "EOK", "count": 2}]
    assert result["by_configuration"] == [
        {
            "configuration": "fenced-recovery",
            "config_summary": "summary 0",
            "shards": 2,
            "errors": 0,
            "findings": 3,
            "verdict": "divergence",
            "verdicts": {"divergence": 2},
            "steps": 3,
            "divergences": 1,
        },
        {
            "configuration": "no-limbo",
            "config_summary": "summary 1",
            "shards": 2,
            "errors": 1,
            "findings": 0,
            "verdict": "undecided",  # a shard in error: the clean one does not make it clean
            "verdicts": {"clean": 1, "undecided": 1},
            "steps": 2,
            "divergences": 0,
        },
    ]
    assert result["findings"] == []


def test_targets_with_only_shards_or_only_steps_are_both_listed() -> None:
    steps = [rows.step(0, 1, "A", predicted=rows.FENCE_OK, observed=rows.FENCE_LAC_1)]
    result = aggregate(steps, [rows.shard_row(3, Verdict.CLEAN)], [])
    assert result["by_target"] == [
        {"target": "external", **counts(0, 0, 0, 0, 0), "shards": 1},
        {"target": "local", **counts(1, 1, 1, 0, 0), "shards": 0},
    ]
    assert result["by_configuration"][0]["steps"] == 0  # no-limbo ran no step


def test_unique_findings_keep_the_lowest_shards_details_and_list_every_occurrence() -> None:
    found = [
        rows.finding_row(2, "k-late"),
        rows.finding_row(3, "k-early"),
        rows.finding_row(1, "k-early"),
        rows.finding_row(4, "k-late"),
        rows.finding_row(5, "k-late"),
    ]
    assert unique_findings(found) == [
        {
            **rows.finding_row(1, "k-early"),
            "occurrences": 2,
            "shards": [1, 3],
            "configurations": ["no-limbo"],
        },
        {
            **rows.finding_row(2, "k-late"),
            "occurrences": 3,
            "shards": [2, 4, 5],
            "configurations": ["fenced-recovery", "no-limbo"],
        },
    ]


# --- the overall verdict and exit code --------------------------------------------------------


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        (["clean", "violation", "divergence"], "violation"),
        (["undecided", "divergence", "clean"], "divergence"),
        (["clean", "undecided"], "undecided"),
        (["clean", "clean"], "clean"),
        ([], "undecided"),  # no configuration at all decided nothing
        (["something-else"], "undecided"),
    ],
)
def test_the_overall_verdict_is_the_worst_configurations(
    verdicts: list[str], expected: str
) -> None:
    aggregates = {"by_configuration": [{"verdict": v} for v in verdicts]}
    assert overall_verdict(aggregates) == expected


# --- the run directory -----------------------------------------------------------------------


def test_preparing_a_nested_run_directory_writes_the_plan_and_finds_no_shard_done(
    tmp_path: Path,
) -> None:
    plan = make_plan(master_seed=2, shards=2, configurations=CONFIGS, budget=QUICK)
    run_dir = tmp_path / "runs" / "first"
    assert prepare_run_dir(run_dir, plan) == set()
    assert (run_dir / PLAN_FILE).read_text() == plan.to_json()
    write_part(run_dir, "shards", 1, [rows.shard_row(1, Verdict.CLEAN)])
    assert prepare_run_dir(run_dir, plan) == {1}


def test_resuming_with_another_plan_names_the_directory_and_what_to_do(tmp_path: Path) -> None:
    prepare_run_dir(tmp_path, make_plan(master_seed=2, shards=1, budget=QUICK))
    with pytest.raises(PlanMismatch) as refused:
        prepare_run_dir(tmp_path, make_plan(master_seed=3, shards=1, budget=QUICK))
    assert str(refused.value) == (
        f"{tmp_path} holds a different plan, or one that cannot be read ({tmp_path / PLAN_FILE}); "
        "resume it with the same options, or give a new run directory"
    )


def test_a_plan_file_that_is_not_a_plan_is_refused_as_one(tmp_path: Path) -> None:
    (tmp_path / PLAN_FILE).write_text("{not json")
    with pytest.raises(PlanMismatch, match="one that cannot be read"):
        prepare_run_dir(tmp_path, make_plan(master_seed=2, shards=1, budget=QUICK))
    (tmp_path / PLAN_FILE).write_text('{"master_seed": 2}')
    with pytest.raises(PlanMismatch, match="one that cannot be read"):
        prepare_run_dir(tmp_path, make_plan(master_seed=2, shards=1, budget=QUICK))


def test_a_run_planned_before_the_crash_share_resumes_as_it_was_planned(tmp_path: Path) -> None:
    """A plan file without ``crash_time_share`` gave crash configurations the budget's time:
    the same options with a share of 1 resume it, the new default does not."""
    planned = make_plan(master_seed=2, shards=3, target="local", budget=QUICK, crash_time_share=1)
    older = json.loads(planned.to_json())
    del older["crash_time_share"]
    (tmp_path / PLAN_FILE).write_text(json.dumps(older))
    assert prepare_run_dir(tmp_path, planned) == set()
    assert json.loads((tmp_path / PLAN_FILE).read_text()) == older  # left as it was
    with pytest.raises(PlanMismatch):
        prepare_run_dir(tmp_path, make_plan(master_seed=2, shards=3, target="local", budget=QUICK))


def test_options_naming_another_run_directory_are_refused(tmp_path: Path) -> None:
    plan = make_plan(master_seed=2, shards=1, budget=QUICK)
    options = ExecutionOptions(run_dir=str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError) as refused:
        run_qualification(plan, tmp_path, master="none", options=options)
    assert str(refused.value) == "the execution options must name the same run directory"
    assert not (tmp_path / PLAN_FILE).exists()


# --- a whole qualification, with fake shards and a scripted clock -----------------------------

# shard -> (verdict, status, findings): fenced-recovery has a clean shard and one in error
# (undecided), no-limbo a violation; the qualification's verdict is the worst: violation.
OUTCOMES = {
    0: (Verdict.CLEAN, RowStatus.DONE, 0),
    1: (Verdict.VIOLATION, RowStatus.DONE, 1),
    2: (Verdict.UNDECIDED, RowStatus.ERROR, 0),
}


def write_shard(run_dir: Path, shard: int) -> dict[str, Any]:
    """What a shard leaves in the run directory: its steps, findings and row."""
    verdict, status, findings = OUTCOMES[shard]
    predicted = rows.META_LOST_CAS if verdict is Verdict.VIOLATION else rows.META_OK
    step = rows.step(
        shard, 1, "ClientCreatesLedger", predicted=predicted, observed=rows.META_OK, response="OK"
    )
    write_part(run_dir, "steps", shard, [step])
    write_part(
        run_dir, "findings", shard, [rows.finding_row(shard, f"k{shard}")] if findings else []
    )
    row = rows.shard_row(shard, verdict, status=status, findings=findings)
    write_part(run_dir, "shards", shard, [row])
    return row


class ScriptedClock:
    """``time`` for the qualification module: ``monotonic`` answers from a script."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def monotonic(self) -> float:
        return self.readings.pop(0)


def expected_aggregates_file(aggregates: dict[str, Any]) -> str:
    light = [{k: v for k, v in f.items() if k not in HEAVY} for f in aggregates["findings"]]
    return json.dumps({**aggregates, "findings": light}, indent=2, sort_keys=True) + "\n"


def expected_summary(
    result: QualificationResult, *, master: str, timings: dict[str, float], total: float
) -> dict[str, Any]:
    return {
        "name": "qualify",
        "verdict": "violation",
        "exit_code": 1,
        "master": master,
        "plan": result.plan.as_dict(),
        "shards_run_now": 2,
        "shards_resumed": 1,
        "shard_errors": [2],
        "findings": 1,
        "elapsed_seconds": timings["shards"],
        "elapsed_total_seconds": total,
        "timings_seconds": timings,
        "shards_per_minute": 16.52,  # 2 shards in 7.2654321 s
        "configurations": {"fenced-recovery": "undecided", "no-limbo": "violation"},
        "system_under_test": [system_record(s) for s in shard_systems(result.shards)],
        "versions": versions(),
    }


def resumable_run(tmp_path: Path) -> tuple[Plan, ExecutionOptions, dict[str, Any]]:
    """A run directory where shard 0 is already done: shards 1 and 2 are left."""
    plan = make_plan(master_seed=2, shards=3, configurations=CONFIGS, budget=QUICK)
    prepare_run_dir(tmp_path, plan)
    row0 = write_shard(tmp_path, 0)
    return plan, ExecutionOptions(run_dir=str(tmp_path)), row0


def test_an_in_process_run_decides_the_verdict_and_writes_the_exact_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, options, _ = resumable_run(tmp_path)
    ran: list[int] = []

    def fake_execute(shard: Shard, given: ExecutionOptions) -> dict[str, Any]:
        assert given is options
        ran.append(shard.shard)
        return write_shard(tmp_path, shard.shard)

    monkeypatch.setattr(qualification, "execute_shard", fake_execute)
    # started, shards done, diff done, summary written
    monkeypatch.setattr(qualification, "time", ScriptedClock(500.0, 507.2654321, 507.5, 510.123456))
    seen: list[tuple[dict[str, Any], int, int]] = []
    result = run_qualification(
        plan,
        tmp_path,
        master="none",
        options=options,
        progress=lambda row, done, total: seen.append((row, done, total)),
    )
    assert ran == [1, 2]
    assert [(row["shard"], done, total) for row, done, total in seen] == [(1, 2, 3), (2, 3, 3)]
    assert seen[0][0] == rows.shard_row(1, Verdict.VIOLATION, findings=1)
    assert result.verdict == "violation" and result.exit_code == 1
    assert result.master == "none" and result.ran == 2
    assert [r["shard"] for r in result.shards] == [0, 1, 2]
    assert [r["shard"] for r in result.errors] == [2]
    timings = {"startup": 0.0, "shards": 7.265, "diff": 0.235}
    assert {k: round(v, 3) for k, v in result.timings.items()} == timings
    assert result.elapsed == pytest.approx(7.2654321)
    expected = expected_summary(result, master="none", timings=timings, total=10.123)
    assert (tmp_path / "results.json").read_text() == json.dumps(expected, indent=2) + "\n"
    assert (tmp_path / "aggregates.json").read_text() == expected_aggregates_file(result.aggregates)
    assert result.aggregates == aggregate(
        read_dataset(tmp_path, "steps").to_pylist(),
        read_dataset(tmp_path, "shards").to_pylist(),
        read_dataset(tmp_path, "findings").to_pylist(),
    )
    report = (tmp_path / "report.html").read_text()
    assert "<title>bkconform qualification: violation</title>" in report
    assert "master <b>none</b>" in report


def test_a_run_without_a_progress_callback_still_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, options, _ = resumable_run(tmp_path)
    monkeypatch.setattr(
        qualification, "execute_shard", lambda shard, given: write_shard(tmp_path, shard.shard)
    )
    result = run_qualification(plan, tmp_path, master="none", options=options)
    assert (result.verdict, result.exit_code, result.ran) == ("violation", 1, 2)


class FakeSpark:
    """The Spark job's three entry points, recording how the qualification calls them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.session = object()
        self.calls: list[tuple[Any, ...]] = []

    @contextmanager
    def spark_session(self, master: str) -> Iterator[object]:
        self.calls.append(("session", master))
        yield self.session
        self.calls.append(("stopped",))

    def run_shards(
        self, spark: object, shards: list[Shard], options: ExecutionOptions
    ) -> list[dict[str, Any]]:
        assert spark is self.session
        self.calls.append(("run", [s.shard for s in shards], options))
        return [write_shard(self.run_dir, s.shard) for s in shards]

    def aggregate_spark(self, spark: object, run_dir: Path) -> dict[str, Any]:
        assert spark is self.session
        self.calls.append(("aggregate", run_dir))
        return aggregate(
            read_dataset(run_dir, "steps").to_pylist(),
            read_dataset(run_dir, "shards").to_pylist(),
            read_dataset(run_dir, "findings").to_pylist(),
        )


def test_a_spark_run_reports_the_shards_as_they_appear_and_writes_the_exact_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, options, _ = resumable_run(tmp_path)
    fake = FakeSpark(tmp_path)
    for name in ("spark_session", "run_shards", "aggregate_spark"):
        monkeypatch.setattr(spark_job, name, getattr(fake, name))
    # started, session up, shards done, diff done, summary written
    clock = ScriptedClock(1000.0, 1001.5, 1008.7654321, 1009.0, 1010.123456)
    monkeypatch.setattr(qualification, "time", clock)
    seen: list[tuple[dict[str, Any], int, int]] = []
    result = run_qualification(
        plan,
        tmp_path,
        master="local[2]",
        options=options,
        progress=lambda row, done, total: seen.append((row, done, total)),
    )
    assert fake.calls == [
        ("session", "local[2]"),
        ("run", [1, 2], options),
        ("aggregate", tmp_path),
        ("stopped",),
    ]
    assert [(row["shard"], done, total) for row, done, total in seen] == [(1, 2, 3), (2, 3, 3)]
    assert seen[1][0] == rows.shard_row(2, Verdict.UNDECIDED, status=RowStatus.ERROR)
    assert result.verdict == "violation" and result.exit_code == 1
    assert result.master == "local[2]" and result.ran == 2
    timings = {"startup": 1.5, "shards": 7.265, "diff": 0.235}
    assert {k: round(v, 3) for k, v in result.timings.items()} == timings
    expected = expected_summary(result, master="local[2]", timings=timings, total=10.123)
    assert (tmp_path / "results.json").read_text() == json.dumps(expected, indent=2) + "\n"
    assert (tmp_path / "aggregates.json").read_text() == expected_aggregates_file(result.aggregates)
    report = (tmp_path / "report.html").read_text()
    assert "<title>bkconform qualification: violation</title>" in report
    assert "master <b>local[2]</b>" in report


def test_slim_drops_only_the_findings_large_text_fields() -> None:
    finding = {"shard": 0, "trace_key": "k", "blob": "b", **{k: "text" for k in HEAVY}}
    aggregates: dict[str, Any] = {"by_action": [{"action": "A"}], "findings": [finding]}
    assert _slim(aggregates) == {
        "by_action": [{"action": "A"}],
        "findings": [{"shard": 0, "trace_key": "k", "blob": "b"}],
    }
    assert aggregates["findings"][0] is finding and "trace_text" in finding  # not modified


# --- the progress watcher (Spark runs the shards elsewhere) -----------------------------------


def test_the_watcher_reports_each_new_shard_once_counting_those_known_before(
    tmp_path: Path,
) -> None:
    for shard in range(4):
        write_part(tmp_path, "shards", shard, [rows.shard_row(shard, Verdict.CLEAN)])
    seen: list[tuple[dict[str, Any], int, int]] = []
    known = {0, 2}
    watcher = _Watcher(tmp_path, known, 5, lambda row, done, total: seen.append((row, done, total)))
    watcher.poll()
    assert seen == [
        (rows.shard_row(1, Verdict.CLEAN), 3, 5),
        (rows.shard_row(3, Verdict.CLEAN), 4, 5),
    ]
    assert watcher.known == {0, 1, 2, 3} and known == {0, 2}
    watcher.poll()
    assert len(seen) == 2


def test_the_watcher_reports_nothing_while_no_shard_has_finished(tmp_path: Path) -> None:
    seen: list[int] = []
    watcher = _Watcher(tmp_path, set(), 2, lambda row, done, total: seen.append(done))
    watcher.poll()
    assert seen == []


class ScriptedStop:
    """The watcher's stop event: ``wait`` answers from a script and records its timeouts."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return self.answers.pop(0)


def test_the_watcher_polls_every_second_until_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher = _Watcher(tmp_path, set(), 1, lambda row, done, total: None)
    stop = ScriptedStop(False, False, True)
    polls: list[int] = []
    monkeypatch.setattr(watcher, "_stop", stop)
    monkeypatch.setattr(watcher, "poll", lambda: polls.append(1))
    watcher._loop()
    assert stop.timeouts == [1.0, 1.0, 1.0]
    assert len(polls) == 2


class RecordingEvent(threading.Event):
    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return super().wait(timeout)


def test_the_watcher_runs_a_daemon_thread_that_stops_on_exit_and_then_polls_once_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, int, int]] = []
    watcher = _Watcher(
        tmp_path, {0}, 2, lambda row, done, total: seen.append((row["shard"], done, total))
    )
    assert watcher._thread.name == "qualify-progress"
    assert watcher._thread.daemon is True
    stop = RecordingEvent()
    monkeypatch.setattr(watcher, "_stop", stop)
    write_part(tmp_path, "shards", 0, [rows.shard_row(0, Verdict.CLEAN)])
    write_part(tmp_path, "shards", 1, [rows.shard_row(1, Verdict.CLEAN)])
    with watcher:
        pass  # the thread waits a second before its first poll: only the last poll reports
    assert not watcher._thread.is_alive()
    # The thread waited a second at a time (once, unless this machine stalled) and stopped.
    assert stop.is_set() and stop.timeouts and set(stop.timeouts) == {1.0}
    assert seen == [(1, 2, 2)]


class JoinRecorder:
    def __init__(self) -> None:
        self.timeouts: list[float | None] = []

    def join(self, timeout: float | None = None) -> None:
        self.timeouts.append(timeout)


def test_the_watcher_waits_at_most_ten_seconds_for_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watcher = _Watcher(tmp_path, set(), 1, lambda row, done, total: None)
    thread = JoinRecorder()
    monkeypatch.setattr(watcher, "_thread", thread)
    watcher.__exit__(None, None, None)
    assert thread.timeouts == [10]
