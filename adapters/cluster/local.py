"""``LocalCluster``: real ZooKeeper and N bookies as child processes on loopback.

ZooKeeper is a standalone server or an ensemble (:mod:`adapters.cluster.zookeeper`); bookies
are a real BookKeeper distribution or the reference bookie test double
(:mod:`adapters.cluster.bookies`). The cluster is formatted before any bookie starts, as
``bookkeeper shell initnewcluster`` would. Every fault of :class:`~adapters.cluster.provider.Fault`
is supported on both kinds of node::

    with LocalCluster(LocalClusterOptions(bookies=3, zookeepers=3)) as cluster:
        cluster.crash(Node.zookeeper(cluster.zookeeper_leader()))

Each bookie may run a release of its own (``bookie_homes``: a cluster halfway through an
upgrade), and :meth:`LocalCluster.restart_with_release` is an operator's upgrade (or downgrade)
step: the bookie stopped as an operator stops it (SIGTERM) and started again, with its data,
from another distribution.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import shutil
import signal
import time
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
from adapters.installations.system import (
    MODEL_CLIENT,
    BookieChoice,
    SystemUnderTest,
    bookkeeper_version,
    describe_zookeeper,
    local_system,
)
from adapters.installations.zookeeper import ZooKeeperInstall, locate_zookeeper
from adapters.processes import ManagedProcess
from adapters.zookeeper.client import connect_zookeeper
from adapters.zookeeper.errors import ZooKeeperError
from adapters.zookeeper.four_letter_words import packets_received
from adapters.zookeeper.layout import init_new_cluster
from adapters.zookeeper.registration import BookieAddress, list_bookies

PORT_ATTEMPTS = 3

log = logging.getLogger(__name__)


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
    and the reference bookie test double otherwise. ``bookie_homes``, when given, names each
    bookie's own distribution (one per bookie, in the order bookie1, bookie2...; a cluster of
    mixed releases) and ``bookkeeper_home`` is then unused. ``work_dir`` None means a fresh
    temporary directory (on tmpfs when the machine has one with room:
    :mod:`adapters.cluster.scratch`), deleted by :meth:`LocalCluster.stop` unless
    ``keep_work_dir`` says otherwise; a work directory passed in is never deleted.
    """

    bookies: int = 3
    zookeepers: int = 1
    bookkeeper_home: Path | None = None
    use_bookkeeper_home_env: bool = True
    #: Each bookie's distribution (bookie1's first): empty, every bookie runs the one above.
    bookie_homes: tuple[Path, ...] = ()
    work_dir: Path | None = None
    keep_work_dir: KeepWorkDir = KeepWorkDir.ON_FAILURE
    ledgers_root: str = "/ledgers"
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)
    zookeeper_tuning: ZooKeeperTuning = field(default_factory=ZooKeeperTuning)
    zookeeper_install: ZooKeeperInstall | None = None
    start_timeout: float = 60.0


@dataclass(frozen=True)
class ReleaseRestart:
    """What :meth:`LocalCluster.restart_with_release` did to a bookie."""

    bookie_id: str
    #: The releases it ran before and runs now (``4.17.3``, ``4.18.0``).
    before: str
    after: str
    #: Whether it was running (else it was only started), and how its old process ended:
    #: 143 (or -15) is an exit on SIGTERM, -9 a kill after the stop timeout.
    was_running: bool
    exit_code: int | None
    stop_seconds: float
    start_seconds: float

    @property
    def stopped_cleanly(self) -> bool:
        """It exited on SIGTERM (or had already stopped), without being killed."""
        return self.exit_code != -signal.SIGKILL

    def describe(self) -> str:
        if not self.was_running:
            stop = "was down"
        else:
            how = "stopped (SIGTERM)" if self.stopped_cleanly else "killed after SIGTERM"
            stop = f"{how} in {self.stop_seconds:.1f} s, exit {self.exit_code}"
        return (
            f"{self.bookie_id} {self.before} -> {self.after}: {stop}; started with its data "
            f"in {self.start_seconds:.1f} s"
        )


class LocalCluster(ClusterProvider):
    """ZooKeeper plus bookies as local child processes; see the module docstring."""

    def __init__(self, options: LocalClusterOptions | None = None) -> None:
        self.options = options or LocalClusterOptions()
        if self.options.bookies < 0 or self.options.zookeepers < 1:
            raise InvalidClusterOptions(
                f"need >= 0 bookies and >= 1 ZooKeeper server, got {self.options.bookies} "
                f"and {self.options.zookeepers}"
            )
        if self.options.bookie_homes and len(self.options.bookie_homes) != self.options.bookies:
            raise InvalidClusterOptions(
                f"{len(self.options.bookie_homes)} bookie homes for {self.options.bookies} "
                "bookies: name one distribution per bookie, or none"
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
            # The bookies get the ZooKeeper session their zkTimeout asks for (a profile's 30 s
            # would otherwise be cut down to the server's 20 ticks).
            tuning=opts.zookeeper_tuning.for_sessions_of(opts.bookie_settings.session_timeout_ms),
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

    def planned_homes(self) -> dict[str, Path | None]:
        """Each bookie's name (bookie1...) -> the distribution it starts from (None: the
        reference bookie test double)."""
        opts = self.options
        names = [f"bookie{index}" for index in range(1, opts.bookies + 1)]
        if opts.bookie_homes:
            return {
                name: find_bookkeeper_home(home, {})
                for name, home in zip(names, opts.bookie_homes, strict=True)
            }
        home = find_bookkeeper_home(
            opts.bookkeeper_home, None if opts.use_bookkeeper_home_env else {}
        )
        return dict.fromkeys(names, home)

    def _start_bookies(self) -> None:
        opts = self.options
        homes = self.planned_homes()
        names = list(homes)
        for attempt in range(1, PORT_ATTEMPTS + 1):
            # With gates, each bookie's agent gets a port of its own, chosen in the same call
            # as the bookies' (one call never returns a port twice).
            ports = free_ports(len(names) * (2 if opts.bookie_settings.gates else 1))
            bookie_ports = ports[: len(names)]
            gate_ports: list[int | None] = (
                list(ports[len(names) :]) if opts.bookie_settings.gates else [None] * len(names)
            )
            pending = [
                self._new_bookie(name, port, homes[name], gate_port)
                for name, port, gate_port in zip(names, bookie_ports, gate_ports, strict=True)
            ]
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

    def _new_bookie(
        self, name: str, port: int, home: Path | None, gate_port: int | None = None
    ) -> BookieProcess:
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
            # Only a real bookie's JVM can load the agent.
            gate_port=gate_port if home is not None else None,
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
        bookie_processes = [process for b in self._starting for process in b.processes()]
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

    def bookie_session_packets(self, node: Node) -> tuple[int, int] | None:
        """The ZooKeeper session of ``node``'s registration and how many packets a server has
        received on its connection (``cons``), or None when either is unknown (no
        registration, no server answered, the session connected to none). Two looks that show
        the same session with a higher count say the server heard from it in between."""
        owner = self.bookie(node.id).registration_owner(self.zookeeper_client)
        if owner is None:
            return None
        for address in self._zookeeper().connect_string.split(","):
            host, port = address.rsplit(":", 1)
            received = packets_received(host, int(port))
            if received and owner in received:
                return owner, received[owner]
        return None

    def _zookeeper_installation(self) -> ZooKeeperInstall:
        if self._zookeeper_install is None:
            self._zookeeper_install = self.options.zookeeper_install or locate_zookeeper()
        return self._zookeeper_install

    def system_under_test(self) -> SystemUnderTest:
        """The bookies, client and ZooKeeper this cluster runs (or will run: nothing is
        started to tell). The client is the model's: the cluster's users speak the protocol
        through :mod:`adapters.bookkeeper`. Bookies of several releases are each named with
        theirs, as they run now (after any :meth:`restart_with_release`)."""
        homes = self.bookie_homes() if self._bookies else self.planned_homes()
        install = self._zookeeper_installation()
        if len(set(homes.values())) <= 1:
            home = next(iter(homes.values()), None)
            if not homes:
                opts = self.options
                home = find_bookkeeper_home(
                    opts.bookkeeper_home, None if opts.use_bookkeeper_home_env else {}
                )
            choice = BookieChoice.reference() if home is None else BookieChoice.bookkeeper(home)
            return local_system(choice, install.classpath, install.source)
        return SystemUnderTest(
            describe_mixed_bookies(homes),
            MODEL_CLIENT,
            describe_zookeeper(install.classpath, install.source),
        )

    def bookie_homes(self) -> dict[str, Path | None]:
        """Each running bookie's id -> the distribution it runs now (None: the reference
        bookie)."""
        return {bookie_id: b.bookkeeper_home for bookie_id, b in self._bookies.items()}

    def bookie_releases(self) -> dict[str, str]:
        """Each bookie's id -> the release it runs now (``4.18.0``; ``reference`` for the
        test double; ``unknown`` for a distribution whose version cannot be read)."""
        return {bookie_id: release_of(home) for bookie_id, home in self.bookie_homes().items()}

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

    def gate_address(self, bookie_id: str) -> tuple[str, int]:
        """Where the bookie's gate agent listens (:class:`adapters.cluster.gates.GateClient`);
        :class:`NodeStateError` unless the cluster was started with ``BookieSettings(gates=True)``
        on real bookies."""
        port = self.bookie(bookie_id).config.gate_port
        if port is None:
            raise NodeStateError(
                f"{bookie_id} has no gate agent: start the cluster with "
                "BookieSettings(gates=True) on real BookKeeper bookies"
            )
        return LOOPBACK, port

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
            # A stop that had to kill leaves the registration to its session's expiry, which a
            # new bookie waits for (zkTimeout: up to 30 s in the pulsar profile): delete it now,
            # as after a crash. A clean stop deleted it already.
            bookie.expire_registration(self._zk)
            self._start_bookie(bookie)
        else:
            self._restart_zookeeper(node.id)

    def _start_bookie(self, bookie: BookieProcess) -> None:
        """Start a bookie that is down (crashed, stopped, wiped) and wait until it is ready;
        with ``standby_jvms``, boot the JVM of its next start then: a bookie restarted once
        in a run is likely to be again (a search's crashes), and booting standbys for every
        bookie as the cluster starts would take the CPU of the cluster's own start."""
        bookie.start()
        bookie.wait_until_ready(self._zk, self.options.start_timeout)
        if self.options.bookie_settings.standby_jvms and bookie.hosted:
            bookie.boot_standby()

    def restart_with_release(self, node: Node, bookkeeper_home: Path) -> ReleaseRestart:
        """An operator's upgrade (or downgrade) step on one bookie: it is stopped as an
        operator stops it (SIGTERM: BookKeeper's shutdown hook closes it cleanly; one that has
        not exited within its stop timeout is killed) and started again from the distribution
        at ``bookkeeper_home`` with its data: the same directories, configuration file, port
        and bookie id. Always in a new JVM, a hosted bookie's too (``in_jvm_restarts``: its
        host runs one distribution's classes; later restarts without data happen inside the
        new JVM). A bookie that is down (crashed) is only started. Waits until it is
        registered and answers; :meth:`bookie` gives its new process from then on."""
        if node.kind is not NodeKind.BOOKIE:
            raise FaultNotSupported(f"{node}: only a bookie runs a BookKeeper release")
        home = find_bookkeeper_home(bookkeeper_home, {})
        if home is None:  # pragma: no cover - find_bookkeeper_home raises for a bad directory
            raise InvalidClusterOptions(f"{bookkeeper_home} is no BookKeeper distribution")
        old = self.bookie(node.id)
        if old.implementation is not BookieImplementation.BOOKKEEPER:
            raise FaultNotSupported(f"{old.describe()} runs no BookKeeper release to change")
        started = time.monotonic()
        was_running = old.process.is_running()
        if was_running:
            old.remember_registration(self._zk)
            old.process.stop()
            # A bookie that needed SIGKILL left its registration to its session's expiry.
            old.expire_registration(self._zk)
        stopped = time.monotonic()
        old.discard_standby()  # a JVM of the release it ran
        new = BookieProcess(old.config, home, self.work_dir / "logs")
        # Ready means registered by another session than the stopped process's.
        new.stale_owner = old.stale_owner
        self._starting.append(new)
        self._bookies[node.id] = new
        self._start_bookie(new)
        return ReleaseRestart(
            bookie_id=node.id,
            before=release_of(old.bookkeeper_home),
            after=release_of(home),
            was_running=was_running,
            exit_code=old.process.returncode if was_running else None,
            stop_seconds=stopped - started,
            start_seconds=time.monotonic() - stopped,
        )

    def _restart_hosted(self, bookie: BookieProcess) -> bool:
        """A running hosted bookie loses its disks and restarts inside its JVM; False when the
        bookie is not hosted, not running or paused (a paused JVM would not read the command),
        or when its host could not build the next bookie and exited: the caller then kills
        it, wipes and starts a new process, the same fault in a new JVM."""
        if not (bookie.hosted and bookie.process.is_running()) or bookie.process.paused:
            return False
        bookie.restart_empty(self._zk)
        try:
            bookie.wait_until_ready(self._zk, self.options.start_timeout)
        except ProcessExited as exc:
            # Seen in `make run` (4.18.0, DbLedgerStorage, the 40th restart of a bookie in
            # one JVM): the next bookie could not open its RocksDB index, "lock hold by current
            # process": the closed one had not closed it (its storage's shutdown closes the
            # indexes only after a flush that did not throw, release-4.18.0
            # SingleDirectoryDbLedgerStorage.shutdown). A process restart frees the lock with
            # the JVM, as it does for every bookie without a host.
            log.warning(
                "%s: restart inside its JVM failed, restarting it in a new one: %s",
                bookie.describe(),
                str(exc).splitlines()[0],
            )
            return False
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
            if self.options.bookie_settings.writes_journal_data:
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


def release_of(home: Path | None) -> str:
    """The release a bookie of ``home`` runs: its version, ``reference`` for the test double
    (no home), ``unknown`` when the distribution does not say."""
    if home is None:
        return "reference"
    return bookkeeper_version(home) or "unknown"


def describe_mixed_bookies(homes: dict[str, Path | None]) -> str:
    """Bookies of several releases, each release with the bookies (names or ids) that run it:
    ``BookKeeper 4.17.3 (Maven, ~/.bkconform/bookkeeper/4.17.3) on bookie1; BookKeeper
    4.18.0 (...) on bookie2, bookie3``."""
    by_home: dict[Path | None, list[str]] = {}
    for name, home in homes.items():
        by_home.setdefault(home, []).append(name)
    parts = []
    for home, names in sorted(by_home.items(), key=lambda item: item[1][0]):
        choice = BookieChoice.reference() if home is None else BookieChoice.bookkeeper(home)
        parts.append(f"{choice.describe()} on {', '.join(names)}")
    return "; ".join(parts)


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
