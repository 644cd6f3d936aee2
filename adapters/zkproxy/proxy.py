"""The ZooKeeper proxy on a background event loop, driven from synchronous code with bounded
waits.

::

    with ZooKeeperProxy("127.0.0.1", 2181) as zk_proxy:
        uri = zk_proxy.proxied_uri("zk+hierarchical://127.0.0.1:2181/ledgers")
        # -> "zk+hierarchical://127.0.0.1:<zk_proxy.port>/ledgers": give it to the client
        rule = zk_proxy.add_rule(ZkMatch.request(Op.SET_DATA, path=ledger_znode))
        write = zk_proxy.wait_for(ZkMatch.request(Op.SET_DATA, path=ledger_znode), timeout=10)
        ...                                 # the client's metadata write is held here
        zk_proxy.release(write.record_id)
        zk_proxy.expire_session()           # the client's session, as the proxy saw it granted
    # every socket, timer, task and the loop thread are gone here

Every call crosses to the loop thread and waits at most ``call_timeout`` seconds (waits for
packets and expiries take their own timeout); nothing here blocks forever.
"""

from __future__ import annotations

from adapters.loop_thread import LoopThread, LoopThreadFacade
from adapters.zkproxy.core import DEFAULT_CONNECT_TIMEOUT, ZkProxyCore
from adapters.zkproxy.errors import PROXY_ERRORS, ZkProxyClosed
from adapters.zkproxy.framing import DEFAULT_MAX_PACKET_SIZE
from adapters.zkproxy.log import (
    ConnectionRecord,
    DeliveryRecord,
    ExpiryRecord,
    PacketLog,
    PacketRecord,
    SessionRecord,
)
from adapters.zkproxy.rules import Hold, Rule, ZkMatch
from adapters.zookeeper.uri import MetadataServiceUri, parse_metadata_service_uri

DEFAULT_CALL_TIMEOUT = 10.0
DEFAULT_EXPIRY_TIMEOUT = 10.0
_START_TIMEOUT = 10.0


class ZooKeeperProxy(LoopThreadFacade):
    """A proxy in front of one ZooKeeper server for one client, on its own loop thread.

    Thread-safe: every method may be called from any thread (each runs on the loop thread).
    Use it in a ``with`` block, or :meth:`start` and :meth:`close` (which closes every
    connection: held requests are not sent, they are logged undelivered).
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        max_packet_size: int = DEFAULT_MAX_PACKET_SIZE,
    ) -> None:
        super().__init__(
            LoopThread(
                "zkproxy-loop",
                PROXY_ERRORS,
                "the ZooKeeper proxy",
            ),
            call_timeout=call_timeout,
            start_timeout=_START_TIMEOUT,
        )
        self.target = (target_host, target_port)
        self.host = listen_host
        self._listen_port = listen_port
        self._connect_timeout = connect_timeout
        self._max_packet_size = max_packet_size
        self._core: ZkProxyCore | None = None
        self._port: int | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def _open(self) -> None:
        # Built here, used only on the loop thread from now on (nothing in it binds to a loop
        # before start()).
        self._core = ZkProxyCore(
            *self.target, PacketLog(),
            listen_host=self.host, listen_port=self._listen_port,
            max_packet_size=self._max_packet_size, connect_timeout=self._connect_timeout,
        )  # fmt: skip
        self._run(self._core.start())
        core = self._core
        self._port = self._call(lambda: core.port)

    async def _close_on_loop(self) -> None:
        if self._core is not None:
            await self._core.close()

    # -- where clients connect --------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise ZkProxyClosed("the ZooKeeper proxy was not started")
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` to give the client instead of the ZooKeeper server's (a connect
        string of one server, for kazoo's ``hosts`` or ZooKeeper's connect string)."""
        return f"{self.host}:{self.port}"

    def proxied_uri(self, metadata_service_uri: str) -> str:
        """``metadata_service_uri`` (``zk[+layout]://servers/ledgers``) with the proxy as its
        only ZooKeeper server: what to configure the BookKeeper client with
        (``metadataServiceUri``). The layout and ledgers root are kept; the layout is written
        explicitly (``adapters.zookeeper.uri``)."""
        uri = parse_metadata_service_uri(metadata_service_uri)
        return str(MetadataServiceUri(self.address, uri.ledgers_root, uri.layout))

    def __repr__(self) -> str:
        where = self.address if self._port is not None else "not started"
        return f"ZooKeeperProxy({where} -> {self.target[0]}:{self.target[1]})"

    # -- rules and held requests ------------------------------------------------------------

    def add_rule(
        self, match: ZkMatch, hold: Hold | None = None, *, times: int | None = None
    ) -> int:
        """Hold the next ``times`` requests ``match`` matches (None: all) with ``hold``
        (default ``Hold()``: until released, pings overtaking at once); returns the rule id.
        Rules are tried in the order added; the first that matches decides."""
        rule = Rule(match, Hold() if hold is None else hold, times)
        core = self._require_core()
        return self._call(lambda: core.add_rule(rule))

    def remove_rule(self, rule_id: int) -> bool:
        core = self._require_core()
        return self._call(lambda: core.remove_rule(rule_id))

    def clear_rules(self) -> None:
        core = self._require_core()
        self._call(core.clear_rules)

    def rules(self) -> list[tuple[int, Rule, int | None]]:
        """``(rule id, rule, requests it still applies to)`` for each live rule, in order."""
        core = self._require_core()
        return self._call(core.rules)

    def held(self) -> list[PacketRecord]:
        """The requests held now, oldest first."""
        core = self._require_core()
        return self._call(core.held)

    def queued(self) -> list[PacketRecord]:
        """Every client packet not sent yet: held, or waiting behind a held one."""
        core = self._require_core()
        return self._call(core.queued)

    def release(self, record_id: int) -> list[int]:
        """Send a held request, and what waited behind it up to the next held one; returns
        the record ids sent (empty: an earlier request of its connection is still held).

        :raises NotHeld: the proxy does not hold ``record_id`` (any more).
        """
        core = self._require_core()
        return self._call(lambda: core.release(record_id))

    def release_all(self) -> list[int]:
        """Release every held request, oldest first; returns their record ids."""
        core = self._require_core()
        return self._call(core.release_all)

    # -- sessions and connections -----------------------------------------------------------

    def session(self, session_id: int | None = None) -> SessionRecord | None:
        """The latest session the server granted through the proxy (with ``session_id``)."""
        core = self._require_core()
        return self._call(lambda: core.session(session_id))

    def expire_session(
        self, session_id: int | None = None, *, timeout: float = DEFAULT_EXPIRY_TIMEOUT
    ) -> ExpiryRecord:
        """Expire the client's session (the latest one granted, by default) on the server,
        then close the client's connections on it: at its reconnection the server answers
        "expired" (the Java client: ``Expired`` event, ``SessionExpiredException``; kazoo:
        ``KazooState.LOST``). Its ephemeral znodes are deleted at once.

        :raises NoSession: no such session was granted through the proxy.
        :raises ExpiryFailed: the server could not be reached or refused the closeSession.
        :raises ZkProxyTimeout: it took longer than ``timeout`` seconds.
        """
        core = self._require_core()
        return self._run(
            core.expire(session_id, timeout=timeout), timeout=timeout + self.call_timeout
        )

    def reset_connections(self) -> list[int]:
        """Close the client's connections now, both sides (a disconnect, not an expiry: the
        client reconnects through the proxy and resumes its session). Held requests on them
        are lost (logged undelivered), as a connection loss loses them. Returns their ids."""
        core = self._require_core()
        return self._call(core.reset_connections)

    @property
    def open_connections(self) -> int:
        core = self._require_core()
        return self._call(lambda: core.open_connections)

    # -- the log ----------------------------------------------------------------------------

    def packets(self, match: ZkMatch | None = None, *, since: int = 0) -> list[PacketRecord]:
        """Every packet logged after record id ``since`` (that ``match`` matches)."""
        packet_log = self._require_core().log
        return self._call(lambda: packet_log.select(match, since))

    def deliveries(self) -> dict[int, DeliveryRecord]:
        packet_log = self._require_core().log
        return self._call(lambda: dict(packet_log.deliveries))

    def connections(self) -> list[ConnectionRecord]:
        packet_log = self._require_core().log
        return self._call(lambda: [record.snapshot() for record in packet_log.connections])

    def sessions(self) -> list[SessionRecord]:
        packet_log = self._require_core().log
        return self._call(lambda: list(packet_log.sessions))

    def expiries(self) -> list[ExpiryRecord]:
        packet_log = self._require_core().log
        return self._call(lambda: list(packet_log.expiries))

    def mark(self) -> int:
        """The id of the last packet logged so far (pass it as ``since`` to see later ones)."""
        packet_log = self._require_core().log
        return self._call(lambda: packet_log.last_record_id)

    def wait_for(self, match: ZkMatch, timeout: float, *, since: int = 0) -> PacketRecord:
        """The first packet after ``since`` that ``match`` matches, waiting up to ``timeout``
        seconds for it; :class:`ZkProxyTimeout` if none arrives."""
        packet_log = self._require_core().log
        return self._run(
            packet_log.wait_for(match, timeout=timeout, since=since),
            timeout=timeout + self.call_timeout,
        )

    # -- crossing to the loop thread ----------------------------------------------------------

    def _require_core(self) -> ZkProxyCore:
        if self._core is None or self._loop_thread.closed:
            raise ZkProxyClosed("the ZooKeeper proxy is not running (use it in a with block)")
        return self._core


__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_EXPIRY_TIMEOUT", "ZooKeeperProxy"]
