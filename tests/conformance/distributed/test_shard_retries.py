"""A shard tries again only when the failure says it could help: the ``retriable`` flag of what
was raised (``conformance.errors.is_retriable``), or of the first target error of an undecided
search. Whatever else fails (a bad configuration, a malformed answer, a bug, an undecided search
with no target error) is recorded at once. The shard's row keeps the error's type name and
whether it was retriable (``error_retriable``; null in runs written before that column).

In process, on stand-in targets: ``TargetSpec.build`` hands out the next one per attempt.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import conformance.distributed.shard as shard_module
from adapters.cluster.errors import ClusterStartTimeout
from conformance.distributed.plan import Shard
from conformance.distributed.schema import SHARDS, RowStatus
from conformance.distributed.shard import ExecutionOptions, LedgerRecorder, execute_shard
from conformance.distributed.store import part_name, read_dataset
from conformance.observations import Observation
from conformance.operations import FreshLedger, Operation
from conformance.search.runner import SearchSettings
from conformance.search.verdict import SearchReport
from conformance.targets.base import Target, TargetError, TargetSnapshot, UnsupportedConfiguration
from conformance.targets.spec import TargetSpec
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from tests.conformance.lying_target import LyingTarget

NOT_RETRIED = "not retried (trying again would not help)"


def small_shard() -> Shard:
    """Four examples of up to 20 steps on the model (they take milliseconds)."""
    return Shard(0, "fenced-recovery", "model", 5, 4, 20, 10.0, False)


def _targets(monkeypatch: pytest.MonkeyPatch, *made: Target) -> list[Target]:
    """Each attempt builds the next of ``made``; a build beyond them fails the test."""
    queue = list(made)

    def build(self: TargetSpec, config: object = None) -> Target:
        assert queue, "an attempt too many"
        return queue.pop(0)

    monkeypatch.setattr(TargetSpec, "build", build)
    return list(made)


class Unopenable(LyingTarget):
    """A target whose ``open`` fails with ``failure``."""

    def __init__(self, failure: BaseException) -> None:
        super().__init__()
        self.failure = failure

    def open(self, cfg: ModelConfig) -> None:
        self.opened += 1
        raise self.failure


class Unreadable(LyingTarget):
    """A target whose final state cannot be read: every example is undecided."""

    def __init__(self, *, retriable: bool) -> None:
        super().__init__()
        self.retriable = retriable

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        raise TargetError("the final state could not be read", retriable=self.retriable)


def _run(tmp_path: Path, **options: Any) -> dict[str, Any]:
    return execute_shard(small_shard(), ExecutionOptions(run_dir=str(tmp_path), **options))


# Failures raised by an attempt ------------------------------------------------------------------


@pytest.mark.parametrize(
    "failure",
    [
        TargetError("could not reach the local cluster: port taken", retriable=True),
        # Not flattened into a TargetError: the adapter's own flag decides, not its type.
        ClusterStartTimeout("bookie b1 did not register within 60 s"),
    ],
    ids=["TargetError", "ClusterStartTimeout"],
)
def test_a_retriable_failure_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    first, second = _targets(monkeypatch, Unopenable(failure), LyingTarget())
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == ("done", "clean", 2)
    assert isinstance(first, LyingTarget) and isinstance(second, LyingTarget)
    assert (first.opened, first.closed, second.opened) == (1, 1, 1)
    assert (row["error"], row["error_retriable"]) == (None, None)
    assert f"attempt 1 failed: {type(failure).__name__}: {failure}" in row["log"]
    assert NOT_RETRIED not in row["log"]


@pytest.mark.parametrize(
    "failure",
    [
        TargetError("the ledger's metadata was changed outside the model"),
        UnsupportedConfiguration("a cluster target cannot run limbo without fencing"),
        KeyError("a bug in the harness"),
    ],
    ids=["TargetError", "UnsupportedConfiguration", "KeyError"],
)
def test_a_failure_that_would_fail_again_is_recorded_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    (only,) = _targets(monkeypatch, Unopenable(failure))
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == (
        RowStatus.ERROR,
        Verdict.UNDECIDED,
        1,
    )
    assert row["error"] == f"{type(failure).__name__}: {failure}"
    assert row["error_retriable"] is False
    assert f"attempt 1: {NOT_RETRIED}" in row["log"]
    assert isinstance(only, Unopenable) and only.opened == 1


def test_a_retriable_failure_on_every_attempt_is_recorded_as_retriable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lost = TargetError("ZooKeeper did not answer", retriable=True)
    _targets(monkeypatch, Unopenable(lost), Unopenable(lost))
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == (
        RowStatus.ERROR,
        Verdict.UNDECIDED,
        2,
    )
    assert (row["error"], row["error_retriable"]) == ("TargetError: ZooKeeper did not answer", True)


def test_without_retries_a_retriable_failure_is_recorded_after_one_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, Unopenable(TargetError("connection reset", retriable=True)))
    row = _run(tmp_path, retries=0)
    assert (row["status"], row["attempts"], row["error_retriable"]) == ("error", 1, True)
    assert NOT_RETRIED not in row["log"]


# Undecided searches ------------------------------------------------------------------------------


def test_an_undecided_search_is_tried_again_when_its_target_error_is_retriable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, Unreadable(retriable=True), Unreadable(retriable=True))
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == ("error", "undecided", 2)
    assert row["error"] == "undecided: the final state could not be read"
    assert row["error_retriable"] is True


def test_an_undecided_search_is_recorded_at_once_when_its_target_error_is_not_retriable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, Unreadable(retriable=False))
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == ("error", "undecided", 1)
    assert row["error"] == "undecided: the final state could not be read"
    assert row["error_retriable"] is False
    assert f"attempt 1: {NOT_RETRIED}" in row["log"]


def test_an_undecided_search_without_a_target_error_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing ran within the budget (or the replay of the explorer's trace failed): the same
    # search would end the same way.
    _targets(monkeypatch, LyingTarget())
    reason = "nothing was checked: no example ran on the target (time budget 10 s)"

    def search(cfg: ModelConfig, target: Target, settings: SearchSettings, **_: Any) -> Any:
        return SearchReport("undecided", None, 0, 0, 10.0, error=reason)

    monkeypatch.setattr(shard_module, "run_search", search)
    row = _run(tmp_path)
    assert (row["status"], row["verdict"], row["attempts"]) == ("error", "undecided", 1)
    assert (row["error"], row["error_retriable"]) == (f"undecided: {reason}", False)


# The recorder and the row -----------------------------------------------------------------------


class _Failing:
    """A target stand-in whose every operation and snapshot fails with the next error."""

    name = "failing"

    def __init__(self, *errors: TargetError) -> None:
        self.errors = list(errors)

    def invoke(self, op: Operation) -> Observation:
        raise self.errors.pop(0)

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        raise self.errors.pop(0)


def test_the_recorder_passes_target_errors_through_and_keeps_the_first() -> None:
    first = TargetError("bookie b1 did not answer", retriable=True)
    second = TargetError("the final state could not be read")
    recorder = LedgerRecorder(_Failing(first, second))  # type: ignore[arg-type]
    assert recorder.target_error is None
    with pytest.raises(TargetError) as raised:
        recorder.invoke(FreshLedger())
    assert raised.value is first
    with pytest.raises(TargetError) as raised:
        recorder.snapshot(ModelConfig())
    assert raised.value is second
    assert recorder.target_error is first


def test_shard_rows_written_before_error_retriable_existed_read_it_as_null(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _targets(monkeypatch, LyingTarget())
    row = _run(tmp_path)
    old_schema = pa.schema([f for f in SHARDS if f.name != "error_retriable"])
    old_row = {k: v for k, v in row.items() if k != "error_retriable"}
    old_part = tmp_path / "shards" / part_name(0)
    pq.write_table(pa.Table.from_pylist([old_row], schema=old_schema), old_part)
    (read,) = read_dataset(tmp_path, "shards").to_pylist()
    assert read["error_retriable"] is None and read["status"] == "done"
