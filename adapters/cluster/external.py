"""``ExternalCluster``: a provider for a cluster someone else runs.

It connects to the cluster's ZooKeeper, checks that the ledgers root is formatted, and
discovers bookies from their registrations. It injects no faults (its capabilities are
empty) unless fault agents (``adapters/agent``) are given for its bookies, keyed by the
bookie's registered id: then crash, pause, restart, wipe and restart with data loss go
through the bookie's agent, naming the cluster's INSTANCEID (read here from ZooKeeper), which
the agent checks against its own before it does anything.

Guard: only loopback hosts are accepted unless ``allow_remote=True`` is passed, so a test
run never touches a shared cluster by accident.

Ledgers: :meth:`ExternalCluster.clean_ledgers` deletes the ledgers bkconform runs left behind
(marked with their run's custom metadata, ``adapters/zookeeper/ledger_marks.py``) whose runs
are dead, never another ledger (``bkconform cluster clean``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import time
from collections.abc import Mapping
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError

from adapters.agent.client import AgentClient
from adapters.agent.errors import AgentError
from adapters.cluster.errors import (
    ClusterError,
    ClusterUnreachable,
    FaultNotSupported,
    InvalidClusterOptions,
    NodeStateError,
)
from adapters.cluster.network import port_accepts
from adapters.cluster.provider import (
    Capabilities,
    ClusterProvider,
    DataLoss,
    Endpoints,
    Fault,
    Node,
    NodeKind,
    metadata_service_uri,
)
from adapters.zookeeper.client import connect_zookeeper, wait
from adapters.zookeeper.errors import ClusterNotFormatted, MetadataError, ZooKeeperUnreachable
from adapters.zookeeper.four_letter_words import server_mode
from adapters.zookeeper.layout import read_instance_id, read_layout
from adapters.zookeeper.ledger_marks import RUNS_ROOT, CleanReport, clean
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.registration import available_path, cookie_path, list_bookies

#: What a bookie's agent can do to it.
AGENT_FAULTS = Fault.CRASH | Fault.PAUSE | Fault.RESTART | Fault.WIPE | Fault.RESTART_WITH_DATA_LOSS


def parse_connect_string(connect: str) -> list[tuple[str, int]]:
    """``"h1:2181,h2:2182"`` → ``[("h1", 2181), ("h2", 2182)]`` (a chroot suffix is refused)."""
    servers = []
    for part in connect.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or "/" in port:
            raise InvalidClusterOptions(
                f"ZooKeeper connect string {connect!r}: {part!r} is not host:port "
                "(give the ledgers root separately, not as a chroot)"
            )
        servers.append((host, int(port)))
    return servers


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ExternalCluster(ClusterProvider):
    """Attach to a running cluster through its ZooKeeper (see the module docstring)."""

    def __init__(
        self,
        zookeeper_connect: str,
        ledgers_root: str = "/ledgers",
        *,
        timeout: float = 10.0,
        allow_remote: bool = False,
        agents: Mapping[str, AgentClient] | None = None,
        registration_timeout: float = 60.0,
        delete_cookie_on_wipe: bool = False,
    ) -> None:
        self.agents = dict(agents or {})
        # A bookie restarted with empty disks but its cookie still in ZooKeeper refuses to boot
        # unless it stamps missing cookies (dataIntegrityStampMissingCookies); otherwise the
        # cookie goes too, as an operator replacing a disk does.
        self.delete_cookie_on_wipe = delete_cookie_on_wipe
        self.registration_timeout = registration_timeout
        self.instance_id: str | None = None
        self.zookeeper_connect = zookeeper_connect
        self.ledgers_root = ledgers_root
        self.timeout = timeout
        self.servers = parse_connect_string(zookeeper_connect)
        remote = [host for host, _ in self.servers if not _is_loopback(host)]
        if remote and not allow_remote:
            raise InvalidClusterOptions(
                f"refusing non-loopback ZooKeeper hosts {remote}: pass allow_remote=True to "
                "run against a cluster on other machines"
            )
        self._zk: Any = None

    def start(self) -> None:
        if self._zk is not None:
            raise NodeStateError("ExternalCluster.start() called twice")
        try:
            self._zk = connect_zookeeper(self.zookeeper_connect, timeout=self.timeout)
        except ZooKeeperUnreachable as exc:
            raise ClusterUnreachable(
                f"cannot reach ZooKeeper at {self.zookeeper_connect} within {self.timeout}s; "
                "check the connect string and that a server answers `ruok` with `imok`"
            ) from exc
        try:
            self._discover()
            if self.agents:
                self.instance_id = read_instance_id(
                    self._zk, self.ledgers_root, timeout=self.timeout
                )
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            with contextlib.suppress(Exception):
                zk.stop()
            with contextlib.suppress(Exception):
                zk.close()

    @property
    def zookeeper_client(self) -> Any:
        """Our connected kazoo client to the cluster's ZooKeeper."""
        if self._zk is None:
            raise NodeStateError("ExternalCluster is not started")
        return self._zk

    def _discover(self) -> dict[str, tuple[str, int]]:
        if self._zk is None:
            raise NodeStateError("ExternalCluster is not started")
        try:
            registered = list_bookies(self._zk, self.ledgers_root, timeout=self.timeout)
        except ClusterNotFormatted as exc:
            raise InvalidClusterOptions(
                f"ZooKeeper at {self.zookeeper_connect} has no BookKeeper cluster under "
                f"{self.ledgers_root}: {exc}. Check the ledgers root (zkLedgersRootPath)"
            ) from exc
        except MetadataError as exc:
            raise ClusterUnreachable(f"listing bookies failed: {exc}") from exc
        return {bookie_id: (a.host, a.port) for bookie_id, a in registered.items()}

    def ledger_store(self) -> LedgerStore:
        """The cluster's ledger metadata, in the layout its ``LAYOUT`` znode names."""
        try:
            layout = read_layout(self.zookeeper_client, self.ledgers_root, timeout=self.timeout)
        except MetadataError as exc:
            raise ClusterUnreachable(f"reading the cluster's LAYOUT failed: {exc}") from exc
        if layout.layout is None:
            raise InvalidClusterOptions(
                f"the cluster under {self.ledgers_root} uses ledger manager "
                f"{layout.manager_factory_class}, which bkconform does not write"
            )
        return LedgerStore(
            self.zookeeper_client, self.ledgers_root, layout.layout, timeout=self.timeout
        )

    def clean_ledgers(
        self, *, include_kept: bool = False, scan: bool = True, runs_root: str = RUNS_ROOT
    ) -> CleanReport:
        """Delete the ledgers that bkconform runs now dead left on the cluster (and those kept
        on purpose, with ``include_kept``), found by the runs' journals and, with ``scan``, by
        reading every ledger's metadata for the suite's mark. Unmarked ledgers and those of
        live runs are never touched (``adapters.zookeeper.ledger_marks.clean``)."""
        store = self.ledger_store()
        try:
            return clean(store, runs_root=runs_root, include_kept=include_kept, scan=scan)
        except MetadataError as exc:
            raise ClusterUnreachable(f"cleaning up ledgers failed: {exc}") from exc
        except KazooException as exc:
            raise ClusterError(f"ZooKeeper refused the clean-up: {exc!r}") from exc

    def endpoints(self) -> Endpoints:
        """Endpoints with the bookies registered right now."""
        return Endpoints(
            zookeeper_connect=self.zookeeper_connect,
            ledgers_root=self.ledgers_root,
            metadata_service_uri=metadata_service_uri(self.zookeeper_connect, self.ledgers_root),
            bookies=self._discover(),
            zookeeper_servers={f"{host}:{port}": (host, port) for host, port in self.servers},
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(bookie=AGENT_FAULTS) if self.agents else Capabilities()

    # Faults through the bookies' agents --------------------------------------------------------

    def _agent(self, node: Node) -> AgentClient:
        agent = self.agents.get(node.id) if node.kind is NodeKind.BOOKIE else None
        if agent is None:
            raise FaultNotSupported(
                f"no fault agent for {node}: agents are given for {sorted(self.agents)}"
            )
        return agent

    def _through_agent(self, node: Node, what: str, call: Any) -> None:
        try:
            call(self._agent(node))
        except AgentError as exc:
            raise ClusterError(f"{what} of {node} through its agent failed: {exc}") from exc

    def _crash(self, node: Node) -> None:
        self._through_agent(node, "crash", lambda a: a.kill(self.instance_id))

    def _pause(self, node: Node) -> None:
        self._through_agent(node, "pause", lambda a: a.pause(self.instance_id))

    def _resume(self, node: Node) -> None:
        self._through_agent(node, "resume", lambda a: a.resume())

    def _restart(self, node: Node) -> None:
        stale = self._registration_owner(node)
        self._through_agent(node, "restart", lambda a: a.restart(self.instance_id))
        self._wait_registered(node, stale)

    def _wipe(self, node: Node) -> None:
        self._through_agent(node, "wipe", lambda a: a.wipe(self.instance_id, kill_first=True))
        if self.delete_cookie_on_wipe:
            path = cookie_path(self.ledgers_root, node.id)
            try:
                wait(self.zookeeper_client.delete_async(path), timeout=self.timeout, operation=path)
            except NoNodeError:
                pass
            except (KazooException, MetadataError) as exc:
                raise ClusterError(f"wiped {node} but could not delete {path}: {exc!r}") from exc

    def _restart_with_data_loss(self, node: Node, how: DataLoss) -> None:
        stale = self._registration_owner(node)
        if how is DataLoss.WIPE:
            self._wipe(node)
            self._through_agent(node, "start", lambda a: a.start())
        else:
            self._through_agent(
                node, "journal-off restart", lambda a: a.restart_with_journal_off(self.instance_id)
            )
        self._wait_registered(node, stale)

    def _registration_owner(self, node: Node) -> int | None:
        """The session that owns the bookie's registration now (None: not registered)."""
        path = available_path(self.ledgers_root, node.id)
        try:
            stat = wait(
                self.zookeeper_client.exists_async(path), timeout=self.timeout, operation=path
            )
        except (KazooException, MetadataError) as exc:
            raise ClusterUnreachable(f"reading {path} failed: {exc!r}") from exc
        return None if stat is None else int(stat.ephemeralOwner)

    def _wait_registered(self, node: Node, stale: int | None) -> None:
        """Until the restarted bookie has registered again, from a new session, and its port
        accepts. A crashed bookie's registration outlives it by a session timeout, and a real
        bookie binds its port before it serves (it resets connections until then): only a
        registration of the new process says it serves."""
        deadline = time.monotonic() + self.registration_timeout
        while time.monotonic() < deadline:
            owner = self._registration_owner(node)
            address = self._discover().get(node.id)
            fresh = owner is not None and owner != stale
            if fresh and address is not None and port_accepts(*address):
                return
            time.sleep(0.2)
        raise ClusterError(
            f"{node} did not register in ZooKeeper within {self.registration_timeout}s of "
            "its restart"
        )

    def zookeeper_modes(self) -> dict[str, str | None]:
        """Each server's role from ``srvr`` (None when it does not answer or does not serve).

        Needs the server to allow the ``srvr`` four-letter word (``4lw.commands.whitelist``).
        """
        return {f"{host}:{port}": server_mode(host, port) for host, port in self.servers}
