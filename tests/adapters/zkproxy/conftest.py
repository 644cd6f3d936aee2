"""Fixtures: a stand-in ZooKeeper with a proxy in front of it (fast tests), and a real
standalone ZooKeeper for the ``cluster`` tests (started once per session under the session's
base temporary directory, so the suite's leftover check sees its process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.errors import ZooKeeperNotFound
from adapters.installations.zookeeper import locate_zookeeper
from adapters.zkproxy import ZooKeeperProxy
from tests.adapters.zkproxy.fake_server import FakeZooKeeper


@pytest.fixture
def fake_zookeeper() -> Iterator[FakeZooKeeper]:
    with FakeZooKeeper() as server:
        yield server


@pytest.fixture
def fake_proxy(fake_zookeeper: FakeZooKeeper) -> Iterator[ZooKeeperProxy]:
    with ZooKeeperProxy("127.0.0.1", fake_zookeeper.port, call_timeout=5.0) as proxy:
        yield proxy
    assert proxy.leftover_tasks == []


@pytest.fixture(scope="session")
def real_zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """A real standalone ZooKeeper (250 ms ticks: sessions of 0.5 to 5 s)."""
    try:
        install = locate_zookeeper()
    except ZooKeeperNotFound as exc:
        pytest.fail(f"cannot start ZooKeeper for the cluster tests: {exc}")
    server = ZooKeeperEnsemble(install, tmp_path_factory.mktemp("zkproxy-zookeeper"), size=1)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def real_proxy(real_zookeeper: ZooKeeperEnsemble) -> Iterator[ZooKeeperProxy]:
    [(host, port)] = real_zookeeper.client_endpoints().values()
    with ZooKeeperProxy(host, port, call_timeout=5.0) as proxy:
        yield proxy
    assert proxy.leftover_tasks == []
