"""``LocalCluster``: real ZooKeeper and N bookies as child processes on loopback.

ZooKeeper is a standalone server or an ensemble (:mod:`adapters.cluster.zookeeper`); bookies
are a real BookKeeper distribution or the reference bookie test double
(:mod:`adapters.cluster.bookies`). The cluster is formatted before any bookie starts, as
``bookkeeper shell initnewcluster`` would. Every fault of :class:`~adapters.cluster.provider.Fault`
is supported on both kinds of node::

    with LocalCluster(LocalClusterOptions(bookies=3, zookeepers=3)) as cluster:
        cluster.crash(Node.zookeeper(cluster.zookeeper_leader()))
"""

from __future__ import annotations

import contextlib
import enum
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from adapters.cluster.bookies import (
    BookieConfig,
    BookieImplementation,
    BookieProcess,
    BookieSettings,
)
from adapters.cluster.detached import ProcessRecord
from adapters.cluster.errors import (
    ClusterError,
    FaultNotSupported,
    InvalidClusterOptions,
    NodeStateError,
    ProcessExited,
    UnknownNode,
)
from adapters.cluster.network import LOOPBACK, free_ports, mentions_port_conflict
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
from adapters.cluster.scratch import make_scratch_dir
from adapters.cluster.zookeeper import ZooKeeperEnsemble, ZooKeeperTuning
from adapters.installations.bookkeeper import find_bookkeeper_home
from adapters.installations.system import BookieChoice, SystemUnderTest, local_system
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.processes import ManagedProcess
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.errors import ZooKeeperError
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.registration import BookieAddress, list_bookies

PORT_ATTEMPTS = 3


def _zip_ports(names: list[str]) -> list[tuple[str, int]]:
    return list(zip(names, free_ports(len(names)), strict=True))


class KeepWorkDir(enum.Enum):
    """When :meth:`LocalCluster.stop` leaves a temporary work directory behind."""

    NEVER = "never"
    ON_FAILURE = "on-failure"
    ALWAYS = "always"


@dataclass(frozen=True)
class LocalClusterOptions:
    """How to build a :class:`LocalCluster`.

    ``bookkeeper_home`` selects a real BookKeeper distribution; when it is None the
    ``BOOKKEEPER_HOME`` environment variable is used if ``use_bookkeeper_home_env`` is set,
    and the reference bookie test double otherwise. ``work_dir`` None means a fresh temporary
    directory (on tmpfs when the machine has one with room: :mod:`adapters.cluster.scratch`),
    deleted by :meth:`LocalCluster.stop` unless ``keep_work_dir`` says otherwise;
    a work directory passed in is never deleted.
    """

    bookies: int = 3
    zookeepers: int = 1
    bookkeeper_home: Path | None = None
    use_bookkeeper_home_env: bool = True
    work_dir: Path | None = None
    keep_work_dir: KeepWorkDir = KeepWorkDir.ON_FAILURE
    ledgers_root: str = "/ledgers"
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)
    zookeeper_tuning: ZooKeeperTuning = field(default_factory=ZooKeeperTuning)
    zookeeper_install: ZooKeeperInstall | None = None
    start_timeout: float = 60.0


class LocalCluster(ClusterProvider):
    """ZooKeeper plus bookies as local child processes; see the module docstring."""

    def __init__(self, options: LocalClusterOptions | None = None) -> None:
        self.options = options or LocalClusterOptions()
        if self.options.bookies < 0 or self.options.zookeepers < 1:
            raise InvalidClusterOptions(
                f"need >= 0 bookies and >= 1 ZooKeeper server, got {self.options.bookies} "
                f"and {self.options.zookeepers}"
            )
        self._work_dir: Path | None = None
        self._owns_work_dir = False
        self._ensemble: ZooKeeperEnsemble | None = None
        self._bookies: dict[str, BookieProcess] = {}
        # Every bookie ever launched (including failed attempts), for stop() to reach.
        self._starting: list[BookieProcess] = []
        self._zk: Any = None
        self._started = False
        self._stopped = False
        self._failed = False
        self._detached = False
        self.instance_id: str | None = None
        self._zookeeper_install: ZooKeeperInstall | None = None

    # Lifecycle ---------------------------------------------------------------------------

    @property
    def work_dir(self) -> Path:
        if self._work_dir is None:
            raise NodeStateError("the cluster has not been started")
        return self._work_dir

    def start(self) -> None:
        if self._started:
            raise NodeStateError("LocalCluster.start() called twice; create a new cluster")
        self._started = True
        opts = self.options
        if opts.work_dir is None:
            try:
                self._work_dir = make_scratch_dir("bkconform-cluster-")
            except ValueError as exc:  # BKCONFORM_SCRATCH names no writable directory
                raise InvalidClusterOptions(str(exc)) from exc
            self._owns_work_dir = True
        else:
            self._work_dir = opts.work_dir.resolve()
            self._work_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start_zookeeper()
            self._format()
            self._start_bookies()
        except BaseException:
            self._failed = True
            # The start failure is the error worth reporting, not a secondary one in cleanup.
            with contextlib.suppress(ClusterError):
                self.stop()
            raise

    def _start_zookeeper(self) -> None:
        opts = self.options
        install = self._zookeeper_installation()
        self._ensemble = ZooKeeperEnsemble(
            install,
            self.work_dir,
            opts.zookeepers,
            tuning=opts.zookeeper_tuning,
            start_timeout=opts.start_timeout,
        )
        self._ensemble.start()
        try:
            self._zk = connect_zookeeper(self._ensemble.connect_string, timeout=opts.start_timeout)
        except ZooKeeperError as exc:
            raise ClusterError(f"ZooKeeper started but does not accept sessions: {exc}") from exc

    def _format(self) -> None:
        self.instance_id = init_new_cluster(
            self._zk, ledgers_root=self.options.ledgers_root, layout="hierarchical"
        )

    def _start_bookies(self) -> None:
        opts = self.options
        home = find_bookkeeper_home(
            opts.bookkeeper_home, None if opts.use_bookkeeper_home_env else {}
        )
        names = [f"bookie{index}" for index in range(1, opts.bookies + 1)]
        for attempt in range(1, PORT_ATTEMPTS + 1):
            pending = [self._new_bookie(name, port, home) for name, port in _zip_ports(names)]
            for bookie in pending:
                bookie.start()
            names = []
            for bookie in pending:
                try:
                    bookie.wait_until_ready(self._zk, opts.start_timeout)
                    self._bookies[bookie.bookie_id] = bookie
                except ProcessExited as exc:
                    # Lost a race for its port: retry that bookie on a fresh port and dir.
                    if attempt == PORT_ATTEMPTS or not mentions_port_conflict(str(exc)):
                        raise
                    shutil.rmtree(bookie.config.directory, ignore_errors=True)
                    names.append(bookie.config.name)
            if not names:
                return

    def _new_bookie(self, name: str, port: int, home: Path | None) -> BookieProcess:
        ensemble = self._zookeeper()
        config = BookieConfig(
            name=name,
            port=port,
            directory=self.work_dir / "bookies" / name,
            zookeeper_connect=ensemble.connect_string,
            ledgers_root=self.options.ledgers_root,
            metadata_service_uri=metadata_service_uri(
                ensemble.connect_string, self.options.ledgers_root
            ),
            settings=self.options.bookie_settings,
        )
        bookie = BookieProcess(config, home, self.work_dir / "logs")
        # Registered at once so that stop() reaches it even if the start fails.
        self._starting.append(bookie)
        return bookie

    def stop(self) -> None:
        """Stop every process, close the ZooKeeper session, clean the work dir. Idempotent."""
        if self._stopped or self._detached:
            return
        self._stopped = True
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
            with contextlib.suppress(Exception):
                self._zk.close()
        errors: list[str] = []
        bookie_processes = [b.process for b in self._starting]
        zk_processes = (
            [s.process for s in self._ensemble.servers.values() if s.process is not None]
            if self._ensemble is not None
            else []
        )
        # Bookies first (they would otherwise log ZooKeeper errors while shutting down);
        # within each group, signal everyone before waiting on anyone.
        for group in (bookie_processes, zk_processes):
            errors += _stop_together(group)
        self._clean_work_dir()
        if errors:
            raise ClusterError("stopping the local cluster: " + "; ".join(errors))

    def _clean_work_dir(self) -> None:
        if not self._owns_work_dir or self._work_dir is None:
            return
        keep = self.options.keep_work_dir
        if keep is KeepWorkDir.ALWAYS or (keep is KeepWorkDir.ON_FAILURE and self._failed):
            return
        shutil.rmtree(self._work_dir, ignore_errors=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self._failed = True
        self.stop()

    @property
    def owns_work_dir(self) -> bool:
        """True when the work dir is a temporary directory this cluster created."""
        return self._owns_work_dir

    def detach(self) -> list[ProcessRecord]:
        """Leave every process running after this Python process exits; returns them.

        Used by ``bkconform cluster up``. Afterwards :meth:`stop` does nothing: the processes
        are stopped by process group from the returned records. Hosted bookies
        (``in_jvm_restarts``) cannot be detached: they read commands from this process and
        close when it goes away.
        """
        if any(bookie.hosted for bookie in self._bookies.values()):
            raise NodeStateError(
                "a cluster whose bookies restart inside their JVM (in_jvm_restarts) cannot be "
                "detached: the bookie host exits with the process that drives it"
            )
        records = []
        for kind, name, node_id, process in self._all_processes():
            process.detach()
            if process.pid is not None:
                records.append(ProcessRecord(name, kind, node_id, process.pid, process.log_path))
        if self._zk is not None:
            with contextlib.suppress(Exception):
                self._zk.stop()
            with contextlib.suppress(Exception):
                self._zk.close()
        self._detached = True
        return records

    def _all_processes(self) -> list[tuple[NodeKind, str, str, ManagedProcess]]:
        found: list[tuple[NodeKind, str, str, ManagedProcess]] = []
        if self._ensemble is not None:
            for name, server in self._ensemble.servers.items():
                if server.process is not None:
                    found.append((NodeKind.ZOOKEEPER, name, name, server.process))
        for bookie_id, bookie in self._bookies.items():
            found.append((NodeKind.BOOKIE, bookie.config.name, bookie_id, bookie.process))
        return found

    # Queries -----------------------------------------------------------------------------

    def endpoints(self) -> Endpoints:
        ensemble = self._zookeeper()
        return Endpoints(
            zookeeper_connect=ensemble.connect_string,
            ledgers_root=self.options.ledgers_root,
            metadata_service_uri=metadata_service_uri(
                ensemble.connect_string, self.options.ledgers_root
            ),
            bookies={
                bookie_id: (LOOPBACK, b.config.port) for bookie_id, b in self._bookies.items()
            },
            zookeeper_servers=ensemble.client_endpoints(),
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(bookie=Fault.ALL, zookeeper=Fault.ALL)

    @property
    def zookeeper_client(self) -> Any:
        """The cluster's own kazoo client (connected to the whole ensemble)."""
        if self._zk is None:
            raise NodeStateError("the cluster has not been started")
        return self._zk

    def _zookeeper_installation(self) -> ZooKeeperInstall:
        if self._zookeeper_install is None:
            self._zookeeper_install = self.options.zookeeper_install or locate_zookeeper()
        return self._zookeeper_install

    def system_under_test(self) -> SystemUnderTest:
        """The bookies, client and ZooKeeper this cluster runs (or will run: nothing is
        started to tell). The client is the model's: the cluster's users speak the protocol
        through :mod:`adapters.bookkeeper`."""
        opts = self.options
        home = find_bookkeeper_home(
            opts.bookkeeper_home, None if opts.use_bookkeeper_home_env else {}
        )
        choice = BookieChoice.reference() if home is None else BookieChoice.bookkeeper(home)
        install = self._zookeeper_installation()
        return local_system(choice, install.classpath, install.source)

    def bookie_implementation(self) -> BookieImplementation | None:
        first = next(iter(self._bookies.values()), None)
        return None if first is None else first.implementation

    def bookie(self, bookie_id: str) -> BookieProcess:
        try:
            return self._bookies[bookie_id]
        except KeyError:
            raise UnknownNode(
                f"no bookie {bookie_id!r}; bookies are {sorted(self._bookies)}"
            ) from None

    def registered_bookies(self) -> dict[str, BookieAddress]:
        """Bookies registered in ZooKeeper right now (writable and read-only)."""
        return list_bookies(self.zookeeper_client, self.options.ledgers_root)

    def zookeeper_modes(self) -> dict[str, str | None]:
        """Each ZooKeeper server's role (leader / follower / standalone) or None if down."""
        return self._zookeeper().modes()

    def zookeeper_leader(self) -> str | None:
        return self._zookeeper().leader()

    def is_running(self, node: Node) -> bool:
        return self._process(node).is_running()

    def _zookeeper(self) -> ZooKeeperEnsemble:
        if self._ensemble is None:
            raise NodeStateError("the cluster has not been started")
        return self._ensemble

    def _process(self, node: Node) -> ManagedProcess:
        if node.kind is NodeKind.BOOKIE:
            return self.bookie(node.id).process
        server = self._zookeeper().server(node.id)
        if server.process is None:
            raise NodeStateError(f"{node} was never started")
        return server.process

    # Faults ------------------------------------------------------------------------------

    def _crash(self, node: Node) -> None:
        if node.kind is NodeKind.BOOKIE:
            bookie = self.bookie(node.id)
            if bookie.process.is_running():
                bookie.remember_registration(self._zk)
            bookie.process.kill()
            bookie.expire_registration(self._zk)
        else:
            self._zookeeper().crash(node.id)

    def _pause(self, node: Node) -> None:
        self._process(node).pause()

    def _resume(self, node: Node) -> None:
        self._process(node).resume()

    def _restart(self, node: Node) -> None:
        if node.kind is NodeKind.BOOKIE:
            bookie = self.bookie(node.id)
            if bookie.process.is_running():
                bookie.remember_registration(self._zk)
                bookie.process.stop()
            self._start_bookie(bookie)
        else:
            self._restart_zookeeper(node.id)

    def _start_bookie(self, bookie: BookieProcess) -> None:
        bookie.start()
        bookie.wait_until_ready(self._zk, self.options.start_timeout)

    def _restart_hosted(self, bookie: BookieProcess) -> bool:
        """A running hosted bookie loses its disks and restarts inside its JVM; False when the
        bookie is not hosted, not running or paused (a paused JVM would not read the command:
        the caller then kills it, wipes and starts a new process)."""
        if not (bookie.hosted and bookie.process.is_running()) or bookie.process.paused:
            return False
        bookie.restart_empty(self._zk)
        bookie.wait_until_ready(self._zk, self.options.start_timeout)
        return True

    def _restart_zookeeper(self, name: str) -> None:
        self._zookeeper().restart(name)

    def _wipe(self, node: Node) -> None:
        if node.kind is NodeKind.BOOKIE:
            bookie = self.bookie(node.id)
            if bookie.process.is_running():
                bookie.remember_registration(self._zk)
            bookie.process.kill()
            bookie.expire_registration(self._zk)
            bookie.wipe(self._zk)
        else:
            self._zookeeper().wipe(node.id)

    def _restart_with_data_loss(self, node: Node, how: DataLoss) -> None:
        if how is DataLoss.UNJOURNALED:
            if node.kind is NodeKind.ZOOKEEPER:
                raise FaultNotSupported(
                    "ZooKeeper always writes its transaction log; use DataLoss.WIPE"
                )
            if self.options.bookie_settings.journal_write_data:
                raise FaultNotSupported(
                    f"{node} writes entries to its journal, so a restart loses nothing; start "
                    "the cluster with BookieSettings(journal_write_data=False)"
                )
            self._crash(node)
            self._start_bookie(self.bookie(node.id))
            return
        if node.kind is NodeKind.BOOKIE and self._restart_hosted(self.bookie(node.id)):
            return
        self._wipe(node)
        if node.kind is NodeKind.BOOKIE:
            self._start_bookie(self.bookie(node.id))
        else:
            self._restart_zookeeper(node.id)


def _stop_together(processes: list[ManagedProcess]) -> list[str]:
    for process in processes:
        if process.is_running():
            process.signal(signal.SIGTERM)
            process.signal(signal.SIGCONT)
    errors = []
    for process in processes:
        try:
            process.stop()
        except ClusterError as exc:
            errors.append(str(exc))
    return errors
