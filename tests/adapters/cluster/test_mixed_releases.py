"""A local cluster whose bookies run different BookKeeper releases (``bookie_homes``), and an
operator's upgrade step (``LocalCluster.restart_with_release``: the bookie stopped by SIGTERM,
started again with its data from another release).

Fast: the options and the descriptions. Cluster: one 4.17.3 bookie and two 4.18.0 bookies
serve the suite's wire client (adds, reads, the fence and the recovery reads, whose flagged
requests 4.18.0 encodes differently: docs/findings/lightproto-4.18.0-encodings.md), then the
4.17.3 bookie is upgraded with its data and downgraded again; and a hosted bookie (restarts
without data inside its JVM) restarted into another release gets a new JVM.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.probe import bookie_answers
from adapters.bookkeeper.status import StatusCode
from adapters.cluster import (
    BookieSettings,
    DataLoss,
    InvalidClusterOptions,
    LocalCluster,
    LocalClusterOptions,
    Node,
)
from adapters.cluster.local import describe_mixed_bookies, release_of
from adapters.cluster.network import LOOPBACK
from tests.adapters.cluster.test_integration import (
    KEY,
    add_to_all,
    connect_all,
    create_ledger,
    entry_body,
    fence_all,
    recovery_read,
)
from tests.bookkeeper_fixtures import installed_home


def _distribution(root: Path, version: str) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    launcher = root / "bin" / "bookkeeper"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    (root / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    return root


def test_one_distribution_per_bookie_or_none(tmp_path: Path) -> None:
    old, new = _distribution(tmp_path / "a", "4.17.3"), _distribution(tmp_path / "b", "4.18.0")
    with pytest.raises(InvalidClusterOptions, match="2 bookie homes for 3 bookies"):
        LocalCluster(LocalClusterOptions(bookies=3, bookie_homes=(old, new)))
    cluster = LocalCluster(
        LocalClusterOptions(bookies=3, bookie_homes=(old, new, new), use_bookkeeper_home_env=False)
    )
    assert cluster.planned_homes() == {"bookie1": old, "bookie2": new, "bookie3": new}
    one = LocalCluster(
        LocalClusterOptions(bookies=2, bookkeeper_home=new, use_bookkeeper_home_env=False)
    )
    assert one.planned_homes() == {"bookie1": new, "bookie2": new}


def test_bookies_of_several_releases_are_each_named_with_theirs(tmp_path: Path) -> None:
    old, new = _distribution(tmp_path / "a", "4.17.3"), _distribution(tmp_path / "b", "4.18.0")
    text = describe_mixed_bookies({"bookie1": old, "bookie2": new, "bookie3": new})
    assert text.startswith("BookKeeper 4.17.3 (BOOKKEEPER_HOME")
    assert text.endswith("on bookie2, bookie3")
    assert "on bookie1; BookKeeper 4.18.0 (" in text
    assert "reference bookie" in describe_mixed_bookies({"bookie1": None, "bookie2": new})
    assert release_of(old) == "4.17.3" and release_of(None) == "reference"


# On real bookies ----------------------------------------------------------------------------


async def _serve_the_wire_client(cluster: LocalCluster, ids: list[str], ledger_id: int) -> None:
    """Adds, reads, the fence, a fenced add and a recovery read on every bookie at once."""
    async with AsyncExitStack() as stack:
        clients = await connect_all(stack, cluster, ids)
        for entry in (0, 1):
            added = await add_to_all(clients, ledger_id, entry, entry_body(ledger_id, entry))
            assert [a.status for a in added] == [StatusCode.EOK] * 3
        for client in clients:
            read = await client.read(ledger_id, 1)
            assert read.status is StatusCode.EOK and read.body == entry_body(ledger_id, 1)
        fenced = await fence_all(clients, ledger_id)
        assert [f.status for f in fenced] == [StatusCode.EOK] * 3
        refused = await add_to_all(clients, ledger_id, 2, entry_body(ledger_id, 2))
        assert [r.status for r in refused] == [StatusCode.EFENCED] * 3
        recovered = await recovery_read(clients, ledger_id, 1)
        assert [r.body for r in recovered] == [entry_body(ledger_id, 1)] * 3


async def _still_holds(cluster: LocalCluster, bookie_id: str, ledger_id: int) -> None:
    """Its entries read back, and its fence kept (an add is refused EFENCED)."""
    host, port = cluster.endpoints().bookies[bookie_id]
    async with await BookieClient.connect(host, port, request_timeout=10.0) as client:
        for entry in (0, 1):
            read = await client.read(ledger_id, entry)
            assert read.body == entry_body(ledger_id, entry), (bookie_id, entry)
        body = entry_body(ledger_id, 2)
        assert (await client.add(ledger_id, 2, KEY, body)).status is StatusCode.EFENCED


@pytest.mark.cluster
def test_a_mixed_cluster_serves_the_wire_client_and_a_bookie_is_upgraded_with_its_data(
    work_dir: Path,
) -> None:
    old, new = installed_home("4.17.3"), installed_home("4.18.0")
    options = LocalClusterOptions(
        bookies=3, work_dir=work_dir, bookie_homes=(old, new, new), use_bookkeeper_home_env=False
    )
    with LocalCluster(options) as cluster:
        releases = cluster.bookie_releases()
        assert sorted(releases.values()) == ["4.17.3", "4.18.0", "4.18.0"]
        system = cluster.system_under_test()
        assert "BookKeeper 4.17.3" in system.bookies and "BookKeeper 4.18.0" in system.bookies
        ids = sorted(releases)
        ledger_id, _version, _store = create_ledger(cluster, ids)
        asyncio.run(_serve_the_wire_client(cluster, ids, ledger_id))
        (older,) = [b for b, release in releases.items() if release == "4.17.3"]
        port = cluster.bookie(older).config.port

        upgraded = cluster.restart_with_release(Node.bookie(older), new)

        assert (upgraded.before, upgraded.after) == ("4.17.3", "4.18.0")
        assert upgraded.was_running and upgraded.stopped_cleanly, upgraded.describe()
        assert cluster.bookie(older).config.port == port and older in cluster.registered_bookies()
        assert cluster.bookie_releases()[older] == "4.18.0"
        assert "4.17.3" not in cluster.system_under_test().bookies
        asyncio.run(_still_holds(cluster, older, ledger_id))

        downgraded = cluster.restart_with_release(Node.bookie(older), old)

        assert (downgraded.before, downgraded.after) == ("4.18.0", "4.17.3")
        asyncio.run(_still_holds(cluster, older, ledger_id))


@pytest.mark.cluster
def test_a_hosted_bookie_restarted_into_another_release_gets_a_new_jvm(work_dir: Path) -> None:
    old, new = installed_home("4.17.3"), installed_home("4.18.0")
    options = LocalClusterOptions(
        bookies=2,
        work_dir=work_dir,
        bookie_homes=(old, new),
        use_bookkeeper_home_env=False,
        bookie_settings=BookieSettings(in_jvm_restarts=True),
        start_timeout=120.0,
    )
    with LocalCluster(options) as cluster:
        (older,) = [b for b, r in cluster.bookie_releases().items() if r == "4.17.3"]
        node = Node.bookie(older)
        before = cluster.bookie(older)
        assert before.hosted
        pid = before.process.pid

        cluster.restart_with_release(node, new)

        after = cluster.bookie(older)
        assert after is not before and after.hosted and after.bookkeeper_home == new
        assert after.process.pid != pid and not before.process.is_running()
        # A restart without data now happens inside the new release's JVM.
        new_pid = after.process.pid
        cluster.restart_with_data_loss(node, DataLoss.WIPE)
        assert cluster.bookie(older).process.pid == new_pid
        assert bookie_answers(LOOPBACK, after.config.port)
