"""``ContainerCluster``: ZooKeeper servers and bookies as containers on a private network.

Each node is a container (started through testcontainers) on one network of its own cluster
(created with the ``docker`` SDK), reachable from the others by name (``zk1``, ``bookie1``).
The host-side client reaches them through ports published on 127.0.0.1:

- ZooKeeper ``zkN`` serves 2181 inside, published on a free host port;
- bookie ``bookieN`` serves on a free host port ``P`` inside *and* outside, and registers as
  ``127.0.0.1:P``: the id is an address the host-side client can use as it is (bookies do not
  need to reach each other: the reference bookie never does, and autorecovery is off).

The engine is a Docker engine or podman's Docker API (:mod:`adapters.cluster.container_engine`);
the images are configuration (:class:`~adapters.cluster.container_images.ImageSet`): the
locally built ones (default: the reference bookie; real BookKeeper with
:meth:`~adapters.cluster.container_images.ImageBuilder.ensure_bookkeeper`; built on first use)
or the official ``apache/bookkeeper`` and ``zookeeper`` images. Faults: crash (SIGKILL to the
container), pause (cgroup freezer), restart, wipe and restart with data loss on both kinds of
node, plus network partitions that :class:`~adapters.cluster.provider.Fault` does not name:
:meth:`ContainerCluster.partition` cuts a node off from chosen peers (packet filters in its
network namespace, or disconnecting it from the network;
:mod:`adapters.cluster.container_partitions`) and :meth:`ContainerCluster.heal` undoes it::

    with ContainerCluster(ContainerClusterOptions(zookeepers=3, bookies=3)) as cluster:
        victim = Node.bookie(sorted(cluster.endpoints().bookies)[0])
        cluster.partition(victim)      # from every other bookie and ZooKeeper server
        cluster.heal(victim)

No Ryuk reaper runs (its image cannot be pulled everywhere): every container and the network
carry the label ``bkconform.cluster=<id>`` (:mod:`adapters.cluster.container_labels`), and
:meth:`ContainerCluster.stop` removes all of them, also after a failed start (and at
interpreter exit for a cluster never stopped).
``bkconform docker down --all`` removes whatever a killed process left behind (every container
and network labelled ``bkconform.cluster``).
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from kazoo.exceptions import KazooException, NoNodeError

from adapters.cluster.bookies import BookieSettings
from adapters.cluster.container_dns import DEFAULT_TIMEOUT as DNS_CHECK_TIMEOUT
from adapters.cluster.container_dns import ensure_container_dns
from adapters.cluster.container_engine import ContainerEngine, ContainerEngineError, find_engine
from adapters.cluster.container_images import ImageBuilder, ImageSet
from adapters.cluster.container_labels import CLUSTER_LABEL, cluster_labels, remove_labelled
from adapters.cluster.container_partitions import (
    NetworkPartitions,
    NodeCut,
    PartitionMethod,
    network_address,
)
from adapters.cluster.errors import (
    ClusterError,
    ClusterStartTimeout,
    FaultNotSupported,
    InvalidClusterOptions,
    NodeStateError,
    ProcessExited,
    UnknownNode,
)
from adapters.cluster.network import LOOPBACK, free_ports, port_accepts
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
from adapters.zookeeper.errors import MetadataError, ZooKeeperError
from adapters.zookeeper.four_letter_words import server_mode
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.registration import BookieAddress, list_bookies

ZK_CLIENT_PORT = 2181
ZK_REQUEST_TIMEOUT = 3.0
STOP_GRACE_SECONDS = 10
#: Appended to the official image's bk_server.conf before its entrypoint runs: the image
#: only maps BK_* variables for keys its conf already lists, and these two are not there.
OFFICIAL_BOOKIE_COMMAND = (
    'printf "dataIntegrityChecking=%s\\ndataIntegrityStampMissingCookies=%s\\n" '
    '"$BK_dataIntegrityChecking" "$BK_dataIntegrityStampMissingCookies" '
    ">> /opt/bookkeeper/conf/bk_server.conf && exec /opt/bookkeeper/scripts/entrypoint.sh bookie"
)


@dataclass(frozen=True)
class ContainerClusterOptions:
    """How to build a :class:`ContainerCluster`.

    ``images`` None means the locally built images (built now if missing, see
    :class:`~adapters.cluster.container_images.ImageBuilder`); ``engine`` None means whatever
    :func:`~adapters.cluster.container_engine.find_engine` finds. ``work_dir`` holds each
    node's configuration and data, bind-mounted into its container (None: a temporary
    directory, deleted by :meth:`ContainerCluster.stop`).
    """

    bookies: int = 3
    zookeepers: int = 3
    images: ImageSet | None = None
    engine: ContainerEngine | None = None
    work_dir: Path | None = None
    ledgers_root: str = "/ledgers"
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)
    partition_method: PartitionMethod = PartitionMethod.PACKET_FILTER
    start_timeout: float = 90.0
    #: ZooKeeper's tickTime: short ticks make elections and session expiry quick.
    zookeeper_tick_ms: int = 500


@dataclass
class _ContainerNode:
    """One node: its container, its published port and its directories on the host."""

    name: str
    kind: NodeKind
    node_id: str
    host_port: int
    directory: Path
    container: Any = None  # testcontainers DockerContainer
    #: ephemeralOwner of the registration a crashed bookie left behind (not yet expired).
    stale_owner: int | None = None
    #: What cuts it off from its peers right now (:meth:`ContainerCluster.partition`).
    cut: NodeCut = field(default_factory=NodeCut)

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def wrapped(self) -> Any:
        if self.container is None:
            raise NodeStateError(f"{self.kind.value} {self.node_id} has no container")
        return self.container.get_wrapped_container()


class ContainerCluster(ClusterProvider):
    """ZooKeeper and bookies in containers; see the module docstring."""

    def __init__(
        self, options: ContainerClusterOptions | None = None, *, cluster_id: str | None = None
    ) -> None:
        self.options = options or ContainerClusterOptions()
        opts = self.options
        if opts.bookies < 0 or opts.zookeepers < 1:
            raise InvalidClusterOptions(
                f"need >= 0 bookies and >= 1 ZooKeeper server, got {opts.bookies} and "
                f"{opts.zookeepers}"
            )
        if cluster_id is not None and not (cluster_id.isalnum() and cluster_id.isascii()):
            raise InvalidClusterOptions(f"cluster_id={cluster_id!r}: use letters and digits")
        #: Names the network and containers, and labels everything this cluster creates.
        self.cluster_id = cluster_id or new_cluster_id()
        self.network_name = f"bkconform-{self.cluster_id}"
        self.instance_id: str | None = None
        self.engine: ContainerEngine | None = None
        self.images: ImageSet | None = None
        self._client: Any = None
        self._network: Any = None
        self._partitions: NetworkPartitions | None = None
        self._work_dir: Path | None = None
        self._owns_work_dir = False
        self._zookeepers: dict[str, _ContainerNode] = {}
        self._bookies: dict[str, _ContainerNode] = {}
        self._zk: Any = None
        self._started = False
        self._stopped = False

    # Lifecycle ---------------------------------------------------------------------------

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            raise NodeStateError("the cluster has not been started")
        return self._work_dir

    def start(self) -> None:
        if self._started:
            raise NodeStateError("ContainerCluster.start() called twice; create a new cluster")
        self._started = True
        _live_clusters.add(self)
        try:
            self._connect_engine()
            self._make_work_dir()
            self._create_network()
            self._start_zookeepers()
            self._format()
            self._start_bookies()
        except BaseException:
            # The start failure is the error worth reporting, not a secondary one in cleanup.
            with contextlib.suppress(ClusterError):
                self.stop()
            raise

    def _connect_engine(self) -> None:
        engine = self.options.engine or find_engine()
        if engine is None:
            raise ContainerEngineError(
                "no container engine answers: run `bkconform docker setup` (podman and its "
                "Docker API service) or start a Docker engine and set DOCKER_HOST"
            )
        self.engine = engine
        self._client = engine.client()
        self.images = self.options.images or ImageBuilder(engine).ensure_all().image_set()
        if self.options.zookeepers > 1 or self.options.bookies > 0:
            # Nodes find each other by name (zk1, bookie1): fail in seconds, naming the
            # missing DNS plugin, rather than after start_timeout with an ensemble that
            # cannot form. Checked once per engine and process.
            ensure_container_dns(
                engine,
                self.images.zookeeper,
                timeout=min(DNS_CHECK_TIMEOUT, self.options.start_timeout),
            )

    def _make_work_dir(self) -> None:
        if self.options.work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="bkconform-containers-"))
            self._owns_work_dir = True
        else:
            self._work_dir = self.options.work_dir.resolve()
            self._work_dir.mkdir(parents=True, exist_ok=True)

    def _create_network(self) -> None:
        self._network = self._client.networks.create(
            self.network_name, driver="bridge", labels=cluster_labels(self.cluster_id)
        )
        self._partitions = NetworkPartitions(
            self._network, self.network_name, self._engine().docker_host
        )

    def _start_zookeepers(self) -> None:
        count = self.options.zookeepers
        names = [f"zk{index}" for index in range(1, count + 1)]
        ports = free_ports(count)
        servers = " ".join(
            f"server.{index}={name}:2888:3888;{ZK_CLIENT_PORT}"
            for index, name in enumerate(names, start=1)
        )
        for index, (name, port) in enumerate(zip(names, ports, strict=True), start=1):
            node = _ContainerNode(name, NodeKind.ZOOKEEPER, name, port, self.work_dir / name)
            self._zookeepers[name] = node
            (node.data_dir / "data").mkdir(parents=True, exist_ok=True)
            (node.data_dir / "datalog").mkdir(parents=True, exist_ok=True)
            env = {
                "ZOO_MY_ID": str(index),
                "ZOO_TICK_TIME": str(self._zookeeper_tick_ms()),
                "ZOO_INIT_LIMIT": "10",
                "ZOO_SYNC_LIMIT": "5",
                "ZOO_4LW_COMMANDS_WHITELIST": "*",
                "ZOO_ADMINSERVER_ENABLED": "false",
                "ZOO_STANDALONE_ENABLED": "true" if count == 1 else "false",
            }
            if count > 1:
                env["ZOO_SERVERS"] = servers
            self._run_container(
                node,
                self._images().zookeeper,
                env=env,
                ports={f"{ZK_CLIENT_PORT}/tcp": (LOOPBACK, port)},
                volumes={
                    node.data_dir / "data": "/data",
                    node.data_dir / "datalog": "/datalog",
                },
            )
        self._wait_for_zookeepers(list(self._zookeepers))
        try:
            self._zk = connect_zookeeper(self.zookeeper_connect, timeout=self.options.start_timeout)
        except ZooKeeperError as exc:
            raise ClusterError(f"ZooKeeper started but does not accept sessions: {exc}") from exc

    def _wait_for_zookeepers(self, names: list[str]) -> None:
        deadline = time.monotonic() + self.options.start_timeout
        while True:
            modes = {name: self._zookeeper_mode(name) for name in names}
            if all(mode is not None for mode in modes.values()):
                return
            for name in names:
                self._check_alive(self._zookeepers[name])
            if time.monotonic() > deadline:
                raise ClusterStartTimeout(
                    f"ZooKeeper servers not serving after {self.options.start_timeout:.0f} s: "
                    f"{modes}; logs of the first silent one:\n"
                    + self._log_tail(
                        self._zookeepers[next(n for n, m in modes.items() if m is None)]
                    )
                )
            time.sleep(0.2)

    def _zookeeper_tick_ms(self) -> int:
        """The containers' ZooKeeper tick: the options', or longer when the bookies' session
        (``zkTimeout``) needs it, since ZooKeeper grants at most 20 ticks (the images set no
        ``maxSessionTimeout``): a profile's 30 s session needs 1.5 s ticks."""
        session = self.options.bookie_settings.session_timeout_ms
        return max(self.options.zookeeper_tick_ms, -(-session // 20))

    def _zookeeper_mode(self, name: str) -> str | None:
        return server_mode(LOOPBACK, self._zookeepers[name].host_port, timeout=1.0)

    def _format(self) -> None:
        self.instance_id = init_new_cluster(
            self._zk, ledgers_root=self.options.ledgers_root, layout="hierarchical"
        )

    @property
    def zookeeper_connect(self) -> str:
        """Host-side connect string (published ports)."""
        return ",".join(f"{LOOPBACK}:{node.host_port}" for node in self._zookeepers.values())

    @property
    def internal_zookeeper_connect(self) -> str:
        """Connect string inside the cluster network (what the bookies use)."""
        return ",".join(f"{name}:{ZK_CLIENT_PORT}" for name in self._zookeepers)

    def _start_bookies(self) -> None:
        count = self.options.bookies
        for index, port in enumerate(free_ports(count), start=1):
            name = f"bookie{index}"
            bookie_id = f"{LOOPBACK}:{port}"
            node = _ContainerNode(name, NodeKind.BOOKIE, bookie_id, port, self.work_dir / name)
            self._bookies[bookie_id] = node
            node.data_dir.mkdir(parents=True, exist_ok=True)
            self._run_bookie(node)
        for node in self._bookies.values():
            self._wait_for_bookie(node)

    def _bookie_entries(self, node: _ContainerNode) -> dict[str, str]:
        s = self.options.bookie_settings
        uri = metadata_service_uri(self.internal_zookeeper_connect, self.options.ledgers_root)
        entries = {
            "bookiePort": str(node.host_port),
            "bookieId": node.node_id,
            "metadataServiceUri": uri,
            "zkServers": self.internal_zookeeper_connect,
            "zkLedgersRootPath": self.options.ledgers_root,
            "journalDirectories": "/data/journal",
            "ledgerDirectories": "/data/ledgers",
            "allowLoopback": "true",
            # As on a local cluster: the profile's settings, the storage, the journal, data
            # integrity and the harness's switches (BookieSettings.settings_entries).
            **s.settings_entries(),
        }
        if self._images().runs_bookkeeper:
            # BookKeeper binds every interface unless listeningInterface is set (so the
            # published port reaches it); its id is the advertised address.
            entries["advertisedAddress"] = LOOPBACK
        else:
            # The reference bookie binds its advertised address: every interface of the
            # container, so that the published port reaches it. The id stays 127.0.0.1:P.
            entries["advertisedAddress"] = "0.0.0.0"
        entries.update(s.extra)
        return entries

    def _bookie_environment(self, entries: dict[str, str]) -> dict[str, str]:
        """A bookie container's environment: the official image's ``BK_*`` keys (the others
        mount ``bk_server.conf``), and a real bookie's JVM flags (``BookieSettings.jvm_flags``,
        as on a local cluster), which BookKeeper's launcher and ours read from
        ``BOOKIE_GC_OPTS``; ``()`` keeps the launcher's own."""
        images = self._images()
        env = {} if images.mounts_conf else {f"BK_{key}": value for key, value in entries.items()}
        flags = self.options.bookie_settings.jvm_flags
        if images.runs_bookkeeper and flags:
            env["BOOKIE_GC_OPTS"] = " ".join(flags)
        return env

    def _run_bookie(self, node: _ContainerNode) -> None:
        images = self._images()
        entries = self._bookie_entries(node)
        env = self._bookie_environment(entries)
        ports = {f"{node.host_port}/tcp": (LOOPBACK, node.host_port)}
        if images.mounts_conf:
            conf_dir = node.directory / "conf"
            conf_dir.mkdir(parents=True, exist_ok=True)
            (conf_dir / "bk_server.conf").write_text(
                "".join(f"{key}={value}\n" for key, value in entries.items())
            )
            self._run_container(
                node,
                images.bookie,
                env=env,
                ports=ports,
                volumes={conf_dir: "/conf", node.data_dir: "/data"},
            )
        else:
            self._run_container(
                node,
                images.bookie,
                env=env,
                ports=ports,
                volumes={node.data_dir: "/data"},
                entrypoint=["/bin/bash", "-c"],
                command=[OFFICIAL_BOOKIE_COMMAND],
            )

    def _run_container(
        self,
        node: _ContainerNode,
        image: str,
        *,
        env: dict[str, str],
        ports: dict[str, tuple[str, int]],
        volumes: dict[Path, str],
        entrypoint: list[str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        from docker.types import EndpointConfig
        from testcontainers.core.config import testcontainers_config
        from testcontainers.core.container import DockerContainer

        # No Ryuk: its image cannot be pulled everywhere, and stop() removes everything by
        # label anyway (the same as TESTCONTAINERS_RYUK_DISABLED=true).
        testcontainers_config.ryuk_disabled = True
        engine = self._engine()
        container = DockerContainer(
            image, docker_client_kw={"environment": engine.client_environment()}
        )
        container.with_name(f"{self.network_name}-{node.name}")
        for key, value in env.items():
            container.with_env(key, value)
        for host_dir, target in volumes.items():
            container.with_volume_mapping(str(host_dir), target, "rw")
        # Published on loopback only: the host-side client is the only outside user. The docker
        # SDK takes (address, port) pairs; testcontainers' annotation only knows bare ports.
        cast(dict[str, Any], container.ports).update(ports)
        if command is not None:
            container.with_command(command)
        kwargs: dict[str, Any] = {
            "labels": cluster_labels(self.cluster_id, node.name),
            "hostname": node.name,
            "network": self.network_name,
            "networking_config": {
                self.network_name: EndpointConfig(self._client.api._version, aliases=[node.name])
            },
            # Packet-filter partitions run iptables inside the container.
            "cap_add": ["NET_ADMIN"],
        }
        if entrypoint is not None:
            kwargs["entrypoint"] = entrypoint
        container.with_kwargs(**kwargs)
        node.container = container
        try:
            container.start()
        except Exception as exc:
            raise ClusterError(
                f"cannot start the container of {node.kind.value} {node.node_id} from "
                f"{image}: {exc}"
            ) from exc

    def stop(self) -> None:
        """Remove every container and the network, close the session, clean up. Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        _live_clusters.discard(self)
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
            with contextlib.suppress(Exception):
                self._zk.close()
        errors: list[str] = []
        if self._client is not None:
            errors += remove_labelled(self._client, {CLUSTER_LABEL: self.cluster_id})
            with contextlib.suppress(Exception):
                self._client.close()
        if self._owns_work_dir and self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
        if errors:
            raise ClusterError("stopping the container cluster: " + "; ".join(errors))

    def detach(self) -> None:
        """Leave the containers running after this process exits (``bkconform docker up``).

        Afterwards :meth:`stop` does nothing;
        :func:`~adapters.cluster.container_labels.remove_labelled` with this cluster's
        :attr:`cluster_id` removes the containers and the network, and the work dir (which
        must then be an explicit one: the containers' data is bind-mounted from it) is the
        caller's to delete.
        """
        if not self._started or self._stopped:
            raise NodeStateError("only a running cluster can be detached")
        if self._owns_work_dir:
            raise NodeStateError(
                "a detached cluster needs an explicit work_dir: its containers mount it"
            )
        self._stopped = True
        _live_clusters.discard(self)
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
            with contextlib.suppress(Exception):
                self._zk.close()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # Queries -----------------------------------------------------------------------------

    def endpoints(self) -> Endpoints:
        if not self._zookeepers:
            raise NodeStateError("the cluster has not been started")
        return Endpoints(
            zookeeper_connect=self.zookeeper_connect,
            ledgers_root=self.options.ledgers_root,
            metadata_service_uri=metadata_service_uri(
                self.zookeeper_connect, self.options.ledgers_root
            ),
            bookies={bookie_id: (LOOPBACK, n.host_port) for bookie_id, n in self._bookies.items()},
            zookeeper_servers={
                name: (LOOPBACK, n.host_port) for name, n in self._zookeepers.items()
            },
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(bookie=Fault.ALL, zookeeper=Fault.ALL)

    @property
    def zookeeper_client(self) -> Any:
        """The cluster's own kazoo client (connected to every server's published port)."""
        if self._zk is None:
            raise NodeStateError("the cluster has not been started")
        return self._zk

    def registered_bookies(self) -> dict[str, BookieAddress]:
        return list_bookies(self.zookeeper_client, self.options.ledgers_root)

    def zookeeper_modes(self) -> dict[str, str | None]:
        """Each ZooKeeper server's role (leader / follower / standalone) or None if down."""
        return {name: self._zookeeper_mode(name) for name in self._zookeepers}

    def zookeeper_leader(self) -> str | None:
        return next((n for n, mode in self.zookeeper_modes().items() if mode == "leader"), None)

    def container_status(self, node: Node) -> str:
        """The engine's status of the node's container (running, paused, exited...)."""
        container = self._node(node).wrapped
        container.reload()
        return str(container.status)

    def is_running(self, node: Node) -> bool:
        return self.container_status(node) == "running"

    def hostname(self, node: Node) -> str:
        """The node's name on the cluster network (``zk1``, ``bookie2``)."""
        return self._node(node).name

    def container_address(self, node: Node) -> str:
        """The node's address on the cluster network (empty while disconnected)."""
        return network_address(self._node(node).wrapped, self.network_name)

    def _node(self, node: Node) -> _ContainerNode:
        table = self._bookies if node.kind is NodeKind.BOOKIE else self._zookeepers
        try:
            return table[node.id]
        except KeyError:
            raise UnknownNode(f"no {node.kind.value} {node.id!r}; known: {sorted(table)}") from None

    def _nodes(self) -> Iterator[_ContainerNode]:
        yield from self._zookeepers.values()
        yield from self._bookies.values()

    def _images(self) -> ImageSet:
        if self.images is None:
            raise NodeStateError("the cluster has not been started")
        return self.images

    def _engine(self) -> ContainerEngine:
        if self.engine is None:
            raise NodeStateError("the cluster has not been started")
        return self.engine

    def _log_tail(self, node: _ContainerNode, lines: int = 30) -> str:
        try:
            raw = node.wrapped.logs(tail=lines)
        except Exception as exc:
            return f"(no logs: {exc})"
        return bytes(raw).decode("utf-8", errors="replace")

    def _check_alive(self, node: _ContainerNode) -> None:
        container = node.wrapped
        container.reload()
        if container.status in ("exited", "dead"):
            code = container.attrs.get("State", {}).get("ExitCode")
            raise ProcessExited(
                f"{node.kind.value} {node.node_id} (container {container.name}) exited with "
                f"code {code} while starting:\n{self._log_tail(node)}"
            )

    # Bookie readiness --------------------------------------------------------------------

    def _registration_owner(self, node: _ContainerNode) -> int | None:
        path = f"{self.options.ledgers_root}/available/{node.node_id}"
        try:
            stat = wait(
                self.zookeeper_client.exists_async(path),
                timeout=ZK_REQUEST_TIMEOUT,
                operation=f"exists {path}",
            )
        except (KazooException, MetadataError):
            return None
        return None if stat is None else int(stat.ephemeralOwner)

    def _remember_registration(self, node: _ContainerNode) -> None:
        node.stale_owner = self._registration_owner(node)

    def _wait_for_bookie(self, node: _ContainerNode) -> None:
        deadline = time.monotonic() + self.options.start_timeout
        while True:
            self._check_alive(node)
            owner = self._registration_owner(node)
            registered = owner is not None and owner != node.stale_owner
            if registered and port_accepts(LOOPBACK, node.host_port, 1.0):
                node.stale_owner = None
                return
            if time.monotonic() > deadline:
                raise ClusterStartTimeout(
                    f"bookie {node.node_id} not ready after {self.options.start_timeout:.0f} s "
                    f"(registered: {registered}); a bookie restarted after a crash waits for "
                    f"its old ZooKeeper session to expire first. Logs:\n{self._log_tail(node)}"
                )
            time.sleep(0.1)

    # Faults ------------------------------------------------------------------------------

    def _crash(self, node: Node) -> None:
        target = self._node(node)
        if node.kind is NodeKind.BOOKIE and self.is_running(node):
            self._remember_registration(target)
        container = target.wrapped
        container.reload()
        if container.status == "paused":
            # A frozen cgroup cannot be signalled on every engine: thaw first, then kill.
            container.unpause()
        if container.status in ("running", "paused"):
            container.kill(signal="SIGKILL")
            container.wait(timeout=30)

    def _pause(self, node: Node) -> None:
        self._node(node).wrapped.pause()

    def _resume(self, node: Node) -> None:
        self._node(node).wrapped.unpause()

    def _restart(self, node: Node) -> None:
        target = self._node(node)
        container = target.wrapped
        container.reload()
        if container.status == "paused":
            container.unpause()
            container.reload()
        if container.status == "running":
            if node.kind is NodeKind.BOOKIE:
                self._remember_registration(target)
            container.stop(timeout=STOP_GRACE_SECONDS)
        self._start_node(target)

    def _start_node(self, target: _ContainerNode) -> None:
        target.wrapped.start()
        # A restarted container may come back with another address: old rules are void.
        target.cut.dropped = ()
        if target.kind is NodeKind.BOOKIE:
            self._wait_for_bookie(target)
        else:
            self._wait_for_zookeepers([target.name])

    def _wipe(self, node: Node) -> None:
        target = self._node(node)
        self._crash(node)
        for child in target.data_dir.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
                if node.kind is NodeKind.ZOOKEEPER:
                    child.mkdir()
            else:
                child.unlink()
        if node.kind is NodeKind.BOOKIE and not self.options.bookie_settings.stamp_missing_cookies:
            # As an operator replacing a disk would: else the bookie refuses its empty disks.
            path = f"{self.options.ledgers_root}/cookies/{node.id}"
            try:
                wait(
                    self.zookeeper_client.delete_async(path),
                    timeout=ZK_REQUEST_TIMEOUT,
                    operation=f"delete {path}",
                )
            except NoNodeError:
                pass
            except (KazooException, MetadataError) as exc:
                raise ClusterError(
                    f"wiped {node} but could not delete its cookie: {exc!r}; it will refuse to "
                    "boot until the cookie is removed"
                ) from exc

    def _restart_with_data_loss(self, node: Node, how: DataLoss) -> None:
        if how is DataLoss.UNJOURNALED:
            if node.kind is NodeKind.ZOOKEEPER:
                raise FaultNotSupported(
                    "ZooKeeper always writes its transaction log; use DataLoss.WIPE"
                )
            if self.options.bookie_settings.writes_journal_data:
                raise FaultNotSupported(
                    f"{node} writes entries to its journal, so a restart loses nothing; start "
                    "the cluster with BookieSettings(journal_write_data=False)"
                )
            self._crash(node)
        else:
            self._wipe(node)
        self._start_node(self._node(node))

    # Partitions --------------------------------------------------------------------------

    def partition(
        self,
        node: Node,
        peers: Iterable[Node] | None = None,
        method: PartitionMethod | None = None,
    ) -> None:
        """Cut ``node`` off from ``peers`` (default: every other node of the cluster).

        With :attr:`PartitionMethod.PACKET_FILTER` the node drops every packet from and to
        the peers' current addresses (connections hang, as in a real partition) while the
        host-side client keeps reaching it; with :attr:`PartitionMethod.DISCONNECT` it leaves
        the network altogether (``peers`` must then be None). ``method`` None means
        ``options.partition_method``.
        """
        method = method or self.options.partition_method
        target = self._node(node)
        chosen = (
            [n for n in self._nodes() if n is not target]
            if peers is None
            else [self._node(peer) for peer in peers]
        )
        self._network_partitions().cut_off(target, chosen, method, every_peer=peers is None)

    def heal(self, node: Node) -> None:
        """Undo every partition of ``node``."""
        target = self._node(node)
        self._network_partitions().heal(target)

    def partitioned_from(self, node: Node) -> tuple[str, ...]:
        """The peer addresses ``node`` drops packets for right now."""
        return self._node(node).cut.dropped

    def _network_partitions(self) -> NetworkPartitions:
        if self._partitions is None:
            raise NodeStateError("the cluster has not been started")
        return self._partitions


#: Clusters started and not yet stopped or detached, for the exit hook below.
_live_clusters: set[ContainerCluster] = set()


@atexit.register
def _stop_live_clusters() -> None:
    # Without Ryuk nothing else removes the containers of a process that exits without
    # stop() (an uncaught exception in a thread, sys.exit() in a callback). SIGKILL of this
    # process cannot be covered: `bkconform docker down --all` removes what it leaves.
    for cluster in list(_live_clusters):
        with contextlib.suppress(Exception):
            cluster.stop()


def new_cluster_id() -> str:
    return uuid.uuid4().hex[:10]


__all__ = [
    "ContainerCluster",
    "ContainerClusterOptions",
    # The type of ContainerClusterOptions.partition_method; its home is container_partitions.
    "PartitionMethod",
    "new_cluster_id",
]
