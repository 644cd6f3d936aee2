"""``LocalCluster`` with the reference bookie test double: start, faults, stop."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster import (
    BookieImplementation,
    BookieSettings,
    DataLoss,
    Fault,
    FaultNotSupported,
    KeepWorkDir,
    LocalCluster,
    LocalClusterOptions,
    Node,
    NodeKind,
    NodeStateError,
    ProcessExited,
    UnknownNode,
    ZooKeeperInstall,
)
from adapters.cluster.bookies import reference_bookie_available
from adapters.cluster.network import LOOPBACK, port_accepts
from adapters.zookeeper.layout import read_instance_id

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(
        not reference_bookie_available(),
        reason="the reference bookie (adapters.refbookie) is absent",
    ),
]


def reference_options(work_dir: Path | None, **overrides: object) -> LocalClusterOptions:
    # BOOKKEEPER_HOME may be set on a developer machine; these tests are about the double.
    values: dict[str, object] = {
        "bookies": 3,
        "work_dir": work_dir,
        "use_bookkeeper_home_env": False,
    }
    values.update(overrides)
    return LocalClusterOptions(**values)  # type: ignore[arg-type]


@pytest.fixture
def cluster(work_dir: Path) -> Iterator[LocalCluster]:
    with LocalCluster(reference_options(work_dir)) as running:
        yield running


def registration_owner(cluster: LocalCluster, bookie_id: str) -> int | None:
    stat = cluster.zookeeper_client.exists(f"/ledgers/available/{bookie_id}")
    return None if stat is None else int(stat.ephemeralOwner)


def test_three_bookies_start_and_register(cluster: LocalCluster) -> None:
    endpoints = cluster.endpoints()
    assert len(endpoints.bookies) == 3
    assert cluster.bookie_implementation() is BookieImplementation.REFERENCE
    registered = cluster.registered_bookies()
    assert sorted(registered) == sorted(endpoints.bookies)
    for bookie_id, (host, port) in endpoints.bookies.items():
        assert bookie_id == f"{host}:{port}" and host == LOOPBACK
        assert (registered[bookie_id].host, registered[bookie_id].port) == (host, port)
        assert port_accepts(host, port)
    # Formatted like `initnewcluster` before any bookie started.
    assert cluster.instance_id == read_instance_id(cluster.zookeeper_client, "/ledgers")
    assert (
        endpoints.metadata_service_uri == f"zk+hierarchical://{endpoints.zookeeper_connect}/ledgers"
    )
    assert cluster.capabilities().supports(NodeKind.BOOKIE, Fault.ALL)
    assert cluster.capabilities().supports(NodeKind.ZOOKEEPER, Fault.ALL)


def test_a_killed_bookie_restarts_and_registers_again(cluster: LocalCluster) -> None:
    bookie_id = next(iter(cluster.endpoints().bookies))
    node = Node.bookie(bookie_id)
    owner_before = registration_owner(cluster, bookie_id)
    assert owner_before is not None
    cluster.crash(node)
    assert not cluster.is_running(node)
    process = cluster.bookie(bookie_id).process
    assert process.returncode == -9
    assert not port_accepts(LOOPBACK, cluster.endpoints().bookies[bookie_id][1], 0.5)
    # The dead process's registration is gone at once, not a session timeout later, so the
    # restarted bookie registers as soon as it boots.
    assert registration_owner(cluster, bookie_id) is None
    cluster.restart(node)
    assert cluster.is_running(node)
    owner_after = registration_owner(cluster, bookie_id)
    assert owner_after is not None and owner_after != owner_before
    assert bookie_id in cluster.registered_bookies()


def test_graceful_restart_of_a_running_bookie(cluster: LocalCluster) -> None:
    node = Node.bookie(next(iter(cluster.endpoints().bookies)))
    old_pid = cluster.bookie(node.id).process.pid
    cluster.restart(node)
    assert cluster.is_running(node)
    assert cluster.bookie(node.id).process.pid != old_pid
    assert node.id in cluster.registered_bookies()


def test_wipe_empties_the_bookie_and_it_comes_back(cluster: LocalCluster) -> None:
    node = Node.bookie(next(iter(cluster.endpoints().bookies)))
    bookie = cluster.bookie(node.id)
    assert any(bookie.config.directory.rglob("*"))
    cluster.wipe(node)
    assert not cluster.is_running(node)
    assert not bookie.config.journal_dir.exists() and not bookie.config.ledger_dir.exists()
    cluster.restart(node)
    assert node.id in cluster.registered_bookies()
    cluster.restart_with_data_loss(node, DataLoss.WIPE)
    assert cluster.is_running(node) and node.id in cluster.registered_bookies()


def test_pause_and_resume_a_bookie(cluster: LocalCluster) -> None:
    node = Node.bookie(next(iter(cluster.endpoints().bookies)))
    cluster.pause(node)
    assert cluster.bookie(node.id).process.paused
    cluster.resume(node)
    assert not cluster.bookie(node.id).process.paused
    assert cluster.is_running(node)


def test_journal_less_restart_needs_a_journal_less_bookie(cluster: LocalCluster) -> None:
    node = Node.bookie(next(iter(cluster.endpoints().bookies)))
    with pytest.raises(FaultNotSupported, match="journal_write_data=False"):
        cluster.restart_with_data_loss(node, DataLoss.UNJOURNALED)
    with pytest.raises(FaultNotSupported, match="transaction log"):
        cluster.restart_with_data_loss(Node.zookeeper("zk1"), DataLoss.UNJOURNALED)
    assert cluster.is_running(node), "a refused fault must not touch the node"


def test_unknown_nodes_are_named_in_the_error(cluster: LocalCluster) -> None:
    with pytest.raises(UnknownNode, match="bookies are"):
        cluster.crash(Node.bookie("127.0.0.1:1"))
    with pytest.raises(UnknownNode, match="servers are"):
        cluster.crash(Node.zookeeper("zk9"))


def test_zookeeper_faults_through_the_provider(cluster: LocalCluster) -> None:
    zk1 = Node.zookeeper("zk1")
    assert cluster.zookeeper_modes() == {"zk1": "standalone"}
    cluster.pause(zk1)
    cluster.resume(zk1)
    cluster.crash(zk1)
    assert cluster.zookeeper_modes() == {"zk1": None}
    cluster.restart(zk1)
    assert cluster.zookeeper_leader() == "zk1"


def test_stop_is_idempotent_and_leaves_nothing_running(work_dir: Path) -> None:
    cluster = LocalCluster(reference_options(work_dir, bookies=1))
    cluster.start()
    pids = [p.pid for p in (cluster.bookie(b).process for b in cluster.endpoints().bookies)]
    cluster.stop()
    cluster.stop()
    for pid in pids:
        assert pid is not None
        assert _is_gone(pid)
    with pytest.raises(NodeStateError, match="twice"):
        cluster.start()


def _is_gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_temporary_work_dir_is_removed_unless_the_start_failed(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Temporary work dirs land under the fixture's directory, where the leftover check looks
    # (a cluster's go to BKCONFORM_SCRATCH, else /dev/shm when it has room: adapters/cluster/
    # scratch.py; the one a failed start keeps would stay in /dev/shm after the test).
    work_dir.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(work_dir))
    monkeypatch.setenv("BKCONFORM_SCRATCH", str(work_dir))
    with LocalCluster(reference_options(None, bookies=0)) as cluster:
        temporary = cluster.work_dir
        assert temporary.is_dir() and cluster.owns_work_dir
    assert not temporary.exists()

    broken = ZooKeeperInstall(classpath=(str(work_dir / "nothing.jar"),), source="a broken test")
    failing = LocalCluster(
        reference_options(None, zookeeper_install=broken, keep_work_dir=KeepWorkDir.ON_FAILURE)
    )
    with pytest.raises(ProcessExited, match="ZooKeeper zk1 exited") as error:
        failing.start()
    assert "ClassNotFoundException" in str(error.value) or "Could not find" in str(error.value)
    assert (failing.work_dir / "logs" / "zk1.log").is_file()
    assert failing.work_dir.parent == work_dir


def test_ensemble_and_bookies_together(work_dir: Path) -> None:
    with LocalCluster(reference_options(work_dir, bookies=2, zookeepers=3)) as cluster:
        endpoints = cluster.endpoints()
        assert len(endpoints.zookeeper_servers) == 3
        assert endpoints.zookeeper_connect.count(",") == 2
        leader = cluster.zookeeper_leader()
        assert leader is not None
        cluster.crash(Node.zookeeper(leader))
        # The bookies keep their sessions through a leader change.
        bookie = Node.bookie(next(iter(endpoints.bookies)))
        cluster.crash(bookie)
        cluster.restart(bookie)
        assert bookie.id in cluster.registered_bookies()
        cluster.restart(Node.zookeeper(leader))


def test_journal_less_bookies_restart_after_a_crash(work_dir: Path) -> None:
    settings = BookieSettings(journal_write_data=False, data_integrity_checking=True)
    with LocalCluster(reference_options(work_dir, bookies=1, bookie_settings=settings)) as cluster:
        node = Node.bookie(next(iter(cluster.endpoints().bookies)))
        conf = cluster.bookie(node.id).config.config_path.read_text()
        assert "journalWriteData=false" in conf and "dataIntegrityChecking=true" in conf
        cluster.restart_with_data_loss(node, DataLoss.UNJOURNALED)
        assert cluster.is_running(node) and node.id in cluster.registered_bookies()


def test_bookkeeper_home_env_is_ignored_when_asked(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOKKEEPER_HOME", os.fspath(work_dir / "not-a-distribution"))
    with LocalCluster(reference_options(work_dir, bookies=1)) as cluster:
        assert cluster.bookie_implementation() is BookieImplementation.REFERENCE
