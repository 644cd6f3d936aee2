"""What decides a shard's verdict, checked value by value on in-process targets: the rows
(steps, findings, the shard's own), the retry of failed and undecided attempts, the timeout
that keeps a finding unshrunk, the timeouts themselves, and the fault hook.

No cluster and no real waiting: an injected hang is ended at once by a stand-in for
``time.sleep`` that raises the shard timeout, as the SIGALRM would.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import conformance.distributed.shard as shard_module
from adapters.installations.system import BookieChoice
from conformance.distributed.plan import Shard
from conformance.distributed.schema import RowStatus
from conformance.distributed.shard import (
    TIMEOUT_FACTOR,
    TIMEOUT_SLACK,
    ExecutionOptions,
    LedgerRecorder,
    ShardFault,
    ShardFaultError,
    ShardTimeout,
    _Log,
    execute_shard,
    finding_row,
    parse_faults,
    step_row,
    trace_key,
)
from conformance.distributed.store import read_dataset
from conformance.engine import StepRecord
from conformance.observations import Observation
from conformance.operations import Crash, CreateLedger, FreshLedger, LedgerView, Operation
from conformance.rundir import system_header, versions
from conformance.search.program import ExampleRun
from conformance.search.runner import SearchProgress, SearchSettings, run_search
from conformance.search.verdict import Finding, SearchReport
from conformance.targets.base import Target, TargetError, system_under_test
from conformance.targets.spec import AgentAddress, TargetSpec
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import STATUS_OPEN
from model.bookkeeper.render import numbered_trace, sequence_diagram
from model.bookkeeper.svg import sequence_svg
from tests.conformance.lying_target import Lie, LyingTarget

CONFIGURATION = "fenced-recovery"
SEED = 5
UNKNOWN_TARGET = "unknown target 'bogus': one of model, local, docker, external"


def small_shard(time_budget: float | None = 10.0) -> Shard:
    """Four examples of up to 20 steps (the budget is only a bound: they take milliseconds)."""
    return Shard(0, CONFIGURATION, "model", SEED, 4, 20, time_budget, False)


class RecordingLiar(LyingTarget):
    """A lying target that numbers its ledgers (0 at open, then one per example), remembers
    the configuration it was opened with, and may refuse to describe itself once it lied."""

    def __init__(self, *lies: Lie, describe_fails_after_lie: bool = False) -> None:
        super().__init__(*lies)
        self.ledger_id = -1
        self.opened_with: list[ModelConfig] = []
        self.describe_fails_after_lie = describe_fails_after_lie

    def open(self, cfg: ModelConfig) -> None:
        super().open(cfg)
        self.opened_with.append(cfg)
        self.ledger_id = 0

    def invoke(self, op: Operation) -> Observation:
        observed = super().invoke(op)
        if isinstance(op, FreshLedger):
            self.ledger_id += 1
            return dataclasses.replace(observed, ledger=self.ledger_id)
        return observed

    def describe(self) -> dict[str, str]:
        if self.describe_fails_after_lie and self.told:
            raise RuntimeError("the target is gone")
        return super().describe()


def _targets(monkeypatch: pytest.MonkeyPatch, *made: Target) -> None:
    """Each attempt builds the next of ``made``; a build beyond them fails."""
    queue = list(made)

    def build(self: TargetSpec, config: object = None) -> Target:
        if not queue:
            raise LookupError("no more targets")
        return queue.pop(0)

    monkeypatch.setattr(TargetSpec, "build", build)


def _instant_timeout(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """``time.sleep`` ends at once with the shard timeout (as the armed SIGALRM would end an
    injected hang); returns the durations asked for."""
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        raise ShardTimeout("the shard did not finish within its timeout of 30 s")

    monkeypatch.setattr(time, "sleep", sleep)
    return asked


def _log_lines(row: dict[str, Any]) -> list[str]:
    """The log without its time stamps."""
    return [line[9:] for line in row["log"].splitlines() if re.match(r"\d\d:\d\d:\d\d ", line)]


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time five and a half hours from UTC, so that a local time stamp shows."""
    monkeypatch.setenv("TZ", "XST-5:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


# Timeouts and the fault hook ------------------------------------------------------------------


def test_the_shard_timeout_is_the_given_one_or_four_budgets_plus_two_minutes() -> None:
    options = ExecutionOptions(run_dir="unused")
    assert (TIMEOUT_FACTOR, TIMEOUT_SLACK) == (4.0, 120.0)
    assert options.timeout_for(small_shard(time_budget=10.0)) == 160.0
    assert options.timeout_for(small_shard(time_budget=None)) is None
    given = ExecutionOptions(run_dir="unused", shard_timeout=3.0)
    assert given.timeout_for(small_shard(time_budget=10.0)) == 3.0
    assert given.timeout_for(small_shard(time_budget=None)) == 3.0


def test_empty_fault_items_are_skipped_not_the_end_of_the_list() -> None:
    assert parse_faults("crash@1,, ,hang@2,") == (ShardFault("crash", 1), ShardFault("hang", 2))


def test_a_bad_fault_is_refused_with_the_kinds_spelled_out() -> None:
    with pytest.raises(ShardFaultError) as refused:
        parse_faults("crash@1,boom@2")
    assert str(refused.value) == (
        "shard fault 'boom@2': expected KIND@SHARD with KIND one of "
        "crash, crash-once, hang, hang-after-finding, e.g. crash@3"
    )


def test_an_injected_crash_names_the_shard_and_the_attempt(tmp_path: Path) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@0"))
    row = execute_shard(small_shard(), options)
    assert row["error"] == "InjectedCrash: injected crash of shard 0, attempt 2"
    lines = _log_lines(row)
    assert f"shard 0 ({CONFIGURATION}, seed {SEED}) attempt 1" in lines
    assert f"shard 0 ({CONFIGURATION}, seed {SEED}) attempt 2" in lines
    assert "attempt 1 failed: InjectedCrash: injected crash of shard 0, attempt 1" in lines


def test_an_injected_hang_sleeps_until_the_timeout_and_fails_the_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _instant_timeout(monkeypatch)
    options = ExecutionOptions(
        run_dir=str(tmp_path), shard_timeout=30.0, faults=parse_faults("hang@0")
    )
    row = execute_shard(small_shard(), options)
    # The hang outlasts any timeout: only the alarm ends it.
    assert len(asked) == 2 and min(asked) >= 10**6
    assert (row["status"], row["verdict"], row["attempts"]) == (
        RowStatus.ERROR,
        Verdict.UNDECIDED,
        2,
    )
    assert row["error"] == "ShardTimeout: the shard did not finish within its timeout of 30 s"
    lines = _log_lines(row)
    assert "injected hang of shard 0, attempt 1" in lines
    assert "injected hang of shard 0, attempt 2" in lines


def test_an_injected_hang_without_any_timeout_is_a_crash_not_an_endless_sleep(
    tmp_path: Path,
) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path), retries=0, faults=parse_faults("hang@0"))
    row = execute_shard(small_shard(time_budget=None), options)
    assert (row["status"], row["attempts"]) == ("error", 1)
    assert row["error"] == "InjectedCrash: injected hang without a timeout to end it"


# Building targets -----------------------------------------------------------------------------


def test_the_local_target_gets_the_bookies_the_driver_chose() -> None:
    from conformance.targets.local_target import LocalTarget

    options = TargetSpec.local(BookieChoice.reference())
    assert options == TargetSpec(kind="local", bookie_kind="reference", bookkeeper_home=None)
    target = options.build()
    assert isinstance(target, LocalTarget)
    assert target._bookies == BookieChoice.reference()  # as given, not resolved again
    real = TargetSpec.local(BookieChoice.bookkeeper(Path("/opt/bookkeeper")))
    assert real.bookkeeper_home == "/opt/bookkeeper"


def test_the_external_target_gets_the_address_root_and_permission() -> None:
    from conformance.targets.external_target import ExternalTarget

    options = TargetSpec(
        kind="external", zookeeper="zk.example:2181", ledgers_root="/bk", allow_remote=True
    )
    target = options.build()
    assert isinstance(target, ExternalTarget)
    assert (target.zookeeper_connect, target.ledgers_root, target.allow_remote) == (
        "zk.example:2181",
        "/bk",
        True,
    )


def test_the_external_target_without_an_address_and_an_unknown_target_are_refused() -> None:
    with pytest.raises(ValueError) as no_address:
        TargetSpec(kind="external")
    assert str(no_address.value) == "--target external needs --zk HOST:PORT"
    with pytest.raises(ValueError) as unknown:
        TargetSpec(kind="bogus")
    assert str(unknown.value) == UNKNOWN_TARGET


def test_a_shard_whose_target_cannot_be_built_is_an_error_naming_why(tmp_path: Path) -> None:
    # The spec is sound, but its agents' token file is not there on the executor.
    spec = TargetSpec(
        kind="external",
        zookeeper="127.0.0.1:1",
        agents=(AgentAddress("127.0.0.1:3181", "127.0.0.1", 9),),
        agent_token_file=str(tmp_path / "no-token"),
    )
    options = ExecutionOptions(run_dir=str(tmp_path), target=spec)
    row = execute_shard(small_shard(), options)
    # Not retriable (a file that is not there is no more there on a second attempt).
    assert (row["status"], row["verdict"], row["attempts"]) == (
        RowStatus.ERROR,
        Verdict.UNDECIDED,
        1,
    )
    assert row["error_retriable"] is False
    assert row["error"].startswith("ValueError: cannot read --agent-token-file:")
    assert row["bookies"].startswith("unknown (ValueError: cannot read --agent-token-file:")
    assert (row["client"], row["zookeeper"]) == ("unknown", "unknown")


# The ledger recorder --------------------------------------------------------------------------


class _Inner:
    """A target stand-in that records the operations it is asked, answering fresh ledgers with
    the ids in ``ledgers`` (None: no id, as the model target)."""

    name = "inner"

    def __init__(self, ledgers: list[int | None] | None = None) -> None:
        self.ledgers = list(ledgers or [])
        self.calls: list[object] = []

    def open(self, cfg: ModelConfig) -> None:
        self.calls.append(("open", cfg))

    def invoke(self, op: Operation) -> Observation:
        self.calls.append(op)
        if isinstance(op, FreshLedger):
            return Observation("ledger", "OK", success=True, ledger=self.ledgers.pop(0))
        return Observation("metadata", "OK", success=True)


def test_the_recorder_notes_each_new_ledger_once() -> None:
    inner = _Inner([0, None, 7, 7, 3])
    recorder = LedgerRecorder(inner)  # type: ignore[arg-type]
    assert (recorder.name, recorder.ledgers) == ("inner", [])
    cfg = small_shard().config
    recorder.open(cfg)
    assert recorder.ledgers == []
    for _ in range(5):
        recorder.invoke(FreshLedger())
    assert recorder.ledgers == [0, 7, 3]
    assert inner.calls[0] == ("open", cfg)


def test_the_recorder_passes_operations_and_answers_through_unchanged() -> None:
    inner = _Inner()
    recorder = LedgerRecorder(inner)  # type: ignore[arg-type]
    write = CreateLedger(0, LedgerView(STATUS_OPEN, (), 0))
    assert recorder.invoke(write) == Observation("metadata", "OK", success=True)
    recorder.invoke(Crash(2))
    assert inner.calls == [write, Crash(2)]


def test_the_recorder_times_each_crash_and_nothing_else() -> None:
    inner = _Inner()
    ticks = iter([10.0, 10.5, 20.0, 20.25])
    recorder = LedgerRecorder(inner, clock=lambda: next(ticks))  # type: ignore[arg-type]
    recorder.invoke(Crash(0))
    recorder.invoke(CreateLedger(0, LedgerView(STATUS_OPEN, (), 0)))
    recorder.invoke(Crash(1))
    assert recorder.restarts == [0.5, 0.25]


# The log --------------------------------------------------------------------------------------


def test_progress_is_logged_at_most_every_five_seconds_of_search() -> None:
    log = _Log(small_shard())
    for elapsed in (4.9, 5.0, 9.9, 10.0, 14.0):
        log.progress(SearchProgress("hypothesis", 3, 40, elapsed, 1))
    log.new_attempt()
    log.progress(SearchProgress("explorer", 1, 2, 5.0, 0))
    assert [line[9:] for line in log.lines] == [
        "[hypothesis] 3 examples, 40 steps, 1 findings, 5 s",
        "[hypothesis] 3 examples, 40 steps, 1 findings, 10 s",
        "[explorer] 1 examples, 2 steps, 0 findings, 5 s",
    ]


def test_log_lines_are_stamped_with_the_utc_time(far_from_utc: None) -> None:
    log = _Log(small_shard())
    before = time.strftime("%H:%M:%S", time.gmtime())
    log("hello")
    after = time.strftime("%H:%M:%S", time.gmtime())
    (line,) = log.lines
    assert line[8:] == " hello"
    assert line[:8] in (before, after)
    assert log.text == line + "\n"


# Rows -----------------------------------------------------------------------------------------


def test_a_step_row_carries_every_field_and_observations_as_sorted_json() -> None:
    record = StepRecord(
        index=3,
        action="BookieSendsAddFencedResponse",
        description="b1 answers the add of e0",
        request="add e0 to b1",
        predicted={"success": False, "status": "EFENCED", "kind": "add"},
        observed={"success": True, "status": "EOK", "kind": "add"},
        divergence=["success: predicted False, observed True"],
        violations=["NoDivergenceBetweenClientAndMetaData"],
        error="b1 went away",
    )
    assert step_row(small_shard(), 2, "shrink", record) == {
        "shard": 0,
        "configuration": CONFIGURATION,
        "target": "model",
        "example": 2,
        "phase": "shrink",
        "step": 3,
        "action": "BookieSendsAddFencedResponse",
        "description": "b1 answers the add of e0",
        "request": "add e0 to b1",
        "predicted": '{"kind": "add", "status": "EFENCED", "success": false}',
        "observed": '{"kind": "add", "status": "EOK", "success": true}',
        "response": "EOK",
        "engine_divergence": ["success: predicted False, observed True"],
        "violations": ["NoDivergenceBetweenClientAndMetaData"],
        "error": "b1 went away",
    }
    bare = step_row(small_shard(), 0, "hypothesis", StepRecord(1, "ClientCreatesLedger", "c"))
    assert (bare["request"], bare["predicted"], bare["observed"], bare["response"]) == (
        None,
        None,
        None,
        None,
    )
    assert (bare["engine_divergence"], bare["violations"], bare["error"]) == ([], [], None)


def test_the_trace_key_is_the_sha256_of_the_steps_one_per_line() -> None:
    records = [StepRecord(1, "A", "first"), StepRecord(2, "B", "second")]
    assert trace_key(records) == hashlib.sha256(b"A|first\nB|second").hexdigest()


def _a_finding() -> Finding:
    """A real finding: the lying target answers a metadata write with the other outcome."""
    shard = small_shard()
    target = LyingTarget(Lie("metadata"))
    target.open(shard.config)
    report = run_search(shard.config, target, shard.settings)
    assert report.finding is not None
    return report.finding


def _with_problems(finding: Finding, violations: list[str], divergences: list[str]) -> Finding:
    outcome = dataclasses.replace(
        finding.run.outcome,
        verdict="violation" if violations else "divergence",
        violations=violations,
        divergences=divergences,
    )
    run = ExampleRun(outcome, finding.run.swarm, finding.run.choices)
    return dataclasses.replace(finding, run=run)


@pytest.mark.parametrize(
    ("violations", "divergences", "note"),
    [
        (["Inv1", "Inv2"], ["step 1: d"], "VERDICT: violation (Inv1, Inv2, divergence)"),
        (["Inv1"], [], "VERDICT: violation (Inv1)"),
        ([], ["step 1: d"], "VERDICT: divergence (divergence)"),
        ([], [], "VERDICT: divergence"),
    ],
)
def test_a_finding_row_carries_the_verdict_its_problems_and_the_titled_diagrams(
    violations: list[str], divergences: list[str], note: str
) -> None:
    shard = small_shard()
    cfg = shard.config
    finding = _with_problems(_a_finding(), violations, divergences)
    outcome = finding.run.outcome
    title = f"{CONFIGURATION}, shard 0 ({cfg.describe()})"
    assert finding_row(shard, finding) == {
        "shard": 0,
        "configuration": CONFIGURATION,
        "target": "model",
        "seed": SEED,
        "verdict": outcome.verdict,
        "violations": violations,
        "divergences": divergences,
        "found_by": finding.found_by,
        "found_after": finding.found_after,
        "found_steps": finding.found_steps,
        "shrunk_steps": len(outcome.steps),
        "trace_key": trace_key(outcome.steps),
        "trace_text": numbered_trace(cfg, outcome.trace),
        "sequence_text": sequence_diagram(cfg, outcome.trace, title=title, final_note=note),
        "sequence_svg": sequence_svg(cfg, outcome.trace, title=title, final_note=note),
        "blob": finding.blob,
    }


# A whole shard --------------------------------------------------------------------------------


def test_a_clean_shard_row_counts_what_the_search_did(tmp_path: Path) -> None:
    before = time.monotonic()
    row = execute_shard(small_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    took = time.monotonic() - before
    steps = read_dataset(tmp_path, "steps").to_pylist()
    assert (row["status"], row["verdict"], row["findings"], row["error"]) == (
        "done",
        "clean",
        0,
        None,
    )
    assert row["steps"] == row["target_steps"] == len(steps) > 0
    assert 0 < row["elapsed"] <= row["wall"] <= took
    assert row["steps_per_second"] == pytest.approx(row["steps"] / row["elapsed"])
    assert row["time_to_first_finding"] is None
    assert row["versions"] == json.dumps(versions(), sort_keys=True)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["finished_at"])
    assert _log_lines(row)[-1].startswith("finished in ")
    assert _log_lines(row)[-1].endswith(" s: clean")


def test_a_shard_finishes_at_a_utc_time(tmp_path: Path, far_from_utc: None) -> None:
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    row = execute_shard(
        small_shard(), ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@0"))
    )
    after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    assert before <= row["finished_at"] <= after


def test_a_shard_with_no_attempt_left_reports_zeros_and_the_model_system(
    tmp_path: Path,
) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@0"))
    row = execute_shard(small_shard(), options)
    counts = ("findings", "examples", "steps", "explorer_steps", "target_steps")
    assert [row[name] for name in counts] == [0, 0, 0, 0, 0]
    assert (row["elapsed"], row["steps_per_second"], row["time_to_first_finding"]) == (
        0.0,
        0.0,
        None,
    )
    assert (row["ledgers"], row["target_description"]) == ([], "{}")
    assert (row["bookies"], row["client"], row["zookeeper"]) == (
        "model (no bookies)",
        "model client (bkconform)",
        "model (no ZooKeeper)",
    )
    assert re.fullmatch(r"finished in \d+\.\d s: undecided \(error\)", _log_lines(row)[-1])


def test_a_shard_that_finds_a_divergence_writes_its_finding_and_its_ledgers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = RecordingLiar(Lie("metadata"))
    _targets(monkeypatch, target)
    before = time.monotonic()
    row = execute_shard(small_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    took = time.monotonic() - before
    assert (row["status"], row["verdict"], row["findings"], row["attempts"]) == (
        "done",
        "divergence",
        1,
        1,
    )
    assert target.opened_with == [small_shard().config]
    (finding,) = read_dataset(tmp_path, "findings").to_pylist()
    assert (finding["shard"], finding["verdict"], finding["found_by"]) == (
        0,
        "divergence",
        "hypothesis",
    )
    assert row["time_to_first_finding"] == finding["found_after"]
    assert 0 <= finding["found_after"] <= row["wall"] <= took
    assert row["steps"] == row["target_steps"] > 0
    assert row["ledgers"] == list(range(1, target.ledger_id + 1))  # one per example
    assert row["target_description"] == '{"lies": "metadata@1", "target": "lying"}'
    system = system_under_test(target)
    assert (row["bookies"], row["client"], row["zookeeper"]) == (
        system.bookies,
        system.client,
        system.zookeeper,
    )
    lines = _log_lines(row)
    assert system_header(system) in lines
    assert 'target lying open: {"lies": "metadata@1", "target": "lying"}' in lines
    assert re.fullmatch(r"finished in \d+\.\d s: divergence", lines[-1])


def test_a_timeout_while_shrinking_keeps_the_first_finding_unshrunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = RecordingLiar(Lie("metadata"))
    _targets(monkeypatch, target)
    _instant_timeout(monkeypatch)
    options = ExecutionOptions(
        run_dir=str(tmp_path), shard_timeout=30.0, faults=parse_faults("hang-after-finding@0")
    )
    before = time.monotonic()
    row = execute_shard(small_shard(), options)
    took = time.monotonic() - before
    assert (row["status"], row["verdict"], row["findings"], row["attempts"], row["error"]) == (
        "done",
        "divergence",
        1,
        1,
        None,
    )
    steps = read_dataset(tmp_path, "steps").to_pylist()
    # The search stopped at its first failing example, the last one run.
    failing = [s for s in steps if s["example"] == row["examples"] - 1]
    assert {s["example"] for s in steps} == set(range(row["examples"]))
    assert row["steps"] == row["target_steps"] == len(steps)
    assert 0 < row["elapsed"] <= row["wall"] <= took
    (finding,) = read_dataset(tmp_path, "findings").to_pylist()
    assert (finding["verdict"], finding["found_by"]) == ("divergence", "hypothesis (unshrunk)")
    assert finding["found_steps"] == finding["shrunk_steps"] == len(failing) > 0
    assert 0 <= finding["found_after"] == row["time_to_first_finding"] <= row["elapsed"]
    assert finding["divergences"]
    # One ledger for each example run (the one opened with the target is never written).
    assert (
        row["ledgers"]
        == list(range(1, row["examples"] + 1))
        == list(range(1, target.ledger_id + 1))
    )
    assert row["target_description"] == '{"lies": "metadata@1", "target": "lying"}'
    lines = _log_lines(row)
    assert "injected stall of shard 0 after its first finding" in lines
    assert "timeout while shrinking: the first failing example is recorded unshrunk" in lines
    assert (
        "NOTE the shard did not finish within its timeout of 30 s: shrinking stopped, "
        "the finding is recorded unshrunk"
    ) in lines


def test_a_target_that_cannot_describe_itself_after_the_timeout_keeps_the_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, RecordingLiar(Lie("metadata"), describe_fails_after_lie=True))
    _instant_timeout(monkeypatch)
    options = ExecutionOptions(
        run_dir=str(tmp_path), shard_timeout=30.0, faults=parse_faults("hang-after-finding@0")
    )
    row = execute_shard(small_shard(), options)
    assert (row["status"], row["verdict"], row["findings"]) == ("done", "divergence", 1)
    assert row["target_description"] == "{}"


def test_a_stall_after_finding_on_another_shard_leaves_this_one_shrinking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = _instant_timeout(monkeypatch)
    _targets(monkeypatch, RecordingLiar(Lie("metadata")))
    options = ExecutionOptions(
        run_dir=str(tmp_path), shard_timeout=30.0, faults=parse_faults("hang-after-finding@1")
    )
    row = execute_shard(small_shard(), options)
    assert asked == []
    (finding,) = read_dataset(tmp_path, "findings").to_pylist()
    assert (row["verdict"], finding["found_by"]) == ("divergence", "hypothesis")


def test_the_search_progress_reaches_the_log_of_each_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = [
        SearchReport("undecided", None, 2, 30, 6.0, error="bookie b1 did not answer"),
        SearchReport("clean", None, 3, 40, 7.0, explorer_steps=500),
    ]

    def search(
        cfg: ModelConfig,
        target: Target,
        settings: SearchSettings,
        *,
        progress: Any,
        on_example: Any,
    ) -> SearchReport:
        report = reports.pop(0)
        progress(SearchProgress("hypothesis", report.examples, report.steps, report.elapsed, 0))
        if report.error is not None:
            # As the recorder notes a target's error on its way to the engine: a retriable one.
            assert isinstance(target, LedgerRecorder)
            target.target_error = TargetError(report.error, retriable=True)
        return report

    monkeypatch.setattr(shard_module, "run_search", search)
    row = execute_shard(small_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    assert (row["status"], row["verdict"], row["attempts"]) == ("done", "clean", 2)
    assert (row["examples"], row["steps"], row["explorer_steps"]) == (3, 40, 500)
    assert (row["elapsed"], row["steps_per_second"]) == (7.0, 40 / 7.0)
    lines = _log_lines(row)
    assert "[hypothesis] 2 examples, 30 steps, 0 findings, 6 s" in lines
    assert "attempt 1 could not decide: bookie b1 did not answer" in lines
    assert "[hypothesis] 3 examples, 40 steps, 0 findings, 7 s" in lines
