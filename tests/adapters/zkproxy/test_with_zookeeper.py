"""The proxy between kazoo and a real ZooKeeper (3.9 from the pyspark jars by default):
logging, holds and the queue behind them, release_after, pings against the session timeout,
expiry, reset. The server ticks every 250 ms, so sessions last 0.5 to 5 s."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from adapters.cluster.zookeeper import ZooKeeperEnsemble
from adapters.zkproxy import ExpiryOutcome, Hold, Op, ZkMatch, ZooKeeperProxy
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.paths import ledger_path

pytestmark = pytest.mark.cluster

#: Ledger 7's znode in BookKeeper's default (hierarchical) layout: /ledgers/00/0000/L0007.
LEDGER = ledger_path(7, "/ledgers", "hierarchical")


class States:
    """A kazoo client's state changes, with when they happened (monotonic)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, KazooState]] = []
        self._changed = threading.Condition()

    def __call__(self, state: KazooState) -> None:
        with self._changed:
            self.seen.append((time.monotonic(), state))
            self._changed.notify_all()

    @property
    def names(self) -> list[str]:
        with self._changed:
            return [str(state) for _, state in self.seen]

    def wait_for(self, state: KazooState, timeout: float) -> float:
        """When ``state`` was (first) reached; fails the test after ``timeout`` seconds."""
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(s == state for _, s in self.seen), timeout=timeout
            )
            assert found, f"no {state} within {timeout}s; states: {self.seen}"
            return next(at for at, s in self.seen if s == state)


@contextlib.contextmanager
def kazoo_through(proxy: ZooKeeperProxy, session_timeout: float = 4.0) -> Iterator[
    tuple[KazooClient, States]
]:  # fmt: skip
    states = States()
    client = KazooClient(hosts=proxy.address, timeout=session_timeout)
    client.add_listener(states)
    client.start(timeout=10)
    try:
        yield client, states
    finally:
        client.stop()
        client.close()


@pytest.fixture
def root(real_zookeeper: ZooKeeperEnsemble) -> str:
    """A fresh znode for this test (made directly, not through the proxy)."""
    path = f"/zkproxy-{uuid.uuid4().hex[:12]}"
    direct = connect_zookeeper(real_zookeeper.connect_string, timeout=10)
    try:
        direct.create(path + LEDGER, b"v0", makepath=True)
    finally:
        direct.stop()
        direct.close()
    return path


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not true within {timeout}s"
        time.sleep(0.02)


def read_directly(zookeeper: ZooKeeperEnsemble, path: str) -> tuple[bytes, int]:
    direct = connect_zookeeper(zookeeper.connect_string, timeout=10)
    try:
        data, stat = direct.get(path)
        return data, stat.version
    finally:
        direct.stop()
        direct.close()


def test_requests_and_replies_are_logged_with_types_and_paths(
    real_proxy: ZooKeeperProxy, root: str
) -> None:
    ledger = root + LEDGER
    with kazoo_through(real_proxy) as (client, _):
        client.exists(ledger)
        client.set(ledger, b"v1", version=0)
        client.get(ledger)
        client.get_children(root)
        client.create(root + "/idgen/ID-", b"", sequence=True, ephemeral=True, makepath=True)
        transaction = client.transaction()
        transaction.check(ledger, 1)
        transaction.set_data(ledger, b"v2", version=1)
        transaction.commit()
        client.delete(root + "/idgen", recursive=True)
        session = real_proxy.session()
    requests = real_proxy.packets(ZkMatch.request())
    ops = [r.info.op for r in requests if r.info.op is not Op.PING]
    assert ops[0] is Op.CONNECT and ops[-1] is Op.CLOSE_SESSION
    assert {Op.EXISTS, Op.SET_DATA, Op.GET_DATA, Op.GET_CHILDREN, Op.CREATE, Op.MULTI} <= set(ops)
    # A setData of the ledger matches the plain one and the multi that carries one.
    set_data, multi = real_proxy.packets(ZkMatch.request(Op.SET_DATA, path=ledger))
    assert set_data.info.op is Op.SET_DATA and multi.info.op is Op.MULTI
    assert set_data.info.version == 0 and set_data.info.data_size == 2
    assert [(sub.op, sub.path) for sub in multi.info.sub_ops] == [
        (Op.CHECK, ledger),
        (Op.SET_DATA, ledger),
    ]
    replies = {r.answers: r for r in real_proxy.packets(ZkMatch.reply())}
    answer = replies[set_data.record_id]
    assert (answer.info.op, answer.info.path, answer.info.err_name) == (Op.SET_DATA, ledger, "OK")
    assert answer.info.zxid is not None and answer.info.zxid > 0 and answer.info.version == 1
    assert replies[multi.record_id].info.err == 0
    # kazoo's makepath: a create answered NONODE, the parents made, the create again.
    [create] = real_proxy.packets(ZkMatch.reply(Op.CREATE, path_prefix=root + "/idgen/", err=0))
    assert create.info.created_path is not None
    assert create.info.created_path.startswith(root + "/idgen/ID-00")
    [handshake] = real_proxy.packets(ZkMatch.reply(Op.CONNECT))
    assert session is not None and handshake.info.connect is not None
    assert handshake.info.connect.session_id == session.session_id
    assert f"session=0x{session.session_id:x}" in handshake.describe()
    # Every request went out, in order, as it came: nothing was held.
    assert all(r.decision == "forward" for r in requests)


def test_a_held_set_data_blocks_the_client_and_its_later_get_data(
    real_proxy: ZooKeeperProxy, real_zookeeper: ZooKeeperEnsemble, root: str
) -> None:
    ledger = root + LEDGER
    write = ZkMatch.request(Op.SET_DATA, path=ledger)
    real_proxy.add_rule(write, times=1)
    with kazoo_through(real_proxy) as (client, states):
        pending_set = client.set_async(ledger, b"v1", version=0)
        held = real_proxy.wait_for(write, timeout=10)
        pending_get = client.get_async(ledger)
        behind = real_proxy.wait_for(ZkMatch.request(Op.GET_DATA, path=ledger), timeout=10)
        # The hold has no release_after: nothing is answered before release(), whatever the
        # machine's speed; the 0.5 s only gives a wrong answer time to show.
        time.sleep(0.5)
        assert not pending_set.ready() and not pending_get.ready()
        assert behind.decision == f"behind #{held.record_id}"
        assert read_directly(real_zookeeper, ledger) == (b"v0", 0)  # not applied

        sent = real_proxy.release(held.record_id)
        assert sent[:2] == [held.record_id, behind.record_id]
        assert pending_set.get(timeout=10).version == 1
        data, stat = pending_get.get(timeout=10)
        assert (data, stat.version) == (b"v1", 1)  # answered after the write, in order
        assert states.names == ["CONNECTED"]
    deliveries = real_proxy.deliveries()
    assert deliveries[held.record_id].at - held.at >= 0.5


def test_release_after(real_proxy: ZooKeeperProxy, root: str) -> None:
    ledger = root + LEDGER
    real_proxy.add_rule(ZkMatch.request(Op.SET_DATA, path=ledger), Hold(release_after=0.6))
    with kazoo_through(real_proxy) as (client, _):
        started = time.monotonic()
        assert client.set(ledger, b"v1").version == 1
        assert time.monotonic() - started >= 0.6  # a lower bound: a slower machine only adds


def test_pings_overtaking_a_hold_keep_the_session_past_its_timeout(
    real_proxy: ZooKeeperProxy, root: str
) -> None:
    ledger = root + LEDGER
    real_proxy.add_rule(ZkMatch.request(Op.SET_DATA, path=ledger), Hold(release_after=3.0))
    with kazoo_through(real_proxy, session_timeout=2.0) as (client, states):
        session = real_proxy.session()
        assert session is not None and session.timeout_ms == 2000
        started = time.monotonic()
        # Held 3 s: 1.5 session timeouts, over twice kazoo's give-up point (2/3 of 2 s). Pings
        # overtake the hold at once (ping_wait=0), so the session lives on any machine.
        assert client.set(ledger, b"v1").version == 1
        assert time.monotonic() - started >= 3.0
        assert states.names == ["CONNECTED"]
    overtaking = [
        r for r in real_proxy.packets(ZkMatch.request(Op.PING)) if r.decision.startswith("overtake")
    ]
    assert overtaking, "the client pinged during the hold"


def test_a_hold_that_starves_pings_costs_the_client_its_connection(
    real_proxy: ZooKeeperProxy, real_zookeeper: ZooKeeperEnsemble, root: str
) -> None:
    ledger = root + LEDGER
    write = ZkMatch.request(Op.SET_DATA, path=ledger)
    real_proxy.add_rule(write, Hold(ping_wait=None), times=1)
    with kazoo_through(real_proxy, session_timeout=2.0) as (client, states):
        pending = client.set_async(ledger, b"v1")
        held = real_proxy.wait_for(write, timeout=10)
        # kazoo gives up when a ping goes unanswered for 2/3 of the session timeout.
        lost_at = states.wait_for(KazooState.SUSPENDED, timeout=5)
        # A duration: kazoo gives up about 1.33 s after its last answer (2/3 of 2 s), so 0.67 s
        # of slack before the 2 s session timeout; a late connection thread eats into it.
        assert lost_at - held.at < 2.0
        with pytest.raises((ConnectionLoss, SessionExpiredError)):
            pending.get(timeout=10)
        wait_until(lambda: held.record_id in real_proxy.deliveries())
        lost = real_proxy.deliveries()[held.record_id]
        assert not lost.delivered and lost.reason == "connection closed"
        starved = real_proxy.packets(ZkMatch.request(Op.PING), since=held.record_id)
        assert starved and starved[0].decision == f"behind #{held.record_id}"
        assert read_directly(real_zookeeper, ledger) == (b"v0", 0)  # never applied


def test_expiry_the_client_sees_its_session_lost(
    real_proxy: ZooKeeperProxy, real_zookeeper: ZooKeeperEnsemble, root: str
) -> None:
    ledger = root + LEDGER
    write = ZkMatch.request(Op.SET_DATA, path=ledger)
    with kazoo_through(real_proxy) as (client, states):
        client.create(root + "/mine", b"", ephemeral=True)
        old_session = client.client_id[0]
        real_proxy.add_rule(write, times=1)
        pending = client.set_async(ledger, b"v1")
        held = real_proxy.wait_for(write, timeout=10)

        expiry = real_proxy.expire_session()
        assert expiry.session_id == old_session and expiry.outcome is ExpiryOutcome.EXPIRED
        states.wait_for(KazooState.LOST, timeout=10)
        with pytest.raises((ConnectionLoss, SessionExpiredError)):
            pending.get(timeout=10)
        assert not real_proxy.deliveries()[held.record_id].delivered
        # The write held at the expiry never reached ZooKeeper; the ephemeral is gone.
        assert read_directly(real_zookeeper, ledger) == (b"v0", 0)
        direct = connect_zookeeper(real_zookeeper.connect_string, timeout=10)
        try:
            assert direct.exists(root + "/mine") is None
        finally:
            direct.stop()
            direct.close()
        # The client learnt it at its reconnection's handshake, then made a new session.
        refusals = [
            r
            for r in real_proxy.packets(ZkMatch.reply(Op.CONNECT))
            if r.info.connect is not None and r.info.connect.timeout_ms <= 0
        ]
        assert refusals and refusals[0].at >= expiry.ended_at - 0.01
        wait_until(lambda: client.client_id is not None and client.client_id[0] != old_session)
        assert client.set(ledger, b"v2").version == 1  # the new session works
    assert states.names[:3] == ["CONNECTED", "SUSPENDED", "LOST"]


def test_reset_is_a_disconnect_not_an_expiry(real_proxy: ZooKeeperProxy, root: str) -> None:
    with kazoo_through(real_proxy) as (client, states):
        session_id = client.client_id[0]
        client.create(root + "/mine", b"", ephemeral=True)
        [closed] = real_proxy.reset_connections()
        # kazoo reconnects at once through the proxy, a local connection: the session survives
        # if that takes less than its 4 s timeout. Both waits are polls.
        states.wait_for(KazooState.SUSPENDED, timeout=10)
        wait_until(lambda: states.names[-1] == "CONNECTED")
        assert states.names == ["CONNECTED", "SUSPENDED", "CONNECTED"]
        assert client.client_id[0] == session_id
        assert client.exists(root + "/mine") is not None  # the session survived
    first, second = real_proxy.connections()[:2]
    assert first.connection_id == closed and first.error == "reset by the proxy"
    assert second.session_id == session_id
    resumed = real_proxy.packets(ZkMatch.request(Op.CONNECT))[1]
    assert resumed.info.connect is not None and resumed.info.connect.session_id == session_id
