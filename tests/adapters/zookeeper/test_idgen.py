"""Ledger ids as BookKeeper allocates them, in one round trip, and allocated ahead
(``adapters/zookeeper/idgen.py``), on the in-memory ZooKeeper of ``fake_kazoo``. The real
ZooKeeper's answers are tested in ``test_cluster.py`` (cluster tests)."""

from __future__ import annotations

import time

import pytest
from kazoo.exceptions import ConnectionLoss

from adapters.zookeeper.errors import ZooKeeperError
from adapters.zookeeper.idgen import LedgerIdsAhead, allocate_ledger_id, allocate_ledger_ids
from adapters.zookeeper.layout import init_new_cluster
from tests.adapters.zookeeper.fake_kazoo import FakeEnsemble, FakeKazoo

ROOT = "/ledgers"


@pytest.fixture
def zk() -> FakeKazoo:
    ensemble = FakeEnsemble()
    init_new_cluster(ensemble.client(), ROOT)  # type: ignore[arg-type]
    return ensemble.client()


def _settled(zk: FakeKazoo, batches: int) -> None:
    """Wait (a bounded while) until the allocation ahead has made its request."""
    deadline = time.monotonic() + 5
    while zk.calls["transaction"] < batches and time.monotonic() < deadline:
        time.sleep(0.001)
    assert zk.calls["transaction"] >= batches


def test_an_id_takes_one_round_trip_and_leaves_no_znode(zk: FakeKazoo) -> None:
    assert allocate_ledger_id(zk, ROOT) == 0  # type: ignore[arg-type]
    # Whether the 63-bit generator exists and a 31-bit id: asked together, then the delete.
    assert dict(zk.calls) == {"exists": 1, "create": 1, "delete": 1}
    assert zk.ensemble.nodes[f"{ROOT}/idgen"].children == set()


def test_the_63_bit_generator_once_it_exists(zk: FakeKazoo) -> None:
    assert allocate_ledger_id(zk, ROOT) == 0  # type: ignore[arg-type]
    zk.ensemble.create(f"{ROOT}/idgen-long", b"", 0)
    assert allocate_ledger_id(zk, ROOT) == 1 << 32  # type: ignore[arg-type]
    # The 31-bit znode asked for meanwhile is deleted unused.
    assert zk.ensemble.nodes[f"{ROOT}/idgen"].children == set()


def test_a_batch_of_ids_takes_one_round_trip(zk: FakeKazoo) -> None:
    assert allocate_ledger_id(zk, ROOT) == 0  # type: ignore[arg-type]  # makes idgen
    zk.calls.clear()
    assert allocate_ledger_ids(zk, ROOT, count=4) == [1, 2, 3, 4]  # type: ignore[arg-type]
    assert dict(zk.calls) == {"exists": 1, "transaction": 1, "delete": 4}
    assert zk.ensemble.nodes[f"{ROOT}/idgen"].children == set()
    assert allocate_ledger_id(zk, ROOT) == 5  # type: ignore[arg-type]


def test_a_batch_where_it_cannot_be_made_is_one_id_as_bookkeeper_allocates_it(
    zk: FakeKazoo,
) -> None:
    # No idgen parent yet: the transaction fails (it cannot make parents); one id makes it.
    assert allocate_ledger_ids(zk, ROOT, count=4) == [0]  # type: ignore[arg-type]
    zk.ensemble.create(f"{ROOT}/idgen-long", b"", 0)
    assert allocate_ledger_ids(zk, ROOT, count=4) == [1 << 32]  # type: ignore[arg-type]
    # The flat layout's generator is the root's own counter: one id.
    assert len(allocate_ledger_ids(zk, ROOT, "flat", count=4)) == 1  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 1"):
        allocate_ledger_ids(zk, ROOT, count=0)  # type: ignore[arg-type]


def test_ids_ahead_are_the_generator_s_in_order(zk: FakeKazoo) -> None:
    batch = LedgerIdsAhead.BATCH
    ids = LedgerIdsAhead(zk, ROOT)  # type: ignore[arg-type]
    try:
        # None ahead and no idgen parent: the batch fails, one id is allocated now.
        assert ids.next() == 0
        assert [ids.next() for _ in range(batch)] == list(range(1, batch + 1))  # a batch
        ids.allocate_ahead()  # used up: the next batch on the worker
        _settled(zk, 3)
        ids.allocate_ahead()  # under way or done: not another
        assert [ids.next() for _ in range(batch)] == list(range(batch + 1, 2 * batch + 1))
    finally:
        ids.close()
    assert allocate_ledger_id(zk, ROOT) == 2 * batch + 1  # type: ignore[arg-type]
    assert zk.calls["transaction"] == 3


def test_a_failed_allocation_ahead_raises_when_asked_then_starts_again(zk: FakeKazoo) -> None:
    ids = LedgerIdsAhead(zk, ROOT)  # type: ignore[arg-type]
    try:
        assert ids.next() == 0
        ids.allocate_ahead()
        _settled(zk, 2)
        zk.failure = ConnectionLoss()
        assert ids.next() == 1  # a batch allocated before the connection was lost
        for _ in range(LedgerIdsAhead.BATCH - 1):
            ids.next()
        ids.allocate_ahead()
        with pytest.raises(ZooKeeperError, match="ConnectionLoss"):
            ids.next()
        zk.failure = None
        assert ids.next() == LedgerIdsAhead.BATCH + 1
    finally:
        ids.close()
