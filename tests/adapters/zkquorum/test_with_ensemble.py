"""The quorum proxy between real servers (the default ZooKeeper release, three servers): every
learner's sync and the broadcast pass through it decoded, in the protocol's order; a held
COMMIT keeps its follower behind until it is released."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from adapters.cluster.zookeeper import ZooKeeperEnsemble, ZooKeeperTuning
from adapters.installations.zookeeper import locate_zookeeper
from adapters.zkquorum.packets import PacketType, QuorumPacket
from adapters.zkquorum.proxy import Action, Direction, QuorumMatch, QuorumProxy
from adapters.zookeeper.observe import server_status

pytestmark = pytest.mark.cluster

SYNC = ["FOLLOWERINFO", "LEADERINFO", "ACKEPOCH", "sync", "NEWLEADER", "UPTODATE"]


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[QuorumProxy, ZooKeeperEnsemble]]:
    # A follower whose leader says nothing for syncLimit ticks drops the connection and syncs
    # again: a held packet holds the PINGs behind it, so give the holds 10 s.
    tuning = ZooKeeperTuning(sync_limit=40)
    with QuorumProxy() as proxy:
        ensemble = ZooKeeperEnsemble(
            locate_zookeeper(), tmp_path, size=3, tuning=tuning, quorum_proxy=proxy
        )
        ensemble.start()
        try:
            yield proxy, ensemble
        finally:
            ensemble.stop()


def _client(hosts: str) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=10)
    client.start(timeout=10)
    return client


def test_every_learner_syncs_and_follows_through_the_proxy(
    proxied: tuple[QuorumProxy, ZooKeeperEnsemble],
) -> None:
    proxy, ensemble = proxied
    client = _client(ensemble.connect_string)
    try:
        client.create("/through", b"the proxy")
    finally:
        client.stop()
        client.close()
    commit = QuorumMatch(frozenset({PacketType.COMMIT}), Direction.TO_LEARNER)
    proxy.wait_for(commit, timeout=10)
    leader = ensemble.leader()
    assert leader is not None
    records = proxy.records()
    # Each follower's connection to the leader (an election may have tried another first).
    links = {r.link for r in records if f"zk{r.link.leader}" == leader}
    assert len(links) == 2
    for link in links:
        names = [
            "sync" if r.frame.name in ("DIFF", "SNAP", "TRUNC") else r.frame.name
            for r in records
            if r.link == link and isinstance(r.frame, QuorumPacket)
        ]
        sync = [name for name in names if name in SYNC]
        assert sync == SYNC, (link, names)
        assert names.index("UPTODATE") < names.index("PROPOSAL") < names.index("COMMIT")
    proposals = [
        r.frame.txn_header()
        for r in records
        if isinstance(r.frame, QuorumPacket) and r.frame.type == PacketType.PROPOSAL
    ]
    assert "create" in {h.op for h in proposals if h is not None}
    assert all(r.state == "forwarded" for r in records)


def _applied(ensemble: ZooKeeperEnsemble, name: str) -> int:
    """The last transaction the server applied (``srvr``'s Zxid)."""
    server = ensemble.server(name)
    status = server_status(name, server.host, server.client_port, timeout=2.0)
    assert status is not None, f"{name} does not serve"
    return status.zxid


def _committed_to(proxy: QuorumProxy, link: object, timeout: float = 10.0) -> None:
    """Until every PROPOSAL the leader sent on ``link`` has had its COMMIT sent there too: the
    next COMMIT is then a later write's. (A fresh-clone CI's hold caught the COMMIT of the
    writer's own session, still on its way when the rule was set.)"""
    deadline = time.monotonic() + timeout
    while True:
        sent = [
            r.frame
            for r in proxy.records()
            if r.link == link
            and r.direction is Direction.TO_LEARNER
            and isinstance(r.frame, QuorumPacket)
        ]
        proposed = {f.zxid for f in sent if f.type == PacketType.PROPOSAL}
        committed = {f.zxid for f in sent if f.type == PacketType.COMMIT}
        if proposed <= committed:
            return
        assert time.monotonic() < deadline, f"not committed on {link}: {proposed - committed}"
        time.sleep(0.01)


def test_a_held_commit_keeps_its_follower_behind_until_released(
    proxied: tuple[QuorumProxy, ZooKeeperEnsemble],
) -> None:
    proxy, ensemble = proxied
    leader_name = ensemble.leader()
    link = next(r.link for r in proxy.records() if f"zk{r.link.leader}" == leader_name)
    follower = f"zk{link.learner}"
    leader = ensemble.server(f"zk{link.leader}")
    # Not through the held follower: it would answer the write only after the COMMIT.
    writer = _client(f"{leader.host}:{leader.client_port}")
    try:
        _committed_to(proxy, link)
        commit = QuorumMatch(frozenset({PacketType.COMMIT}), Direction.TO_LEARNER, link)
        proxy.add_rule(commit, Action.HOLD, count=1)
        mark = proxy.mark()
        writer.create("/held", b"x")  # the leader and the other follower make the quorum
        created = writer.exists("/held")
        held = proxy.wait_for(commit, timeout=10, since=mark)
        assert created is not None and held.frame.zxid == created.czxid  # type: ignore[union-attr]
        assert held.state == "held" and proxy.held() == [held]
        assert _applied(ensemble, follower) < created.czxid  # not applied there yet
        # The hold lasted a few local calls (the srvr probe stops at 2 s), well under the 10 s
        # syncLimit the fixture sets. After the release, a poll: the follower applies at once.
        proxy.release(held.record_id)
        assert held.state == "released" and proxy.held() == []
        deadline = time.monotonic() + 5
        while _applied(ensemble, follower) < created.czxid and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _applied(ensemble, follower) >= created.czxid
        # The same connection all along: the follower never had to sync again.
        assert {r.connection for r in proxy.records() if r.link == link} == {held.connection}
    finally:
        writer.stop()
        writer.close()
