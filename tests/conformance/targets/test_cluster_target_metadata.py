"""A cluster target's metadata answers without a cluster (a stand-in ledger store): a lost
compare-and-set is the model's failure, any other refusal says what it was, and no answer at
all (timeout, connection loss) is a target error (undecided), never a match and never a
divergence. The same for the final state: only a missing znode means "never created"."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.cluster.provider import ClusterProvider
from adapters.zookeeper.errors import (
    MetadataVersionMismatch,
    NoSuchLedger,
    ZooKeeperError,
    ZooKeeperTimeout,
)
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, Segment
from conformance.engine import Execution, operation_for
from conformance.observations import Observation
from conformance.targets.base import TargetError
from conformance.targets.cluster_target import ClusterTarget
from model.bookkeeper.action_table import ACTION_TABLE, WriteEnd
from model.bookkeeper.actions import Transition
from model.bookkeeper.config import ModelConfig
from tests.conformance.lying_target import path_to

CFG = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
#: The model's metadata writes that fail (a stale client's close).
FAILING_METADATA_ACTIONS = [
    a.name for a in ACTION_TABLE if a.write_ends is WriteEnd.VERSION_MISMATCH
]
BOOKIES = ("b1", "b2")
OPEN = LedgerMetadata(
    ensemble_size=2,
    write_quorum_size=2,
    ack_quorum_size=1,
    segments=(Segment(0, BOOKIES),),
    digest_type=DigestType.CRC32,
    password=b"bkconform",
)


class Store:
    """Answers reads with ``current`` at znode ``version`` and fails the chosen calls with
    ``fail[name]``. ``version`` None: the version the model's writes lead to (no other writer)."""

    def __init__(
        self, current: LedgerMetadata = OPEN, version: int | None = None, **fail: Exception
    ) -> None:
        self.current = current
        self.version = version
        self.fail = fail
        self.calls: list[tuple[str, Any]] = []

    def ids_ahead(self) -> Any:
        """The target's source of ledger ids: this store's ``allocate_ledger_id``, one by one."""
        store = self

        class Ids:
            def next(self) -> Any:
                return store.allocate_ledger_id()

            def close(self) -> None:
                pass

        return Ids()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args[2] if len(args) > 2 else None))
            if name in self.fail:
                raise self.fail[name]
            if name == "read":
                assert self.version is not None
                return self.current, self.version
            return self.current, 4

        return call


class Offline(ClusterTarget):
    name = "offline"

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store  # type: ignore[assignment]
        self._cfg = CFG
        self.ledger_id = 7
        self.bookie_ids = list(BOOKIES)

    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        raise AssertionError("no cluster here")

    def _zookeeper_client(self) -> Any:
        raise AssertionError("no cluster here")


def _invoke(target: ClusterTarget, before: Transition, step: Transition) -> Observation:
    """What the target answers to the operation the engine makes of ``step``."""
    planned = operation_for(step.label, before.state, step.state)
    assert planned is not None
    return target.invoke(planned[0])


def _answer(store: Store) -> Observation:
    """The target's answer to the model's ``ClientClosesLedgerFail`` (w1's stale close)."""
    (action,) = FAILING_METADATA_ACTIONS
    *_, before, close = path_to(CFG, action)
    if store.version is None:
        store.version = before.state.meta_version - 1
    target = Offline(store)
    try:
        return _invoke(target, before, close)
    finally:
        target.close()


@pytest.mark.parametrize(
    "failure",
    [
        {"read": ZooKeeperTimeout("get /ledgers/L7: no answer within 10s")},
        {"write": ZooKeeperError("set failed: SessionExpiredError")},
    ],
)
def test_no_answer_from_zookeeper_is_a_target_error(failure: dict[str, Exception]) -> None:
    store = Store(OPEN.to_in_recovery(), **failure)
    with pytest.raises(TargetError, match="ZooKeeper did not answer"):
        _answer(store)


def test_connection_loss_on_a_stale_close_is_a_target_error() -> None:
    closed = OPEN.to_in_recovery().to_closed(-1, 0)
    store = Store(closed, write=ZooKeeperError("set failed: ConnectionLoss"))
    with pytest.raises(TargetError, match="ZooKeeper did not answer"):
        _answer(store)


def test_a_lost_compare_and_set_is_the_model_s_failure() -> None:
    store = Store(OPEN.to_in_recovery(), write=MetadataVersionMismatch("/l", 0))
    assert _answer(store) == Observation("metadata", "MetadataVersionMismatch", success=False)


def test_a_stale_close_of_a_closed_ledger_is_decided_by_zookeeper() -> None:
    closed = OPEN.to_in_recovery().to_closed(-1, 0)
    store = Store(closed, write=MetadataVersionMismatch("/l", 0))
    assert _answer(store) == Observation("metadata", "MetadataVersionMismatch", success=False)
    assert ("write", 0) in store.calls  # the writer's own version (model v1 = znode v0)
    # Had ZooKeeper taken it, the stale close succeeded: a divergence, not a match.
    assert _answer(Store(closed)) == Observation("metadata", "OK", success=True)


def test_another_refusal_says_what_it_was_and_diverges() -> None:
    store = Store(OPEN.to_in_recovery(), read=NoSuchLedger(7, "/l"))
    observed = _answer(store)
    assert observed == Observation("metadata", "NoSuchLedger", success=False)


def test_metadata_written_outside_the_model_is_a_target_error() -> None:
    # A real bookie's data-integrity service recovers and closes a limbo ledger by itself:
    # the znode is then ahead of every write the model's clients made.
    closed = OPEN.to_in_recovery().to_closed(0, 10)
    (action,) = FAILING_METADATA_ACTIONS
    *_, before, close = path_to(CFG, action)
    store = Store(closed, version=before.state.meta_version + 1)
    target = Offline(store)
    try:
        with pytest.raises(TargetError, match="changed outside the model"):
            _invoke(target, before, close)
    finally:
        target.close()
    assert [name for name, _ in store.calls] == ["read"]  # nothing was written


def test_an_outage_on_a_metadata_step_makes_the_run_undecided() -> None:
    (action,) = FAILING_METADATA_ACTIONS
    target = Offline(Store(OPEN.to_in_recovery(), read=ZooKeeperTimeout("get: timed out")))
    execution = Execution(CFG, target)
    try:
        for transition in path_to(CFG, action):
            execution.apply(transition)
            if execution.stopped:
                break
        outcome = execution.finish()
    finally:
        target.close()
    assert outcome.verdict == "undecided" and outcome.divergences == []
    assert outcome.error is not None and "ZooKeeper did not answer" in outcome.error


def _snapshot(store: Store, monkeypatch: pytest.MonkeyPatch) -> Any:
    async def nothing(self: ClusterTarget, bookie: int, send_limit: int) -> set[int]:
        await asyncio.sleep(0)
        return set()

    monkeypatch.setattr(ClusterTarget, "_entries_held", nothing)
    if store.version is None:
        store.version = 0  # the final state compares the content, not who wrote it
    target = Offline(store)
    try:
        return target.snapshot(CFG)
    finally:
        target.close()


def test_a_missing_znode_is_a_ledger_never_created(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = _snapshot(Store(read=NoSuchLedger(7, "/l")), monkeypatch)
    assert snapshot.meta_status is None and snapshot.entries == {0: set(), 1: set()}
    assert _snapshot(Store(), monkeypatch).meta_status == "OPEN"


@pytest.mark.parametrize(
    "error", [ZooKeeperTimeout("get: timed out"), ZooKeeperError("get failed: ConnectionLoss")]
)
def test_an_unreadable_znode_is_not_a_ledger_never_created(
    monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    with pytest.raises(TargetError, match="could not read the ledger's metadata"):
        _snapshot(Store(read=error), monkeypatch)


@pytest.mark.cluster
@pytest.mark.parametrize("after", ["ClientStartsRecovery", "RecoveryClientClosesLedger"])
def test_a_stale_close_on_real_zookeeper_fails_as_the_model_says(
    tmp_path: Path, after: str
) -> None:
    # The writer's close after a recovery started (IN_RECOVERY) or finished (CLOSED): the
    # real compare-and-set loses, with the model's reason.
    from conformance.targets.local_target import LocalTarget

    (action,) = FAILING_METADATA_ACTIONS
    path = path_to(CFG, action, after=after)
    target = LocalTarget(work_dir=tmp_path / "cluster")
    target.open(CFG)
    try:
        execution = Execution(CFG, target)
        for transition in path:
            execution.apply(transition)
            assert not execution.stopped, (execution.divergences, execution.error)
        outcome = execution.finish()
    finally:
        target.close()
    assert outcome.verdict == "clean", (outcome.divergences, outcome.error)
    close = outcome.steps[-1]
    assert close.action == action
    assert close.observed == {
        "kind": "metadata",
        "status": "MetadataVersionMismatch",
        "success": False,
    }


@pytest.mark.cluster
def test_zookeeper_stopped_before_an_expected_to_fail_close_is_undecided(tmp_path: Path) -> None:
    # The model expects this close to fail (a lost compare-and-set). A ZooKeeper that answers
    # nothing must not pass for that failure, nor for a divergence: the run is undecided.
    from adapters.cluster.provider import Node
    from conformance.targets.local_target import LocalTarget

    (action,) = FAILING_METADATA_ACTIONS
    *before, close = path_to(CFG, action)
    # Every server is killed first, so the close fails (refused or timed out) on any machine:
    # the 3 s only shortens the wait.
    target = LocalTarget(work_dir=tmp_path / "cluster", request_timeout=3.0)
    target.open(CFG)
    try:
        execution = Execution(CFG, target)
        for transition in before:
            execution.apply(transition)
            assert not execution.stopped, (execution.divergences, execution.error)
        assert target.cluster is not None
        for server in target.cluster.endpoints().zookeeper_servers:
            target.cluster.crash(Node.zookeeper(server))
        execution.apply(close)
        outcome = execution.finish()
    finally:
        target.close()
    assert outcome.verdict == "undecided", (outcome.divergences, outcome.error)
    assert outcome.exit_code == 2
    assert outcome.divergences == [] and outcome.violations == []
    assert outcome.error is not None


def test_metadata_written_between_the_read_and_the_write_is_a_target_error() -> None:
    # The znode is at the model's version when read, then the bookie's own recovery writes it
    # before the target's compare-and-set: the failed write is read again, not taken for the
    # model's own mismatch.
    step = "ClientStartsRecovery"
    *_, before, start = path_to(CFG, step)
    known = before.state.meta_version - 1
    store = Store(OPEN, version=known, write=MetadataVersionMismatch("/l", known))
    reads = iter((known, known + 1))
    original = store.__getattr__("read")

    def read(*args: Any) -> Any:
        current, _ = original(*args)
        return current.to_in_recovery(), next(reads)

    store.read = read  # type: ignore[method-assign]
    target = Offline(store)
    try:
        with pytest.raises(TargetError, match="changed outside the model"):
            _invoke(target, before, start)
    finally:
        target.close()
