"""The qualification on Spark ``local[N]``: shards as tasks, the diff as Spark jobs, the
report; and no JVM or Python worker left behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from adapters.installations.system import BookieChoice
from conformance.distributed.diff import aggregate
from conformance.distributed.plan import make_plan
from conformance.distributed.qualification import run_qualification
from conformance.distributed.shard import ExecutionOptions, parse_faults
from conformance.distributed.spark_job import aggregate_spark, spark_session
from conformance.distributed.store import read_dataset
from conformance.search.runner import SearchSettings
from conformance.targets.spec import TargetSpec
from tests.conformance.distributed import rows
from tests.conftest import descendants

pytestmark = pytest.mark.slow


#: Processes that were already running when the test began (e.g. a container engine service
#: another test module's session fixture owns): not the test's to stop.
_EARLIER: set[int] = set()


@pytest.fixture(autouse=True)
def _earlier_processes() -> None:
    _EARLIER.clear()
    _EARLIER.update(descendants(os.getpid()))


def _started_here() -> list[int]:
    return [pid for pid in descendants(os.getpid()) if pid not in _EARLIER]


def assert_spark_is_gone() -> None:
    """Every process this test started (the JVM, the Python workers) has exited."""
    deadline = time.monotonic() + 15
    while _started_here() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _started_here() == []


def test_defect_1_is_found_on_local_2_and_a_crashed_shard_is_recorded(tmp_path: Path) -> None:
    # Master seed 14: shard 0's seed finds Defect 1 (the explorer, 16,923 model steps, ~1.2 s
    # on an idle core: the 30 s budget is 25 times that, room for a loaded CI machine); shard 1
    # runs the fixed configuration; shard 2 (Defect 1 again) crashes on every attempt. (Master
    # seed 2 took 27,328 steps until BookieLeavesLimbo joined the swarm's action kinds, then
    # 452,694.)
    plan = make_plan(
        master_seed=14,
        shards=3,
        configurations=("no-recovery-read-fence", "fenced-recovery"),
        budget=SearchSettings(max_examples=50, max_steps=60, time_budget=30.0),
    )
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@2"))
    try:
        result = run_qualification(plan, tmp_path, master="local[2]", options=options)
    finally:
        assert_spark_is_gone()
    shards = {row["shard"]: row for row in result.shards}
    assert shards[0]["verdict"] == "violation" and shards[0]["findings"] == 1
    assert shards[1]["verdict"] == "clean" and shards[1]["findings"] == 0
    assert (shards[2]["status"], shards[2]["attempts"]) == ("error", 2)
    assert "InjectedCrash" in shards[2]["log"]
    # Two shards ran at once, each in its own Python worker.
    assert shards[0]["worker"] != shards[1]["worker"]
    configs = {row["configuration"]: row for row in result.aggregates["by_configuration"]}
    assert configs["no-recovery-read-fence"]["verdict"] == "violation"
    assert configs["fenced-recovery"]["verdict"] == "clean"
    assert result.verdict == "violation" and result.exit_code == 1
    (finding,) = result.aggregates["findings"]
    assert finding["configuration"] == "no-recovery-read-fence"
    assert finding["violations"]
    report = (tmp_path / "report.html").read_text()
    assert "<svg" in report and finding["violations"][0] in report
    assert "Shards in error (1)" in report and "InjectedCrash" in report
    # The Spark diff equals the plain-Python one over the same Parquet rows.
    assert result.aggregates == aggregate(
        read_dataset(tmp_path, "steps").to_pylist(),
        read_dataset(tmp_path, "shards").to_pylist(),
        read_dataset(tmp_path, "findings").to_pylist(),
    )


def test_the_spark_diff_counts_equal_a_plain_recount(tmp_path: Path) -> None:
    rows.write_sample_run(tmp_path)
    try:
        with spark_session("local[1]") as spark:
            counted = aggregate_spark(spark, tmp_path)
    finally:
        assert_spark_is_gone()
    expected = aggregate(
        read_dataset(tmp_path, "steps").to_pylist(),
        read_dataset(tmp_path, "shards").to_pylist(),
        read_dataset(tmp_path, "findings").to_pylist(),
    )
    assert counted == expected
    assert sum(r["divergences"] for r in counted["by_action"]) == 3  # one a metadata status
    assert [f["occurrences"] for f in counted["findings"]] == [1, 2]


def test_a_spark_session_is_stopped_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError, match="inside"), spark_session("local[1]") as spark:
        assert spark.sparkContext.parallelize([1, 2, 3]).sum() == 6
        raise RuntimeError("inside")
    assert_spark_is_gone()


@pytest.mark.cluster
def test_shards_on_local_2_start_and_stop_their_own_clusters(
    tmp_path: Path, bookkeeper_home: Path
) -> None:
    # Real BookKeeper, chosen once here (as `bkconform qualify` does) and run by every shard.
    plan = make_plan(
        master_seed=0,
        shards=2,
        configurations=("fenced-recovery",),
        target="local",
        # Clean needs one example per shard: the budget is read before each example only, so
        # the first runs to its end however slow the machine (3 s caps the rest).
        budget=SearchSettings(max_examples=3, max_steps=30, time_budget=3.0, explore=False),
    )
    bookies = BookieChoice.bookkeeper(bookkeeper_home)
    options = ExecutionOptions(run_dir=str(tmp_path), target=TargetSpec.local(bookies))
    try:
        result = run_qualification(plan, tmp_path, master="local[2]", options=options)
    finally:
        assert_spark_is_gone()
    assert [r["status"] for r in result.shards] == ["done", "done"]
    assert result.verdict == "clean"
    steps = read_dataset(tmp_path, "steps").to_pylist()
    compared = [s for s in steps if s["observed"] is not None]
    assert compared and {s["target"] for s in steps} == {"local"}
    assert all(r["ledgers"] for r in result.shards)  # each example had a ledger of its own
    (by_target,) = result.aggregates["by_target"]
    assert by_target["target"] == "local" and by_target["divergences"] == 0
    assert {r["bookies"] for r in result.shards} == {bookies.describe()}
    assert bookies.describe() in (tmp_path / "report.html").read_text()
