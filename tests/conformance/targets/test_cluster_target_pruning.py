"""In configurations with crashes, a cluster target deletes the ledgers of finished examples a
batch at a time, never the current example's, and the external target never does (its ledgers
are the operator's business). No cluster: a stand-in store and id source."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pytest

from adapters.zookeeper.errors import ZooKeeperError
from conformance.operations import FreshLedger
from conformance.targets.base import TargetError
from conformance.targets.cluster_target import PRUNE_BATCH
from conformance.targets.external_target import ExternalTarget
from model.bookkeeper.config import ModelConfig
from tests.conformance.targets.test_cluster_target_metadata import CFG, Offline

CRASHES = dataclasses.replace(CFG, max_crashes=1)


class Ids:
    def __init__(self) -> None:
        self.last = 100

    def next(self) -> int:
        self.last += 1
        return self.last

    def close(self) -> None:
        pass


class Store:
    def __init__(self, fail: bool = False) -> None:
        self.removed: list[list[int]] = []
        self.fail = fail

    def ids_ahead(self) -> Ids:
        return Ids()

    def remove_many(self, versions: Mapping[int, int]) -> dict[int, bool]:
        if self.fail:
            raise ZooKeeperError("delete", "connection lost")
        assert set(versions.values()) == {-1}
        self.removed.append(list(versions))
        return dict.fromkeys(versions, True)


def _target(store: Store, cfg: ModelConfig = CRASHES, cls: type[Offline] = Offline) -> Offline:
    target = cls(store)  # type: ignore[arg-type]
    target._cfg = cfg
    target.ledger_id = -1
    return target


def test_a_full_batch_of_finished_ledgers_is_deleted_when_an_example_begins() -> None:
    store = Store()
    target = _target(store)
    ledgers = [target.invoke(FreshLedger()).ledger for _ in range(PRUNE_BATCH + 1)]
    # The first example's ledger to the sixteenth are finished once the seventeenth begins.
    assert store.removed == [ledgers[:PRUNE_BATCH]]
    assert target.ledger_id == ledgers[-1] not in store.removed[0]
    for _ in range(PRUNE_BATCH):
        target.invoke(FreshLedger())
    assert store.removed[1] == [*ledgers[PRUNE_BATCH:], *range(ledgers[-1] + 1, ledgers[-1] + 16)]


def test_without_crashes_nothing_is_deleted() -> None:
    store = Store()
    target = _target(store, cfg=CFG)
    for _ in range(3 * PRUNE_BATCH):
        target.invoke(FreshLedger())
    assert store.removed == []


class OfflineExternal(Offline):
    prunes_ledgers = ExternalTarget.prunes_ledgers


def test_the_external_target_never_prunes() -> None:
    assert ExternalTarget.prunes_ledgers is False
    store = Store()
    target = _target(store, cls=OfflineExternal)
    for _ in range(3 * PRUNE_BATCH):
        target.invoke(FreshLedger())
    assert store.removed == []


def test_a_failed_delete_is_a_retriable_target_error_and_the_batch_is_kept() -> None:
    store = Store(fail=True)
    target = _target(store)
    for _ in range(PRUNE_BATCH):
        target.invoke(FreshLedger())
    with pytest.raises(TargetError, match="finished examples") as raised:
        target.invoke(FreshLedger())
    assert raised.value.retriable
    store.fail = False
    target.invoke(FreshLedger())
    (batch,) = store.removed
    assert len(batch) == len(set(batch)) == PRUNE_BATCH
