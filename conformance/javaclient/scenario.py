"""``defect1-java-client``: Defect 1's recipe with the REAL Java client as the recovering w2.

On a local cluster started from a BookKeeper distribution (bookies of that version), with one
frame proxy per bookie:

1. w1, our Python wire client, writes the ledger metadata (ensemble b1, b2, b3; E=WQ=3, AQ=2)
   and adds e0 to b2 only, directly (the proxies never see w1);
2. the proxies get the schedule (default :func:`~.schedule.defect1_schedule`: w2's fence read
   to b3 is dropped, b2's answer to the recovery read of e0 is held past the speculative read
   timeout);
3. w2, the distribution's own Java client, recovers the ledger (``openLedger``) through the
   proxies, routed as its version needs (:mod:`adapters.netproxy.routing`): a 4.12+ client
   resolves the bookie ids through their rewritten registrations; an older one connects to
   the ensemble's ids themselves, so the metadata names the proxies' addresses;
4. w1 adds e0 directly to b3.

What was observed (frame log, w1's answers, the closed metadata) is a
:class:`~.story.RecoveryRecord`; :func:`~.story.judge` tells the story. Every process, proxy,
routing change and JVM is stopped on every exit path.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import package_entry
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.status import StatusCode
from adapters.cluster import ClusterError, LocalCluster, LocalClusterOptions
from adapters.javaclient import (
    BKError,
    BookKeeperJavaClient,
    BookKeeperVersion,
    ClientOptions,
    JavaClientError,
    JavaDigestType,
    JvmOptions,
    distribution_version,
)
from adapters.netproxy import (
    BookieProxy,
    DeliveryRecord,
    FrameRecord,
    NetProxyError,
    ProxyGroup,
)
from adapters.netproxy.routing import (
    RoutingMethod,
    proxied_ensemble,
    route_through_proxies,
    routing_method_for_version,
)
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, LedgerState, Segment
from conformance import translation
from conformance.errors import ConformanceError
from conformance.javaclient import SCENARIO_NAME
from conformance.javaclient.plans import BOOKIES, DEFECT_1_WRITER, WriterPlan
from conformance.javaclient.schedule import ScheduledRule, defect1_schedule, install
from conformance.javaclient.story import RecoveryRecord
from conformance.targets.cluster_target import DIGEST, KEY, PASSWORD

NAME = SCENARIO_NAME
#: The first release whose recovery reads carry the fence flag (the fix of #2614).
FIRST_FENCING_RELEASE = BookKeeperVersion(4, 14, 0)
_SETTLE_S = 2.0

ScheduleFactory = Callable[[int, int], Sequence[ScheduledRule]]


class ScenarioUndecided(ConformanceError):
    """The run could not be carried out (cluster, JVM, proxies, ZooKeeper): no verdict."""


@dataclass(frozen=True)
class JavaScenarioOptions:
    bookkeeper_home: Path
    #: Where the JVM's log goes (the run directory).
    log_dir: Path
    speculative_read_timeout_ms: int = 300
    read_entry_timeout_s: int = 5
    java_call_timeout: float = 60.0
    request_timeout: float = 10.0
    #: ``(ledger id, speculative read timeout ms)`` -> the proxies' rules.
    schedule: ScheduleFactory = defect1_schedule
    work_dir: Path | None = None


@dataclass
class JavaScenarioRun:
    record: RecoveryRecord
    version: BookKeeperVersion
    routing: RoutingMethod
    schedule: tuple[ScheduledRule, ...]
    bookie_ids: list[str]
    #: Proxy name (b1..) -> ``bookie id -> proxy address``.
    proxies: dict[str, str] = field(default_factory=dict)

    def describe(self) -> dict[str, str]:
        return {
            "target": "local",
            "bookkeeper": str(self.version),
            "routing": self.routing.value,
            "bookie_ids": ",".join(self.bookie_ids),
            "ledger_id": str(self.record.ledger_id),
            "recovering_client": f"BookKeeper Java client {self.version} (py4j)",
        }


def expected_verdict(version: BookKeeperVersion) -> str:
    """What issue 8 measured: clients before 4.14.0 lose e0, later ones are safe."""
    return "clean" if version >= FIRST_FENCING_RELEASE else "violation"


async def _add(
    host: str, port: int, ledger_id: int, bk_entry: int, bk_lac: int, timeout: float
) -> StatusCode:
    """One add of w1 (the model's data for that entry, the LAC it piggybacks) on a connection
    of its own."""
    entry = translation.spec_entry_id(bk_entry)
    body = package_entry(
        DIGEST,
        PASSWORD,
        ledger_id,
        bk_entry,
        bk_lac,
        translation.ledger_length(entry),
        translation.payload(entry),
    )
    client = await BookieClient.connect(host, port, request_timeout=timeout)
    try:
        answer = await client.add(ledger_id, bk_entry, KEY, body)
    finally:
        await client.close()
    return answer.status


def writer_add(
    address: tuple[str, int], ledger_id: int, timeout: float, bk_entry: int = 0, bk_lac: int = -1
) -> StatusCode:
    """w1 adds ``bk_entry`` (default e0, LAC -1) directly to the bookie at ``address``."""
    try:
        return asyncio.run(_add(address[0], address[1], ledger_id, bk_entry, bk_lac, timeout))
    except WireError as exc:
        raise ScenarioUndecided(f"w1's add to {address[0]}:{address[1]} failed: {exc}") from exc


def _metadata(ensemble: Sequence[str]) -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, tuple(ensemble)),),
        digest_type=DigestType.CRC32,
        password=PASSWORD,
    )


def deliveries_of(group: ProxyGroup, frames: Sequence[FrameRecord]) -> dict[int, DeliveryRecord]:
    """The proxies' deliveries of ``frames`` only: the group's log holds every example's of
    the session, which a record of one example neither needs nor should grow with."""
    wanted = {frame.frame_id for frame in frames}
    return {fid: d for fid, d in group.deliveries().items() if fid in wanted}


def _settle(group: ProxyGroup, timeout: float) -> None:
    """Wait (bounded) until no proxy holds a frame, so the log shows every late answer."""
    deadline = time.monotonic() + timeout
    while any(proxy.held() for proxy in group.proxies.values()):
        if time.monotonic() > deadline:
            return  # still held at the end: logged as never delivered
        time.sleep(0.02)


#: What a recovery's proxies do: given the ledger id, a context in which they do it.
Arrangement = Callable[[int], contextlib.AbstractContextManager[object]]


class RecoverySession:
    """One cluster from the distribution, its proxies, the routing and the Java client, for
    as many recoveries as wanted (each on a ledger of its own).

    ::

        with RecoverySession(options) as session:
            record = session.recover(session.rules(defect1_schedule))
    """

    def __init__(self, options: JavaScenarioOptions) -> None:
        self.options = options
        self.version = distribution_version(options.bookkeeper_home)
        method = routing_method_for_version(self.version)
        # A pre-4.12 client connects to the ensemble's ids: the metadata names the proxies.
        self.routing_method = (
            method if method is RoutingMethod.REWRITE_SERVICE_INFO else RoutingMethod.PROXY_ENSEMBLE
        )
        self._stack = contextlib.ExitStack()
        self.bookie_ids: list[str] = []
        self.proxies: dict[str, BookieProxy] = {}
        self._group: ProxyGroup | None = None
        self._cluster: LocalCluster | None = None
        self._client: BookKeeperJavaClient | None = None

    def __enter__(self) -> RecoverySession:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    def _start(self) -> None:
        options = self.options
        cluster = self._stack.enter_context(
            LocalCluster(
                LocalClusterOptions(
                    bookies=3,
                    bookkeeper_home=options.bookkeeper_home,
                    use_bookkeeper_home_env=False,
                    work_dir=options.work_dir,
                )
            )
        )
        group = self._stack.enter_context(ProxyGroup())
        self._cluster, self._group = cluster, group
        endpoints = cluster.endpoints()
        self.bookie_ids = sorted(endpoints.bookies)[:3]
        if len(self.bookie_ids) < 3:
            raise ScenarioUndecided(f"the cluster registered {len(self.bookie_ids)} bookies, not 3")
        for index, bookie_id in enumerate(self.bookie_ids):
            name = f"b{index + 1}"
            self.proxies[name] = group.add(name, *endpoints.bookies[bookie_id])
        if self.routing_method is RoutingMethod.REWRITE_SERVICE_INFO:
            routing = route_through_proxies(
                cluster.zookeeper_client,
                endpoints.ledgers_root,
                self._by_id(),
                self.routing_method,
            )
            self._stack.enter_context(routing)
            # Routed before the client starts, so that it never caches a bookie's own address.
            routing.wait_routed(options.request_timeout)
        client_options = ClientOptions(
            endpoints.metadata_service_uri,
            speculative_read_timeout_ms=options.speculative_read_timeout_ms,
            read_entry_timeout_s=options.read_entry_timeout_s,
        )
        jvm = JvmOptions(
            log_path=options.log_dir / "jvm.log", call_timeout=options.java_call_timeout
        )
        self._client = self._stack.enter_context(
            BookKeeperJavaClient.launch(
                client_options, bookkeeper_home=options.bookkeeper_home, jvm_options=jvm
            )
        )

    def _by_id(self) -> dict[str, BookieProxy]:
        return {bookie_id: self.proxies[f"b{i + 1}"] for i, bookie_id in enumerate(self.bookie_ids)}

    @property
    def group(self) -> ProxyGroup:
        if self._group is None:
            raise ScenarioUndecided("the session is not started (use it in a with block)")
        return self._group

    def routes(self) -> dict[str, str]:
        return {
            f"b{i + 1}": f"{bookie_id} via {self.proxies[f'b{i + 1}'].address}"
            for i, bookie_id in enumerate(self.bookie_ids)
        }

    def rules(self, schedule: Sequence[ScheduledRule]) -> Arrangement:
        """An arrangement that installs ``schedule`` for the recovery, and removes it after."""

        @contextlib.contextmanager
        def arranged(_ledger_id: int) -> Iterator[object]:
            rule_ids = install(self.proxies, schedule)
            try:
                yield rule_ids
            finally:
                for rule, rule_id in zip(schedule, rule_ids, strict=True):
                    self.proxies[rule.proxy].remove_rule(rule_id)

        return arranged

    def recover(self, arrange: Arrangement, writer: WriterPlan = DEFECT_1_WRITER) -> RecoveryRecord:
        """One run on a fresh ledger: w1 does ``writer``'s adds before the recovery, the
        Java client recovers with the proxies ``arrange``d, then w1 does the adds after it."""
        assert self._cluster is not None and self._client is not None
        options = self.options
        endpoints = self._cluster.endpoints()
        store = LedgerStore(self._cluster.zookeeper_client, endpoints.ledgers_root)
        ledger_id = store.allocate_ledger_id()
        ensemble: tuple[str, ...] = (
            tuple(self.bookie_ids)
            if self.routing_method is RoutingMethod.REWRITE_SERVICE_INFO
            else proxied_ensemble(self.bookie_ids, self._by_id())
        )
        store.create(ledger_id, _metadata(ensemble))
        timeout = options.request_timeout

        def add(bookie: str, bk_entry: int, bk_lac: int) -> StatusCode:
            address = endpoints.bookies[self.bookie_ids[BOOKIES.index(bookie)]]
            return writer_add(address, ledger_id, timeout, bk_entry, bk_lac)

        for bk_entry in range(writer.acked):
            for bookie in BOOKIES:
                status = add(bookie, bk_entry, bk_entry - 1)
                if status is not StatusCode.EOK:
                    raise ScenarioUndecided(
                        f"w1's add of e{bk_entry} to {bookie}, before any recovery, got "
                        f"{status.name}"
                    )
        # Every unconfirmed entry carries the LAC of the acked ones, as the model's w1 sends
        # them all before any answer comes.
        lac = writer.acked - 1
        answers = {(a.entry, a.bookie): add(a.bookie, a.entry, lac) for a in writer.before()}
        mark = self.group.mark()
        java_error: str | None = None
        with arrange(ledger_id):
            try:
                self._client.open_ledger(ledger_id, JavaDigestType.CRC32, PASSWORD, recovery=True)
            except BKError as exc:
                java_error = f"{type(exc).__name__}: {exc}"
            recovered_at = time.monotonic()
            _settle(self.group, _SETTLE_S)
        metadata, _version = store.read(ledger_id)
        closed = metadata.last_entry_id if metadata.state is LedgerState.CLOSED else None
        answers.update({(a.entry, a.bookie): add(a.bookie, a.entry, lac) for a in writer.after()})
        frames = self.group.frames(since=mark)
        return RecoveryRecord(
            ledger_id=ledger_id,
            bookie_of_proxy={name: index for index, name in enumerate(self.proxies)},
            frames=frames,
            deliveries=deliveries_of(self.group, frames),
            writer=writer,
            writer_answers=answers,
            closed_last_entry=closed,
            java_error=java_error,
            recovered_at=recovered_at,
        )


_INFRASTRUCTURE_ERRORS = (ClusterError, NetProxyError, MetadataError, JavaClientError)


def run_recovery(options: JavaScenarioOptions) -> JavaScenarioRun:
    """Carry out the scenario once; :class:`ScenarioUndecided` when the run itself fails."""
    try:
        with RecoverySession(options) as session:
            record = session.recover(_scheduled(session, options))
            schedule = tuple(
                options.schedule(record.ledger_id, options.speculative_read_timeout_ms)
            )
            return JavaScenarioRun(
                record,
                session.version,
                session.routing_method,
                schedule,
                list(session.bookie_ids),
                session.routes(),
            )
    except _INFRASTRUCTURE_ERRORS as exc:
        raise ScenarioUndecided(f"{type(exc).__name__}: {exc}") from exc


def _scheduled(session: RecoverySession, options: JavaScenarioOptions) -> Arrangement:
    def arrange(ledger_id: int) -> contextlib.AbstractContextManager[object]:
        schedule = options.schedule(ledger_id, options.speculative_read_timeout_ms)
        return session.rules(schedule)(ledger_id)

    return arrange


__all__ = [
    "FIRST_FENCING_RELEASE",
    "NAME",
    "Arrangement",
    "JavaScenarioOptions",
    "JavaScenarioRun",
    "RecoverySession",
    "ScenarioUndecided",
    "deliveries_of",
    "expected_verdict",
    "run_recovery",
    "writer_add",
]
