"""``LocalCluster`` with a real BookKeeper: ``BOOKKEEPER_HOME`` when it is set, else the
default version installed from Maven Central (the ``bookkeeper_home`` fixture, in
``tests/bookkeeper_fixtures.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import (
    BookieImplementation,
    BookieSettings,
    DataLoss,
    LedgerStorage,
    LocalCluster,
    LocalClusterOptions,
    Node,
)
from adapters.cluster.network import LOOPBACK, port_accepts

pytestmark = [pytest.mark.cluster]


def real_options(work_dir: Path, home: Path, **overrides: object) -> LocalClusterOptions:
    values: dict[str, object] = {
        "bookies": 3,
        "work_dir": work_dir,
        "bookkeeper_home": home,
        "start_timeout": 120.0,
    }
    values.update(overrides)
    return LocalClusterOptions(**values)  # type: ignore[arg-type]


@pytest.fixture
def cluster(work_dir: Path, bookkeeper_home: Path) -> Iterator[LocalCluster]:
    with LocalCluster(real_options(work_dir, bookkeeper_home)) as running:
        yield running


def test_real_bookies_start_and_register(cluster: LocalCluster) -> None:
    assert cluster.bookie_implementation() is BookieImplementation.BOOKKEEPER
    endpoints = cluster.endpoints()
    assert sorted(cluster.registered_bookies()) == sorted(endpoints.bookies)
    for host, port in endpoints.bookies.values():
        assert host == LOOPBACK and port_accepts(host, port)
    # The bookie wrote its cookie on first boot, under the id we configured.
    for bookie_id in endpoints.bookies:
        assert cluster.zookeeper_client.exists(f"/ledgers/cookies/{bookie_id}") is not None


def test_real_bookie_crash_restart_and_wipe(cluster: LocalCluster) -> None:
    node = Node.bookie(next(iter(cluster.endpoints().bookies)))
    cluster.crash(node)
    assert not cluster.is_running(node)
    cluster.restart(node)
    assert node.id in cluster.registered_bookies()
    # Without dataIntegrityStampMissingCookies the wipe also removes the cookie, or the
    # bookie would refuse to boot on empty disks.
    cluster.restart_with_data_loss(node, DataLoss.WIPE)
    assert node.id in cluster.registered_bookies()


def test_real_bookies_with_db_storage_and_no_journal(work_dir: Path, bookkeeper_home: Path) -> None:
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB,
        journal_write_data=False,
        data_integrity_checking=True,
        stamp_missing_cookies=True,
    )
    with LocalCluster(
        real_options(work_dir, bookkeeper_home, bookies=2, bookie_settings=settings)
    ) as cluster:
        node = Node.bookie(next(iter(cluster.endpoints().bookies)))
        cluster.restart_with_data_loss(node, DataLoss.UNJOURNALED)
        assert node.id in cluster.registered_bookies()
        # DbLedgerStorage keeps its RocksDB entry-location index in <ledger dir>/current/.
        ledger_dir = cluster.bookie(node.id).config.ledger_dir
        assert (ledger_dir / "current" / "locations").is_dir()
