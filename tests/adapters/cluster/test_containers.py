"""``ContainerCluster`` on a real engine: 3 ZooKeeper + 3 reference-bookie containers.

The session fixture makes this run on a fresh machine as root: it installs podman, runc and
debootstrap if no engine answers, starts podman's Docker API service (stopped again at the
end if it started it) and builds the local images (cached: later runs only check tags).

One cluster serves the tests in order: the adapters' integration check through the published
ports, a partition of one bookie from the other bookies and ZooKeeper (and its healing), a
kill and restart of a ZooKeeper server and of a bookie, pause/resume and wipe. Afterwards no
container or network of the cluster is left (asserted through the engine's API).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from adapters.bookkeeper.status import StatusCode
from adapters.cluster import BookieSettings, LedgerStorage, Node
from adapters.cluster.container_engine import (
    ContainerEngine,
)
from adapters.cluster.container_images import ImageBuilder, ImageSet
from adapters.cluster.container_labels import CLUSTER_LABEL, labelled_resources
from adapters.cluster.container_netns import run_in_network_namespace
from adapters.cluster.container_partitions import PartitionMethod
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions
from adapters.cluster.errors import ClusterError, ProcessExited
from adapters.cluster.provider import DataLoss, NodeKind
from tests.adapters.cluster.test_integration import (
    connect_all,
    create_ledger,
    write_entries,
)
from tests.adapters.cluster.test_integration import (
    test_ledger_life_write_read_fence_recover_close as ledger_life_check,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="session")
def engine(container_engine: ContainerEngine) -> ContainerEngine:
    return container_engine


@pytest.fixture(scope="session")
def images(engine: ContainerEngine) -> ImageSet:
    return ImageBuilder(engine).ensure_all().image_set()


def leftovers(engine: ContainerEngine, cluster_id: str) -> dict[str, list[str]]:
    client = engine.client()
    try:
        return labelled_resources(client, {CLUSTER_LABEL: cluster_id})
    finally:
        client.close()


@pytest.fixture(scope="module")
def cluster(
    engine: ContainerEngine, images: ImageSet, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ContainerCluster]:
    options = ContainerClusterOptions(
        zookeepers=3,
        bookies=3,
        images=images,
        engine=engine,
        work_dir=tmp_path_factory.mktemp("containers"),
    )
    running = ContainerCluster(options)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        assert leftovers(engine, running.cluster_id) == {"containers": [], "networks": []}


def bookie_ids(cluster: ContainerCluster) -> list[str]:
    return sorted(cluster.endpoints().bookies)


def test_cluster_serves_through_published_ports(cluster: ContainerCluster) -> None:
    endpoints = cluster.endpoints()
    assert len(endpoints.bookies) == 3 and len(endpoints.zookeeper_servers) == 3
    for host, _port in [*endpoints.bookies.values(), *endpoints.zookeeper_servers.values()]:
        assert host == "127.0.0.1"
    assert sorted(cluster.registered_bookies()) == bookie_ids(cluster)
    modes = sorted(mode or "down" for mode in cluster.zookeeper_modes().values())
    assert modes == ["follower", "follower", "leader"]
    assert cluster.instance_id


def test_ledger_life_on_containers(cluster: ContainerCluster) -> None:
    # The adapters' integration check, unchanged, through the published ports.
    ledger_life_check(cluster)


def _connect_inside(cluster: ContainerCluster, node: Node, peer: Node, port: int) -> bool:
    """True when ``node``'s network namespace opens a TCP connection to ``peer`` within 2 s."""
    code, _ = run_in_network_namespace(
        cluster._node(node).wrapped,
        [
            sys.executable,
            "-c",
            "import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 2)",
            cluster.container_address(peer),
            str(port),
        ],
        docker_host=cluster._engine().docker_host,
    )
    return code == 0


def test_partition_a_bookie_from_bookies_and_zookeeper_then_heal(
    cluster: ContainerCluster,
) -> None:
    ids = bookie_ids(cluster)
    victim, other = Node.bookie(ids[0]), Node.bookie(ids[1])
    other_port = cluster.endpoints().bookies[other.id][1]
    assert _connect_inside(cluster, victim, Node.zookeeper("zk1"), 2181)
    assert _connect_inside(cluster, victim, other, other_port)

    ledger_id, _, _ = create_ledger(cluster, [victim.id])
    cluster.partition(victim)
    try:
        assert len(cluster.partitioned_from(victim)) == 5
        for zk in ("zk1", "zk2", "zk3"):
            assert not _connect_inside(cluster, victim, Node.zookeeper(zk), 2181)
        assert not _connect_inside(cluster, victim, other, other_port)

        # The host-side client still reaches the partitioned bookie.
        async def write() -> None:
            async with AsyncExitStack() as stack:
                await write_entries(await connect_all(stack, cluster, [victim.id]), ledger_id, 2)

        asyncio.run(write())

        # ZooKeeper loses the bookie: its session expires and its registration goes. A poll:
        # 30 s is over 6 times the bookie's 4 s session (BookieSettings.session_timeout_ms).
        deadline = time.monotonic() + 30
        while victim.id in cluster.registered_bookies() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert victim.id not in cluster.registered_bookies()
    finally:
        cluster.heal(victim)
    assert cluster.partitioned_from(victim) == ()
    assert _connect_inside(cluster, victim, Node.zookeeper("zk2"), 2181)
    assert _connect_inside(cluster, victim, other, other_port)
    # The reference bookie does not re-register after losing its session: restart it.
    cluster.restart(victim)
    assert victim.id in cluster.registered_bookies()

    async def read_back() -> list[StatusCode]:
        async with AsyncExitStack() as stack:
            (client,) = await connect_all(stack, cluster, [victim.id])
            return [(await client.read(ledger_id, e)).status for e in range(2)]

    assert asyncio.run(read_back()) == [StatusCode.EOK] * 2


def test_partition_by_disconnecting_from_the_network(cluster: ContainerCluster) -> None:
    victim = Node.zookeeper("zk3")
    address = cluster.container_address(victim)
    with pytest.raises(ClusterError, match="chosen peers"):
        cluster.partition(victim, [Node.zookeeper("zk1")], PartitionMethod.DISCONNECT)
    cluster.partition(victim, method=PartitionMethod.DISCONNECT)
    try:
        assert cluster.container_address(victim) == ""
        assert cluster.zookeeper_modes()["zk3"] is None  # its published port is gone too
    finally:
        cluster.heal(victim)
    assert cluster.container_address(victim) == address
    deadline = time.monotonic() + 60
    while cluster.zookeeper_modes()["zk3"] is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.zookeeper_modes()["zk3"] in ("leader", "follower")


def test_kill_and_restart_a_zookeeper_server(cluster: ContainerCluster) -> None:
    leader = cluster.zookeeper_leader()
    assert leader is not None
    node = Node.zookeeper(leader)
    cluster.crash(node)
    assert cluster.container_status(node) == "exited"
    assert cluster.zookeeper_modes()[leader] is None
    # The other two elect a new leader and keep serving.
    deadline = time.monotonic() + 60
    while cluster.zookeeper_leader() in (None, leader) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert cluster.zookeeper_leader() not in (None, leader)
    assert sorted(cluster.registered_bookies())  # the session survives on the others
    cluster.restart(node)
    assert cluster.is_running(node)
    assert cluster.zookeeper_modes()[leader] in ("leader", "follower")


def test_kill_restart_pause_and_wipe_a_bookie(cluster: ContainerCluster) -> None:
    ids = bookie_ids(cluster)
    node = Node.bookie(ids[2])
    ledger_id, _, _ = create_ledger(cluster, [node.id])

    async def write() -> None:
        async with AsyncExitStack() as stack:
            await write_entries(await connect_all(stack, cluster, [node.id]), ledger_id, 3)

    async def read_back(timeout: float = 10.0) -> list[StatusCode]:
        async with AsyncExitStack() as stack:
            clients = await asyncio.wait_for(connect_all(stack, cluster, [node.id]), timeout)
            return [
                (await asyncio.wait_for(clients[0].read(ledger_id, e), timeout)).status
                for e in range(3)
            ]

    asyncio.run(write())
    cluster.crash(node)
    assert cluster.container_status(node) == "exited"
    cluster.restart(node)
    assert asyncio.run(read_back()) == [StatusCode.EOK] * 3  # journaled: kept

    cluster.pause(node)
    try:
        assert cluster.container_status(node) == "paused"
        # A paused bookie never answers: the read fails whatever the machine's speed, and the
        # 1 s only shortens the wait.
        with pytest.raises((TimeoutError, OSError)):
            asyncio.run(read_back(timeout=1.0))
    finally:
        cluster.resume(node)
    assert asyncio.run(read_back()) == [StatusCode.EOK] * 3

    cluster.restart_with_data_loss(node)  # wipe and start empty
    assert asyncio.run(read_back()) == [StatusCode.ENOLEDGER] * 3


def test_unjournaled_bookie_loses_entries_and_enters_limbo(
    engine: ContainerEngine, images: ImageSet, tmp_path: Path
) -> None:
    """DbLedgerStorage without a journal, data integrity checking on: limbo after a crash."""
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB,
        journal_write_data=False,
        data_integrity_checking=True,
        stamp_missing_cookies=True,
        extra={"flushInterval": "3600000"},
    )
    options = ContainerClusterOptions(
        zookeepers=1,
        bookies=1,
        images=images,
        engine=engine,
        work_dir=tmp_path / "limbo",
        bookie_settings=settings,
    )
    with ContainerCluster(options) as cluster:
        (bookie_id,) = bookie_ids(cluster)
        ledger_id, _, _ = create_ledger(cluster, [bookie_id])

        async def write() -> None:
            async with AsyncExitStack() as stack:
                await write_entries(await connect_all(stack, cluster, [bookie_id]), ledger_id, 3)

        async def read_back() -> list[StatusCode]:
            async with AsyncExitStack() as stack:
                (client,) = await connect_all(stack, cluster, [bookie_id])
                return [(await client.read(ledger_id, e)).status for e in range(3)]

        asyncio.run(write())
        cluster.restart_with_data_loss(Node.bookie(bookie_id), how=DataLoss.UNJOURNALED)
        assert asyncio.run(read_back()) == [StatusCode.EUNKNOWNLEDGERSTATE] * 3
    assert leftovers(engine, cluster.cluster_id) == {"containers": [], "networks": []}


def test_failed_start_removes_every_container_and_the_network(
    engine: ContainerEngine, images: ImageSet, tmp_path: Path
) -> None:
    # ZooKeeper starts; the second bookie refuses its configuration and its container exits.
    options = ContainerClusterOptions(
        zookeepers=1,
        bookies=2,
        images=images,
        engine=engine,
        work_dir=tmp_path / "broken",
        bookie_settings=BookieSettings(extra={"journalWriteData": "sometimes"}),
    )
    cluster = ContainerCluster(options)
    with pytest.raises(ProcessExited, match="journalWriteData"):
        cluster.start()
    assert leftovers(engine, cluster.cluster_id) == {"containers": [], "networks": []}


def test_missing_image_fails_clearly_and_leaves_nothing(
    engine: ContainerEngine, images: ImageSet, tmp_path: Path
) -> None:
    options = ContainerClusterOptions(
        zookeepers=1,
        bookies=1,
        images=ImageSet(zookeeper="localhost/bkconform/no-such-image:0", bookie=images.bookie),
        engine=engine,
        work_dir=tmp_path / "missing",
    )
    cluster = ContainerCluster(options)
    with pytest.raises(ClusterError, match="no-such-image"):
        cluster.start()
    assert leftovers(engine, cluster.cluster_id) == {"containers": [], "networks": []}


def test_node_kinds_are_reported(cluster: ContainerCluster) -> None:
    assert {n.kind for n in cluster._nodes()} == {NodeKind.BOOKIE, NodeKind.ZOOKEEPER}
    with pytest.raises(ClusterError, match="no bookie"):
        cluster.crash(Node.bookie("127.0.0.1:1"))


def test_cli_up_status_down(
    engine: ContainerEngine,
    images: ImageSet,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from conformance.cli import main

    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DOCKER_HOST", engine.docker_host)
    assert main(["docker", "up", "--zk", "1", "--bookies", "1", "--limbo"]) == 0
    out = capsys.readouterr().out
    cluster_id = out.split("cluster: ", 1)[1].split()[0]
    assert leftovers(engine, cluster_id)["containers"]  # left running, as promised
    assert main(["docker", "status"]) == 0
    assert f"bkconform-{cluster_id}-bookie1" in capsys.readouterr().out
    assert main(["docker", "down"]) == 0  # the last `up`
    assert leftovers(engine, cluster_id) == {"containers": [], "networks": []}
    assert not (tmp_path / "home" / "docker" / "clusters" / cluster_id).exists()
