"""The round trips a cluster target saves stay exact (issue 32's profile): a compare-and-set
from the version this target wrote last is not read first, yet a writer outside the model and
the model's own lost compare-and-set are still told apart; the observer's connections that
read the final state are kept across examples, dropped with the bookie's other connections
when it restarts, and one the bookie dropped is replaced once. No cluster: a stand-in store
with ZooKeeper's compare-and-set and stand-in observer connections."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.bookkeeper.errors import CloseReason, ConnectionClosed, WireError
from adapters.bookkeeper.status import StatusCode
from adapters.zookeeper.errors import MetadataVersionMismatch, NoSuchLedger
from adapters.zookeeper.metadata import LedgerMetadata
from conformance import translation
from conformance.engine import operation_for
from conformance.observations import Observation
from conformance.operations import Crash, CreateLedger, WriteMetadata
from conformance.targets import cluster_target
from conformance.targets.base import TargetError
from model.bookkeeper.actions import init_state
from tests.conformance.lying_target import path_to
from tests.conformance.targets.test_cluster_target_metadata import (
    CFG,
    FAILING_METADATA_ACTIONS,
    Offline,
)


class VersionedStore:
    """One ledger znode with ZooKeeper's versions: ``create`` makes version 0, ``write``
    succeeds only at the znode's version and raises it by one. ``outside_write`` is another
    writer's. Every call is recorded by name."""

    def __init__(self) -> None:
        self.metadata: LedgerMetadata | None = None
        self.version = -1
        self.calls: list[str] = []

    def create(self, ledger_id: int, metadata: LedgerMetadata) -> int:
        self.calls.append("create")
        self.metadata, self.version = metadata, 0
        return 0

    def read(self, ledger_id: int) -> tuple[LedgerMetadata, int]:
        self.calls.append("read")
        if self.metadata is None:
            raise NoSuchLedger(ledger_id, "/l")
        return self.metadata, self.version

    def write(self, ledger_id: int, metadata: LedgerMetadata, expected_version: int) -> int:
        self.calls.append("write")
        if expected_version != self.version:
            raise MetadataVersionMismatch("/l", expected_version)
        self.metadata, self.version = metadata, self.version + 1
        return self.version

    def outside_write(self) -> None:
        assert self.metadata is not None
        self.metadata, self.version = self.metadata.to_in_recovery(), self.version + 1


def _metadata_steps(action: str) -> list[CreateLedger | WriteMetadata]:
    """The metadata operations the engine makes of the model's shortest path to ``action``."""
    path = path_to(CFG, action)
    states = [init_state(CFG), *(t.state for t in path)]
    steps: list[CreateLedger | WriteMetadata] = []
    for before, step in zip(states, path, strict=False):
        planned = operation_for(step.label, before, step.state)
        if planned is not None and isinstance(planned[0], CreateLedger | WriteMetadata):
            steps.append(planned[0])
    return steps


def test_writes_after_the_target_s_own_need_no_read_first() -> None:
    store = VersionedStore()
    target = Offline(store)  # type: ignore[arg-type]
    try:
        steps = _metadata_steps("RecoveryClientClosesLedger")
        assert len(steps) >= 3  # the create, the recovery's mark, its close
        answers = [target.invoke(op) for op in steps]
    finally:
        target.close()
    assert all(answer == Observation("metadata", "OK", success=True) for answer in answers)
    assert store.calls == ["create"] + ["write"] * (len(steps) - 1)


def test_a_writer_outside_the_model_is_still_found_after_the_write_fails() -> None:
    store = VersionedStore()
    target = Offline(store)  # type: ignore[arg-type]
    create, mark, *_ = _metadata_steps("RecoveryClientClosesLedger")
    try:
        assert target.invoke(create).success
        store.outside_write()  # a bookie's data-integrity service recovers the ledger
        with pytest.raises(TargetError, match="changed outside the model") as raised:
            target.invoke(mark)
    finally:
        target.close()
    assert raised.value.retriable is False
    assert store.calls == ["create", "write", "read"]


def test_the_model_s_lost_compare_and_set_is_still_its_failure() -> None:
    (action,) = FAILING_METADATA_ACTIONS
    store = VersionedStore()
    target = Offline(store)  # type: ignore[arg-type]
    try:
        answers = [target.invoke(op) for op in _metadata_steps(action)]
    finally:
        target.close()
    assert answers[-1] == Observation("metadata", "MetadataVersionMismatch", success=False)
    assert all(answer.success for answer in answers[:-1])
    # The stale write failed, then the read told it from a writer outside the model.
    assert store.calls[-2:] == ["write", "read"]


def test_a_write_from_an_unknown_version_reads_first() -> None:
    store = VersionedStore()
    target = Offline(store)  # type: ignore[arg-type]
    create, mark, *_ = _metadata_steps("RecoveryClientClosesLedger")
    try:
        target.invoke(create)
        target.ledger_id += 1  # the next example's ledger: what was written is not its
        store.calls.clear()
        target.invoke(mark)
    finally:
        target.close()
    assert store.calls == ["read", "write"]


# The observer's connections ------------------------------------------------------------------


def _closed(detail: str = "") -> ConnectionClosed:
    return ConnectionClosed("127.0.0.1:1", CloseReason.PEER_CLOSED, detail)


class Observer:
    """A v2 connection that holds ``held`` entry ids (bookie ids), or fails every read."""

    def __init__(self, held: set[int], failure: WireError | None = None) -> None:
        self.held = held
        self.failure = failure
        self.closed = False
        self.reads = 0

    async def read(self, ledger_id: int, entry_id: int) -> Any:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        status = StatusCode.EOK if entry_id in self.held else StatusCode.ENOENTRY
        return type("Answer", (), {"status": status})()

    async def close(self) -> None:
        self.closed = True


class Endpoints:
    def __init__(self) -> None:
        self.bookies = {"b1": ("127.0.0.1", 1), "b2": ("127.0.0.1", 2)}


class Cluster:
    def endpoints(self) -> Endpoints:
        return Endpoints()

    def restart_with_data_loss(self, node: Any, loss: Any) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def observers(monkeypatch: pytest.MonkeyPatch) -> list[Observer]:
    opened: list[Observer] = []
    first_entry = translation.bk_entry_id(1)

    async def connect(host: str, port: int, **_: Any) -> Observer:
        observer = Observer({first_entry})
        opened.append(observer)
        return observer

    monkeypatch.setattr(cluster_target.V2BookieClient, "connect", connect)
    return opened


def _target() -> Offline:
    store = VersionedStore()
    target = Offline(store)  # type: ignore[arg-type]
    target.cluster = Cluster()  # type: ignore[assignment]
    return target


def test_the_observer_s_connections_outlive_an_example(observers: list[Observer]) -> None:
    target = _target()
    try:
        first = target.snapshot(CFG)
        second = target.snapshot(CFG)
    finally:
        target.close()
    assert first.entries == second.entries == {0: {1}, 1: {1}}
    assert len(observers) == 2  # one per bookie, for both snapshots
    assert all(o.reads == 2 * CFG.send_limit for o in observers)
    assert all(o.closed for o in observers)  # closed with the target


def test_a_restarted_bookie_gets_a_new_observer(observers: list[Observer]) -> None:
    target = _target()
    try:
        target.snapshot(CFG)
        target.invoke(Crash(1))
        assert observers[1].closed and not observers[0].closed
        target.snapshot(CFG)
    finally:
        target.close()
    assert len(observers) == 3


def test_an_observer_the_bookie_dropped_is_replaced_once(
    observers: list[Observer], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = _target()
    try:
        target.snapshot(CFG)
        observers[0].failure = _closed()
        snapshot = target.snapshot(CFG)
        assert snapshot.entries == {0: {1}, 1: {1}} and observers[0].closed
        assert len(observers) == 3  # b1's replaced once; b2's kept

        # A new connection that fails too fails the snapshot: one retry, not a loop.
        async def failing(host: str, port: int, **_: Any) -> Observer:
            observer = Observer(set(), _closed("refused at once"))
            observers.append(observer)
            return observer

        monkeypatch.setattr(cluster_target.V2BookieClient, "connect", failing)
        observers[2].failure = _closed()
        with pytest.raises(TargetError, match="refused at once"):
            target.snapshot(CFG)
    finally:
        target.close()
    assert len(observers) == 4
