"""The run directory as a stream: ``results.json`` says running (undecided) from the start,
``history.jsonl`` gets each step as it is judged, the end finalises both; a run killed midway
reads undecided with every step up to the kill; readers take any run directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from adapters.installations.system import SystemUnderTest
from conformance.cli import main
from conformance.engine import Outcome, StepRecord
from conformance.rundir import (
    DIED,
    FINDING,
    FINISHED,
    HISTORY,
    INTERRUPTED,
    RESULTS,
    RUNNING,
    RunWriter,
    add_to_results,
    read_history,
    read_results,
    story_steps,
    write_run,
)
from conformance.scenarios import SCENARIOS, run_scenario
from conformance.search.runner import SearchSettings, run_search
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig

SYSTEM = SystemUnderTest("recorded bookies", "recorded client", "recorded ZooKeeper")
SCENARIO = SCENARIOS["defect1-fencing"]


def _writer(path: Path, **extra: Any) -> RunWriter:
    return RunWriter(
        path, name="unit", cfg=ModelConfig(), target={"target": "model"}, system=SYSTEM, extra=extra
    )


def _record(index: int, action: str = "ClientCreatesLedger") -> StepRecord:
    return StepRecord(index=index, action=action, description=f"{action} #{index}")


def _raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / RESULTS).read_text())
    return data


def test_start_writes_results_as_running_and_undecided(tmp_path: Path) -> None:
    with _writer(tmp_path, search={"seed": 3}) as writer:
        writer.start()
        raw = _raw(tmp_path)
        assert raw["state"] == RUNNING and raw["verdict"] == "undecided"
        assert raw["exit_code"] == 2
        assert raw["name"] == "unit" and raw["target"] == {"target": "model"}
        assert raw["config"]["bookies"] == ModelConfig().bookies and raw["config_summary"]
        assert raw["system_under_test"]["bookies"] == "recorded bookies"
        assert raw["versions"]["hypothesis"] and raw["started"].endswith("Z")
        assert raw["search"] == {"seed": 3}
        assert raw["process"]["pid"] == os.getpid() and raw["process"]["host"]
        assert (tmp_path / HISTORY).read_text() == ""
        # Read while the run goes: this process is alive, so it is running, not dead.
        results = read_results(tmp_path)
        assert results["state"] == RUNNING and results["verdict"] == "undecided"
        assert "has not finished" in results["error"]
        writer.finish(Outcome(Verdict.CLEAN, [], []), story=None)


def test_each_step_is_on_disk_as_soon_as_it_is_judged(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        writer.start()
        writer.step(1, "hypothesis", _record(1))
        # Flushed per step: another reader sees it before the example ends.
        assert [line["index"] for line in read_history(tmp_path)] == [1]
        writer.step(1, "hypothesis", _record(2, "ClientSendsAdd"))
        writer.example_done(1)
        writer.step(2, "shrink", _record(1))
        writer.example_done(2)
        lines = read_history(tmp_path)
        assert [(line["example"], line["phase"], line["index"]) for line in lines] == [
            (1, "hypothesis", 1),
            (1, "hypothesis", 2),
            (2, "shrink", 1),
        ]
        assert lines[1]["action"] == "ClientSendsAdd"
        assert lines[1]["description"] == "ClientSendsAdd #2"
        writer.finish(Outcome(Verdict.CLEAN, [], []), story=None)
    results = read_results(tmp_path)
    assert results["state"] == FINISHED and results["verdict"] == "clean"
    assert results["exit_code"] == 0 and results["finished"].endswith("Z")
    assert results["history"] == {"lines": 3, "examples": 2, "story": None}
    assert story_steps(tmp_path) == []


def test_a_finding_s_steps_are_appended_tagged_and_tell_the_story(tmp_path: Path) -> None:
    cfg = SCENARIO.config(protected=False)
    target = ModelTarget(cfg)
    target.open(cfg)
    writer = RunWriter(tmp_path, name="search", cfg=cfg, target={"target": "model"}, system=SYSTEM)
    with writer:
        writer.start()
        writer.step(1, "hypothesis", _record(1))
        writer.example_done(1)
        outcome = run_scenario(SCENARIO, target, protected=False)
        writer.finish(outcome, extra={"finding": {"shrunk_steps": 18}}, story=FINDING)
    results = read_results(tmp_path)
    assert results["verdict"] == "violation" and results["exit_code"] == 1
    assert results["finding"] == {"shrunk_steps": 18} and results["steps"] == 18
    assert results["history"] == {"lines": 19, "examples": 1, "story": FINDING}
    story = story_steps(tmp_path)
    assert [line["index"] for line in story] == list(range(1, 19))
    assert all(line["example"] == FINDING and "phase" not in line for line in story)
    assert story[-1]["violations"] == ["NoDivergenceBetweenClientAndMetaData"]
    assert len(read_history(tmp_path)) == 19  # example 1's step, then the finding's 18
    for name in ("trace.txt", "sequence.txt", "sequence.svg"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_a_scenario_streams_as_example_1(tmp_path: Path) -> None:
    cfg = SCENARIO.config(protected=False)
    target = ModelTarget(cfg)
    target.open(cfg)
    seen: list[int] = []
    with _writer(tmp_path) as writer:
        writer.start()
        record = writer.recorder(1)

        def on_record(r: StepRecord) -> None:
            record(r)
            seen.append(len(read_history(tmp_path)))  # already on disk when the engine goes on

        outcome = run_scenario(SCENARIO, target, protected=False, on_record=on_record)
        writer.example_done(1)
        writer.finish(outcome, story=1)
    assert seen == list(range(1, 19))
    assert [line["index"] for line in story_steps(tmp_path)] == list(range(1, 19))
    assert {line["example"] for line in read_history(tmp_path)} == {1}


def test_an_exception_ends_the_run_interrupted_and_undecided(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), _writer(tmp_path) as writer:
        writer.start()
        writer.step(1, "hypothesis", _record(1))
        raise KeyboardInterrupt
    results = read_results(tmp_path)
    assert results["state"] == INTERRUPTED and results["verdict"] == "undecided"
    assert results["exit_code"] == 2 and "KeyboardInterrupt" in results["error"]
    assert results["history"]["lines"] == 1 and len(read_history(tmp_path)) == 1


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from adapters.installations.system import SystemUnderTest
    from conformance.engine import StepRecord
    from conformance.rundir import RunWriter
    from model.bookkeeper.config import ModelConfig

    writer = RunWriter(Path(sys.argv[1]), name="killed", cfg=ModelConfig(),
                       target={"target": "model"}, system=SystemUnderTest("b", "c", "z"))
    writer.start()
    for example in (1, 2):
        for index in (1, 2, 3):
            writer.step(example, "hypothesis", StepRecord(index=index, action="A", description="x"))
        writer.example_done(example)
    writer.step(3, "hypothesis", StepRecord(index=1, action="A", description="x"))
    print("ready", flush=True)
    time.sleep(300)
    """
)


def test_a_killed_run_reads_died_and_undecided_with_every_step_it_judged(tmp_path: Path) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        assert read_results(tmp_path)["state"] == RUNNING  # alive: still running
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=10)
    assert _raw(tmp_path)["state"] == RUNNING  # nothing ran at exit: as written at the start
    results = read_results(tmp_path)
    assert results["state"] == DIED and results["verdict"] == "undecided"
    assert results["exit_code"] == 2 and "died before it finished" in results["error"]
    lines = read_history(tmp_path)
    assert [(line["example"], line["index"]) for line in lines] == [
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 1),
        (2, 2),
        (2, 3),
        (3, 1),
    ]
    assert story_steps(tmp_path) == []
    # A died run holds no finding: replay says so and cannot decide.
    assert main(["replay", str(tmp_path), "--runs-dir", str(tmp_path / "runs")]) == 2


def test_a_partial_last_line_is_skipped_and_a_broken_complete_one_is_an_error(
    tmp_path: Path,
) -> None:
    good = [{"example": 1, "index": i, "action": "A", "description": "a"} for i in (1, 2)]
    text = "".join(json.dumps(line) + "\n" for line in good)
    (tmp_path / HISTORY).write_text(text + '{"example": 1, "index": 3, "act')
    assert read_history(tmp_path) == good
    (tmp_path / HISTORY).write_text(text + '{"example": 1, "ind\n')
    with pytest.raises(ValueError, match="line 3"):
        read_history(tmp_path)


def test_a_run_of_another_host_or_an_earlier_boot(tmp_path: Path) -> None:
    with _writer(tmp_path) as writer:
        writer.start()
        raw = _raw(tmp_path)
        elsewhere = {**raw, "process": {**raw["process"], "host": "another-host"}}
        (tmp_path / RESULTS).write_text(json.dumps(elsewhere))
        # Its process cannot be checked from here: still running as far as we know.
        assert read_results(tmp_path)["state"] == RUNNING
        rebooted = {**raw, "process": {**raw["process"], "boot_id": "an-earlier-boot"}}
        (tmp_path / RESULTS).write_text(json.dumps(rebooted))
        assert read_results(tmp_path)["state"] == DIED
        writer.finish(Outcome(Verdict.CLEAN, [], []), story=None)
    assert read_results(tmp_path)["state"] == FINISHED


def test_run_directories_written_before_streaming_read_as_finished(tmp_path: Path) -> None:
    old = {"name": "run", "verdict": "violation", "exit_code": 1, "steps": 2}
    (tmp_path / RESULTS).write_text(json.dumps(old))
    lines = [{"index": 1, "action": "A", "description": "a"}, {"index": 2, "action": "B"}]
    (tmp_path / HISTORY).write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = read_results(tmp_path)
    assert results["state"] == FINISHED and results["verdict"] == "violation"
    assert story_steps(tmp_path) == lines


def test_write_run_writes_a_judged_run_at_once(tmp_path: Path) -> None:
    outcome = Outcome(Verdict.CLEAN, [_record(1), _record(2)], [])
    write_run(
        tmp_path,
        name="after-the-fact",
        cfg=ModelConfig(),
        outcome=outcome,
        target={"target": "recorded"},
        system=SYSTEM,
        extra={"expected_verdict": "clean"},
    )
    results = read_results(tmp_path)
    assert results["state"] == FINISHED and results["expected_verdict"] == "clean"
    assert results["history"] == {"lines": 2, "examples": 1, "story": 1}
    assert len(story_steps(tmp_path)) == 2


class _ListSink:
    def __init__(self) -> None:
        self.steps: list[tuple[int, str, int]] = []
        self.done: list[int] = []

    def step(self, example: int, phase: str, record: StepRecord) -> None:
        self.steps.append((example, phase, record.index))

    def example_done(self, example: int) -> None:
        self.done.append(example)


def test_the_search_hands_every_step_of_every_example_to_its_sink() -> None:
    cfg = ModelConfig(bookies=2, write_quorum=2, ack_quorum=1)
    target = ModelTarget(cfg)
    target.open(cfg)
    sink = _ListSink()
    search = SearchSettings(max_examples=15, max_steps=20, time_budget=30.0, explore=False)
    report = run_search(cfg, target, search, sink=sink)
    assert report.verdict == "clean"
    examples = [example for example, _phase, _index in sink.steps]
    assert examples == sorted(examples) and examples[0] == 1
    assert sink.done == list(range(1, len(sink.done) + 1)) and len(sink.done) >= report.examples
    assert len(sink.steps) == report.steps
    for number in set(examples):  # each example's steps in order, from 1
        indices = [index for example, _phase, index in sink.steps if example == number]
        assert indices == list(range(1, len(indices) + 1))


def test_the_run_command_streams_and_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--bookies", "2", "--wq", "2", "--aq", "1", "--seconds", "5"]
    argv += ["--max-examples", "10", "--no-explore", "--runs-dir", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    (run_dir,) = [p for p in tmp_path.iterdir() if p.name.endswith("-model-run")]
    assert f"Run directory: {run_dir} (the history streams to" in out
    results = read_results(run_dir)
    assert results["state"] == FINISHED and results["verdict"] == "clean"
    lines = read_history(run_dir)
    assert len(lines) == results["steps_run"] == results["history"]["lines"]
    assert {line["phase"] for line in lines} == {"hypothesis"}
    assert results["history"]["examples"] >= results["examples"] >= 10


def test_what_a_command_learns_after_the_run_is_added_to_its_final_results(tmp_path: Path) -> None:
    (tmp_path / RESULTS).write_text(json.dumps({"state": "finished", "verdict": "violation"}))
    add_to_results(tmp_path, "report_window", {"reached": True})
    results = read_results(tmp_path)
    assert results["report_window"] == {"reached": True}
    assert results["verdict"] == "violation" and results["state"] == "finished"
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left behind
