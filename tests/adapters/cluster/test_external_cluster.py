"""``ExternalCluster`` attached to a cluster that a ``LocalCluster`` runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.cluster import (
    Capabilities,
    ClusterError,
    ClusterUnreachable,
    ExternalCluster,
    LocalCluster,
    LocalClusterOptions,
    Node,
)
from adapters.cluster.bookies import reference_bookie_available
from adapters.cluster.network import free_ports

pytestmark = pytest.mark.cluster


def test_unreachable_zookeeper_fails_within_the_timeout() -> None:
    (port,) = free_ports(1)  # nothing listens there
    cluster = ExternalCluster(f"127.0.0.1:{port}", timeout=1.0)
    started = time.monotonic()
    with pytest.raises(ClusterUnreachable, match="cannot reach ZooKeeper"):
        cluster.start()
    assert time.monotonic() - started < 10  # 10 times the 1 s connect timeout it gives up at


@pytest.mark.skipif(not reference_bookie_available(), reason="adapters.refbookie is absent")
def test_discovers_the_bookies_of_a_running_cluster(work_dir: Path) -> None:
    options = LocalClusterOptions(bookies=2, work_dir=work_dir, use_bookkeeper_home_env=False)
    with LocalCluster(options) as local:
        expected = local.endpoints()
        with ExternalCluster(expected.zookeeper_connect, timeout=5.0) as external:
            seen = external.endpoints()
            assert dict(seen.bookies) == dict(expected.bookies)
            assert seen.metadata_service_uri == expected.metadata_service_uri
            assert external.capabilities() == Capabilities()
            assert list(external.zookeeper_modes().values()) == ["standalone"]
            # Membership is read live: a crashed bookie disappears once its session expires.
            crashed = next(iter(expected.bookies))
            local.crash(Node.bookie(crashed))
            # A poll: 20 s is 5 times the bookie's 4 s ZooKeeper session (session_timeout_ms),
            # the longest its registration can outlive the crash.
            deadline = time.monotonic() + 20
            while crashed in external.endpoints().bookies:
                assert time.monotonic() < deadline, "crashed bookie still registered"
                time.sleep(0.2)
        with pytest.raises(ClusterError, match="no BookKeeper cluster under /elsewhere"):
            ExternalCluster(expected.zookeeper_connect, "/elsewhere", timeout=5.0).start()
