"""Real ZooKeeper servers on loopback: a standalone server or an N-node ensemble, its faults,
and each server's role.

Servers run ``org.apache.zookeeper.server.quorum.QuorumPeerMain`` from a located installation
(:mod:`adapters.installations.zookeeper`) with a generated ``zoo.cfg`` (admin server off, every
four-letter word allowed, short ticks so elections and session expiries are quick). Readiness
is the ``srvr`` four-letter word reporting a mode; an ensemble is ready when every server
serves and one of them leads.

With ``partitions=True`` each server runs in its own network namespace
(:mod:`adapters.cluster.network_namespaces`): the addresses are private (``10.213.0.0/24``) and
exist only in namespaces the ensemble creates and deletes. Cutting a server's link isolates it
from the others and from clients, which reach the servers from the hub namespace (see
:meth:`ZooKeeperEnsemble.network`). Needs root (CAP_NET_ADMIN) and ``ip``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adapters.cluster.errors import (
    ClusterStartTimeout,
    FaultNotSupported,
    InvalidClusterOptions,
    NodeStateError,
    ProcessExited,
    UnknownNode,
)
from adapters.cluster.network import LOOPBACK, free_ports, mentions_port_conflict
from adapters.cluster.network_namespaces import NetworkNamespaces
from adapters.installations.java import find_java
from adapters.installations.zookeeper import MAIN_CLASS, ZooKeeperInstall
from adapters.processes import ManagedProcess
from adapters.zkquorum.proxy import QuorumLink, QuorumProxy
from adapters.zookeeper.four_letter_words import server_mode

SERVING_MODES = frozenset({"standalone", "leader", "follower", "observer"})

# Logging for installations that bring no configuration of their own (pyspark's jars carry
# log4j2 but no config file for it): INFO to stdout, which the supervisor sends to a file.
_LOG4J2_PROPERTIES = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} [%t] %-5p %c{1} - %m%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
"""


@dataclass(frozen=True)
class ZooKeeperTuning:
    """Timing knobs of the generated ``zoo.cfg``.

    Sessions may last between 2 and 20 ticks, so with 250 ms ticks a crashed bookie's
    registration expires within 5 s; elections finish in well under a second on loopback.
    ``max_session_timeout_ms`` raises the longest session the server grants (ZooKeeper's
    ``maxSessionTimeout``; None: its default, 20 ticks), for bookies whose ``zkTimeout`` asks
    for more (a local cluster sets it from its bookies' settings).
    """

    tick_time_ms: int = 250
    init_limit: int = 20
    sync_limit: int = 10
    max_heap: str = "256m"
    max_session_timeout_ms: int | None = None

    def for_sessions_of(self, timeout_ms: int) -> ZooKeeperTuning:
        """These knobs, granting a session of ``timeout_ms`` too (ZooKeeper would cut a
        longer request down to 20 ticks: a bookie asking for 30 s would get 5 s)."""
        if timeout_ms <= 20 * self.tick_time_ms:
            return self
        if self.max_session_timeout_ms is not None and timeout_ms <= self.max_session_timeout_ms:
            return self
        return dataclasses.replace(self, max_session_timeout_ms=timeout_ms)


class ZooKeeperServer:
    """One ZooKeeper server process with its own directory, ports and ``zoo.cfg``."""

    def __init__(
        self, sid: int, directory: Path, client_port: int, quorum_port: int, election_port: int
    ) -> None:
        self.sid = sid
        self.name = f"zk{sid}"
        self.directory = directory
        self.client_port = client_port
        self.quorum_port = quorum_port
        self.election_port = election_port
        self.process: ManagedProcess | None = None
        self.host = LOOPBACK
        self.namespace: str | None = None
        self.enter_network: Callable[[], contextlib.AbstractContextManager[None]] = (
            contextlib.nullcontext
        )

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def config_path(self) -> Path:
        return self.directory / "zoo.cfg"

    def mode(self, timeout: float = 2.0) -> str | None:
        """The server's role as ``srvr`` reports it, or None if it is not serving."""
        with self.enter_network():
            return server_mode(self.host, self.client_port, timeout)

    def prepare_data_dir(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "myid").write_text(f"{self.sid}\n")


class ZooKeeperEnsemble:
    """A standalone ZooKeeper (``size=1``) or an ensemble of ``size`` servers on loopback.

    Ports (client, quorum, election) are chosen when :meth:`start` runs. Server ids are
    ``zk1``..``zkN`` (myid 1..N).
    """

    def __init__(
        self,
        install: ZooKeeperInstall,
        work_dir: Path,
        size: int = 1,
        *,
        tuning: ZooKeeperTuning | None = None,
        start_timeout: float = 60.0,
        java: str | None = None,
        partitions: bool = False,
        quorum_proxy: QuorumProxy | None = None,
    ) -> None:
        if size < 1:
            raise InvalidClusterOptions(
                f"a ZooKeeper ensemble needs at least one server, got {size}"
            )
        self.install = install
        self.work_dir = work_dir
        self.size = size
        self.tuning = tuning or ZooKeeperTuning()
        self.start_timeout = start_timeout
        self._java = java
        self.partitions = partitions
        #: Every learner's connection to every other server's quorum port passes through it
        #: (:mod:`adapters.zkquorum.proxy`): each server's configuration names the others'
        #: quorum ports as the proxy's ports for its own links.
        self.quorum_proxy = quorum_proxy
        self._proxied: dict[tuple[int, int], int] = {}
        self.servers: dict[str, ZooKeeperServer] = {}
        self._namespaces: NetworkNamespaces | None = None
        #: ``(time.monotonic(), "crash" or "restart", server name)`` of every crash and restart
        #: asked of this ensemble, in order: the servers' lifecycle beside the quorum proxy's
        #: records (same clock). Appending is thread-safe (a crash may come from the proxy).
        self.lifecycle: list[tuple[float, str, str]] = []

    # Configuration -----------------------------------------------------------------------

    @property
    def connect_string(self) -> str:
        return ",".join(f"{s.host}:{s.client_port}" for s in self.servers.values())

    def client_endpoints(self) -> dict[str, tuple[str, int]]:
        return {name: (s.host, s.client_port) for name, s in self.servers.items()}

    def network(self) -> contextlib.AbstractContextManager[None]:
        """Where clients must be to reach the servers: the hub namespace with partitions
        (enter it around creating a client), else nothing to do."""
        if self._namespaces is None:
            return contextlib.nullcontext()
        return self._namespaces.entered()

    def _layout(self) -> None:
        ports = free_ports(3 * self.size)
        for index in range(self.size):
            sid = index + 1
            client, quorum, election = ports[3 * index : 3 * index + 3]
            server = ZooKeeperServer(
                sid, self.work_dir / "zookeeper" / f"zk{sid}", client, quorum, election
            )
            self.servers[server.name] = server

    def _route_through_proxy(self) -> None:
        if self.quorum_proxy is None or self.size == 1:
            return
        if self.partitions:
            raise InvalidClusterOptions("a quorum proxy and partitions cannot be combined yet")
        self._proxied = {}
        for learner in self.servers.values():
            for leader in self.servers.values():
                if learner is not leader:
                    link = QuorumLink(learner.sid, leader.sid)
                    port = self.quorum_proxy.add_link(link, (leader.host, leader.quorum_port))
                    self._proxied[(learner.sid, leader.sid)] = port

    def render_config(self, server: ZooKeeperServer) -> str:
        t = self.tuning
        lines = [
            f"tickTime={t.tick_time_ms}",
            f"initLimit={t.init_limit}",
            f"syncLimit={t.sync_limit}",
            f"dataDir={server.data_dir}",
            f"clientPort={server.client_port}",
            f"clientPortAddress={server.host}",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            # Small preallocated transaction logs: tests write little and disks are shared.
            "preAllocSize=4096",
            "autopurge.purgeInterval=0",
        ]
        if t.max_session_timeout_ms is not None:
            lines.append(f"maxSessionTimeout={t.max_session_timeout_ms}")
        if self.size > 1:
            lines += [
                f"server.{s.sid}={s.host}:{self._quorum_port(server, s)}:{s.election_port}"
                for s in self.servers.values()
            ]
        return "\n".join(lines) + "\n"

    def _quorum_port(self, server: ZooKeeperServer, peer: ZooKeeperServer) -> int:
        """The quorum port ``server`` knows ``peer`` by: its own, or the proxy's for the
        link from ``server`` (as a learner) to ``peer``."""
        return self._proxied.get((server.sid, peer.sid), peer.quorum_port)

    def _command(self, server: ZooKeeperServer) -> list[str]:
        java = self._java or find_java()
        log4j2 = self.work_dir / "zookeeper" / "log4j2.properties"
        inside = ["ip", "netns", "exec", server.namespace] if server.namespace else []
        # A cut-off peer never refuses a connection, it just does not answer; elections wait
        # out the quorum connect timeout (5 s by default) per attempt, so keep it short.
        partitioned = ["-Dzookeeper.cnxTimeout=1000"] if server.namespace else []
        return [
            *inside,
            java,
            f"-Xmx{self.tuning.max_heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true",
            *partitioned,
            f"-Dlog4j2.configurationFile={log4j2}",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.4lw.commands.whitelist=*",
            f"-Dzookeeper.log.dir={self.work_dir / 'logs'}",
            "-Dzookeeper.root.logger=INFO,CONSOLE",
            "-cp",
            os.pathsep.join(self.install.classpath),
            MAIN_CLASS,
            str(server.config_path),
        ]

    # Lifecycle ---------------------------------------------------------------------------

    def start(self, attempts: int = 3) -> None:
        """Start every server and wait until the ensemble serves with a leader.

        Ports are free when chosen but may be taken before a server binds them (other test
        runs share the machine); a start that fails that way is retried on new ports.
        """
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return
            except ProcessExited as exc:
                if attempt == attempts or not mentions_port_conflict(str(exc)):
                    raise
                self.stop()

    def _start_once(self) -> None:
        self.servers = {}
        self._layout()
        if self.partitions:
            self._namespaces = NetworkNamespaces(self.servers.values())
            self._namespaces.create()
        self._route_through_proxy()
        (self.work_dir / "zookeeper").mkdir(parents=True, exist_ok=True)
        (self.work_dir / "zookeeper" / "log4j2.properties").write_text(_LOG4J2_PROPERTIES)
        for server in self.servers.values():
            # A fresh directory: a failed earlier attempt may have left a half-written one.
            shutil.rmtree(server.directory, ignore_errors=True)
            server.directory.mkdir(parents=True)
            server.prepare_data_dir()
            server.config_path.write_text(self.render_config(server))
            server.process = ManagedProcess(
                server.name,
                self._command(server),
                log_path=self.work_dir / "logs" / f"{server.name}.log",
                cwd=server.directory,
            )
        for server in self.servers.values():
            self._process(server).start()
        self.wait_until_serving(list(self.servers), self.start_timeout)

    def stop(self) -> None:
        for server in self.servers.values():
            if server.process is not None:
                server.process.stop()
        if self._namespaces is not None:
            self._namespaces.destroy()
            self._namespaces = None

    def wait_until_serving(self, names: list[str], timeout: float) -> None:
        """Wait until each named server serves and, for an ensemble, some server leads."""
        deadline = time.monotonic() + timeout
        pending = list(names)
        while True:
            for name in list(pending):
                server = self.server(name)
                process = self._process(server)
                if not process.is_running():
                    raise ProcessExited(
                        f"ZooKeeper {name} exited with code {process.returncode} while starting "
                        f"({self.install.describe()}); log {process.log_path}:\n"
                        f"{process.log_tail()}"
                    )
                if server.mode(timeout=1.0) in SERVING_MODES:
                    pending.remove(name)
            if not pending and (self.size == 1 or self.leader() is not None):
                return
            if time.monotonic() > deadline:
                tails = "\n".join(
                    f"--- {n} ({self._process(self.server(n)).log_path}):\n"
                    f"{self._process(self.server(n)).log_tail(20)}"
                    for n in pending or names
                )
                raise ClusterStartTimeout(
                    f"ZooKeeper {', '.join(pending or names)} not serving after {timeout:.0f}s "
                    f"(modes: {self.modes()}); raise the start timeout if the machine is slow. "
                    f"Log tails:\n{tails}"
                )
            time.sleep(0.1)

    # Per-server state and faults ---------------------------------------------------------

    def server(self, name: str) -> ZooKeeperServer:
        try:
            return self.servers[name]
        except KeyError:
            raise UnknownNode(
                f"no ZooKeeper server {name!r}; servers are {sorted(self.servers)}"
            ) from None

    def _process(self, server: ZooKeeperServer) -> ManagedProcess:
        if server.process is None:
            raise NodeStateError(f"ZooKeeper {server.name} was never started")
        return server.process

    def modes(self) -> dict[str, str | None]:
        """Each server's role (``leader``, ``follower``, ``standalone``) or None if not serving."""
        return {name: server.mode(timeout=1.0) for name, server in self.servers.items()}

    def leader(self) -> str | None:
        """The id of the server that reports ``Mode: leader`` (or the standalone server)."""
        for name, mode in self.modes().items():
            if mode in ("leader", "standalone"):
                return name
        return None

    def crash(self, name: str) -> None:
        process = self._process(self.server(name))
        if process.is_running():
            self.lifecycle.append((time.monotonic(), "crash", name))
        process.kill()

    def kill_at_once(self, name: str) -> None:
        """SIGKILL the server without waiting for it to go: safe on another thread, quick
        enough for a crash *at* a quorum packet (the proxy's ``at_match``). :meth:`crash`
        afterwards waits for it and reaps it."""
        self.lifecycle.append((time.monotonic(), "crash", name))
        self._process(self.server(name)).signal(signal.SIGKILL)

    def pause(self, name: str) -> None:
        self._process(self.server(name)).pause()

    def resume(self, name: str) -> None:
        self._process(self.server(name)).resume()

    def isolate(self, name: str) -> None:
        """Cut the server off from the other servers and from clients (``partitions=True``)."""
        self._require_namespaces().cut(self.server(name))

    def reconnect(self, name: str) -> None:
        """Heal :meth:`isolate`."""
        self._require_namespaces().heal(self.server(name))

    def _require_namespaces(self) -> NetworkNamespaces:
        if self._namespaces is None:
            raise FaultNotSupported("partitions need an ensemble started with partitions=True")
        return self._namespaces

    def restart(self, name: str, timeout: float | None = None, *, wait: bool = True) -> None:
        """Stop the server gracefully if it runs and start it again with its data.

        Waits until it serves when a majority of servers (it included) runs; a server cannot
        serve without a quorum, so with a majority down it is only started. ``wait=False``
        only starts it (to act on it while it is still joining).
        """
        process = self._process(self.server(name))
        if process.is_running():  # a graceful stop ends its connections as a crash does
            self.lifecycle.append((time.monotonic(), "crash", name))
        process.stop()
        process.start()
        self.lifecycle.append((time.monotonic(), "restart", name))
        if not wait:
            return
        running = sum(
            1 for s in self.servers.values() if s.process is not None and s.process.is_running()
        )
        if running > self.size // 2:
            self.wait_until_serving([name], self.start_timeout if timeout is None else timeout)

    def wipe(self, name: str) -> None:
        """Crash the server (if running) and delete its data, keeping only its ``myid``."""
        server = self.server(name)
        self._process(server).kill()
        shutil.rmtree(server.data_dir, ignore_errors=True)
        server.prepare_data_dir()
