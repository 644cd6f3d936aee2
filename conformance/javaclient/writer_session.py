"""Writer runs of the real Java client: a cluster of E + 1 bookies of one release, a frame
proxy per bookie, and the release's own client as the spec's writer.

::

    with WriterSession(WriterSessionOptions(home, log_dir, WriterShape(3, 2, 2))) as session:
        run = run_writer_plan(session, plan)        # a fresh ledger per example
        run.judgement.outcome.verdict

One example (:meth:`WriterSession.write`): the client creates a ledger of the shape (only
ZooKeeper is involved), the metadata names its first ensemble, which names the bookies of
this run (b1..bE by position, the spare b{E+1}); then, with the proxies holding every request
of the ledger for the :class:`~.search.ScheduleController`, the client sends its adds
pipelined (``asyncAddEntry``, callbacks timestamped in the JVM), waits for every callback
(bounded), and closes the ledger. Each add's timeout is 1 s (``addEntryTimeout``), so a
dropped add makes the client change its ensemble about a second later. Then the metadata is
read back from ZooKeeper and every entry is read from every bookie directly (not through the
proxies): a :class:`~.writer_story.WriterRecord`.

Releases before 4.12 have no bookie-address resolver, so their clients connect to the ids
the metadata names and cannot be routed through the proxies without the harness writing the
metadata itself, which a writer run must not do: they are refused (:class:`WriterRefused`).
Every process, proxy, routing change and the JVM stop on every exit path.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.bookkeeper.client import BookieClient
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
from adapters.javaclient.pipelined_adds import PipelinedAdds, recorder_classes
from adapters.netproxy import BookieProxy, NetProxyError, ProxyGroup
from adapters.netproxy.routing import (
    RoutingMethod,
    route_through_proxies,
    routing_method_for_version,
)
from adapters.zookeeper.errors import MetadataError
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import LedgerState
from conformance.errors import ConformanceError
from conformance.javaclient.scenario import ScenarioUndecided, deliveries_of
from conformance.javaclient.search import ScheduleController, unapplied_reason
from conformance.javaclient.writer_plans import FIRST_WRITER_RELEASE, WriterRunPlan, WriterShape
from conformance.javaclient.writer_story import WriterJudgement, WriterRecord, judge
from conformance.targets.cluster_target import PASSWORD

#: The first release whose client resolves bookie ids through their registrations (so the
#: proxies can stand in for the bookies without touching the ledger's metadata).
FIRST_ROUTABLE_WRITER = BookKeeperVersion.parse(FIRST_WRITER_RELEASE)
_SETTLE_S = 2.0
#: A held add is released at this fraction of the client's add timeout at the latest.
HOLD_FRACTION = 0.5
_INFRASTRUCTURE_ERRORS = (ClusterError, NetProxyError, MetadataError, JavaClientError, WireError)


#: What a writer example's proxies do: given the ledger id and ``proxy -> bookie name``, a
#: context in which they do it.
ArrangeWriter = Callable[[int, Mapping[str, str]], contextlib.AbstractContextManager[object]]


class WriterRefused(ConformanceError, ValueError):
    """A writer run this release or shape cannot have (the message says why)."""


@dataclass(frozen=True)
class WriterSessionOptions:
    bookkeeper_home: Path
    log_dir: Path
    shape: WriterShape
    #: ``addEntryTimeout``: how soon a dropped add makes the client change its ensemble.
    add_entry_timeout_s: int = 1
    java_call_timeout: float = 60.0
    request_timeout: float = 10.0
    #: How long the client may take to call back every add (an ensemble change, then resends).
    callbacks_timeout: float = 20.0
    work_dir: Path | None = None


class WriterSession:
    """One cluster, its proxies, the routing and the Java client, for many writer examples."""

    def __init__(self, options: WriterSessionOptions) -> None:
        self.options = options
        self.version = distribution_version(options.bookkeeper_home)
        if routing_method_for_version(self.version) is not RoutingMethod.REWRITE_SERVICE_INFO:
            raise WriterRefused(
                f"BookKeeper {self.version}: writer runs need a client that resolves bookie "
                f"ids (BookKeeper >= {FIRST_ROUTABLE_WRITER}), so that its adds go through "
                "the proxies; older clients can be searched as the recovering reader "
                "(--role recovery)"
            )
        self._stack = contextlib.ExitStack()
        self.bookie_ids: list[str] = []
        self.proxies: dict[str, BookieProxy] = {}
        self._group: ProxyGroup | None = None
        self._cluster: LocalCluster | None = None
        self._client: BookKeeperJavaClient | None = None

    def __enter__(self) -> WriterSession:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stack.close()

    @property
    def group(self) -> ProxyGroup:
        if self._group is None:
            raise ScenarioUndecided("the session is not started (use it in a with block)")
        return self._group

    def _start(self) -> None:
        options = self.options
        bookies = options.shape.bookies
        classes = recorder_classes(options.bookkeeper_home)
        cluster = self._stack.enter_context(
            LocalCluster(
                LocalClusterOptions(
                    bookies=bookies,
                    bookkeeper_home=options.bookkeeper_home,
                    use_bookkeeper_home_env=False,
                    work_dir=options.work_dir,
                )
            )
        )
        group = self._stack.enter_context(ProxyGroup())
        self._cluster, self._group = cluster, group
        endpoints = cluster.endpoints()
        self.bookie_ids = sorted(endpoints.bookies)[:bookies]
        if len(self.bookie_ids) < bookies:
            raise ScenarioUndecided(
                f"the cluster registered {len(self.bookie_ids)} bookies, not {bookies}"
            )
        for index, bookie_id in enumerate(self.bookie_ids):
            self.proxies[f"p{index + 1}"] = group.add(
                f"p{index + 1}", *endpoints.bookies[bookie_id]
            )
        routing = route_through_proxies(
            cluster.zookeeper_client,
            endpoints.ledgers_root,
            {bookie_id: self.proxies[f"p{i + 1}"] for i, bookie_id in enumerate(self.bookie_ids)},
            RoutingMethod.REWRITE_SERVICE_INFO,
        )
        self._stack.enter_context(routing)
        routing.wait_routed(options.request_timeout)
        client_options = ClientOptions(
            endpoints.metadata_service_uri, add_entry_timeout_s=options.add_entry_timeout_s
        )
        jvm = JvmOptions(
            log_path=options.log_dir / "jvm.log", call_timeout=options.java_call_timeout
        )
        self._client = self._stack.enter_context(
            BookKeeperJavaClient.launch(
                client_options,
                bookkeeper_home=options.bookkeeper_home,
                jars=[classes],
                jvm_options=jvm,
            )
        )

    def routes(self) -> dict[str, str]:
        return {
            name: f"{bookie_id} via {self.proxies[name].address}"
            for name, bookie_id in zip(self.proxies, self.bookie_ids, strict=True)
        }

    def write(
        self, entries: int, arrange: ArrangeWriter, *, delayed: int = 0, delay_s: float = 0.0
    ) -> WriterRecord:
        """One example on a fresh ledger (see the module docstring); the last ``delayed``
        entries are added ``delay_s`` after the others."""
        assert self._cluster is not None and self._client is not None
        options, shape = self.options, self.options.shape
        endpoints = self._cluster.endpoints()
        store = LedgerStore(self._cluster.zookeeper_client, endpoints.ledgers_root)
        ledger = self._client.create_ledger(
            shape.ensemble, shape.write_quorum, shape.ack_quorum, JavaDigestType.CRC32, PASSWORD
        )
        metadata, _version = store.read(ledger.ledger_id)
        first = metadata.segments[0].bookies
        index_of_id = {bookie_id: i for i, bookie_id in enumerate(first)}
        spare = iter(range(len(first), shape.bookies))
        model_index = {
            bookie_id: index_of_id[bookie_id] if bookie_id in index_of_id else next(spare)
            for bookie_id in self.bookie_ids
        }
        bookie_of_proxy = {
            name: model_index[bookie_id]
            for name, bookie_id in zip(self.proxies, self.bookie_ids, strict=True)
        }
        names = {proxy: f"b{index + 1}" for proxy, index in bookie_of_proxy.items()}
        mark = self.group.mark()
        adds = PipelinedAdds(ledger, entries)
        closed_at: float | None = None
        close_error: str | None = None
        with arrange(ledger.ledger_id, names):
            for index in range(entries):
                if index == entries - delayed and delay_s > 0:
                    time.sleep(delay_s)
                adds.add(index, _payload(ledger.ledger_id, index))
            adds.wait(options.callbacks_timeout)
            try:
                ledger.close()
                closed_at = time.monotonic()
            except BKError as exc:
                close_error = f"{type(exc).__name__}: {exc}"
            _settle(self.group, _SETTLE_S)
        outcomes = adds.outcomes()
        metadata, _version = store.read(ledger.ledger_id)
        segments = [
            (segment.first_entry_id, tuple(model_index[b] for b in segment.bookies))
            for segment in metadata.segments
        ]
        closed = metadata.last_entry_id if metadata.state is LedgerState.CLOSED else None
        addresses = {model_index[b]: endpoints.bookies[b] for b in self.bookie_ids}
        stored = _stored_entries(ledger.ledger_id, entries, addresses, options.request_timeout)
        frames = self.group.frames(since=mark)
        return WriterRecord(
            ledger_id=ledger.ledger_id,
            shape=shape,
            entries=entries,
            bookie_of_proxy=bookie_of_proxy,
            frames=frames,
            deliveries=deliveries_of(self.group, frames),
            outcomes=outcomes,
            segments=segments,
            closed_last_entry=closed,
            closed_at=closed_at,
            close_error=close_error,
            stored=stored,
        )


def _payload(ledger_id: int, index: int) -> bytes:
    return f"bkconform writer ledger {ledger_id} add {index}".encode()


def _settle(group: ProxyGroup, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while any(proxy.held() for proxy in group.proxies.values()):
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)


async def _read_all(
    ledger_id: int, entries: int, addresses: Mapping[int, tuple[str, int]], timeout: float
) -> dict[int, tuple[int, ...]]:
    stored: dict[int, list[int]] = {entry: [] for entry in range(entries)}
    for bookie, (host, port) in sorted(addresses.items()):
        client = await BookieClient.connect(host, port, request_timeout=timeout)
        try:
            for entry in range(entries):
                answer = await client.read(ledger_id, entry)
                if answer.status is StatusCode.EOK and answer.body is not None:
                    stored[entry].append(bookie)
        finally:
            await client.close()
    return {entry: tuple(bookies) for entry, bookies in stored.items()}


def _stored_entries(
    ledger_id: int, entries: int, addresses: Mapping[int, tuple[str, int]], timeout: float
) -> dict[int, tuple[int, ...]]:
    """Entry -> the model bookies that return it, read from each bookie directly."""
    try:
        return asyncio.run(_read_all(ledger_id, entries, addresses, timeout))
    except WireError as exc:
        raise ScenarioUndecided(f"reading the entries back failed: {exc}") from exc


@dataclass
class WriterExample:
    """One writer plan run on a session and judged (``judgement`` None: not judged)."""

    plan: WriterRunPlan
    record: WriterRecord
    judgement: WriterJudgement | None
    decisions: list[tuple[str, str]]
    seconds: float
    unapplied: str | None = None

    @property
    def verdict(self) -> str:
        if self.unapplied is not None or self.judgement is None:
            return "undecided"
        return self.judgement.outcome.verdict


def run_writer_plan(
    session: WriterSession, plan: WriterRunPlan, *, max_hold_s: float | None = None
) -> WriterExample:
    """Carry out ``plan`` once on ``session`` (a fresh ledger) and judge what happened.

    A held add is released after ``k`` other frames or at ``max_hold_s``, by default half
    the client's add timeout: a hold delays and reorders, it never makes the client time the
    add out. (An add the client timed out that still reaches its bookie later is outside the
    spec, where a message is delivered or lost; see docs/javaclient-search.md.)"""
    if max_hold_s is None:
        max_hold_s = session.options.add_entry_timeout_s * HOLD_FRACTION
    if plan.shape != session.options.shape:
        raise WriterRefused(
            f"the plan is for {plan.shape.describe()}; the session runs "
            f"{session.options.shape.describe()}"
        )
    controllers: list[ScheduleController] = []

    @contextlib.contextmanager
    def arranged(ledger_id: int, names: Mapping[str, str]) -> Iterator[object]:
        with ScheduleController(
            session.group,
            session.proxies,
            ledger_id,
            plan.schedule,
            max_hold_s=max_hold_s,
            names=names,
        ) as controller:
            controllers.append(controller)
            yield controller

    started = time.monotonic()
    try:
        record = session.write(
            plan.entries, arranged, delayed=plan.delayed, delay_s=plan.delay_ms / 1000
        )
    except _INFRASTRUCTURE_ERRORS as exc:
        raise ScenarioUndecided(f"{type(exc).__name__}: {exc}") from exc
    unapplied = unapplied_reason(controllers)
    judgement = None if unapplied is not None else judge(record)
    decisions = controllers[0].decisions if controllers else []
    return WriterExample(
        plan, record, judgement, decisions, time.monotonic() - started, unapplied=unapplied
    )


__all__ = [
    "FIRST_ROUTABLE_WRITER",
    "ArrangeWriter",
    "WriterExample",
    "WriterRefused",
    "WriterSession",
    "WriterSessionOptions",
    "run_writer_plan",
]
