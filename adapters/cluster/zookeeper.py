"""Real ZooKeeper servers on loopback: locating an installation, running a standalone
server or an N-node ensemble, and reading each server's role.

The locator looks, in order, at:

1. ``ZOOKEEPER_HOME``: ``$ZOOKEEPER_HOME/lib/*.jar`` (and top-level jars), with ``conf/``
   first on the classpath so the distribution's own logging configuration applies;
2. Debian's package (``/usr/share/zookeeper``, whose jars live there or in ``/usr/share/java``);
3. the ZooKeeper jar inside the installed ``pyspark`` wheel (``<pyspark>/jars/*``), which is
   always there because the project depends on pyspark.

A candidate counts only if one of its jars contains ``QuorumPeerMain``.

Servers run ``org.apache.zookeeper.server.quorum.QuorumPeerMain`` with a generated
``zoo.cfg`` (admin server off, every four-letter word allowed, short ticks so elections and
session expiries are quick). Readiness is the ``srvr`` four-letter word reporting a mode;
an ensemble is ready when every server serves and one of them leads.

With ``partitions=True`` each server runs in its own network namespace, linked by a veth pair
to a bridge in a hub namespace; the addresses are private (``10.213.0.0/24``) and exist only in
namespaces the ensemble creates and deletes. Cutting a server's link isolates it from the
others and from clients, which reach the servers from the hub namespace (see
:meth:`ZooKeeperEnsemble.network`). Needs root (CAP_NET_ADMIN) and ``ip``.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.cluster.errors import (
    ClusterStartTimeout,
    FaultNotSupported,
    InvalidClusterOptions,
    NodeStateError,
    ProcessExited,
    UnknownNode,
    ZooKeeperNotFound,
)
from adapters.cluster.java import find_java
from adapters.cluster.network import (
    LOOPBACK,
    four_letter_word,
    free_ports,
    mentions_port_conflict,
)
from adapters.cluster.processes import ManagedProcess

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MAIN_CLASS_ENTRY = MAIN_CLASS.replace(".", "/") + ".class"
DEBIAN_HOME = Path("/usr/share/zookeeper")
DEBIAN_JAVA_DIR = Path("/usr/share/java")
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
class ZooKeeperInstall:
    """A runnable ZooKeeper: the classpath to start ``QuorumPeerMain`` with, and its origin."""

    classpath: tuple[str, ...]
    source: str

    def describe(self) -> str:
        return f"ZooKeeper from {self.source}"


def contains_quorum_peer_main(jar: Path) -> bool:
    """True when ``jar`` is a readable jar holding ``QuorumPeerMain``."""
    try:
        with zipfile.ZipFile(jar) as archive:
            return _MAIN_CLASS_ENTRY in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _jars(*directories: Path) -> list[Path]:
    found: list[Path] = []
    for directory in directories:
        if directory.is_dir():
            found.extend(sorted(directory.glob("*.jar")))
    return found


def _with_main_class(jars: Iterable[Path]) -> bool:
    return any(contains_quorum_peer_main(jar) for jar in jars if "zookeeper" in jar.name)


def _from_home(home: Path) -> ZooKeeperInstall | None:
    jars = _jars(home, home / "lib")
    if not _with_main_class(jars):
        return None
    conf = home / "conf"
    entries = ([str(conf)] if conf.is_dir() else []) + [str(jar) for jar in jars]
    return ZooKeeperInstall(tuple(entries), f"ZOOKEEPER_HOME={home}")


def _from_debian(home: Path, java_dir: Path) -> ZooKeeperInstall | None:
    own = _jars(home, home / "lib")
    shared = _jars(java_dir)
    if not _with_main_class(own + shared):
        return None
    # Debian splits the jar and its dependencies into /usr/share/java.
    return ZooKeeperInstall(
        tuple(str(jar) for jar in own + shared), f"Debian package ({home}, {java_dir})"
    )


def pyspark_jars_dir() -> Path | None:
    """The ``jars`` directory of the installed pyspark wheel, found without importing it."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _from_pyspark(jars_dir: Path) -> ZooKeeperInstall | None:
    if not _with_main_class(_jars(jars_dir)):
        return None
    # Spark's jar set holds ZooKeeper's runtime dependencies (netty, slf4j, log4j2, jute).
    return ZooKeeperInstall((str(jars_dir / "*"),), f"pyspark wheel ({jars_dir})")


def locate_zookeeper(
    environ: Mapping[str, str] | None = None,
    *,
    debian_home: Path = DEBIAN_HOME,
    debian_java_dir: Path = DEBIAN_JAVA_DIR,
    pyspark_jars: Path | None = None,
) -> ZooKeeperInstall:
    """Find a runnable ZooKeeper (see the module docstring for the search order)."""
    env = os.environ if environ is None else environ
    tried = []
    home = env.get("ZOOKEEPER_HOME")
    if home:
        found = _from_home(Path(home))
        if found is not None:
            return found
        # An explicit setting that does not work is an error, not a reason to look elsewhere.
        raise ZooKeeperNotFound(
            f"ZOOKEEPER_HOME={home} holds no zookeeper jar with {MAIN_CLASS} "
            "in its lib/ directory; point it at an unpacked apache-zookeeper-X.Y.Z-bin "
            "distribution or unset it"
        )
    tried.append("ZOOKEEPER_HOME (unset)")
    found = _from_debian(debian_home, debian_java_dir)
    if found is not None:
        return found
    tried.append(f"Debian's {debian_home}")
    jars_dir = pyspark_jars if pyspark_jars is not None else pyspark_jars_dir()
    if jars_dir is not None:
        found = _from_pyspark(jars_dir)
        if found is not None:
            return found
        tried.append(f"pyspark's {jars_dir}")
    else:
        tried.append("pyspark (not installed)")
    raise ZooKeeperNotFound(
        "no ZooKeeper found; tried " + ", ".join(tried) + ". Set ZOOKEEPER_HOME to an "
        "unpacked ZooKeeper binary distribution, `apt-get install zookeeper`, or "
        "`pip install pyspark` (its wheel ships a ZooKeeper jar)"
    )


@dataclass(frozen=True)
class ZooKeeperTuning:
    """Timing knobs of the generated ``zoo.cfg``.

    Sessions may last between 2 and 20 ticks, so with 250 ms ticks a crashed bookie's
    registration expires within 5 s; elections finish in well under a second on loopback.
    """

    tick_time_ms: int = 250
    init_limit: int = 20
    sync_limit: int = 10
    max_heap: str = "256m"


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


def server_mode(host: str, port: int, timeout: float = 2.0) -> str | None:
    """``Mode:`` from the ``srvr`` four-letter word, or None when the server does not serve."""
    reply = four_letter_word(host, port, "srvr", timeout)
    if reply is None:
        return None
    match = re.search(r"^Mode: (\S+)", reply, re.MULTILINE)
    return match.group(1) if match else None


PARTITION_SUBNET = "10.213.0"
_CLONE_NEWNET = 0x40000000


def _ip(*args: str) -> None:
    try:
        subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=10)
    except FileNotFoundError as exc:
        raise FaultNotSupported("network partitions need the `ip` command (iproute2)") from exc
    except subprocess.CalledProcessError as exc:
        raise FaultNotSupported(
            f"`ip {' '.join(args)}` failed: {exc.stderr.strip()} (network partitions need "
            "root or CAP_NET_ADMIN)"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise FaultNotSupported(f"`ip {' '.join(args)}` did not finish in 10 s") from exc


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        raise FaultNotSupported(f"setns failed: {os.strerror(ctypes.get_errno())}")


class NetworkNamespaces:
    """A hub namespace with a bridge, and one namespace per server linked to it by a veth
    pair (``h<sid>`` in the hub, ``eth0`` in the server's). Only namespaces created here are
    touched; :meth:`destroy` deletes them all."""

    def __init__(self, servers: Iterable[ZooKeeperServer]) -> None:
        self.prefix = f"bkc{os.getpid()}-{id(self) % 100000}"
        self.hub = f"{self.prefix}-hub"
        self.servers = {s.name: s for s in servers}
        self.created: list[str] = []

    def address(self, server: ZooKeeperServer) -> str:
        return f"{PARTITION_SUBNET}.{10 + server.sid}"

    def create(self) -> None:
        for name in [self.hub, *(f"{self.prefix}-{n}" for n in self.servers)]:
            _ip("netns", "add", name)
            self.created.append(name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "addr", "add", f"{PARTITION_SUBNET}.1/24", "dev", "br0")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        for name, server in self.servers.items():
            namespace = f"{self.prefix}-{name}"
            veth = f"h{server.sid}"
            _ip(
                "-n",
                self.hub,
                "link",
                "add",
                veth,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                namespace,
            )
            _ip("-n", self.hub, "link", "set", veth, "master", "br0", "up")
            _ip("-n", namespace, "addr", "add", f"{self.address(server)}/24", "dev", "eth0")
            _ip("-n", namespace, "link", "set", "eth0", "up")
            server.host = self.address(server)
            server.namespace = namespace
            server.enter_network = self.entered

    def destroy(self) -> None:
        for name in reversed(self.created):
            with contextlib.suppress(FaultNotSupported):
                _ip("netns", "del", name)
        self.created.clear()

    def cut(self, server: ZooKeeperServer) -> None:
        _ip("-n", self.hub, "link", "set", f"h{server.sid}", "down")

    def heal(self, server: ZooKeeperServer) -> None:
        _ip("-n", self.hub, "link", "set", f"h{server.sid}", "up")

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run the block (this thread only) in the hub namespace, where clients live.
        Threads started inside inherit it; sockets opened inside keep it."""
        with (
            open("/proc/thread-self/ns/net", "rb") as own,
            open(f"/run/netns/{self.hub}", "rb") as hub,
        ):
            _setns(hub.fileno())
            try:
                yield
            finally:
                _setns(own.fileno())


def partitions_supported() -> str | None:
    """None when this process can create network namespaces, else the reason it cannot."""
    probe = f"bkc{os.getpid()}-probe"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
    except FaultNotSupported as exc:
        return str(exc)
    return None


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
        self.servers: dict[str, ZooKeeperServer] = {}
        self._namespaces: NetworkNamespaces | None = None

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
        if self.size > 1:
            lines += [
                f"server.{s.sid}={s.host}:{s.quorum_port}:{s.election_port}"
                for s in self.servers.values()
            ]
        return "\n".join(lines) + "\n"

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
        self._process(self.server(name)).kill()

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
        process.stop()
        process.start()
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
