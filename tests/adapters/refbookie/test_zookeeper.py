"""The reference bookie with a real ZooKeeper: cookie, registration, limbo from ledger metadata."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.status import StatusCode
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import locate_zookeeper
from adapters.refbookie.process import RefBookieProcess, write_conf
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import DigestType as MetaDigest
from adapters.zookeeper.metadata import LedgerMetadata, LedgerState, Segment
from adapters.zookeeper.registration import list_bookies, read_cookie
from tests.adapters.refbookie.harness import conf_properties
from tests.capability import require

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

KEY = master_key(b"pw")
PEER = "127.0.0.1:3999"


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[str]:
    require("java")
    require("zookeeper")
    install = locate_zookeeper()
    ensemble = ZooKeeperEnsemble(install, tmp_path / "zk")
    try:
        ensemble.start()
        yield ensemble.connect_string
    finally:
        ensemble.stop()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def metadata(bookie_id: str, state: LedgerState) -> LedgerMetadata:
    closed = state is LedgerState.CLOSED
    return LedgerMetadata(
        ensemble_size=2, write_quorum_size=2, ack_quorum_size=2,
        segments=(Segment(0, (bookie_id, PEER)),), digest_type=MetaDigest.CRC32, password=b"pw",
        state=state, last_entry_id=2 if closed else -1, length=3 if closed else 0,
    )  # fmt: skip


def entry(ledger_id: int, entry_id: int) -> bytes:
    return package_entry(
        DigestType.CRC32, b"pw", ledger_id, entry_id, entry_id - 1, entry_id + 1, b"e"
    )


async def add(port: int, ledger_id: int, count: int) -> None:
    async with await BookieClient.connect("127.0.0.1", port) as bookie:
        for e in range(count):
            assert (
                await bookie.add(ledger_id, e, KEY, entry(ledger_id, e))
            ).status is StatusCode.EOK


async def read(port: int, ledger_id: int, entry_id: int) -> StatusCode:
    async with await BookieClient.connect("127.0.0.1", port) as bookie:
        return (await bookie.read(ledger_id, entry_id)).status


def test_registration_cookie_and_limbo_from_zookeeper(tmp_path: Path, zookeeper: str) -> None:
    port = free_port()
    bookie_id = f"127.0.0.1:{port}"
    zk = connect_zookeeper(zookeeper)
    try:
        init_new_cluster(zk, "/ledgers")
        store = LedgerStore(zk, "/ledgers", "hierarchical")
        store.create(7, metadata(bookie_id, LedgerState.OPEN))
        store.create(8, metadata(bookie_id, LedgerState.CLOSED))
        properties = conf_properties(
            tmp_path / "data", bookiePort=str(port),
            metadataServiceUri=f"zk+hierarchical://{zookeeper.replace(',', ';')}/ledgers",
            journalWriteData="false", dataIntegrityChecking="true", zkTimeout="4000",
        )  # fmt: skip
        conf = write_conf(tmp_path / "bk_server.conf", properties)
        with RefBookieProcess(conf, tmp_path / "bookie.log") as bookie:
            assert bookie.bookie_id == bookie_id
            registered = list_bookies(zk, "/ledgers")
            assert bookie_id in registered
            assert (registered[bookie_id].host, registered[bookie_id].port) == ("127.0.0.1", port)
            read_cookie(zk, "/ledgers", bookie_id)  # raises if absent
            asyncio.run(add(port, 7, 3))
            asyncio.run(add(port, 8, 3))
            bookie.kill()
        # The old session's ephemeral node survives the crash until its session expires.
        with RefBookieProcess(conf, tmp_path / "bookie.log") as restarted:
            assert bookie_id in list_bookies(zk, "/ledgers")
            assert asyncio.run(read(port, 7, 0)) is StatusCode.EUNKNOWNLEDGERSTATE
            assert asyncio.run(read(port, 8, 0)) is StatusCode.ENOENTRY  # CLOSED: no limbo
            assert restarted.terminate() == 0
        # A poll: on SIGTERM the bookie unregisters as it stops (BookieServer.stop); had it not,
        # the node would expire with the 4 s zkTimeout, and 10 s is over twice that.
        deadline = time.monotonic() + 10
        while bookie_id in list_bookies(zk, "/ledgers") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert bookie_id not in list_bookies(zk, "/ledgers")
    finally:
        zk.stop()
        zk.close()
