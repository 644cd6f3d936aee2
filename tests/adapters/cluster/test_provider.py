"""The provider interface: capabilities, endpoints, and refusing unsupported faults."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from adapters.cluster.errors import (
    ClusterError,
    ClusterStateFileError,
    FaultNotSupported,
    InvalidClusterOptions,
    ProcessExited,
)
from adapters.cluster.external import ExternalCluster, parse_connect_string
from adapters.cluster.local import LocalCluster, LocalClusterOptions
from adapters.cluster.provider import (
    Capabilities,
    DataLoss,
    Endpoints,
    Fault,
    Node,
    NodeKind,
    metadata_service_uri,
)
from adapters.processes import ManagedProcess


def test_capabilities_are_per_node_kind() -> None:
    caps = Capabilities(bookie=Fault.CRASH | Fault.PAUSE, zookeeper=Fault.CRASH)
    assert caps.supports(NodeKind.BOOKIE, Fault.PAUSE)
    assert caps.supports(NodeKind.BOOKIE, Fault.CRASH | Fault.PAUSE)
    assert not caps.supports(NodeKind.BOOKIE, Fault.CRASH | Fault.WIPE)
    assert not caps.supports(NodeKind.ZOOKEEPER, Fault.PAUSE)
    assert not Capabilities().supports(NodeKind.BOOKIE, Fault.CRASH)
    assert Fault.ALL == (
        Fault.CRASH | Fault.PAUSE | Fault.RESTART | Fault.WIPE | Fault.RESTART_WITH_DATA_LOSS
    )


def test_endpoints_are_frozen_and_round_trip_through_json() -> None:
    bookies = {"127.0.0.1:3181": ("127.0.0.1", 3181)}
    endpoints = Endpoints(
        zookeeper_connect="127.0.0.1:2181",
        ledgers_root="/ledgers",
        metadata_service_uri="zk+hierarchical://127.0.0.1:2181/ledgers",
        bookies=bookies,
        zookeeper_servers={"zk1": ("127.0.0.1", 2181)},
    )
    bookies["127.0.0.1:3182"] = ("127.0.0.1", 3182)  # the caller's dict is not shared
    assert list(endpoints.bookies) == ["127.0.0.1:3181"]
    with pytest.raises(TypeError):
        endpoints.bookies["x"] = ("h", 1)  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        endpoints.ledgers_root = "/other"  # type: ignore[misc]
    assert Endpoints.from_json(endpoints.to_json()) == endpoints


def test_malformed_endpoints_record_is_a_typed_error() -> None:
    with pytest.raises(ClusterStateFileError):
        Endpoints.from_json({"zookeeper_connect": "x"})


def test_metadata_service_uri_separates_servers_with_semicolons() -> None:
    assert (
        metadata_service_uri("127.0.0.1:1,127.0.0.1:2", "/ledgers")
        == "zk+hierarchical://127.0.0.1:1;127.0.0.1:2/ledgers"
    )


def test_external_cluster_injects_no_faults_and_says_so_before_touching_anything() -> None:
    cluster = ExternalCluster("127.0.0.1:1")  # never started: the check must come first
    assert cluster.capabilities() == Capabilities()
    node = Node.bookie("127.0.0.1:3181")
    for inject in (cluster.crash, cluster.pause, cluster.resume, cluster.restart, cluster.wipe):
        with pytest.raises(FaultNotSupported, match="capabilities"):
            inject(node)
    with pytest.raises(FaultNotSupported):
        cluster.restart_with_data_loss(Node.zookeeper("zk1"), DataLoss.WIPE)


def test_connect_string_parsing() -> None:
    assert parse_connect_string("127.0.0.1:2181, localhost:2182") == [
        ("127.0.0.1", 2181),
        ("localhost", 2182),
    ]
    for bad in ("127.0.0.1", "127.0.0.1:2181/chroot", ":2181", "127.0.0.1:x"):
        with pytest.raises(ClusterError):
            parse_connect_string(bad)


def test_external_cluster_refuses_remote_hosts_unless_allowed() -> None:
    with pytest.raises(ClusterError, match="allow_remote"):
        ExternalCluster("10.1.2.3:2181")
    assert ExternalCluster("10.1.2.3:2181", allow_remote=True).servers == [("10.1.2.3", 2181)]


def test_impossible_clusters_are_refused_with_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidClusterOptions, match="ZooKeeper"):
        LocalCluster(LocalClusterOptions(zookeepers=0))
    with pytest.raises(InvalidClusterOptions):
        LocalCluster(LocalClusterOptions(bookies=-1))
    with pytest.raises(InvalidClusterOptions, match="empty command line"):
        ManagedProcess("nothing", [], log_path=tmp_path / "nothing.log")


class _HostedBookie:
    """A hosted bookie whose host exits while building the next bookie (``fails``)."""

    hosted = True

    def __init__(self, fails: bool) -> None:
        self.fails = fails
        self.process = SimpleNamespace(is_running=lambda: True, paused=False)
        self.calls: list[str] = []

    def describe(self) -> str:
        return "bookie 127.0.0.1:3181"

    def restart_empty(self, zk: object) -> None:
        self.calls.append("restart-empty")

    def wait_until_ready(self, zk: object, timeout: float) -> None:
        self.calls.append("wait")
        if self.fails:
            raise ProcessExited("bookie 127.0.0.1:3181 exited with code 3 while starting; log x")


@pytest.mark.parametrize("fails", [False, True])
def test_a_hosted_restart_that_cannot_build_the_next_bookie_falls_back_to_a_new_process(
    fails: bool,
) -> None:
    # The host exited (seen: RocksDB's lock still held in its JVM by the closed bookie): the
    # same fault in a new JVM, by the caller's kill, wipe and start (False), never undecided.
    cluster = SimpleNamespace(_zk=object(), options=SimpleNamespace(start_timeout=1.0))
    bookie = _HostedBookie(fails)
    assert LocalCluster._restart_hosted(cluster, bookie) is (not fails)  # type: ignore[arg-type]
    assert bookie.calls == ["restart-empty", "wait"]
