"""Targets that are real clusters, driven frame by frame: what ``local``, ``external`` (and
``docker``) share; they differ only in how the cluster is reached or started.

A request the model sends sits in our client's outbox; when the model's bookie-side action for
it fires, the engine's ``Deliver`` operation sends that frame to the real bookie and awaits the
real answer. A request
the model loses is never sent; an answer the model loses is discarded by the engine. Each model
client has its own connection to each bookie. Metadata steps are compare-and-set writes on the
real ledger znode, with the model client's version. Each example gets a ledger of its own, with
an id from the cluster's own id generator, so runs share a cluster without touching each other.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeVar

from adapters.bookkeeper.client import BookieClient, V2BookieClient
from adapters.bookkeeper.entry import DigestType as WireDigestType
from adapters.bookkeeper.entry import master_key, package_entry
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.status import StatusCode
from adapters.cluster import Node
from adapters.cluster.errors import ClusterError
from adapters.cluster.gates import GateClient, GateError
from adapters.cluster.provider import ClusterProvider, DataLoss, Fault, NodeKind
from adapters.installations.system import BookieChoice, choose_bookies
from adapters.zookeeper.errors import (
    MetadataError,
    MetadataVersionMismatch,
    NoSuchLedger,
    ZooKeeperError,
)
from adapters.zookeeper.idgen import LedgerIdsAhead
from adapters.zookeeper.ledger_store import ANY_VERSION, LedgerStore
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, LedgerState
from conformance import translation
from conformance.gated_races import GateSchedule
from conformance.observations import Observation
from conformance.operations import (
    Crash,
    CreateLedger,
    Deliver,
    FreshLedger,
    Operation,
    Request,
    WriteMetadata,
)
from conformance.races import Timed
from conformance.targets.base import (
    MetadataChangedOutside,
    MetadataSeen,
    TargetError,
    TargetSnapshot,
    UnsupportedConfiguration,
)
from conformance.targets.bookie_settings import bookie_settings_for
from conformance.targets.gated_race import run_gated_race
from model.bookkeeper.action_table import Phase, the_action
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import AddEntryRequest, FenceRequest

PASSWORD = b"bkconform"
KEY = master_key(PASSWORD)
DIGEST = WireDigestType.CRC32
T = TypeVar("T")
__all__ = ["ClusterTarget", "bookie_settings_for", "resolve_bookies"]
#: ClientCreatesLedger: the action a CreateLedger operation carries out (named in errors).
_CREATES_LEDGER = the_action(phase=Phase.CREATE)


def resolve_bookies(chosen: BookieChoice | None) -> BookieChoice:
    """The bookies a cluster target was given, or the default choice: real BookKeeper of the
    default version (installed from Maven Central on first use)."""
    if chosen is not None:
        return chosen
    try:
        return choose_bookies(progress=True)
    except ClusterError as exc:
        raise TargetError(f"no BookKeeper to run: {exc}", retriable=False) from exc


#: In configurations with crashes, finished examples' ledgers are deleted this many at a time.
PRUNE_BATCH = 16


class ClusterTarget(abc.ABC):
    """A cluster target; subclasses say how the cluster is started or reached.

    In configurations with crashes, the ledgers of finished examples are deleted (as
    BookKeeper deletes a ledger: its metadata) :data:`PRUNE_BATCH` at a time, when an example
    begins. Why: a bookie that restarts with data integrity checking reads the metadata of
    every ledger in the store and marks those it is in as in limbo; with every example's
    ledger kept, each crash read and marked more of them the longer a search ran (85 after
    30 s of a limbo search; thousands in a nightly one). The model has one ledger; so now has
    the store, give or take a batch. Only the suite's own clusters prune (:attr:`prunes_ledgers`).
    """

    name = "cluster"
    #: Whether finished examples' ledgers are deleted during a search with crashes (false
    #: where the ledgers' fate is the operator's: the external target).
    prunes_ledgers = True
    #: Whether races can be run by a gate schedule (the bookies' JVMs load the gate agent:
    #: :func:`~conformance.targets.base.supports_gates`); set by the targets that start them so.
    gates = False

    def __init__(self, *, request_timeout: float = 10.0) -> None:
        self.request_timeout = request_timeout
        self.cluster: ClusterProvider | None = None
        self.store: LedgerStore | None = None
        self.ledger_id = -1
        self.bookie_ids: list[str] = []
        self._loop = asyncio.new_event_loop()
        #: (model client, bookie, lane) -> its connection: lane 0 carries the client's
        #: steps; a race sends its i-th request on lane i + 1, a connection of its own.
        self._connections: dict[tuple[int, int, int], BookieClient] = {}
        #: bookie -> the observer's v2 connection that reads the final state (kept across
        #: examples: a connection per snapshot cost more than the snapshot's reads).
        self._observers: dict[int, V2BookieClient] = {}
        #: (ledger, metadata, znode version) as this target last wrote them: a compare-and-set
        #: from that version needs no read first (``_compare_and_set`` says why that is exact).
        self._written: tuple[int, LedgerMetadata, int] | None = None
        #: The examples' ledger ids, each allocated while the last example's state is read.
        self._ids: LedgerIdsAhead | None = None
        self._cfg: ModelConfig | None = None
        #: Ledgers of finished examples not deleted yet (see the class docstring).
        self._finished: list[int] = []
        #: bookie -> its gate agent's client (gated races), driven from one thread of its own.
        self._gate_clients: dict[int, GateClient] = {}
        self._gate_thread: concurrent.futures.ThreadPoolExecutor | None = None

    # Lifecycle -------------------------------------------------------------------------------

    @abc.abstractmethod
    def _start_cluster(self, cfg: ModelConfig) -> ClusterProvider:
        """Start or reach the cluster for ``cfg`` (raise UnsupportedConfiguration early)."""

    @abc.abstractmethod
    def _zookeeper_client(self) -> Any:
        """The cluster's connected kazoo client."""

    def open(self, cfg: ModelConfig) -> None:
        self._cfg = cfg
        try:
            self.cluster = self._start_cluster(cfg)
            if cfg.max_crashes and not self.cluster.capabilities().supports(
                NodeKind.BOOKIE, Fault.RESTART_WITH_DATA_LOSS
            ):
                raise UnsupportedConfiguration(
                    f"the {self.name} target cannot crash bookies with data loss "
                    "(run without crash faults, or give it a fault agent)"
                )
            self.bookie_ids = self._choose_bookies(sorted(self.cluster.endpoints().bookies), cfg)
            self.store = LedgerStore(
                self._zookeeper_client(), self.cluster.endpoints().ledgers_root
            )
            self.ledger_id = self.store.allocate_ledger_id()
        except (ClusterError, MetadataError) as exc:
            self.close()
            raise TargetError(
                f"could not reach the {self.name} cluster: {exc}", retriable=exc.retriable
            ) from exc
        except TargetError:
            self.close()
            raise

    def _choose_bookies(self, registered: list[str], cfg: ModelConfig) -> list[str]:
        """The model's bookies b1..bn, from the registered ones."""
        if len(registered) < cfg.bookies:
            raise UnsupportedConfiguration(
                f"the model needs {cfg.bookies} bookies; the cluster has {len(registered)} "
                "registered"
            )
        return registered[: cfg.bookies]

    def invoke(self, op: Operation) -> Observation:
        if isinstance(op, FreshLedger):
            return self._fresh_ledger()
        if isinstance(op, Deliver):
            return self._run(self._deliver(op.request))
        if isinstance(op, CreateLedger):
            return self._write_metadata(_CREATES_LEDGER, lambda: self._create(op))
        if isinstance(op, WriteMetadata):
            return self._write_metadata(op.action, lambda: self._compare_and_set(op))
        if isinstance(op, Crash):
            return self._crash(op.bookie)
        raise TypeError(f"not an operation: {op!r}")

    def _fresh_ledger(self) -> Observation:
        assert self.store is not None, "open() first"
        self._prune_ledgers()
        if self._ids is None:
            self._ids = self.store.ids_ahead()
        try:
            self.ledger_id = self._ids.next()
        except MetadataError as exc:
            raise TargetError(
                f"could not allocate a ledger id: {exc}", retriable=exc.retriable
            ) from exc
        return Observation("ledger", "OK", success=True, ledger=self.ledger_id)

    def _prune_ledgers(self) -> None:
        """The example before is finished: its ledger joins those to delete, and a full
        batch is deleted (crash configurations only; see the class docstring)."""
        assert self.store is not None and self._cfg is not None
        if not (self.prunes_ledgers and self._cfg.max_crashes) or self.ledger_id < 0:
            return
        if self.ledger_id not in self._finished[-1:]:  # not again after a failed delete
            self._finished.append(self.ledger_id)
        if len(self._finished) < PRUNE_BATCH:
            return
        try:
            # Any version: nothing else writes these ledgers, and a missing one (an example
            # that ended before its create) is no error, as in BookKeeper's delete.
            self.store.remove_many(dict.fromkeys(self._finished, ANY_VERSION))
        except (MetadataError, ZooKeeperError) as exc:
            raise TargetError(
                f"could not delete the ledgers of finished examples: {exc}", retriable=True
            ) from exc
        self._finished.clear()

    def close(self) -> None:
        self._finished.clear()
        for bookie in list(self._gate_clients):
            self._drop_gate_client(bookie)
        if self._gate_thread is not None:
            self._gate_thread.shutdown(wait=True)
            self._gate_thread = None
        for client in self._connections.values():
            self._run_quietly(client.close())
        self._connections.clear()
        for observer in self._observers.values():
            self._run_quietly(observer.close())
        self._observers.clear()
        if self._ids is not None:
            self._ids.close()
            self._ids = None
        if self.cluster is not None:
            self.cluster.stop()
            self.cluster = None
        if not self._loop.is_closed():
            self._loop.close()

    def describe(self) -> dict[str, str]:
        return {
            "target": self.name,
            "bookie_ids": ",".join(self.bookie_ids),
            "ledger_id": str(self.ledger_id),
        }

    # Bookie steps ----------------------------------------------------------------------------

    def invoke_concurrently(
        self,
        ops: Sequence[Deliver | Crash],
        offsets_s: Sequence[float],
        gates: GateSchedule | None = None,
    ) -> list[Timed]:
        """Race ``ops`` (:class:`~conformance.targets.base.ConcurrentTarget`): every
        connection is opened first, so that no request waits for a handshake, then each
        request goes out ``offsets_s[i]`` after the race's start on its own connection; a
        ``Crash`` restarts its bookie on a worker thread meanwhile (the event loop goes on
        serving the other requests), and a request to that bookie whose connection closed
        under it has no answer."""
        if gates is not None:
            return self._run(self._gated_race(ops, gates))
        restarting = {op.bookie for op in ops if isinstance(op, Crash)}
        try:
            return self._run(self._race(ops, offsets_s, restarting))
        finally:
            for bookie in restarting:
                # The restart closed them (a new bookie process or instance listens now).
                self._drop_connections(bookie)

    async def _race(
        self, ops: Sequence[Deliver | Crash], offsets_s: Sequence[float], restarting: set[int]
    ) -> list[Timed]:
        for lane, op in enumerate(ops, start=1):
            if isinstance(op, Deliver):
                await self._connection(op.request.cid, op.request.bookie, lane)
        start = time.monotonic()

        async def one(lane: int, op: Deliver | Crash, offset: float) -> Timed:
            if offset > 0:
                await asyncio.sleep(max(0.0, start + offset - time.monotonic()))
            invoked = time.monotonic()
            if isinstance(op, Crash):
                loop = asyncio.get_running_loop()
                observed = await loop.run_in_executor(None, self._restart_empty, op.bookie)
                return Timed(observed, invoked, time.monotonic())
            try:
                answer: Observation | None = await self._deliver(op.request, lane)
            except TargetError:
                if op.request.bookie not in restarting:
                    raise
                answer = None  # the connection closed under the restart: no answer
            return Timed(answer, invoked, time.monotonic())

        # Every request runs to its answer or its timeout before the race ends: none is left
        # in flight behind the engine's next step.
        sends = [one(lane, op, offsets_s[lane - 1]) for lane, op in enumerate(ops, start=1)]
        results = await asyncio.gather(*sends, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, Timed)]

    async def _gated_race(
        self, ops: Sequence[Deliver | Crash], schedule: GateSchedule
    ) -> list[Timed]:
        """Two requests to one bookie by ``schedule`` (:mod:`.gated_race`), each on a
        connection of its own; a gate that did not hold or release as asked is a harness
        error (not retriable: the schedule did not run)."""
        requests = [op.request for op in ops if isinstance(op, Deliver)]
        if len(requests) != 2 or requests[0].bookie != requests[1].bookie:
            raise ValueError("a gated race is two requests to one bookie")
        bookie = requests[0].bookie
        for lane, request in enumerate(requests, start=1):
            await self._connection(request.cid, request.bookie, lane)
        gates = self._gate_client(bookie)
        if self._gate_thread is None:
            self._gate_thread = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="gates"
            )

        async def send(i: int) -> Observation | None:
            return await self._deliver(requests[i], i + 1)

        try:
            return await run_gated_race(schedule, self.ledger_id, gates, send, self._gate_thread)
        except GateError as exc:
            self._drop_gate_client(bookie)
            raise TargetError(
                f"bookie {self.bookie_ids[bookie]}'s gates did not run the schedule "
                f"({schedule.describe()}): {exc}",
                retriable=False,
            ) from exc

    def _gate_client(self, bookie: int) -> GateClient:
        """The bookie's connected gate client (connected on first use, and again after a
        restart of its process)."""
        if bookie not in self._gate_clients:
            address = getattr(self.cluster, "gate_address", None)
            if address is None:
                raise TargetError(f"the {self.name} target's bookies have no gates")
            try:
                host, port = address(self.bookie_ids[bookie])
                self._gate_clients[bookie] = GateClient.connect(host, port)
            except (ClusterError, OSError) as exc:
                raise TargetError(
                    f"cannot reach bookie {self.bookie_ids[bookie]}'s gate agent: {exc}",
                    retriable=False,
                ) from exc
        return self._gate_clients[bookie]

    def _drop_gate_client(self, bookie: int) -> None:
        client = self._gate_clients.pop(bookie, None)
        if client is not None:
            client.close()  # the agent releases whatever it still holds

    async def _deliver(self, request: Request, lane: int = 0) -> Observation:
        client = await self._connection(request.cid, request.bookie, lane)
        ledger = self.ledger_id
        try:
            if isinstance(request, AddEntryRequest):
                entry_id = translation.bk_entry_id(request.entry.id)
                body = package_entry(
                    DIGEST,
                    PASSWORD,
                    ledger,
                    entry_id,
                    translation.bk_lac(request.lac),
                    translation.ledger_length(request.entry.id),
                    translation.payload(request.entry.data),
                )
                added = await client.add(ledger, entry_id, KEY, body, recovery=request.recovery)
                return translation.add_observation(added.status)
            if isinstance(request, FenceRequest):
                answer = await client.read(ledger, -1, fence=True, master_key=KEY)
                return translation.fence_observation(answer.status, answer.body, DIGEST)
            answer = await client.read(
                ledger,
                translation.bk_entry_id(request.entry_id),
                fence=request.fence,
                master_key=KEY if request.fence else None,
            )
            return translation.read_observation(answer.status, answer.body, DIGEST, PASSWORD)
        except WireError as exc:
            raise TargetError(
                f"bookie {self.bookie_ids[request.bookie]}: {exc}", retriable=exc.retriable
            ) from exc

    async def _connection(self, cid: int, bookie: int, lane: int = 0) -> BookieClient:
        key = (cid, bookie, lane)
        if key not in self._connections:
            assert self.cluster is not None
            host, port = self.cluster.endpoints().bookies[self.bookie_ids[bookie]]
            try:
                self._connections[key] = await BookieClient.connect(
                    host, port, request_timeout=self.request_timeout
                )
            except (WireError, OSError) as exc:
                raise TargetError(
                    f"cannot connect to bookie {self.bookie_ids[bookie]}: {exc}", retriable=True
                ) from exc
        return self._connections[key]

    def _crash(self, bookie: int) -> Observation:
        self._drop_connections(bookie)
        return self._restart_empty(bookie)

    def _drop_connections(self, bookie: int) -> None:
        """Close every connection to ``bookie``: the clients', the observer's and its gate
        agent's (a new process listens after a restart)."""
        self._drop_gate_client(bookie)
        for key in [k for k in self._connections if k[1] == bookie]:
            self._run_quietly(self._connections.pop(key).close())
        observer = self._observers.pop(bookie, None)
        if observer is not None:
            self._run_quietly(observer.close())

    def _restart_empty(self, bookie: int) -> Observation:
        """The bookie restarts without its data (blocking; a race runs it on a worker thread,
        and its connections are closed afterwards)."""
        assert self.cluster is not None
        try:
            self.cluster.restart_with_data_loss(Node.bookie(self.bookie_ids[bookie]), DataLoss.WIPE)
        except ClusterError as exc:
            raise TargetError(
                f"crash of bookie {self.bookie_ids[bookie]} failed: {exc}", retriable=exc.retriable
            ) from exc
        return Observation("crash", "restarted")

    # Metadata steps --------------------------------------------------------------------------

    def _write_metadata(self, action: str, write: Callable[[], None]) -> Observation:
        """Run a metadata write and say how it ended, in the engine's terms."""
        try:
            write()
        except ZooKeeperError as exc:
            # No answer (timeout, connection or session lost): the write may or may not have
            # happened, and the model cannot be compared with it. Never a match, never a
            # divergence: the run cannot decide.
            raise TargetError(f"{action}: ZooKeeper did not answer: {exc}", retriable=True) from exc
        except MetadataVersionMismatch:
            return Observation("metadata", "MetadataVersionMismatch", success=False)
        except MetadataError as exc:
            # ZooKeeper answered, but not as the model's only failure (a lost compare-and-set):
            # the status says which, and differs from any prediction.
            return Observation("metadata", type(exc).__name__, success=False)
        return Observation("metadata", "OK", success=True)

    def _create(self, op: CreateLedger) -> None:
        assert self.store is not None and self._cfg is not None
        cfg = self._cfg
        created = LedgerMetadata(
            ensemble_size=cfg.effective_ensemble_size,
            write_quorum_size=cfg.write_quorum,
            ack_quorum_size=cfg.ack_quorum,
            segments=translation.segments_of(op.metadata.fragments, self.bookie_ids),
            digest_type=DigestType.CRC32,
            password=PASSWORD,
            custom_metadata=self._custom_metadata(),
        )
        version = self.store.create(self.ledger_id, created)
        self._written = (self.ledger_id, created, version)

    def _custom_metadata(self) -> tuple[tuple[str, bytes], ...]:
        """The custom metadata of every ledger the target creates (the external target's
        mark on its ledgers: ``adapters/zookeeper/ledger_marks.py``); none by default."""
        return ()

    def _compare_and_set(self, op: WriteMetadata) -> None:
        """Write the spec's metadata over the ledger's, if the znode is at the client's
        version. Only the model's clients may have written the znode: it is read first, unless
        this target wrote it last at the model's version, and read again whenever the write
        fails. A writer outside the model raises the znode's version past the model's, so the
        write cannot succeed, and the read after the failure tells that writer from the model's
        own version mismatch, also when it wrote between the first read and the write (on
        4.18.0 the restarted bookie's own recovery starts as it registers, and its mark or
        close fell in that gap in ``make run``)."""
        assert self.store is not None
        known = translation.znode_version(op.known_version)
        last = self._written
        trusted = last is not None and last[0] == self.ledger_id and last[2] == known
        current = last[1] if last is not None and trusted else self._read_metadata(op.known_version)
        view = op.metadata
        written = translation.with_spec_metadata(
            current, view.status, view.fragments, view.last_entry, self.bookie_ids
        )
        try:
            version = self.store.write(
                self.ledger_id, written, translation.znode_version(op.expected_version)
            )
        except MetadataVersionMismatch:
            self._read_metadata(op.known_version)  # raises if a writer outside the model
            raise
        self._written = (self.ledger_id, written, version)

    def _read_metadata(self, known_version: int) -> LedgerMetadata:
        """The ledger's metadata, as only the model's clients have written it.

        The model's metadata version counts every write of its clients, so the znode must be
        at the same version (translated). Anything else means a writer outside the model
        changed the ledger: on real bookies with limbo, the bookie's own data-integrity service
        recovers and closes a limbo ledger a moment after it restarts. Whatever the step then
        observes is not the model's story: the run cannot decide.
        """
        assert self.store is not None
        metadata, version = self.store.read(self.ledger_id)
        if version != translation.znode_version(known_version):
            seen = MetadataSeen(
                metadata.state.name,
                translation.model_version(version),
                tuple(
                    (first, tuple(bookies))
                    for first, bookies in translation.fragments_of(
                        metadata.segments, self.bookie_ids
                    )
                ),
                translation.spec_entry_id(metadata.last_entry_id)
                if metadata.state is LedgerState.CLOSED
                else None,
            )
            raise MetadataChangedOutside(
                f"the ledger's metadata was changed outside the model: znode version {version}, "
                f"the model's clients wrote up to {translation.znode_version(known_version)} "
                f"(state now {metadata.state.name}). On real bookies with limbo, the restarted "
                "bookie's data-integrity service recovers limbo ledgers by itself",
                seen,
            )
        return metadata

    # Final state -----------------------------------------------------------------------------

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        return self._run(self._snapshot(cfg))

    async def _snapshot(self, cfg: ModelConfig) -> TargetSnapshot:
        """The bookies' entries and the ledger's metadata, read at once: each bookie's reads
        pipelined on its observer connection, the bookies side by side, the metadata read on a
        worker thread meanwhile (kazoo blocks); then the next example's ledger id is asked for."""
        assert self.store is not None
        store = self.store
        metadata_read = asyncio.get_running_loop().run_in_executor(None, store.read, self.ledger_id)
        held = await asyncio.gather(
            *(self._entries_held(bookie, cfg.send_limit) for bookie in range(cfg.bookies)),
            return_exceptions=True,
        )
        try:
            metadata, _ = await metadata_read
        except NoSuchLedger:
            metadata = None  # never created: nothing in ZooKeeper
        except MetadataError as exc:
            # An outage, or a znode that does not parse, is not "never created".
            raise TargetError(
                f"could not read the ledger's metadata: {exc}", retriable=exc.retriable
            ) from exc
        if self._ids is not None:
            # The next example's ledger id, while the search judges this one and draws the
            # next (not before the metadata read: a session's read waits for its writes).
            self._ids.allocate_ahead()
        snapshot = TargetSnapshot()
        for bookie, entries in enumerate(held):
            if isinstance(entries, BaseException):
                raise entries
            snapshot.entries[bookie] = entries
        if metadata is None:
            return snapshot
        snapshot.meta_status = metadata.state.name
        if metadata.state is LedgerState.CLOSED:
            snapshot.meta_last_entry = translation.spec_entry_id(metadata.last_entry_id)
        snapshot.meta_fragments = translation.fragments_of(metadata.segments, self.bookie_ids)
        return snapshot

    async def _entries_held(self, bookie: int, send_limit: int) -> set[int]:
        """The spec ids of the entries a bookie stores, read by an observer that changes
        nothing: plain v2 reads on a connection of its own. Over v3 a bookie answers a plain
        read of a ledger in limbo with EUNKNOWNLEDGERSTATE even for an entry it stores (the
        read also asks for the LAC, which limbo refuses); over v2 it returns the entry.

        The observer's connection outlives the example (it is closed with the bookie's other
        connections when the bookie restarts); one that fails is replaced once, so that a
        connection the bookie dropped between examples is not taken for a failed read."""
        try:
            return await self._read_held(bookie, send_limit)
        except TargetError:
            stale = self._observers.pop(bookie, None)
            if stale is None:
                raise
            with contextlib.suppress(WireError, OSError):
                await stale.close()
            return await self._read_held(bookie, send_limit)

    async def _read_held(self, bookie: int, send_limit: int) -> set[int]:
        name = self.bookie_ids[bookie]
        observer = self._observers.get(bookie)
        if observer is None:
            assert self.cluster is not None
            host, port = self.cluster.endpoints().bookies[name]
            try:
                observer = await V2BookieClient.connect(
                    host, port, request_timeout=self.request_timeout
                )
            except (WireError, OSError) as exc:
                raise TargetError(
                    f"cannot connect to bookie {name}: {exc}", retriable=True
                ) from exc
            self._observers[bookie] = observer
        entry_ids = range(1, send_limit + 1)
        answers = await asyncio.gather(
            *(
                observer.read(self.ledger_id, translation.bk_entry_id(entry_id))
                for entry_id in entry_ids
            ),
            return_exceptions=True,
        )
        held = set()
        for entry_id, answer in zip(entry_ids, answers, strict=True):
            if isinstance(answer, WireError):
                raise TargetError(f"bookie {name}: {answer}", retriable=answer.retriable)
            if isinstance(answer, BaseException):
                raise answer
            if answer.status is StatusCode.EOK:
                held.add(entry_id)
        return held

    # Event loop ------------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def _run_quietly(self, coro: Coroutine[Any, Any, object]) -> None:
        if self._loop.is_closed():
            coro.close()
            return
        with contextlib.suppress(WireError, OSError):
            self._loop.run_until_complete(coro)
