"""Network partitions: each server in its own network namespace, one cut off and healed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from adapters.cluster.errors import FaultNotSupported
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.zookeeper.client import zookeeper_session
from tests.capability import require


def test_isolate_needs_an_ensemble_with_partitions(tmp_path: Path) -> None:
    install = ZooKeeperInstall(("unused.jar",), "test")
    ensemble = ZooKeeperEnsemble(install, tmp_path, size=3)
    with pytest.raises(FaultNotSupported, match="partitions=True"):
        ensemble.isolate("zk1")


def namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10)
    return [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]


@pytest.mark.cluster
def test_isolated_leader_is_replaced_and_rejoins(work_dir: Path) -> None:
    require("network-namespaces")
    before = set(namespaces())
    ensemble = ZooKeeperEnsemble(locate_zookeeper(), work_dir, size=3, partitions=True)
    try:
        ensemble.start()
        assert all(s.host.startswith("10.213.0.") for s in ensemble.servers.values())
        assert len(set(namespaces()) - before) == 4  # hub + one per server
        with ensemble.network(), zookeeper_session(ensemble.connect_string) as zk:
            zk.create("/before", b"1")
        old = ensemble.leader()
        assert old is not None
        ensemble.isolate(old)
        # Elections with a silent peer are slow (connect timeouts); allow for it. A poll: the
        # followers drop the leader after syncLimit (10 ticks of 250 ms) and each election
        # attempt waits at most cnxTimeout (1 s) on it, so 60 s is many rounds.
        deadline = time.monotonic() + 60
        while True:
            modes = ensemble.modes()
            if modes[old] is None and "leader" in modes.values():
                break
            assert time.monotonic() < deadline, f"no new leader without {old}: {modes}"
            time.sleep(0.2)
        majority = ",".join(
            f"{host}:{port}"
            for name, (host, port) in ensemble.client_endpoints().items()
            if name != old
        )
        with ensemble.network(), zookeeper_session(majority) as zk:
            zk.create("/during", b"2")
        ensemble.reconnect(old)
        ensemble.wait_until_serving(list(ensemble.servers), 60)
        with ensemble.network(), zookeeper_session(ensemble.connect_string) as zk:
            assert zk.exists("/during") is not None
    finally:
        ensemble.stop()
    assert set(namespaces()) <= before  # every namespace it created is gone
