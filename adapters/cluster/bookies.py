"""Bookie processes: a real BookKeeper distribution, or the reference bookie test double.

With a BookKeeper distribution (``BOOKKEEPER_HOME``, or a directory passed explicitly) each
bookie is ``$BOOKKEEPER_HOME/bin/bookkeeper bookie`` with a generated ``bk_server.conf``
handed over through ``BOOKIE_CONF``, exactly as the distribution's scripts expect.

Without one, each bookie is the reference bookie (``python -m adapters.refbookie --conf
FILE``), a test double that reads the same configuration keys. It lets the suite run where no
Java BookKeeper is installed; it is not BookKeeper and nothing here relies on its quirks.

A bookie is ready when its ``<ledgers root>/available/<bookie id>`` znode exists (and, after
a crash, is no longer the stale registration of the previous process) and it answers a
request (:func:`adapters.bookkeeper.probe.bookie_answers`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import importlib.util
import os
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kazoo.exceptions import KazooException, NoNodeError

from adapters.bookkeeper.probe import bookie_answers
from adapters.cluster import bookie_host, gate_agent
from adapters.cluster.bookie_profiles import (
    BOOKKEEPER,
    JOURNAL_FOR_WAITING_CLIENTS,
    SUITE,
    LedgerStorage,
    SettingsProfile,
)
from adapters.cluster.bookie_rocksdb import BOOKIE_MAX_DIRECT_MEMORY_MB, option_files
from adapters.cluster.errors import (
    ClusterError,
    ClusterStartTimeout,
    InvalidClusterOptions,
    NodeStateError,
    ProcessExited,
)
from adapters.cluster.network import LOOPBACK, port_accepts
from adapters.processes import ManagedProcess
from adapters.zookeeper.client import wait
from adapters.zookeeper.errors import MetadataError

REFERENCE_BOOKIE_MODULE = "adapters.refbookie"
__all__ = [
    "JOURNAL_FOR_WAITING_CLIENTS",
    "TEST_BOOKIE_JVM_FLAGS",
    "BookieConfig",
    "BookieImplementation",
    "BookieProcess",
    "BookieSettings",
    "LedgerStorage",
    "SettingsProfile",
    "reference_bookie_available",
]
ZK_REQUEST_TIMEOUT = 3.0
#: How often readiness is polled (a ZooKeeper exists and a read request) at most: a watch on
#: the registration wakes the wait as soon as it changes, and a hosted bookie restarts in about
#: a tenth of a second, so a coarse poll would be a sizeable share of it.
READY_POLL_INTERVAL = 0.02
#: Once registered, how soon the port is tried again: the bookie serves a few milliseconds
#: after it registers.
ANSWER_POLL_INTERVAL = 0.002


class BookieImplementation(enum.Enum):
    BOOKKEEPER = "bookkeeper"
    #: The project's test double (``adapters.refbookie``); never BookKeeper itself.
    REFERENCE = "reference"


#: JVM flags of a test bookie: the serial collector and the client JIT compiler (C1) only, as
#: our ZooKeeper servers run, compiling a method after a twentieth of the usual invocations.
#: Why: a test bookie lives seconds to minutes and, with crashes, restarts every few hundred
#: milliseconds; C2's compilations and G1's concurrent threads cost it more CPU than they give
#: back in that time, and the bookies share the machine's cores with ZooKeeper, the search and
#: Spark. A restart inside the JVM runs its code once per restart, so at the usual thresholds
#: (about 200 invocations) much of it stays interpreted for a whole search. Measured in
#: ``benchmarks/profiles/`` (real-bookie-steps, fourth and fifth increments).
TEST_BOOKIE_JVM_FLAGS: tuple[str, ...] = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:CompileThresholdScaling=0.05",
)


@dataclass(frozen=True)
class BookieSettings:
    """Configuration shared by every bookie of a cluster.

    ``profile`` (:mod:`adapters.cluster.bookie_profiles`) gives the settings the protocol's
    behaviour depends on (the journal, flushing, the ZooKeeper session, threads); the fields
    below come after it, and ``extra`` entries are written last and so override anything
    generated, e.g. ``{"flushInterval": "3600000"}`` to keep unjournaled entries in memory long
    enough for a crash to lose them.
    """

    ledger_storage: LedgerStorage = LedgerStorage.SORTED
    #: ``journalWriteData``; None: the profile's (true in every profile). False only for the
    #: adapters' tests of a crash that loses unjournaled entries.
    journal_write_data: bool | None = None
    data_integrity_checking: bool = False
    stamp_missing_cookies: bool = False
    #: Bookie's ZooKeeper session timeout (``zkTimeout``); None: the profile's (4 s for the
    #: suite's). :attr:`session_timeout_ms` is the one in effect.
    zk_session_timeout_ms: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)
    #: The named settings (``suite``, ``bookkeeper``, ``pulsar``).
    profile: SettingsProfile = SUITE
    #: Real bookies of a local cluster run under the bookie host
    #: (:mod:`adapters.cluster.bookie_host`), and a restart that loses the disks
    #: (``DataLoss.WIPE``) restarts the bookie inside its JVM: about 0.5 s instead of 2 s. A
    #: crash (SIGKILL) still kills the JVM. Not a configuration key; the reference bookie and
    #: the container provider ignore it.
    in_jvm_restarts: bool = False
    #: JVM flags of each real bookie, local or in a container (the launcher's
    #: ``BOOKIE_GC_OPTS``); ``()`` keeps the launcher's own (G1, both JIT compilers).
    jvm_flags: tuple[str, ...] = TEST_BOOKIE_JVM_FLAGS
    #: Let ``DbLedgerStorage``'s RocksDB databases preallocate their logs (BookKeeper's own
    #: behaviour). Off: each bookie of a local cluster gets RocksDB options files with
    #: BookKeeper's options and ``allow_fallocate=false`` (:mod:`adapters.cluster.bookie_rocksdb`:
    #: on tmpfs the preallocation was a third of a restart's CPU). Only ``LedgerStorage.DB``
    #: has RocksDB.
    rocksdb_preallocation: bool = False
    #: Load the gate agent (:mod:`adapters.cluster.gate_agent`) into each real bookie's JVM of
    #: a local cluster, listening on a port of its own (``BookieConfig.gate_port``;
    #: :mod:`adapters.cluster.gates` drives it). Until a harness arms a gate it changes nothing
    #: the bookie does. Not a configuration key; the reference bookie and the container
    #: provider ignore it.
    gates: bool = False
    #: After a bookie of a local cluster restarted (a new JVM: after a crash, a stop, a wipe),
    #: boot its next JVM ahead, a standby of the bookie host that builds the bookie on command
    #: (:meth:`BookieProcess.boot_standby`): its next start hands the bookie to it and pays no
    #: JVM boot. Needs ``in_jvm_restarts`` (the standby is the host) and no ``gates`` (the
    #: standby's agent would take the running bookie's gate port). Not a configuration key.
    standby_jvms: bool = False

    def __post_init__(self) -> None:
        if self.standby_jvms and (self.gates or not self.in_jvm_restarts):
            raise InvalidClusterOptions(
                "standby_jvms needs in_jvm_restarts (the standby is the bookie host) and no "
                "gates (a standby's gate agent would take the running bookie's gate port)"
            )
        # The launcher splits BOOKIE_GC_OPTS at white space: a flag with a space in it would
        # reach the JVM as two words, and the bookie would fail to start far from here.
        unfit = [f for f in self.jvm_flags if not f.startswith("-") or any(c.isspace() for c in f)]
        if unfit:
            raise InvalidClusterOptions(
                f"bookie JVM flags must each start with '-' and hold no white space: {unfit!r}"
            )

    def with_standby_restarts(self) -> BookieSettings:
        """These settings with the bookies hosted and a standby JVM booted after each restart
        (``in_jvm_restarts`` and ``standby_jvms``): what the Java-client runs start, where a
        plan's crash kills a bookie's JVM and its restart is on the example's path."""
        return dataclasses.replace(self, in_jvm_restarts=True, standby_jvms=True)

    @property
    def session_timeout_ms(self) -> int:
        """The bookies' ZooKeeper session timeout: a crashed bookie's registration lingers
        this long (unless the provider deletes it, as the local one does after a kill)."""
        if self.zk_session_timeout_ms is not None:
            return self.zk_session_timeout_ms
        return self.profile.zk_timeout_ms

    @property
    def checkpoint_interval_ms(self) -> int:
        """``flushInterval`` in effect: how often each bookie's SyncThread checkpoints its
        ledger storage (``extra``'s, else the profile's, else BookKeeper's default)."""
        value = self.extra.get("flushInterval") or self.profile.value("flushInterval")
        if value is None:
            value = BOOKKEEPER.value("flushInterval")
            assert value is not None  # BookKeeper's profile names every default it relies on
        return int(value)

    @property
    def writes_journal_data(self) -> bool:
        """``journalWriteData`` as written: the field, else the profile's (else true)."""
        if self.journal_write_data is not None:
            return self.journal_write_data
        return self.profile.value("journalWriteData") != "false"

    def settings_entries(self) -> dict[str, str]:
        """The ``bk_server.conf`` entries these settings make, whatever the bookie's addresses
        and directories (the local and the container providers add theirs): the profile's,
        then the storage, the journal and data integrity, the harness's switches. ``extra``
        and the RocksDB options files are the providers' to add."""
        return {
            **self.profile.entries(),
            "zkTimeout": str(self.session_timeout_ms),
            "ledgerStorageClass": self.ledger_storage.value,
            "journalWriteData": _flag(self.writes_journal_data),
            "dataIntegrityChecking": _flag(self.data_integrity_checking),
            "dataIntegrityStampMissingCookies": _flag(self.stamp_missing_cookies),
            "httpServerEnabled": "false",
            "autoRecoveryDaemonEnabled": "false",
        }

    def describe(self) -> str:
        """``DbLedgerStorage, settings profile pulsar``: what a run's system line says."""
        return f"{self.ledger_storage.class_name}, settings profile {self.profile.name}"


@dataclass(frozen=True)
class BookieConfig:
    """Everything that distinguishes one bookie of a cluster from another."""

    name: str
    port: int
    directory: Path
    zookeeper_connect: str
    ledgers_root: str
    metadata_service_uri: str
    settings: BookieSettings = BookieSettings()
    #: Where the gate agent listens (127.0.0.1); None: no agent is loaded.
    gate_port: int | None = None

    @property
    def bookie_id(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def journal_dir(self) -> Path:
        return self.directory / "journal"

    @property
    def ledger_dir(self) -> Path:
        return self.directory / "ledgers"

    @property
    def config_path(self) -> Path:
        return self.directory / "bk_server.conf"

    def entries(self) -> dict[str, str]:
        s = self.settings
        entries = {
            "bookiePort": str(self.port),
            "bookieId": self.bookie_id,
            # Loopback only: bind the loopback interface and advertise 127.0.0.1 (which
            # BookKeeper accepts as an id once advertisedAddress is set).
            "advertisedAddress": LOOPBACK,
            "listeningInterface": "lo",
            "allowLoopback": "true",
            "metadataServiceUri": self.metadata_service_uri,
            # Pre-4.7 keys, read only where metadataServiceUri is unknown.
            "zkServers": self.zookeeper_connect,
            "zkLedgersRootPath": self.ledgers_root,
            "journalDirectories": str(self.journal_dir),
            "ledgerDirectories": str(self.ledger_dir),
            # The profile's settings (the suite's: gcWaitTime kept at BookKeeper's 10 min, a
            # journal that flushes a lone request at once, small DbLedgerStorage caches), the
            # storage, the journal, data integrity and the harness's switches.
            **s.settings_entries(),
        }
        entries.update({key: str(path) for key, (path, _) in self.rocksdb_option_files().items()})
        entries.update(s.extra)
        return entries

    def rocksdb_option_files(self) -> dict[str, tuple[Path, str]]:
        """Configuration key -> (path, content) of the RocksDB options files
        :meth:`BookieProcess.prepare` writes (none unless ``DbLedgerStorage`` runs without
        preallocation)."""
        s = self.settings
        if s.ledger_storage is not LedgerStorage.DB or s.rocksdb_preallocation:
            return {}
        files = option_files().items()
        return {key: (self.directory / name, content) for key, (name, content) in files}

    def render(self) -> str:
        return "".join(f"{key}={value}\n" for key, value in self.entries().items())


def _flag(value: bool) -> str:
    return "true" if value else "false"


def reference_bookie_available() -> bool:
    """True when the reference bookie test double can be run (``adapters.refbookie``)."""
    try:
        return importlib.util.find_spec(f"{REFERENCE_BOOKIE_MODULE}.__main__") is not None
    except ModuleNotFoundError:
        return False


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]


class BookieProcess:
    """One bookie: its configuration, its process and what is needed to tell it is ready."""

    def __init__(self, config: BookieConfig, bookkeeper_home: Path | None, log_dir: Path) -> None:
        self.config = config
        self.bookkeeper_home = bookkeeper_home
        self.implementation = (
            BookieImplementation.BOOKKEEPER
            if bookkeeper_home is not None
            else BookieImplementation.REFERENCE
        )
        if (
            self.implementation is BookieImplementation.REFERENCE
            and not reference_bookie_available()
        ):
            raise InvalidClusterOptions(
                "no BOOKKEEPER_HOME and the reference bookie (adapters.refbookie) is not "
                "installed; set BOOKKEEPER_HOME to a BookKeeper binary distribution"
            )
        #: Run under the bookie host, which restarts the bookie inside its JVM on command.
        self.hosted = (
            self.implementation is BookieImplementation.BOOKKEEPER
            and config.settings.in_jvm_restarts
        )
        self.process = ManagedProcess(
            config.name,
            self._command(),
            log_path=log_dir / f"{config.name}.log",
            env=self._environment(log_dir),
            cwd=config.directory,
            commands=self.hosted,
        )
        #: ZooKeeper session that owned the registration when the bookie last went down;
        #: a registration still owned by it is stale, not a sign of readiness.
        self.stale_owner: int | None = None
        #: The JVM booted ahead for the bookie's next start (:meth:`boot_standby`), if any.
        self.standby: ManagedProcess | None = None
        self._log_dir = log_dir

    @property
    def bookie_id(self) -> str:
        return self.config.bookie_id

    def describe(self) -> str:
        kind = (
            f"BookKeeper ({self.bookkeeper_home})"
            if self.implementation is BookieImplementation.BOOKKEEPER
            else "reference bookie (test double)"
        )
        return f"bookie {self.bookie_id} [{kind}]"

    def _command(self) -> list[str]:
        if self.bookkeeper_home is not None and self.hosted:
            # The distribution's launcher runs any main class with its bookie JVM options.
            return [
                str(self.bookkeeper_home / "bin" / "bookkeeper"),
                bookie_host.MAIN_CLASS,
                "--conf",
                str(self.config.config_path),
            ]
        if self.bookkeeper_home is not None:
            return [str(self.bookkeeper_home / "bin" / "bookkeeper"), "bookie"]
        return [
            sys.executable,
            "-m",
            REFERENCE_BOOKIE_MODULE,
            "--conf",
            str(self.config.config_path),
        ]

    def _environment(self, log_dir: Path) -> dict[str, str]:
        env = dict(os.environ)
        if self.bookkeeper_home is not None:
            env.update(
                {
                    "BOOKIE_CONF": str(self.config.config_path),
                    "BOOKIE_LOG_DIR": str(log_dir / self.config.name),
                    "BOOKIE_PID_DIR": str(self.config.directory),
                    "BOOKIE_MAX_HEAP_MEMORY": "256m",
                    "BOOKIE_MIN_HEAP_MEMORY": "64m",
                    "BOOKIE_MAX_DIRECT_MEMORY": f"{BOOKIE_MAX_DIRECT_MEMORY_MB}m",
                    "JMXDISABLE": "true",
                }
            )
            if self.config.settings.jvm_flags:
                env["BOOKIE_GC_OPTS"] = " ".join(self.config.settings.jvm_flags)
            if self.config.gate_port is not None:
                agent = gate_agent.java_option(gate_agent.agent_jar(), self.config.gate_port)
                existing = env.get("BOOKIE_EXTRA_OPTS")
                env["BOOKIE_EXTRA_OPTS"] = agent if not existing else f"{agent} {existing}"
            if self.hosted:
                classes = str(bookie_host.host_classes(self.bookkeeper_home))
                existing = env.get("BOOKIE_EXTRA_CLASSPATH")
                env["BOOKIE_EXTRA_CLASSPATH"] = (
                    classes if not existing else f"{classes}{os.pathsep}{existing}"
                )
        else:
            root = str(_project_root())
            existing = env.get("PYTHONPATH")
            env["PYTHONPATH"] = root if not existing else f"{root}{os.pathsep}{existing}"
        return env

    # Lifecycle ---------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create the bookie's directories and write its configuration file."""
        self.config.journal_dir.mkdir(parents=True, exist_ok=True)
        self.config.ledger_dir.mkdir(parents=True, exist_ok=True)
        for path, content in self.config.rocksdb_option_files().values():
            path.write_text(content)
        self.config.config_path.write_text(self.config.render())

    def start(self) -> None:
        """Start the bookie: in its standby's JVM when one runs (it builds the bookie on
        ``start``), else in a new process."""
        if self.process.is_running():
            raise NodeStateError(f"{self.describe()} is already running (pid {self.process.pid})")
        self.prepare()
        standby, self.standby = self.standby, None
        if standby is not None and standby.is_running() and not standby.paused:
            standby.send(bookie_host.START)
            self.process = standby
            return
        if standby is not None:
            standby.kill()
        self.process.start()

    def boot_standby(self) -> None:
        """Boot the JVM of the bookie's next start now (a hosted bookie's): the bookie host
        with ``--standby`` loads BookKeeper's entry classes and waits for ``start``. Its output
        goes to the bookie's log. One at a time: a standby that runs is kept."""
        if not self.hosted:
            raise NodeStateError(f"{self.describe()} is not hosted: it has no standby JVM")
        if self.standby is not None and self.standby.is_running():
            return
        self.standby = ManagedProcess(
            f"{self.config.name} (standby)",
            [*self._command(), bookie_host.STANDBY_FLAG],
            log_path=self.process.log_path,
            env=self._environment(self._log_dir),
            cwd=self.config.directory,
            commands=True,
        )
        self.standby.start()

    def discard_standby(self) -> None:
        """Stop the standby JVM, if any (the bookie will start from another distribution)."""
        standby, self.standby = self.standby, None
        if standby is not None:
            standby.kill()

    def processes(self) -> list[ManagedProcess]:
        """The bookie's process and its standby's, if any: what stopping the cluster stops."""
        return [self.process, *([self.standby] if self.standby is not None else [])]

    def registration_path(self) -> str:
        return f"{self.config.ledgers_root}/available/{self.bookie_id}"

    def _registration(self, zk: Any, watch: Any = None) -> Any:
        path = self.registration_path()
        try:
            return wait(
                zk.exists_async(path, watch=watch),
                timeout=ZK_REQUEST_TIMEOUT,
                operation=f"exists {path}",
            )
        except (KazooException, MetadataError):
            # ZooKeeper itself may be down or paused as part of the test; not registered yet.
            return None

    def registration_owner(self, zk: Any) -> int | None:
        """The ZooKeeper session that owns the bookie's registration now (None: none)."""
        stat = self._registration(zk)
        return None if stat is None else int(stat.ephemeralOwner)

    def remember_registration(self, zk: Any) -> None:
        """Record the session owning the current registration, which dies with this process."""
        self.stale_owner = self.registration_owner(zk)

    def expire_registration(self, zk: Any) -> None:
        """After a kill: delete the dead process's registration now, as its session's expiry
        would a session timeout later. A restarted BookKeeper bookie waits for that znode to
        go before it registers, so this takes the session timeout (4 s by default) off every
        crash's restart; nothing else depends on when a dead session expires. Only the znode
        of the remembered session is deleted (version-checked), never a live one."""
        if self.process.is_running() or self.stale_owner is None:
            return
        stat = self._registration(zk)
        if stat is None or stat.ephemeralOwner != self.stale_owner:
            return
        path = self.registration_path()
        # Gone already, or changed meanwhile: either way not ours to delete. ZooKeeper being
        # unreachable leaves it to expire with its session, as it would have anyway.
        with contextlib.suppress(KazooException, MetadataError):
            wait(
                zk.delete_async(path, version=stat.version),
                timeout=ZK_REQUEST_TIMEOUT,
                operation=f"delete {path}",
            )

    def is_registered(self, zk: Any, watch: Any = None) -> bool:
        """Registered, and not by a crashed predecessor's session; ``watch`` (a kazoo
        watcher) is called when the registration is next created or deleted."""
        stat = self._registration(zk, watch=watch)
        return stat is not None and stat.ephemeralOwner != self.stale_owner

    def wait_until_ready(self, zk: Any, timeout: float) -> None:
        """Wait until the bookie is registered anew and answers a request (it registers, and
        accepts and drops connections, before its request server runs)."""
        deadline = time.monotonic() + timeout
        changed = threading.Event()

        def wake(_event: Any) -> None:
            changed.set()

        while True:
            if not self.process.is_running():
                raise ProcessExited(
                    f"{self.describe()} exited with code {self.process.returncode} while "
                    f"starting; log {self.process.log_path}:\n{self.process.log_tail()}"
                )
            registered = self.is_registered(zk, watch=wake)
            if registered and bookie_answers(LOOPBACK, self.config.port, 1.0):
                self.stale_owner = None
                return
            if time.monotonic() > deadline:
                raise ClusterStartTimeout(
                    f"{self.describe()} not ready after {timeout:.0f}s (registered: "
                    f"{self.is_registered(zk)}, port {self.config.port} open: "
                    f"{port_accepts(LOOPBACK, self.config.port, 0.5)}, answers a read: "
                    f"{bookie_answers(LOOPBACK, self.config.port, 0.5)}). A bookie restarted after "
                    "a crash waits for its old ZooKeeper session to expire first. "
                    f"Log {self.process.log_path}:\n{self.process.log_tail()}"
                )
            # The watch ends the wait when the registration is deleted or created; the poll
            # bounds it (ZooKeeper may be down, and the port opens after the registration).
            changed.wait(ANSWER_POLL_INTERVAL if registered else READY_POLL_INTERVAL)
            changed.clear()

    def wipe(self, zk: Any) -> None:
        """Delete the bookie's journal and ledger directories; the process must be down.

        A real bookie whose disks are empty but whose cookie is still in ZooKeeper refuses to
        boot unless ``dataIntegrityStampMissingCookies`` is set. Without that setting the
        cookie is deleted too, as an operator replacing a disk would do.
        """
        if self.process.is_running():
            raise NodeStateError(f"wipe {self.describe()}: stop or crash it first")
        shutil.rmtree(self.config.journal_dir, ignore_errors=True)
        shutil.rmtree(self.config.ledger_dir, ignore_errors=True)
        if not self.config.settings.stamp_missing_cookies:
            self._delete_cookie(zk)

    def _delete_cookie(self, zk: Any) -> None:
        path = f"{self.config.ledgers_root}/cookies/{self.bookie_id}"
        try:
            wait(zk.delete_async(path), timeout=ZK_REQUEST_TIMEOUT, operation=f"delete {path}")
        except NoNodeError:
            pass
        except (KazooException, MetadataError) as exc:
            raise ClusterError(
                f"wiped {self.describe()} but could not delete its cookie: {exc!r}; "
                "it will refuse to boot until the cookie is removed"
            ) from exc

    def restart_empty(self, zk: Any) -> None:
        """Hosted bookies only: the bookie closes, loses its disks and starts again inside its
        JVM (the host deletes the journal, ledger and index directories between the two). The
        caller waits for :meth:`wait_until_ready`. The cookie is dealt with as :meth:`wipe`
        does, before the bookie boots again."""
        if not self.hosted or not self.process.is_running():
            raise NodeStateError(f"{self.describe()} is not a running hosted bookie")
        self.remember_registration(zk)
        if not self.config.settings.stamp_missing_cookies:
            self._delete_cookie(zk)
        self.process.send(bookie_host.RESTART_EMPTY)
