"""One shard in this process, on the model target: rows, schema, retry, timeout, the hook."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conformance.distributed.plan import Shard, make_plan
from conformance.distributed.schema import DATASETS, RowStatus
from conformance.distributed.shard import (
    ExecutionOptions,
    ShardFault,
    ShardFaultError,
    execute_shard,
    parse_faults,
)
from conformance.distributed.store import finished_shards, read_dataset
from conformance.search.runner import SearchSettings
from conformance.targets.base import Target
from conformance.targets.spec import TargetSpec
from conformance.verdict import Verdict
from tests.conformance.lying_target import Lie, LyingTarget

QUICK = SearchSettings(max_examples=4, max_steps=20, time_budget=None, explore=False)


def quick_shard(shard: int = 0, configuration: str = "fenced-recovery") -> Shard:
    plan = make_plan(master_seed=5, shards=shard + 1, configurations=(configuration,), budget=QUICK)
    return plan.shards[shard]


def test_fault_specifications_parse_and_bad_ones_are_refused() -> None:
    assert parse_faults("crash@3, crash-once@0,hang@12,hang-after-finding@1") == (
        ShardFault("crash", 3),
        ShardFault("crash-once", 0),
        ShardFault("hang", 12),
        ShardFault("hang-after-finding", 1),
    )
    assert parse_faults("") == ()
    for bad in ("crash", "explode@1", "crash@x"):
        with pytest.raises(ShardFaultError, match="KIND@SHARD"):
            parse_faults(bad)


def test_a_shard_writes_every_step_its_row_and_the_documented_schemas(tmp_path: Path) -> None:
    row = execute_shard(quick_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    assert row["status"] == "done" and row["verdict"] == "clean" and row["attempts"] == 1
    for dataset, schema in DATASETS.items():
        (part,) = (tmp_path / dataset).glob("part-*.parquet")
        assert pq.read_schema(part).remove_metadata() == schema
    steps = read_dataset(tmp_path, "steps").to_pylist()
    assert len(steps) == row["target_steps"] > 0
    assert {s["example"] for s in steps} == set(range(row["examples"]))
    # The model target answers exactly as predicted: every compared step agrees.
    bookie_steps = [s for s in steps if s["predicted"] is not None]
    assert bookie_steps
    assert all(s["predicted"] == s["observed"] for s in bookie_steps)
    assert all(s["response"] == json.loads(s["observed"])["status"] for s in bookie_steps)
    assert finished_shards(tmp_path) == {0}
    assert (tmp_path / "logs" / "shard-00000.log").read_text() == row["log"]


def test_a_crash_on_the_first_attempt_is_retried(tmp_path: Path) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash-once@0"))
    row = execute_shard(quick_shard(), options)
    assert (row["status"], row["verdict"], row["attempts"]) == ("done", "clean", 2)
    assert "InjectedCrash" in row["log"]


def test_a_shard_that_crashes_twice_is_recorded_as_an_error_with_its_log(
    tmp_path: Path,
) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@0"))
    row = execute_shard(quick_shard(), options)
    assert (row["status"], row["verdict"], row["attempts"]) == (
        RowStatus.ERROR,
        Verdict.UNDECIDED,
        2,
    )
    assert row["error"].startswith("InjectedCrash")
    assert row["log"].count("InjectedCrash") >= 2
    assert read_dataset(tmp_path, "shards").to_pylist() == [row]
    assert read_dataset(tmp_path, "steps").num_rows == 0


def test_a_shard_that_hangs_times_out_and_is_recorded_as_an_error(tmp_path: Path) -> None:
    options = ExecutionOptions(
        run_dir=str(tmp_path), shard_timeout=0.5, faults=parse_faults("hang@0")
    )
    row = execute_shard(quick_shard(), options)
    assert (row["status"], row["attempts"]) == ("error", 2)
    assert row["error"].startswith("ShardTimeout")


def test_the_timeout_ends_a_search_that_runs_too_long(tmp_path: Path) -> None:
    plan = make_plan(
        master_seed=0,
        shards=1,
        budget=SearchSettings(max_examples=10_000, max_steps=60, time_budget=None),
    )
    options = ExecutionOptions(run_dir=str(tmp_path), shard_timeout=1.0, retries=0)
    row = execute_shard(plan.shards[0], options)
    assert (row["status"], row["attempts"]) == ("error", 1)
    assert "ShardTimeout" in row["error"]


@pytest.mark.slow
def test_a_timeout_while_shrinking_keeps_the_finding_unshrunk(tmp_path: Path) -> None:
    # Seed 1 finds Defect 1 within a few seconds (the explorer's trace, replayed on the target);
    # the hook then stalls the shard as a slow shrink on a real cluster would, until the timeout.
    shard = Shard(0, "no-recovery-read-fence", "model", 1, 50, 60, 60.0, True)
    options = ExecutionOptions(
        run_dir=str(tmp_path),
        shard_timeout=15.0,
        faults=parse_faults("hang-after-finding@0"),
    )
    row = execute_shard(shard, options)
    assert (row["status"], row["verdict"], row["findings"], row["attempts"]) == (
        "done",
        "violation",
        1,
        1,
    )
    assert "recorded unshrunk" in row["log"]
    (finding,) = read_dataset(tmp_path, "findings").to_pylist()
    assert finding["found_by"].endswith(" (unshrunk)")
    assert finding["shrunk_steps"] == finding["found_steps"]
    assert finding["violations"]


def _targets(monkeypatch: pytest.MonkeyPatch, *made: LyingTarget) -> list[LyingTarget]:
    """Each attempt builds the next of ``made``."""
    queue = list(made)

    def build(self: TargetSpec, config: object = None) -> Target:
        return queue.pop(0)

    monkeypatch.setattr(TargetSpec, "build", build)
    return list(made)


def test_an_undecided_attempt_is_retried_and_never_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _targets(monkeypatch, LyingTarget(Lie("error", 1)), LyingTarget())
    row = execute_shard(quick_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    assert first.told == ["error"] and first.closed == 1 and second.opened == 1
    assert (row["status"], row["verdict"], row["attempts"], row["error"]) == (
        "done",
        "clean",
        2,
        None,
    )
    assert "attempt 1 could not decide: lying target: bookie" in row["log"]


def test_a_shard_undecided_on_every_attempt_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, LyingTarget(Lie("snapshot-error")), LyingTarget(Lie("snapshot-error")))
    row = execute_shard(quick_shard(), ExecutionOptions(run_dir=str(tmp_path)))
    assert (row["status"], row["verdict"], row["attempts"]) == ("error", "undecided", 2)
    assert row["error"] == "undecided: lying target: the final state could not be read"
    assert row["findings"] == 0
