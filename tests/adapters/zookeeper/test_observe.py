"""Reading ``srvr`` answers, and sampling a real server."""

from __future__ import annotations

import pytest

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.zookeeper.observe import LeaderSampler, parse_srvr, server_status

SRVR = """Zookeeper version: 3.9.3-..., built on 2024-10-17 23:21 UTC
Latency min/avg/max: 0/0.0/0
Received: 12
Sent: 11
Connections: 1
Outstanding: 0
Zxid: 0x30000001f
Mode: leader
Node count: 5
"""


def test_parse_srvr_reads_mode_and_zxid() -> None:
    assert parse_srvr(SRVR) == ("leader", 0x30000001F)


def test_a_server_that_does_not_serve_has_no_status() -> None:
    assert parse_srvr("This ZooKeeper instance is not currently serving requests\n") is None


def test_an_unreachable_server_has_no_status() -> None:
    # Port 9 (discard) is closed on loopback in the test environment; the probe must return.
    assert server_status("zk9", "127.0.0.1", 9, timeout=0.5) is None


@pytest.mark.cluster
def test_sampler_sees_the_standalone_server(zookeeper_server: ZooKeeperEnsemble) -> None:
    sampler = LeaderSampler(zookeeper_server.client_endpoints(), period=0.05)
    with sampler:
        sampler.sample_once()
    assert sampler.last["zk1"].mode == "standalone"
    assert sampler.probes >= 1
    assert sampler.leader_samples() == []  # standalone is not a leader
