"""One Java-client session for every role: a local cluster of one BookKeeper release, a frame
proxy per bookie, the routing that sends the client through the proxies, and the release's own
Java client in a JVM (with the add recorder when the role needs its callbacks).

The bookies and the client are of one release unless told otherwise: ``client_home`` runs the
client of another release than the bookies', ``bookie_homes`` gives each bookie its own (a
cluster halfway through an upgrade), and an upgrade or a downgrade (a plan's fault) restarts a
bookie with its data from another release; :meth:`ClientSession.releases` says which release
each bookie and the client run.

What differs between roles is a :class:`SessionLayout` value (how many bookies, the client's
timeouts, whether the add recorder is loaded, whether a client that cannot be routed through
the proxies may still play by having the metadata name the proxies). Everything a session starts
(processes, proxies, routing changes, the JVM) stops on every exit path.

Proxies are named p1..pN in the order of the bookies' ids (:attr:`ClientSession.proxies`);
which model bookie a proxy stands for is the role's to say (the recovering client's are fixed,
the writer's follow the ledger's first ensemble), and every record keeps that mapping.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.bookkeeper.errors import WireError
from adapters.cluster import (
    BookieSettings,
    ClusterError,
    DataLoss,
    Endpoints,
    LocalCluster,
    LocalClusterOptions,
    Node,
)
from adapters.cluster.local import ReleaseRestart
from adapters.installations.bookkeeper import resolve_bookkeeper
from adapters.installations.jacoco import install as install_jacoco
from adapters.installations.zookeeper import ZooKeeperInstall
from adapters.javaclient import (
    BookKeeperJavaClient,
    BookKeeperVersion,
    ClientOptions,
    JavaClientError,
    JvmOptions,
    distribution_version,
)
from adapters.javaclient.jacoco_agent import dump as dump_coverage
from adapters.javaclient.jacoco_agent import jvm_agent_flag
from adapters.javaclient.jacoco_agent import reset as reset_coverage
from adapters.javaclient.pipelined_adds import recorder_classes
from adapters.netproxy import BookieProxy, DeliveryRecord, FrameRecord, NetProxyError, ProxyGroup
from adapters.netproxy.routing import (
    RoutingMethod,
    proxied_ensemble,
    route_through_proxies,
    routing_method_for_version,
)
from adapters.zkproxy import ExpiryRecord, Op, ZkMatch, ZkProxyError, ZooKeeperProxy
from adapters.zkproxy import Hold as ZkHold
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.ledger_store import LedgerStore
from conformance.errors import ConformanceError
from conformance.javaclient.coverage import CoverageError, CoverageTracker, NewCoverage, server_jar
from conformance.javaclient.metadata_writes import LedgerWrites
from conformance.javaclient.plans import FaultKind, PlannedFault
from conformance.live.faults import FaultEvent, FaultHandler, FaultInjector, Injected

#: The first release whose client resolves bookie ids through their registrations, so that the
#: proxies can stand in for the bookies without anybody writing the ledger's metadata for it.
FIRST_ROUTABLE_RELEASE = BookKeeperVersion(4, 12, 0)
#: How long a session waits, after a run, for the proxies to let go of every held frame.
SETTLE_S = 2.0


class RunUndecided(ConformanceError):
    """The run could not be carried out (cluster, JVM, proxies, ZooKeeper): no verdict."""


class SessionRefused(ConformanceError, ValueError):
    """A session this release cannot have (the message says why and what can be run)."""


#: What makes a run undecided instead of a finding: the harness or the cluster failed.
INFRASTRUCTURE_ERRORS: tuple[type[Exception], ...] = (
    ClusterError,
    NetProxyError,
    MetadataError,
    JavaClientError,
    WireError,
    ZkProxyError,
    CoverageError,
    RunUndecided,
)


#: How long a restarted bookie may take to register again (its JVM starts and replays its
#: journal: two bookies restarting together on a busy 2-core machine took more than 10 s).
ROUTED_AFTER_RESTART_S = 45.0


@dataclass(frozen=True)
class SessionLayout:
    """What a role needs of its session."""

    bookies: int
    #: The client's ``speculativeReadTimeout``, ``readEntryTimeout`` and ``addEntryTimeout``
    #: (None: the release's default).
    speculative_read_timeout_ms: int | None = None
    read_entry_timeout_s: int | None = None
    add_entry_timeout_s: int | None = None
    #: Load the add recorder (timestamped ``asyncAddEntry`` callbacks) into the JVM.
    records_adds: bool = False
    #: A client older than :data:`FIRST_ROUTABLE_RELEASE` may play if the ledger's metadata
    #: names the proxies (only a role that writes the metadata itself can do that).
    metadata_may_name_proxies: bool = False
    #: Why a release that cannot be routed is refused (said with the refusal).
    refusal_hint: str = ""
    #: Put a proxy on the client's ZooKeeper connection (its metadata writes can then be held
    #: and its session expired); the bookies keep their own connections.
    proxies_zookeeper: bool = True
    #: More ``ClientConfiguration`` properties, as ``setProperty`` takes them (e.g. the add
    #: throttle at 1 add a second: ``(("throttle", "1"),)``).
    client_properties: tuple[tuple[str, str], ...] = ()
    #: A second BookKeeper client in the same JVM (its own bookie connections and ZooKeeper
    #: session), which recovers the first one's ledger: the broker that takes over a ledger
    #: (``--role both``). Its ZooKeeper connection is not proxied: held metadata writes and
    #: an expired session are the writer's. Its reads time out after this many seconds (0: no
    #: second client).
    recovering_client_read_timeout_s: int = 0
    #: More writer clients beside the first (the same configuration, the same JVM, each its
    #: own connections and ZooKeeper session): several writers, each with its ledger.
    more_writers: int = 0

    def __post_init__(self) -> None:
        if self.bookies < 1:
            raise SessionRefused(f"a session runs at least one bookie, not {self.bookies}")


@dataclass(frozen=True)
class SessionOptions:
    #: The bookies' distribution (and the client's, unless ``client_home`` names another).
    bookkeeper_home: Path
    #: Where the JVM's log goes (the run directory).
    log_dir: Path
    layout: SessionLayout
    java_call_timeout: float = 60.0
    request_timeout: float = 10.0
    work_dir: Path | None = None
    #: Measure the client's code coverage with JaCoCo's agent (installed from Maven Central
    #: on first use), example by example (:mod:`.coverage`).
    measures_coverage: bool = False
    #: The cluster's ZooKeeper (None: ZOOKEEPER_HOME, else the default release).
    zookeeper: ZooKeeperInstall | None = None
    #: The bookies' settings: their ledger storage and settings profile
    #: (:mod:`adapters.cluster.bookie_profiles`; the default: the suite's, SortedLedgerStorage).
    bookie_settings: BookieSettings = field(default_factory=BookieSettings)
    #: The Java client's own distribution (None: the bookies').
    client_home: Path | None = None
    #: Each bookie's distribution, one per bookie of the layout (empty: ``bookkeeper_home``
    #: for every bookie).
    bookie_homes: tuple[Path, ...] = ()

    @property
    def client_distribution(self) -> Path:
        """The distribution the Java client runs from."""
        return self.client_home or self.bookkeeper_home


def resolve_release(release: str) -> Path:
    """The distribution of ``release``: a version (installed from Maven Central on first use)
    or a directory; :class:`RunUndecided` when it cannot be had."""
    try:
        return resolve_bookkeeper(release)
    except ClusterError as exc:
        raise RunUndecided(f"release {release}: {exc}") from exc


def routing_refusal(version: BookKeeperVersion, layout: SessionLayout) -> str | None:
    """Why a session of ``layout`` cannot route a client of ``version``, or None."""
    if layout.metadata_may_name_proxies or version >= FIRST_ROUTABLE_RELEASE:
        return None
    return (
        f"BookKeeper {version}: this role needs a client that resolves bookie ids "
        f"(BookKeeper >= {FIRST_ROUTABLE_RELEASE}), so that its requests go through the "
        f"proxies{'; ' + layout.refusal_hint if layout.refusal_hint else ''}"
    )


class ClientSession:
    """The cluster, its proxies, the routing and the Java client, for many runs (each on a
    ledger of its own).

    ::

        with ClientSession(options) as session:
            example = run_plan(session, role, plan)
    """

    def __init__(self, options: SessionOptions) -> None:
        self.options = options
        self.layout = options.layout
        #: The Java client's release (its routing depends on it), and the bookies' own.
        self.version = distribution_version(options.client_distribution)
        self.bookie_version = distribution_version(options.bookkeeper_home)
        refusal = routing_refusal(self.version, self.layout)
        if refusal is not None:
            raise SessionRefused(refusal)
        method = routing_method_for_version(self.version)
        # A client that cannot resolve ids connects to the ensemble's: the metadata names the
        # proxies.
        self.routing_method = (
            method if method is RoutingMethod.REWRITE_SERVICE_INFO else RoutingMethod.PROXY_ENSEMBLE
        )
        self._stack = contextlib.ExitStack()
        self.bookie_ids: list[str] = []
        #: p1..pN, in the order of ``bookie_ids``.
        self.proxies: dict[str, BookieProxy] = {}
        self._group: ProxyGroup | None = None
        self._cluster: LocalCluster | None = None
        self._client: BookKeeperJavaClient | None = None
        self._recovering_client: BookKeeperJavaClient | None = None
        self._more_writers: list[BookKeeperJavaClient] = []
        self._zookeeper: ZooKeeperProxy | None = None
        self._routing: Any = None
        self._coverage: CoverageTracker | None = None
        #: Each bookie's release as the session started (proxy name -> release).
        self.bookie_releases_at_start: dict[str, str] = {}
        #: The distributions of the releases a plan restarted bookies from, by release.
        self._release_homes: dict[str, Path] = {}

    def __enter__(self) -> ClientSession:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def _start(self) -> None:
        options, layout = self.options, self.layout
        # Compiled and installed (or found cached) before anything starts: a missing javac or
        # Maven stops nothing.
        client_home = options.client_distribution
        jars = [recorder_classes(client_home)] if layout.records_adds else []
        agent_flags: list[str] = []
        if options.measures_coverage:
            jacoco = install_jacoco()
            agent_flags.append(jvm_agent_flag(jacoco))
            self._coverage = CoverageTracker(
                jacoco, server_jar(client_home), work_dir=options.log_dir / "coverage"
            )
        cluster = self._stack.enter_context(
            LocalCluster(
                LocalClusterOptions(
                    bookies=layout.bookies,
                    bookkeeper_home=options.bookkeeper_home,
                    bookie_homes=options.bookie_homes,
                    use_bookkeeper_home_env=False,
                    work_dir=options.work_dir,
                    zookeeper_install=options.zookeeper,
                    bookie_settings=options.bookie_settings,
                )
            )
        )
        group = self._stack.enter_context(ProxyGroup())
        self._cluster, self._group = cluster, group
        endpoints = cluster.endpoints()
        self.bookie_ids = sorted(endpoints.bookies)[: layout.bookies]
        if len(self.bookie_ids) < layout.bookies:
            raise RunUndecided(
                f"the cluster registered {len(self.bookie_ids)} bookies, not {layout.bookies}"
            )
        for index, bookie_id in enumerate(self.bookie_ids):
            name = f"p{index + 1}"
            self.proxies[name] = group.add(name, *endpoints.bookies[bookie_id])
        self.bookie_releases_at_start = self.bookie_releases()
        if self.routing_method is RoutingMethod.REWRITE_SERVICE_INFO:
            routing = route_through_proxies(
                cluster.zookeeper_client,
                endpoints.ledgers_root,
                self.proxy_of_id(),
                self.routing_method,
            )
            self._routing = self._stack.enter_context(routing)
            # Routed before the client starts, so that it never caches a bookie's own address.
            routing.wait_routed(options.request_timeout)
        metadata_service_uri = endpoints.metadata_service_uri
        if layout.proxies_zookeeper:
            host, port = endpoints.zookeeper_connect.split(",")[0].rsplit(":", 1)
            self._zookeeper = self._stack.enter_context(ZooKeeperProxy(host, int(port)))
            metadata_service_uri = self._zookeeper.proxied_uri(metadata_service_uri)
        client_options = ClientOptions(
            metadata_service_uri,
            speculative_read_timeout_ms=layout.speculative_read_timeout_ms,
            read_entry_timeout_s=layout.read_entry_timeout_s,
            add_entry_timeout_s=layout.add_entry_timeout_s,
            properties=dict(layout.client_properties),
        )
        jvm = JvmOptions(
            log_path=options.log_dir / "jvm.log",
            call_timeout=options.java_call_timeout,
            extra_flags=agent_flags,
        )
        self._client = self._stack.enter_context(
            BookKeeperJavaClient.launch(
                client_options,
                bookkeeper_home=client_home,
                jars=jars,
                jvm_options=jvm,
            )
        )
        for _ in range(layout.more_writers):
            self._more_writers.append(
                self._stack.enter_context(
                    BookKeeperJavaClient.connect(
                        self._client.gateway, client_options, timeout=options.java_call_timeout
                    )
                )
            )
        if layout.recovering_client_read_timeout_s:
            # In the writer's JVM, closed before it (the stack unwinds in reverse).
            recovering = ClientOptions(
                endpoints.metadata_service_uri,
                speculative_read_timeout_ms=layout.speculative_read_timeout_ms,
                read_entry_timeout_s=layout.recovering_client_read_timeout_s,
                add_entry_timeout_s=layout.add_entry_timeout_s,
            )
            self._recovering_client = self._stack.enter_context(
                BookKeeperJavaClient.connect(
                    self._client.gateway, recovering, timeout=options.java_call_timeout
                )
            )
        if self._coverage is not None:
            # What the start-up covered is no example's.
            reset_coverage(self._client.gateway)

    # -- what the roles use ------------------------------------------------------------------

    @property
    def group(self) -> ProxyGroup:
        if self._group is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        return self._group

    @property
    def client(self) -> BookKeeperJavaClient:
        if self._client is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        return self._client

    def writer(self, number: int) -> BookKeeperJavaClient:
        """Writer client ``number`` (0: :attr:`client`); :class:`RunUndecided` beyond the
        layout's."""
        if number == 0:
            return self.client
        if not 1 <= number <= len(self._more_writers):
            raise RunUndecided(
                f"this session has {len(self._more_writers) + 1} writer client(s), not {number + 1}"
            )
        return self._more_writers[number - 1]

    @property
    def recovering_client(self) -> BookKeeperJavaClient:
        """The second client of a layout that asks for one (:class:`RunUndecided` if not)."""
        if self._recovering_client is None:
            raise RunUndecided("this session has no recovering client beside the writer")
        return self._recovering_client

    @property
    def zookeeper_proxy(self) -> ZooKeeperProxy:
        """The proxy on the client's ZooKeeper connection (:class:`RunUndecided` when the
        layout has none)."""
        if self._zookeeper is None:
            raise RunUndecided("this session does not proxy the client's ZooKeeper connection")
        return self._zookeeper

    def ledger_writes(self, ledger_id: int) -> LedgerWrites | None:
        """The writes of ``ledger_id``'s metadata at the client's ZooKeeper proxy from now on
        (None when the layout does not proxy the client's ZooKeeper connection)."""
        if self._zookeeper is None:
            return None
        return LedgerWrites(self._zookeeper, self.ledger_store().path(ledger_id))

    @property
    def endpoints(self) -> Endpoints:
        if self._cluster is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        return self._cluster.endpoints()

    def ledger_store(self) -> LedgerStore:
        """The ledgers' metadata in the cluster's ZooKeeper, read and written directly."""
        if self._cluster is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        return LedgerStore(self._cluster.zookeeper_client, self.endpoints.ledgers_root)

    def proxy_of_id(self) -> dict[str, BookieProxy]:
        """Bookie id -> the proxy standing in for it."""
        return dict(zip(self.bookie_ids, self.proxies.values(), strict=True))

    def ensemble_ids(self) -> tuple[str, ...]:
        """The ids a ledger's metadata names for the bookies, in order: their own when the
        client is routed through the proxies, else the proxies' addresses."""
        if self.routing_method is RoutingMethod.REWRITE_SERVICE_INFO:
            return tuple(self.bookie_ids)
        return tuple(proxied_ensemble(self.bookie_ids, self.proxy_of_id()))

    def bookie_address(self, bookie_id: str) -> tuple[str, int]:
        """Where the bookie itself listens (not its proxy)."""
        return self.endpoints.bookies[bookie_id]

    def routes(self) -> dict[str, str]:
        return {
            name: f"{bookie_id} via {proxy.address}"
            for (name, proxy), bookie_id in zip(self.proxies.items(), self.bookie_ids, strict=True)
        }

    def bookie_releases(self) -> dict[str, str]:
        """Proxy name -> the release its bookie runs now."""
        if self._cluster is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        releases = self._cluster.bookie_releases()
        return {
            name: releases.get(bookie_id, "down")
            for name, bookie_id in zip(self.proxies, self.bookie_ids, strict=True)
        }

    def releases(self) -> dict[str, Any]:
        """Which release the client and each bookie ran: the client's, and each bookie's (by
        proxy) as the session started and as it is now."""
        return {
            "client": str(self.version),
            "bookies_at_start": dict(self.bookie_releases_at_start),
            "bookies_now": self.bookie_releases(),
        }

    def describe(self) -> dict[str, str]:
        """What a run directory records of the session (the releases: the client's, and each
        bookie's as it started and at the end, when a plan changed one)."""
        now = self.bookie_releases()
        described = {
            "routing": self.routing_method.value,
            **self.routes(),
            "client_release": str(self.version),
            "bookie_releases": _releases_text(self.bookie_releases_at_start),
        }
        if now != self.bookie_releases_at_start:
            described["bookie_releases_at_end"] = _releases_text(now)
        return described

    def release_home(self, release: str) -> Path:
        """The distribution of ``release`` (a version or a directory), resolved once per
        session (:func:`resolve_release`)."""
        if release not in self._release_homes:
            self._release_homes[release] = resolve_release(release)
        return self._release_homes[release]

    def settle(self, timeout: float = SETTLE_S) -> None:
        """Wait (bounded) until no proxy holds a frame, so the log shows every late answer;
        a frame still held then is logged as never delivered."""
        deadline = time.monotonic() + timeout
        while any(proxy.held() for proxy in self.group.proxies.values()):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)

    def measure_coverage(self) -> NewCoverage | None:
        """What the client's code covered since the last call, for the first time in this
        session (None: coverage is not measured)."""
        if self._coverage is None:
            return None
        return self._coverage.add(dump_coverage(self.client.gateway))

    @property
    def coverage(self) -> CoverageTracker | None:
        """The session's coverage so far (None: not measured)."""
        return self._coverage

    def wait_routed(self, down: Collection[str] = ()) -> None:
        """Wait (bounded: :data:`ROUTED_AFTER_RESTART_S`) until every bookie but those
        ``down`` (ids of bookies a plan crashed: they have no registration) is routed through
        its proxy again: a restarted bookie registers its own address, which the routing
        rewrites."""
        if self._routing is not None:
            up = [bookie_id for bookie_id in self.bookie_ids if bookie_id not in down]
            self._routing.wait_routed(
                max(self.options.request_timeout, ROUTED_AFTER_RESTART_S), bookies=up
            )

    def faults(self, names: Mapping[str, str]) -> SessionFaults:
        """The executor of a run's faults, its bookies named by ``names`` (proxy -> name)."""
        if self._cluster is None:
            raise RunUndecided("the session is not started (use it in a with block)")
        return SessionFaults(self, self._cluster, names)

    def frames_since(self, mark: int) -> tuple[list[FrameRecord], dict[int, DeliveryRecord]]:
        """The frames the proxies saw after ``mark``, and their deliveries."""
        frames = self.group.frames(since=mark)
        return frames, deliveries_of(self.group, frames)


class SessionFaults:
    """The :class:`~.controller.FaultExecutor` of one run on a session: the faults of a plan
    carried out on the session's cluster, proxies and ZooKeeper by the one fault injector
    (:class:`~conformance.live.faults.FaultInjector`), one handler per :class:`~.plans.FaultKind`,
    its bookies named as the role names them (``names``: proxy -> the model's bookie name). A
    fault with a duration is undone by a timer, and whatever is still in effect is undone by
    :meth:`close`; every fault done and undone is in :attr:`events`, the run's record of them."""

    def __init__(
        self, session: ClientSession, cluster: LocalCluster, names: Mapping[str, str]
    ) -> None:
        self._session = session
        self._cluster = cluster
        proxies = dict(zip(session.proxies, session.bookie_ids, strict=True))
        #: The model's bookie name -> (its proxy's name, its bookie id).
        self._bookies = {name: (proxy, proxies[proxy]) for proxy, name in names.items()}
        #: The ids of the bookies crashed and not started again.
        self._down: set[str] = set()
        #: When the run's first pause began (None: no pause).
        self._first_pause: float | None = None
        #: Each bookie paused in the run -> its registration's session and the packets
        #: ZooKeeper had received on it when the bookie was resumed (None: not resumed yet, or
        #: not known).
        self._resumed: dict[str, tuple[Node, tuple[int, int] | None]] = {}
        self._injector: FaultInjector[PlannedFault] = FaultInjector(self._handlers())

    @property
    def events(self) -> list[FaultEvent]:
        """Every fault this run's plan injected, and every heal, in order."""
        return list(self._injector.events)

    def _handlers(self) -> list[FaultHandler[PlannedFault]]:
        # Killing a paused bookie ends its pause: nothing is left to resume (resuming the
        # crashed bookie failed, and the seed-51 search stopped undecided on it).
        kills = frozenset({FaultKind.PAUSE.value})
        handlers = {
            FaultKind.CRASH: FaultHandler("", self._crash, "restart", ends=kills),
            FaultKind.PAUSE: FaultHandler("", self._pause, "resume"),
            FaultKind.RESTART: FaultHandler("", self._restart_with_data, ends=kills),
            FaultKind.CLEAN_RESTART: FaultHandler("", self._clean_restart, ends=kills),
            FaultKind.AWAIT_CHECKPOINT: FaultHandler("", self._await_checkpoint),
            FaultKind.UPGRADE: FaultHandler("", self._change_release, ends=kills),
            FaultKind.DOWNGRADE: FaultHandler("", self._change_release, ends=kills),
            FaultKind.RESTART_EMPTY: FaultHandler("", self._restart_empty, ends=kills),
            FaultKind.RESET: FaultHandler("", self._reset),
            FaultKind.REFUSE: FaultHandler("", self._refuse, "accept"),
            FaultKind.STALL: FaultHandler("", self._stall, "read again"),
            FaultKind.HOLD_METADATA: FaultHandler("", self._hold_metadata, "release metadata"),
            FaultKind.EXPIRE_SESSION: FaultHandler("", self._expire_session, "new session"),
        }
        missing = set(FaultKind) - set(handlers)
        assert not missing, f"no handler for {sorted(k.value for k in missing)}"
        return [dataclasses.replace(h, verb=kind.value) for kind, h in handlers.items()]

    def _bookie(self, name: str | None) -> tuple[BookieProxy, Node]:
        if name not in self._bookies:
            raise RunUndecided(f"the run has no bookie {name!r} ({sorted(self._bookies)})")
        proxy, bookie_id = self._bookies[name]
        return self._session.proxies[proxy], Node.bookie(bookie_id)

    def execute(self, event: PlannedFault) -> str:
        if event.kind.needs_bookie:
            self._bookie(event.bookie)  # a bookie the run does not have: undecided, not done
        return self._injector.inject(event.kind.value, event.bookie, event, step=event.describe())

    @staticmethod
    def _named(event: PlannedFault) -> str:
        """``crash b2``: the fault and its bookie."""
        return f"{event.kind.value} {event.bookie or ''}".strip()

    @classmethod
    def _what(cls, event: PlannedFault) -> str:
        """What was done: ``pause b2 for 500 ms``."""
        lasting = f" for {event.duration_ms} ms" if event.duration_ms else ""
        return cls._named(event) + lasting

    # -- the handlers, one per fault kind ----------------------------------------------------

    def _crash(self, bookie: str | None, event: PlannedFault) -> Injected:
        _, node = self._bookie(bookie)
        self._cluster.crash(node)
        self._down.add(node.id)
        # Down for the rest of the run; the next run of the session starts it again.
        return Injected(self._what(event), heal=lambda: self._restart(node))

    def _pause(self, bookie: str | None, event: PlannedFault) -> Injected:
        _, node = self._bookie(bookie)
        if node.id in self._down:
            # A plan may crash a bookie and pause it later: nothing runs to pause.
            return Injected(f"{self._named(event)}: down (crashed before), nothing to pause")
        self._cluster.pause(node)
        if self._first_pause is None:
            self._first_pause = time.monotonic()
        self._resumed[node.id] = (node, None)
        return Injected(self._what(event), lambda: self._resume(node), event.duration_ms / 1000)

    def _resume(self, node: Node) -> None:
        self._cluster.resume(node)
        self._resumed[node.id] = (node, self._session_packets(node))

    def _session_packets(self, node: Node) -> tuple[int, int] | None:
        try:
            return self._cluster.bookie_session_packets(node)
        except Exception:  # ZooKeeper not answering: not known, so the wait is the horizon's
            return None

    def _heard_since_resumed(self) -> bool:
        """Whether ZooKeeper has heard from every paused bookie's session since its resume (a
        bookie crashed since has no session to keep)."""
        for node_id, (node, at_resume) in self._resumed.items():
            if node_id in self._down:
                continue
            now = None if at_resume is None else self._session_packets(node)
            if at_resume is None or now is None or now[0] != at_resume[0]:
                return False
            if now[1] <= at_resume[1]:
                return False
        return True

    def _restart_with_data(self, bookie: str | None, event: PlannedFault) -> Injected:
        _, node = self._bookie(bookie)
        self._cluster.crash(node)
        self._restart(node)
        return Injected(self._what(event))

    def _await_checkpoint(self, bookie: str | None, event: PlannedFault) -> Injected:
        interval_ms = self._cluster.options.bookie_settings.checkpoint_interval_ms
        time.sleep(interval_ms / 1000 + CHECKPOINT_MARGIN_S)
        return Injected(
            f"{self._named(event)}: {interval_ms} ms (flushInterval) + "
            f"{CHECKPOINT_MARGIN_S:.0f} s waited"
        )

    def _restart_empty(self, bookie: str | None, event: PlannedFault) -> Injected:
        _, node = self._bookie(bookie)
        self._cluster.crash(node)
        self._cluster.restart_with_data_loss(node, DataLoss.WIPE)
        self._down.discard(node.id)
        self._session.wait_routed(self._down)
        return Injected(self._what(event))

    def _reset(self, bookie: str | None, event: PlannedFault) -> Injected:
        proxy, _ = self._bookie(bookie)
        proxy.reset_connections()
        return Injected(self._what(event))

    def _refuse(self, bookie: str | None, event: PlannedFault) -> Injected:
        proxy, _ = self._bookie(bookie)
        proxy.refuse_connections(None)
        return Injected(self._what(event), proxy.accept_connections, event.duration_ms / 1000)

    def _stall(self, bookie: str | None, event: PlannedFault) -> Injected:
        proxy, _ = self._bookie(bookie)
        proxy.stall(True)
        return Injected(self._what(event), lambda: proxy.stall(False), event.duration_ms / 1000)

    def _hold_metadata(self, bookie: str | None, event: PlannedFault) -> Injected:
        zookeeper = self._session.zookeeper_proxy
        rule = zookeeper.add_rule(METADATA_WRITES, ZkHold())
        return Injected(
            self._what(event),
            lambda: _release_writes(zookeeper, rule),
            event.duration_ms / 1000,
        )

    def _expire_session(self, bookie: str | None, event: PlannedFault) -> Injected:
        zookeeper = self._session.zookeeper_proxy
        expiry = zookeeper.expire_session()
        return Injected(self._what(event), lambda: await_new_session(zookeeper, expiry))

    def _change_release(self, bookie: str | None, event: PlannedFault) -> Injected:
        """An upgrade or a downgrade: the bookie stopped as an operator stops it and started
        again with its data from ``event.release``, checked to be newer (an upgrade) or older
        (a downgrade) than the release it runs; what was done."""
        _, node = self._bookie(bookie)
        what = self._what(event)
        assert event.release is not None
        home = self._session.release_home(event.release)
        before = self._cluster.bookie_releases().get(node.id, "unknown")
        after = str(distribution_version(home))
        _check_direction(event.kind, before, after, what)
        done = self._restart_with_release(node, home)
        return Injected(f"{what}: {done.describe()}")

    def _clean_restart(self, bookie: str | None, event: PlannedFault) -> Injected:
        """The bookie stopped as an operator stops it and started again from its own
        release, with its data; a stop that had to kill it is no clean restart (undecided)."""
        _, node = self._bookie(bookie)
        what = self._what(event)
        home = self._cluster.bookie(node.id).bookkeeper_home
        if home is None:
            raise RunUndecided(f"{what}: the bookie runs no BookKeeper release to restart")
        done = self._restart_with_release(node, home)
        if done.was_running and not done.stopped_cleanly:
            raise RunUndecided(f"{what}: {done.describe()}: killed, so not a clean restart")
        return Injected(f"{what}: {done.describe()}")

    def _restart_with_release(self, node: Node, home: Path) -> ReleaseRestart:
        """``node`` stopped as an operator stops it and started from ``home`` with its data,
        then routed through its proxy again (as :meth:`_restart`)."""
        done = self._cluster.restart_with_release(node, home)
        self._down.discard(node.id)
        self._session.wait_routed(self._down)
        return done

    def _restart(self, node: Node) -> None:
        self._cluster.restart(node)
        self._down.discard(node.id)
        # Until the routing is back, the client could resolve the bookie's own address and
        # go round its proxy. A bookie still down (crashed, restarted at the run's end) has
        # nothing to route: waiting for it failed every run that crashed two bookies.
        self._session.wait_routed(self._down)

    def close(self) -> None:
        """Undo now whatever a timer would undo later, and what waits for the run's end
        (bounded by the cluster's and the proxies' own timeouts). A pause's effect outlives
        the pause: a bookie stopped near its ZooKeeper session timeout loses its session a
        little later, and with it its registration, until it registers again (seen in a
        fresh-clone CI: a bookie paused in one run was missing three runs later, and the
        next ensemble change found no spare, NotEnoughBookies). So a run that paused a bookie
        ends once that session would have expired and every bookie is registered again, or
        sooner, once ZooKeeper has heard from each paused bookie's session since its resume
        (``cons``: more packets received on it): the server touched the session then, so it
        cannot expire before a session timeout from then, and the bookie keeps it alive (the
        profile of issue 49: this wait was 3.2 and 5.0 s of the two examples that paused)."""
        self._injector.heal()
        if self._first_pause is not None:
            horizon = (
                self._first_pause + self._cluster.options.bookie_settings.session_timeout_ms / 1000
            ) + PAUSE_EXPIRY_MARGIN_S
            while time.monotonic() < horizon and not self._heard_since_resumed():
                time.sleep(min(PAUSE_POLL_S, max(0.0, horizon - time.monotonic())))
            self._first_pause = None
            self._resumed.clear()
            self._session.wait_routed(self._down)


def _check_direction(kind: FaultKind, before: str, after: str, what: str) -> None:
    """An upgrade goes to a newer release, a downgrade to an older one (:class:`RunUndecided`
    otherwise: the plan asked for something else than it says)."""
    try:
        older, newer = BookKeeperVersion.parse(before), BookKeeperVersion.parse(after)
    except JavaClientError as exc:
        raise RunUndecided(f"{what}: {exc}") from exc
    ok = newer > older if kind is FaultKind.UPGRADE else newer < older
    if not ok:
        direction = "newer" if kind is FaultKind.UPGRADE else "older"
        raise RunUndecided(
            f"{what}: the bookie runs {before}; {after} is not {direction} (a "
            f"{kind.value} restarts a bookie from a {direction} release)"
        )


def _releases_text(releases: Mapping[str, str]) -> str:
    """``p1 4.17.3, p2 4.18.0``."""
    return ", ".join(f"{name} {release}" for name, release in releases.items())


#: Past one checkpoint interval, how long a waiting plan gives the checkpoint to finish (a
#: SyncThread flush of the suite's small ledgers takes milliseconds).
CHECKPOINT_MARGIN_S = 2.0

#: Past a paused bookie's session timeout, how long its ZooKeeper server may take to expire
#: the session (it expires sessions on its ticks) and the bookie to notice.
PAUSE_EXPIRY_MARGIN_S = 1.0
#: How often a run that paused a bookie looks whether ZooKeeper has heard from it since.
PAUSE_POLL_S = 0.1

#: How long the client may take to open its next ZooKeeper session after an expiry (its
#: reconnection is told "expired", then it starts a new session: about 2 s here).
NEW_SESSION_S = 30.0


def await_new_session(
    zookeeper: ZooKeeperProxy, expiry: ExpiryRecord, timeout: float = NEW_SESSION_S
) -> None:
    """Wait until the client holds a session granted after ``expiry``: an expiry's effect ends
    with its run. Until then the client can neither write metadata nor look a bookie up (4.17
    invalidates its cache of bookie addresses on the expiry); a fresh-clone CI's client log
    showed the previous run's expiry still being handled while the next run created its
    ledger.

    :raises RunUndecided: no new session within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        latest = zookeeper.session()
        if (
            latest is not None
            and latest.session_id != expiry.session_id
            and latest.at >= expiry.started_at
        ):
            return
        if time.monotonic() >= deadline:
            raise RunUndecided(
                f"the client opened no new ZooKeeper session within {timeout:.0f} s of the "
                f"expiry of session 0x{expiry.session_id:x}"
            )
        time.sleep(0.05)


#: The client's writes to ZooKeeper: what an ensemble change, a close or a recovery writes.
METADATA_WRITES = ZkMatch.request(Op.SET_DATA, Op.CREATE, Op.CREATE2, Op.DELETE, Op.MULTI)


def _release_writes(zookeeper: ZooKeeperProxy, rule: int) -> None:
    """End a hold of the client's metadata writes: no new write is held, the held ones go (in
    their connection's order)."""
    zookeeper.remove_rule(rule)
    zookeeper.release_all()


def deliveries_of(group: ProxyGroup, frames: Sequence[FrameRecord]) -> dict[int, DeliveryRecord]:
    """The proxies' deliveries of ``frames`` only: the group's log holds every example's of
    the session, which a record of one example neither needs nor should grow with."""
    wanted = {frame.frame_id for frame in frames}
    return {fid: d for fid, d in group.deliveries().items() if fid in wanted}


def model_bookie_names(bookie_of_proxy: Mapping[str, int]) -> dict[str, str]:
    """Proxy name -> the model's name of the bookie behind it (b1 for index 0)."""
    return {proxy: f"b{index + 1}" for proxy, index in bookie_of_proxy.items()}


__all__ = [
    "FIRST_ROUTABLE_RELEASE",
    "INFRASTRUCTURE_ERRORS",
    "SETTLE_S",
    "ClientSession",
    "RunUndecided",
    "SessionFaults",
    "SessionLayout",
    "SessionOptions",
    "SessionRefused",
    "await_new_session",
    "deliveries_of",
    "model_bookie_names",
    "resolve_release",
    "routing_refusal",
]
