"""The proxy in front of a stand-in ZooKeeper, driven by a raw client (fast: no JVM).

What the real server and clients do with it is in ``test_with_zookeeper.py``; here every
decision of the proxy is checked where its timing is exact: holds, the queue behind them,
pings, release, reset, expiry, teardown.
"""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from adapters.zkproxy import (
    Direction,
    ExpiryOutcome,
    Hold,
    NoSession,
    NotHeld,
    Op,
    ZkMatch,
    ZkProxyClosed,
    ZkProxyTimeout,
    ZooKeeperProxy,
)
from tests.adapters.zkproxy.fake_server import FakeZooKeeper, RawClient
from tests.adapters.zkproxy.jute_bytes import i32

#: Ledger 7's znode (hierarchical layout, ``adapters.zookeeper.paths.ledger_path``).
LEDGER = "/ledgers/00/0000/L0007"
SET_LEDGER = ZkMatch.request(Op.SET_DATA, path=LEDGER)
GET_DATA = 4
SET_DATA = 5
PING = 11


def client(proxy: ZooKeeperProxy) -> RawClient:
    raw = RawClient((proxy.host, proxy.port))
    assert raw.connect() > 0
    return raw


def test_every_packet_is_logged_with_its_operation_path_and_answer(
    fake_proxy: ZooKeeperProxy,
) -> None:
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER, version=3)
        assert raw.read_reply()[0] == 1
        raw.get_data(2, LEDGER)
        assert raw.read_reply()[0] == 2
    described = [(r.info.direction.value, r.info.op, r.info.path) for r in fake_proxy.packets()]
    assert described == [
        ("request", Op.CONNECT, None),
        ("reply", Op.CONNECT, None),
        ("request", Op.SET_DATA, LEDGER),
        ("reply", Op.SET_DATA, LEDGER),
        ("request", Op.GET_DATA, LEDGER),
        ("reply", Op.GET_DATA, LEDGER),
    ]
    records = fake_proxy.packets()
    assert records[2].info.version == 3 and records[3].info.version == 1
    assert records[3].answers == records[2].record_id and records[3].info.err == 0
    assert all(r.decision == "forward" for r in records)
    assert [r.at for r in records] == sorted(r.at for r in records)
    deliveries = fake_proxy.deliveries()
    requests = [r.record_id for r in records if r.info.direction is Direction.REQUEST]
    assert sorted(deliveries) == requests  # replies are forwarded as they come, unrecorded
    assert all(deliveries[record_id].delivered for record_id in requests)
    [session] = fake_proxy.sessions()
    assert session.session_id == raw.session_id and session.timeout_ms == 6000
    assert fake_proxy.session() == session
    [connection] = fake_proxy.connections()
    assert connection.session_id == raw.session_id


def test_a_held_request_holds_the_rest_of_its_connection(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(SET_LEDGER)
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER)
        raw.get_data(2, "/other")
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        behind = fake_proxy.wait_for(ZkMatch.request(Op.GET_DATA), timeout=5)
        assert raw.nothing_arrives(within=0.3)
        assert fake_zookeeper.requests() == []
        assert [r.record_id for r in fake_proxy.held()] == [held.record_id]
        assert [r.record_id for r in fake_proxy.queued()] == [held.record_id, behind.record_id]
        assert (held.decision, behind.decision) == ("hold", f"behind #{held.record_id}")
        assert behind.behind == held.record_id

        assert fake_proxy.release(held.record_id) == [held.record_id, behind.record_id]
        assert [raw.read_reply()[0], raw.read_reply()[0]] == [1, 2]
        assert [(r.xid, r.op_code) for r in fake_zookeeper.requests()] == [
            (1, SET_DATA),
            (2, GET_DATA),
        ]
        assert fake_proxy.held() == [] and fake_proxy.queued() == []
        with pytest.raises(NotHeld, match=f"#{held.record_id}"):
            fake_proxy.release(held.record_id)
    deliveries = fake_proxy.deliveries()
    assert deliveries[held.record_id].at >= held.at + 0.3
    assert deliveries[held.record_id].at <= deliveries[behind.record_id].at


def test_other_connections_are_not_held(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(SET_LEDGER)
    with client(fake_proxy) as held_client, client(fake_proxy) as other:
        held_client.set_data(1, LEDGER)
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        other.get_data(1, LEDGER)
        assert other.read_reply()[0] == 1
        assert [r.op_code for r in fake_zookeeper.requests()] == [GET_DATA]
        assert fake_proxy.release_all() == [held.record_id]
        assert held_client.read_reply()[0] == 1


def test_pings_overtake_a_hold_at_once_by_default(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(SET_LEDGER)
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER)
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        raw.ping()
        assert raw.read_reply()[0] == -2
        ping = fake_proxy.wait_for(ZkMatch.request(Op.PING), timeout=5)
        assert ping.decision == f"overtake #{held.record_id}"
        assert [r.op_code for r in fake_zookeeper.requests()] == [PING]
        fake_proxy.release(held.record_id)
        assert raw.read_reply()[0] == 1


def test_pings_wait_behind_a_hold_without_ping_wait(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(SET_LEDGER, Hold(ping_wait=None))
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER)
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        raw.ping()
        ping = fake_proxy.wait_for(ZkMatch.request(Op.PING), timeout=5)
        assert ping.decision == f"behind #{held.record_id}"
        assert raw.nothing_arrives(within=0.4)
        fake_proxy.release(held.record_id)
        assert [raw.read_reply()[0], raw.read_reply()[0]] == [1, -2]
        assert [r.op_code for r in fake_zookeeper.requests()] == [SET_DATA, PING]


def test_a_ping_waits_at_most_ping_wait(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(SET_LEDGER, Hold(ping_wait=0.3))
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER)
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        raw.ping()
        assert raw.read_reply(timeout=5)[0] == -2
        ping = fake_proxy.wait_for(ZkMatch.request(Op.PING), timeout=5)
        delivery = fake_proxy.deliveries()[ping.record_id]
        assert delivery.delivered and delivery.reason == f"overtook #{held.record_id}"
        assert 0.3 <= delivery.at - ping.at < 2.0
        assert [r.op_code for r in fake_zookeeper.requests()] == [PING]
        fake_proxy.release(held.record_id)
        assert raw.read_reply()[0] == 1


def test_release_after_sends_the_request_without_a_call(fake_proxy: ZooKeeperProxy) -> None:
    fake_proxy.add_rule(SET_LEDGER, Hold(release_after=0.4), times=1)
    with client(fake_proxy) as raw:
        started = time.monotonic()
        raw.set_data(1, LEDGER)
        raw.get_data(2, LEDGER)
        assert [raw.read_reply()[0], raw.read_reply()[0]] == [1, 2]
        assert time.monotonic() - started >= 0.4
        assert fake_proxy.rules() == []  # times=1: used up
        raw.set_data(3, LEDGER)
        assert raw.read_reply()[0] == 3
    decisions = [r.decision for r in fake_proxy.packets(ZkMatch.request(Op.SET_DATA))]
    assert decisions == ["hold", "forward"]


def test_a_later_hold_released_first_still_waits_behind_the_earlier(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    fake_proxy.add_rule(ZkMatch.request(Op.SET_DATA))
    with client(fake_proxy) as raw:
        raw.set_data(1, "/first")
        raw.get_data(2, "/first")
        raw.set_data(3, "/second")
        raw.get_data(4, "/second")
        first = fake_proxy.wait_for(ZkMatch.request(Op.SET_DATA, path="/first"), timeout=5)
        second = fake_proxy.wait_for(ZkMatch.request(Op.SET_DATA, path="/second"), timeout=5)
        fake_proxy.wait_for(ZkMatch.request(Op.GET_DATA, path="/second"), timeout=5)
        assert second.decision == "hold" and second.behind == first.record_id
        assert fake_proxy.release(second.record_id) == []
        assert raw.nothing_arrives(within=0.3)
        sent = fake_proxy.release(first.record_id)
        assert len(sent) == 4 and sent[0] == first.record_id
        assert [raw.read_reply()[0] for _ in range(4)] == [1, 2, 3, 4]
        assert [r.xid for r in fake_zookeeper.requests()] == [1, 2, 3, 4]


def test_reset_closes_the_connection_and_loses_what_it_held(fake_proxy: ZooKeeperProxy) -> None:
    fake_proxy.add_rule(SET_LEDGER)
    with client(fake_proxy) as raw:
        raw.set_data(1, LEDGER)
        held = fake_proxy.wait_for(SET_LEDGER, timeout=5)
        [connection_id] = fake_proxy.reset_connections()
        with pytest.raises(ConnectionResetError):
            raw.read_packet(timeout=5)
    with pytest.raises(NotHeld):
        fake_proxy.release(held.record_id)
    lost = fake_proxy.deliveries()[held.record_id]
    assert not lost.delivered and lost.reason == "connection closed"
    [record] = fake_proxy.connections()
    assert record.connection_id == connection_id and record.error == "reset by the proxy"
    assert fake_proxy.open_connections == 0
    with client(fake_proxy) as again:  # the proxy still serves
        again.get_data(1, LEDGER)
        assert again.read_reply()[0] == 1


def test_expiry_closes_the_session_and_the_client_learns_it_on_reconnecting(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    with pytest.raises(NoSession):
        fake_proxy.expire_session()
    raw = client(fake_proxy)
    session_id = raw.session_id
    with raw:
        expiry = fake_proxy.expire_session()
        assert expiry.session_id == session_id and expiry.outcome is ExpiryOutcome.EXPIRED
        assert len(expiry.closed_connections) == 1
        with pytest.raises(ConnectionResetError):
            raw.read_packet(timeout=5)
    assert session_id in fake_zookeeper.closed_sessions
    # The closeSession came from the proxy's own connection, not through the client's.
    assert [r.op_code for r in fake_zookeeper.requests()] == [-11]
    session = fake_proxy.session()
    assert session is not None
    with RawClient((fake_proxy.host, fake_proxy.port)) as back:
        assert back.connect(session_id, session.passwd) == 0  # expired
    refused = fake_proxy.packets(ZkMatch.reply(Op.CONNECT))[-1]
    assert "-> expired" in refused.info.describe()
    assert fake_proxy.expiries() == [expiry]
    again = fake_proxy.expire_session(session_id)
    assert again.outcome is ExpiryOutcome.ALREADY_EXPIRED


def test_a_reconnection_during_an_expiry_waits_for_it_and_is_refused(
    fake_proxy: ZooKeeperProxy, fake_zookeeper: FakeZooKeeper
) -> None:
    # Let through, a reconnection would take the session back from the proxy's connection
    # (the real server closes a session's other connection when a client resumes it).
    raw = client(fake_proxy)
    session = fake_proxy.session()
    assert session is not None
    fake_zookeeper.close_session_delay = 0.5
    with raw, RawClient((fake_proxy.host, fake_proxy.port)) as back:
        expiring = threading.Thread(target=fake_proxy.expire_session)
        expiring.start()
        try:
            # The proxy's closeSession reached the server: the session is being expired now.
            assert fake_zookeeper.close_requested.wait(5)
            assert back.connect(session.session_id, session.passwd) == 0  # refused: expired
        finally:
            expiring.join(10)
    handshakes = fake_proxy.packets(ZkMatch.request(Op.CONNECT))
    assert handshakes[-1].decision == "hold for expiry"
    [expiry] = fake_proxy.expiries()
    assert fake_proxy.deliveries()[handshakes[-1].record_id].at >= expiry.ended_at - 0.05
    # The waiting connection was answered, not closed; the client's old one was closed.
    assert len(expiry.closed_connections) == 1


def test_a_malformed_length_closes_only_that_connection(fake_proxy: ZooKeeperProxy) -> None:
    with socket.create_connection((fake_proxy.host, fake_proxy.port), timeout=5) as bad:
        bad.sendall(i32(-7))
        assert bad.recv(16) == b""
    with client(fake_proxy) as good:
        good.get_data(1, "/")
        assert good.read_reply()[0] == 1
    first = fake_proxy.connections()[0]
    assert first.error is not None and "malformed packet from the client" in first.error


def test_an_unreachable_server_closes_the_client_connection() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with ZooKeeperProxy("127.0.0.1", free_port) as proxy:
        with socket.create_connection((proxy.host, proxy.port), timeout=5) as raw:
            assert raw.recv(16) == b""
        [record] = proxy.connections()
        assert record.error is not None and "cannot reach ZooKeeper" in record.error


def test_waits_are_bounded(fake_proxy: ZooKeeperProxy) -> None:
    with pytest.raises(ZkProxyTimeout, match=r"no packet matching request setData .* 0\.2s"):
        fake_proxy.wait_for(SET_LEDGER, timeout=0.2)


def test_the_uri_for_the_bookkeeper_client(fake_proxy: ZooKeeperProxy) -> None:
    proxied = fake_proxy.proxied_uri("zk+hierarchical://10.0.0.1:2181;10.0.0.2:2181/ledgers")
    assert proxied == f"zk+hierarchical://127.0.0.1:{fake_proxy.port}/ledgers"
    assert fake_proxy.proxied_uri("zk://zk1:2181/bk/ledgers").endswith(
        f"127.0.0.1:{fake_proxy.port}/bk/ledgers"
    )


def _socket_count() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


def test_close_leaves_no_thread_task_or_socket(fake_zookeeper: FakeZooKeeper) -> None:
    baseline = _socket_count()
    proxy = ZooKeeperProxy("127.0.0.1", fake_zookeeper.port).start()
    proxy.add_rule(SET_LEDGER)
    raw = client(proxy)
    raw.set_data(1, LEDGER)
    proxy.wait_for(SET_LEDGER, timeout=5)
    proxy.close()  # with a connection open and a request held
    with pytest.raises(ConnectionResetError):
        raw.read_packet(timeout=5)
    raw.close()
    assert not proxy.running and proxy.leftover_tasks == []
    assert "zkproxy-loop" not in {thread.name for thread in threading.enumerate()}
    with pytest.raises(ZkProxyClosed):
        proxy.held()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", proxy.port)):
        pass
    deadline = time.monotonic() + 5
    while _socket_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _socket_count() == baseline
    proxy.close()  # idempotent


def test_the_proxy_is_usable_only_while_running() -> None:
    proxy = ZooKeeperProxy("127.0.0.1", 1)
    with pytest.raises(ZkProxyClosed):
        proxy.packets()
    with pytest.raises(ZkProxyClosed):
        _ = proxy.address
    with proxy:
        assert proxy.running and repr(proxy).startswith("ZooKeeperProxy(127.0.0.1:")
    with pytest.raises(ZkProxyClosed):
        proxy.mark()
