"""The INSTANCEID that fault calls must name, read from a real ZooKeeper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.agent.client import ProcessState
from adapters.agent.errors import AgentPreconditionFailed, AgentRefused
from adapters.cluster.network import free_ports
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.errors import JavaNotFound, ZooKeeperNotFound
from adapters.installations.zookeeper import locate_zookeeper
from adapters.zookeeper.client import zookeeper_session
from adapters.zookeeper.layout import init_new_cluster
from tests.adapters.agent.conftest import managed_command, running_agent

pytestmark = pytest.mark.cluster


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[ZooKeeperEnsemble]:
    try:
        install = locate_zookeeper()
    except (ZooKeeperNotFound, JavaNotFound) as exc:
        pytest.fail(f"cannot start ZooKeeper for the agent's identity test: {exc}")
    ensemble = ZooKeeperEnsemble(install, tmp_path / "zk")
    try:
        ensemble.start()
        yield ensemble
    finally:
        ensemble.stop()


def agent_args(directory: Path, zookeeper: str) -> list[str]:
    return [
        "--listen", "127.0.0.1:0", "--log-file", str(directory / "managed.log"),
        "--allow-destructive", "--zookeeper", zookeeper, "--ledgers-root", "/bk/ledgers",
    ]  # fmt: skip


@pytest.mark.slow
def test_the_instance_id_is_read_from_zookeeper(
    agent_dir: Path, zookeeper: ZooKeeperEnsemble
) -> None:
    with zookeeper_session(zookeeper.connect_string) as zk:
        zk.ensure_path("/bk")
        instance_id = init_new_cluster(zk, "/bk/ledgers")
    args = agent_args(agent_dir, zookeeper.connect_string)
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        client = agent.client()
        with pytest.raises(AgentRefused, match="not this cluster's INSTANCEID"):
            client.pause("another-cluster")
        assert client.pause(instance_id).state is ProcessState.PAUSED
        # ZooKeeper gone: the id read last still identifies the cluster (an agent must be
        # able to restart the ZooKeeper server it manages), and a wrong one is still refused.
        # Each call first waits out the agent's 3 s ZooKeeper timeout (ZOOKEEPER_TIMEOUT),
        # within the client's default 10 s deadline.
        zookeeper.stop()
        with pytest.raises(AgentRefused, match="not this cluster's INSTANCEID"):
            client.kill("another-cluster")
        assert client.kill(instance_id).state is ProcessState.STOPPED


def test_fault_calls_fail_until_the_instance_id_can_be_read(agent_dir: Path) -> None:
    (closed_port,) = free_ports(1)
    args = agent_args(agent_dir, f"127.0.0.1:{closed_port}")
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        # The agent gives up on the closed port after its 3 s ZOOKEEPER_TIMEOUT: 15 s is 5 times.
        client = agent.client(timeout=15)
        with pytest.raises(AgentPreconditionFailed, match="cannot verify the cluster's identity"):
            client.kill("5b0d7a53-8f0e-4c39-9a0b-6cc7ea1d1f2e")
        assert client.status().state is ProcessState.RUNNING
        # An empty id is refused before ZooKeeper is even asked.
        with pytest.raises(AgentRefused, match="must name the cluster"):
            client.kill("")
