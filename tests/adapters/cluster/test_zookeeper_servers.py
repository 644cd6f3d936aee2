"""Real ZooKeeper servers: standalone and a 3-node ensemble, roles, and faults."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from adapters.cluster.network import LOOPBACK, port_accepts
from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.installations.zookeeper import locate_zookeeper
from adapters.zookeeper.client import zookeeper_session

pytestmark = pytest.mark.cluster


def eventually(condition: Callable[[], bool], timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not reached within {timeout}s: {what}"
        time.sleep(0.1)


@pytest.fixture
def ensemble(work_dir: Path) -> Iterator[ZooKeeperEnsemble]:
    zookeeper = ZooKeeperEnsemble(locate_zookeeper(), work_dir, size=3)
    try:
        zookeeper.start()
        yield zookeeper
    finally:
        zookeeper.stop()


def write_and_read(zk: KazooClient, path: str, data: bytes) -> bytes:
    zk.create(path, data, makepath=True)
    value, _ = zk.get(path)
    assert isinstance(value, bytes)
    return value


def test_standalone_server_serves_and_stops(work_dir: Path) -> None:
    zookeeper = ZooKeeperEnsemble(locate_zookeeper(), work_dir, size=1)
    zookeeper.start()
    try:
        assert zookeeper.modes() == {"zk1": "standalone"}
        assert zookeeper.leader() == "zk1"
        config = zookeeper.servers["zk1"].config_path.read_text()
        assert "admin.enableServer=false" in config
        assert "4lw.commands.whitelist=*" in config
        assert "server.1=" not in config
        with zookeeper_session(zookeeper.connect_string) as zk:
            assert write_and_read(zk, "/probe", b"hello") == b"hello"
    finally:
        zookeeper.stop()
    port = zookeeper.servers["zk1"].client_port
    assert not port_accepts(LOOPBACK, port, 0.5)
    process = zookeeper.servers["zk1"].process
    assert process is not None and not process.is_running()


def test_ensemble_forms_a_quorum_with_one_leader(ensemble: ZooKeeperEnsemble) -> None:
    modes = ensemble.modes()
    assert sorted(m or "down" for m in modes.values()) == ["follower", "follower", "leader"]
    leader = ensemble.leader()
    assert leader is not None and modes[leader] == "leader"
    config = ensemble.servers["zk1"].config_path.read_text()
    for server in ensemble.servers.values():
        assert f"server.{server.sid}={LOOPBACK}:{server.quorum_port}:{server.election_port}" in (
            config
        )


def test_ensemble_survives_a_follower_kill(ensemble: ZooKeeperEnsemble) -> None:
    leader = ensemble.leader()
    follower = next(name for name in ensemble.servers if name != leader)
    with zookeeper_session(ensemble.connect_string) as zk:
        zk.create("/before", b"1")
        ensemble.crash(follower)
        assert ensemble.modes()[follower] is None
        assert ensemble.leader() == leader
        assert write_and_read(zk, "/after", b"2") == b"2"
        ensemble.restart(follower)
        assert ensemble.modes()[follower] == "follower"


def test_killing_the_leader_elects_a_new_one(ensemble: ZooKeeperEnsemble) -> None:
    old_leader = ensemble.leader()
    assert old_leader is not None
    with zookeeper_session(ensemble.connect_string) as zk:
        zk.create("/kept", b"v")
        ensemble.crash(old_leader)
        # zk's session (10 s asked, capped at the servers' 20 ticks: 5 s) outlives the election
        # (well under a second on loopback, ZooKeeperTuning); `eventually` polls for 20 s.
        eventually(lambda: ensemble.leader() not in (None, old_leader), what="a new leader")
        value, _ = zk.get("/kept")
        assert value == b"v"
    ensemble.restart(old_leader)
    assert ensemble.modes()[old_leader] == "follower"


def test_a_paused_server_stops_answering_until_resumed(ensemble: ZooKeeperEnsemble) -> None:
    follower = next(name for name in ensemble.servers if name != ensemble.leader())
    ensemble.pause(follower)
    # A stopped JVM cannot answer: None whatever the machine's speed (0.5 s only bounds the wait).
    assert ensemble.servers[follower].mode(timeout=0.5) is None
    ensemble.resume(follower)
    eventually(lambda: ensemble.servers[follower].mode() == "follower", what="resumed follower")


def test_a_wiped_member_rejoins_and_catches_up(ensemble: ZooKeeperEnsemble) -> None:
    follower = next(name for name in ensemble.servers if name != ensemble.leader())
    with zookeeper_session(ensemble.connect_string) as zk:
        zk.create("/survives-wipe", b"x")
    ensemble.wipe(follower)
    server = ensemble.servers[follower]
    assert sorted(p.name for p in server.data_dir.iterdir()) == ["myid"]
    ensemble.restart(follower)
    with zookeeper_session(f"{LOOPBACK}:{server.client_port}") as zk:
        zk.sync("/")
        value, _ = zk.get("/survives-wipe")
        assert value == b"x"


def test_a_crashed_majority_leaves_no_leader(ensemble: ZooKeeperEnsemble) -> None:
    leader = ensemble.leader()
    followers = [name for name in ensemble.servers if name != leader]
    for name in followers:
        ensemble.crash(name)
    assert leader is not None
    # The leader gives up after syncLimit without a quorum (10 ticks of 250 ms: 2.5 s);
    # `eventually` polls for 8 times that.
    eventually(lambda: ensemble.servers[leader].mode() is None, what="leader to step down")
    assert ensemble.leader() is None
    ensemble.restart(followers[0])  # a majority again: the ensemble serves
    assert ensemble.leader() is not None


def test_a_port_taken_before_the_server_binds_it_is_retried(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    import adapters.cluster.zookeeper as zookeeper_module

    thief = socket.socket()
    thief.bind((LOOPBACK, 0))
    thief.listen()
    stolen = thief.getsockname()[1]
    real_free_ports = zookeeper_module.free_ports
    calls = []

    def first_call_returns_a_taken_port(count: int) -> list[int]:
        calls.append(count)
        ports = real_free_ports(count)
        return [stolen, *ports[1:]] if len(calls) == 1 else ports

    monkeypatch.setattr(zookeeper_module, "free_ports", first_call_returns_a_taken_port)
    zookeeper = ZooKeeperEnsemble(locate_zookeeper(), work_dir, size=1)
    try:
        zookeeper.start()
        assert len(calls) == 2
        assert zookeeper.servers["zk1"].client_port != stolen
        assert zookeeper.modes() == {"zk1": "standalone"}
        log = (work_dir / "logs" / "zk1.log").read_text()
        assert "Address already in use" in log
    finally:
        zookeeper.stop()
        thief.close()
