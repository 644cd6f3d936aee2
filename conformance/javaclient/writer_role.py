"""The writer: the real Java client creates a ledger, adds its entries pipelined, and closes it.

A cluster of E + 1 bookies of one release (one spare, so every ensemble change has exactly one
replacement, the model's and the client's alike), one frame proxy per bookie, the release's own
client as the spec's writer ``c1``. One example (:meth:`WriterRole.perform`): the client creates
a ledger of the plan's shape (only ZooKeeper is involved), whose first ensemble names the
bookies of this run (b1..bE by position, the spare b{E+1}); then, with the proxies holding every
request of the ledger for the controller, the client sends its adds pipelined
(``asyncAddEntry``, callbacks timestamped in the JVM by the add recorder), waits for every
callback (bounded), and closes the ledger. Each add's timeout is 1 s (``addEntryTimeout``), so a
dropped add makes the client change its ensemble about a second later. Then the metadata is
read back from ZooKeeper and every entry is read from every bookie directly (not through the
proxies): a :class:`~.writer_story.WriterRecord`, judged by :func:`~.writer_story.judge`.

Releases before 4.12 have no bookie-address resolver, so their clients connect to the ids the
metadata names and cannot be routed through the proxies without the harness writing the
metadata itself, which a writer run must not do: the session refuses them.

Plans: Hypothesis draws 1..4 entries and up to ``max_faults`` decisions, each the fate of one
add or its answer (bookie, entry), the bookie any of the cluster's (a bookie outside the
entry's first write set gets the entry only after an ensemble change, which is what makes those
decisions interesting): with :attr:`FaultSet.REQUESTS` a request dropped or held by frames;
with :attr:`FaultSet.EXTENDED` also answers, holds for a time (within or past the add
timeout), forged errors and up to two fault events (crash, pause, stall, restart, reset,
refuse, held ZooKeeper writes, session expiry). The model's danger plans come from
:func:`~.writer_guidance.writer_guided_plans`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self, runtime_checkable

from hypothesis import strategies as st

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.status import StatusCode
from adapters.javaclient import BKError, BookKeeperJavaClient, JavaCallTimeout, JavaDigestType
from adapters.javaclient.pipelined_adds import AddOutcome, PipelinedAdds, code_name
from adapters.zookeeper.ledger_store import LedgerStore
from adapters.zookeeper.metadata import LedgerMetadata, LedgerState
from conformance.javaclient.controller import FaultsFailed
from conformance.javaclient.plans import (
    DROP,
    FORGEABLE,
    Choice,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlanError,
    PlannedFault,
    forge,
    hold,
    hold_for,
)
from conformance.javaclient.recording import WRITER_RECORDS, writer_record_from_json
from conformance.javaclient.role import Arrangement, Example, Role
from conformance.javaclient.session import (
    SETTLE_S,
    ClientSession,
    RunUndecided,
    SessionLayout,
    model_bookie_names,
)
from conformance.javaclient.writer_guidance import Realization, writer_guided_plans
from conformance.javaclient.writer_plans import (
    DEFAULT_SHAPES,
    MAX_LEDGERS,
    SEARCHED_ENTRIES,
    WriterRunPlan,
    WriterShape,
    add_key,
)
from conformance.javaclient.writer_story import (
    Takeover,
    WriterRecord,
    segments_text,
    timeout_check_interval_s,
    writer_config,
)
from conformance.javaclient.writer_story import judge as judge_writer
from conformance.targets.cluster_target import PASSWORD
from model.bookkeeper.action_table import Actor, Move, the_action
from model.bookkeeper.action_table import Phase as ProtocolPhase
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import JAVA_WRITER

#: A frame held until ``k`` other frames have passed is released at this fraction of the
#: client's add timeout at the latest: such a hold delays and reorders, it never makes the
#: client time the add out. Holds past the timeout are holds for a time (``hold_for``), drawn
#: by the extended fault set; the judge reads a frame that came after the client timed it out
#: as the spec's lost message, and its bookie may store the add LATE (the model's
#: ``late_adds_after_timeout``; docs/javaclient-search.md).
HOLD_FRACTION = 0.5


class FaultSet(enum.Enum):
    """Which faults Hypothesis draws for the writer."""

    #: Issue 15's: a request dropped or held (released within half the add timeout).
    REQUESTS = "requests"
    #: Every fault: requests and answers dropped, held by frames or for a time (within half
    #: the add timeout, or past it: the frame arrives after the client timed it out) or
    #: answered by a forged error (each status); bookies crashed, paused, or restarted (with
    #: or without their data) at a chosen frame; connections reset, refused or stalled; the
    #: client's ZooKeeper writes held and its session expired.
    EXTENDED = "extended"


#: What a forged answer may say (each makes the client react differently).
_STATUSES = st.sampled_from(FORGEABLE)
#: The faults at a frame the extended set draws, with whether they last.
_EVENT_KINDS = (
    FaultKind.CRASH,
    FaultKind.PAUSE,
    FaultKind.STALL,
    FaultKind.RESTART,
    FaultKind.RESTART_EMPTY,
    FaultKind.RESET,
    FaultKind.REFUSE,
    FaultKind.HOLD_METADATA,
    FaultKind.EXPIRE_SESSION,
)


@st.composite
def writer_run_plans(
    draw: st.DrawFn,
    shape: WriterShape,
    max_faults: int = 3,
    faults: FaultSet = FaultSet.REQUESTS,
    add_timeout_s: int = 1,
) -> WriterRunPlan:
    entries = draw(st.integers(1, SEARCHED_ENTRIES))
    decisions: dict[FrameKey, Choice]
    events: tuple[PlannedFault, ...] = ()
    if faults is FaultSet.REQUESTS:
        keys = st.tuples(st.sampled_from(shape.names), st.integers(0, entries - 1))
        chosen = draw(st.lists(keys, max_size=max_faults, unique=True))
        choices = st.one_of(st.just(DROP), st.integers(1, 4).map(hold))
        decisions = {add_key(bookie, entry): draw(choices) for bookie, entry in chosen}
    else:
        aimed = _aimed_frames(shape, entries)
        chosen_keys = draw(st.lists(aimed, max_size=max_faults, unique=True))
        choices = st.one_of(
            st.just(DROP),
            st.integers(1, 4).map(hold),
            _timed_holds(add_timeout_s),
            _STATUSES.map(forge),
        )
        decisions = {key: draw(choices) for key in chosen_keys}
        events = tuple(draw(st.lists(_fault_events(shape, aimed), max_size=2)))
    delayed = draw(st.integers(0, entries - 1)) if entries > 1 and draw(st.booleans()) else 0
    # Around the add timeout, which fires 1-2 s after the send (the client checks timeouts
    # once a second): the delayed adds go out while the client changes its
    # ensemble (#4097's window), or just before or after it.
    delay_ms = draw(st.integers(700, 2500)) if delayed else 0
    # Now and then a second writer's ledger beside it, on the same client's connections or
    # on a client of its own.
    ledgers = draw(st.sampled_from((1, 1, 1, 2))) if faults is FaultSet.EXTENDED else 1
    writers = draw(st.integers(1, ledgers))
    return WriterRunPlan(
        shape,
        entries,
        FrameSchedule(decisions, events),
        delayed=delayed,
        delay_ms=delay_ms,
        ledgers=ledgers,
        writers=writers,
    )


def _timed_holds(add_timeout_s: int) -> st.SearchStrategy[Choice]:
    """A hold for a time: within half the add timeout (a delay the client waits out), or past
    the timeout and the client's next check of it (the frame arrives after the client timed
    the add out: a late add, a stale answer). Between the two the judge would have to tell
    both readings; it can (``writer_story.add_fates``), but a search gains nothing there.

    A hold past the timeout ends within the run's settle window (:func:`late_hold_bounds`):
    the frame is then delivered and judged, where a longer hold made the run wait the whole
    window for a frame then logged as never delivered (the profile's item 4,
    benchmarks/profiles/java-client-example-2026-11-30.md)."""
    timeout_ms = add_timeout_s * 1000
    least, most = late_hold_bounds(add_timeout_s)
    return st.one_of(
        st.integers(50, timeout_ms // 2).map(hold_for),
        st.integers(least, most).map(hold_for),
    )


def late_hold_bounds(add_timeout_s: int) -> tuple[int, int]:
    """The least and the most milliseconds of a hold past the add timeout: 300 ms past the
    timeout and the client's next check of it (the add has certainly timed out), and no more
    than the timeout plus :data:`~.session.SETTLE_S`: the client finishes an example no sooner
    than its add timeout, and the run waits up to ``SETTLE_S`` after that for held frames, so
    a hold this long is always delivered before the run reads its log."""
    timeout_ms = add_timeout_s * 1000
    past_ms = timeout_ms + timeout_check_interval_s(add_timeout_s) * 1000
    least, most = past_ms + 300, timeout_ms + round(SETTLE_S * 1000)
    if least > most:  # pragma: no cover - the check interval is 1 s (no add-quorum timeout)
        raise PlanError(f"no late hold fits the settle window for a {add_timeout_s} s timeout")
    return least, most


def _aimed_frames(shape: WriterShape, entries: int) -> st.SearchStrategy[FrameKey]:
    """An add or its answer, its bookie in the entry's first write set half the time (where a
    fault touches a pending entry), else any of the cluster's."""

    @st.composite
    def aimed(draw: st.DrawFn) -> FrameKey:
        entry = draw(st.integers(0, entries - 1))
        members = [shape.names[position] for position in shape.writeset(entry)]
        bookie = draw(st.one_of(st.sampled_from(members), st.sampled_from(shape.names)))
        return FrameKey("add", bookie, entry, answer=draw(st.booleans()))

    return aimed()


def _fault_events(
    shape: WriterShape, aimed: st.SearchStrategy[FrameKey]
) -> st.SearchStrategy[PlannedFault]:
    @st.composite
    def event(draw: st.DrawFn) -> PlannedFault:
        kind = draw(st.sampled_from(_EVENT_KINDS))
        at = draw(st.one_of(st.none(), aimed))
        bookie = None
        if kind.needs_bookie:
            near = [at.bookie] if at is not None else []
            bookie = draw(st.sampled_from([*near, *shape.names]))
        duration = draw(st.integers(300, 3000)) if kind.needs_duration else 0
        return PlannedFault(kind, at, bookie, duration)

    return event()


def smaller_writer_plans(plan: WriterRunPlan) -> Iterator[WriterRunPlan]:
    """Each plan with one thing taken away: a frame decision or a fault, a hold made shorter,
    the delay, the last entry (and what its frames decided or triggered)."""
    for schedule in plan.schedule.smaller():
        yield dataclasses.replace(plan, schedule=schedule)
    if plan.delayed:
        yield dataclasses.replace(plan, delayed=0, delay_ms=0)
    if plan.recover_delay_ms:
        yield dataclasses.replace(plan, recover_delay_ms=0)
    if plan.ledgers > 1:
        yield dataclasses.replace(plan, ledgers=1, writers=1)
    if plan.writers > 1:
        yield dataclasses.replace(plan, writers=1)
    if plan.entries > 1:
        last = plan.entries - 1
        delayed = min(plan.delayed, last - 1)
        yield dataclasses.replace(
            plan,
            entries=last,
            schedule=plan.schedule.restricted(lambda key: key.entry_id < last),
            delayed=delayed,
            delay_ms=plan.delay_ms if delayed else 0,
            recover_after=None if plan.recover_after is None else min(plan.recover_after, last),
        )


#: The spec's ClientResendsPendingAddOp: a pending add moved to a new ensemble.
_RESEND = the_action(
    actor=Actor.CLIENT, phase=ProtocolPhase.ENSEMBLE_CHANGE, move=Move.SEND, recovery=False
)
#: A callback this long after its entry's ack quorum answered was held back by the client.
HELD_COMPLETION_S = 0.1


def held_completions(record: WriterRecord) -> int:
    """Acknowledged entries whose callback came :data:`HELD_COMPLETION_S` or more after the
    client had AQ answers confirming them (it held the completion, e.g. during a change)."""
    confirmed: dict[int, list[float]] = {}
    for frame in record.frames:
        delivery = record.deliveries.get(frame.frame_id)
        if (
            frame.info.direction.value != "response"
            or frame.info.status is not StatusCode.EOK
            or frame.info.entry_id is None
            or delivery is None
            or not delivery.delivered
            or frame.info.ledger_id != record.ledger_id
        ):
            continue
        confirmed.setdefault(frame.info.entry_id, []).append(delivery.at)
    held = 0
    quorum = record.shape.ack_quorum
    for outcome in record.outcomes:
        if outcome.entry_id is None:
            continue
        times = sorted(confirmed.get(outcome.entry_id, ()))
        if outcome.acknowledged and outcome.at is not None and len(times) >= quorum:
            held += outcome.at - times[quorum - 1] >= HELD_COMPLETION_S
    return held


#: How long the client may take to read one entry back (its own timeouts and retries).
CLIENT_READ_TIMEOUT_S = 15.0


def _read_with_the_client(
    session: ClientSession,
    ledger_id: int,
    outcomes: Sequence[AddOutcome],
    entry_bytes: int | None,
) -> dict[int, str]:
    """Each acknowledged entry read back as a user would: the same Java client opens the closed
    ledger (no recovery) and reads it by the metadata's ensembles. Entry -> ``OK``, ``wrong
    data``, or the client's error."""
    return read_acknowledged(session.client, ledger_id, outcomes, entry_bytes)


def read_acknowledged(
    client: BookKeeperJavaClient,
    ledger_id: int,
    outcomes: Sequence[AddOutcome],
    entry_bytes: int | None,
) -> dict[int, str]:
    """Each acknowledged entry of ``outcomes`` read back by ``client`` (any Java client of the
    cluster: the writer's own, or another release's) from the closed ledger (no recovery), by
    the metadata's ensembles. Entry -> ``OK``, ``wrong data``, or the client's error."""
    try:
        reader = client.open_ledger(
            ledger_id, JavaDigestType.CRC32, PASSWORD, recovery=False, timeout=CLIENT_READ_TIMEOUT_S
        )
    except BKError as exc:
        failed = f"open failed: {type(exc).__name__}"
        return {o.entry_id: failed for o in outcomes if o.acknowledged and o.entry_id is not None}
    reads: dict[int, str] = {}
    try:
        for outcome in outcomes:
            if not _acked(outcome):
                continue
            entry = outcome.entry_id
            assert entry is not None
            try:
                (read,) = reader.read_entries(entry, entry, timeout=CLIENT_READ_TIMEOUT_S)
            except BKError as exc:
                reads[entry] = type(exc).__name__
                continue
            wanted = payload(ledger_id, outcome.index, entry_bytes)
            reads[entry] = "OK" if read.data == wanted else "wrong data"
    finally:
        with contextlib.suppress(BKError):
            reader.close(timeout=CLIENT_READ_TIMEOUT_S)
    return reads


def fault_moments(
    done: Sequence[tuple[float, PlannedFault]],
    kinds: Collection[FaultKind],
    bookie_id: Callable[[str | None], str],
) -> dict[str, tuple[float, ...]]:
    """Bookie id -> when each of the faults ``done`` of ``kinds`` was carried out on it
    (``bookie_id``: the id of a bookie the plan names). The record's ``restarts`` take every
    kind that restarts a bookie with its data: a restart, an upgrade, a downgrade alike (a
    bookie's release is the bookie's, not the model's: to the judge an upgrade is a
    restart)."""
    moments: dict[str, tuple[float, ...]] = {}
    for at, event in done:
        if event.kind in kinds:
            key = bookie_id(event.bookie)
            moments[key] = (*moments.get(key, ()), at)
    return moments


def _closed_end(metadata: LedgerMetadata) -> int | None:
    """The closed ledger's last entry (None: not closed)."""
    return metadata.last_entry_id if metadata.state is LedgerState.CLOSED else None


@runtime_checkable
class FaultCarrier(Protocol):
    """What the writer asks of its run's controller besides deciding frames (the
    :class:`~.controller.ScheduleController` is one): faults carried out now, and the faults
    carried out so far, with when each was done."""

    events_done: list[tuple[float, PlannedFault]]

    def carry_out(self, events: Sequence[PlannedFault]) -> None: ...


class _NoFaults:
    """The controller of a run whose arrangement carries out no faults (a stand-in's): none
    done, and none can be asked for."""

    def __init__(self) -> None:
        self.events_done: list[tuple[float, PlannedFault]] = []

    def carry_out(self, events: Sequence[PlannedFault]) -> None:
        raise FaultsFailed("the run's controller carries out no faults")


def fault_carrier(controller: object) -> FaultCarrier:
    """The run's controller as what carries out its faults (the arrangement's context gives an
    ``object``: :data:`~.role.Arrangement` is the same for every role)."""
    return controller if isinstance(controller, FaultCarrier) else _NoFaults()


def _carry_out(controller: FaultCarrier, events: Sequence[PlannedFault]) -> None:
    """Carry out ``events`` now through the run's controller (its fault thread, after any
    fault a frame set off: never two at once); :class:`RunUndecided` if it cannot."""
    try:
        controller.carry_out(events)
    except FaultsFailed as exc:
        raise RunUndecided(str(exc)) from exc


def fault_set(name: object) -> FaultSet:
    """The fault set ``name``d (None: the extended set, the writer's default);
    :class:`PlanError` for a name that is none."""
    if name is None:
        return FaultSet.EXTENDED
    try:
        return FaultSet(name)
    except ValueError as exc:
        known = ", ".join(f.value for f in FaultSet)
        raise PlanError(f"no fault set {name!r}: the fault sets are {known}") from exc


def matrix_configuration(shape: WriterShape) -> str:
    """A writer's ledger shape as the version matrix names its column: ``E3-WQ2-AQ2`` (one
    spare bookie), ``E4-WQ2-AQ2+2`` (two spares: a cluster of six, not five)."""
    spares = "" if shape.spares == 1 else f"+{shape.spares}"
    return f"E{shape.ensemble}-WQ{shape.write_quorum}-AQ{shape.ack_quorum}{spares}"


def _acked(outcome: AddOutcome) -> bool:
    return outcome.acknowledged and outcome.entry_id is not None


#: The largest payload a writer's add may carry (BookKeeper's default nettyMaxFrameSizeBytes
#: is 5 MiB).
MAX_ENTRY_BYTES = 4 * 1024 * 1024


def payload(ledger_id: int, index: int, size: int | None = None) -> bytes:
    """The add's payload: a text naming the ledger and the add, padded to ``size`` bytes."""
    text = f"bkconform writer ledger {ledger_id} add {index}".encode()
    if size is None:
        return text
    return (text + b"." * size)[:size]


#: The tests' and tools' name for it.
_payload = payload


async def _read_all(
    ledger_id: int, entries: int, addresses: Mapping[int, tuple[str, int]], timeout: float
) -> tuple[dict[int, tuple[int, ...]], tuple[int, ...]]:
    stored: dict[int, list[int]] = {entry: [] for entry in range(entries)}
    unreachable: list[int] = []
    for bookie, (host, port) in sorted(addresses.items()):
        try:
            client = await BookieClient.connect(host, port, request_timeout=timeout)
        except (OSError, WireError):
            unreachable.append(bookie)  # down: a crash the plan made
            continue
        try:
            for entry in range(entries):
                answer = await client.read(ledger_id, entry)
                if answer.status is StatusCode.EOK and answer.body is not None:
                    stored[entry].append(bookie)
        finally:
            await client.close()
    return {entry: tuple(bookies) for entry, bookies in stored.items()}, tuple(unreachable)


def stored_entries(
    ledger_id: int, entries: int, addresses: Mapping[int, tuple[str, int]], timeout: float
) -> tuple[dict[int, tuple[int, ...]], tuple[int, ...]]:
    """Entry -> the model bookies that return it, read from each bookie directly; and the
    bookies that could not be reached."""
    try:
        return asyncio.run(_read_all(ledger_id, entries, addresses, timeout))
    except WireError as exc:
        raise RunUndecided(f"reading the entries back failed: {exc}") from exc


@dataclass(frozen=True)
class _LedgerNaming:
    """A ledger's model bookie names: b1..bE its first ensemble's positions, the spares after
    (each ledger of a run its own: the client picks every ensemble at random)."""

    #: Bookie id -> model index.
    model_index: Mapping[str, int]
    #: Proxy -> model index.
    bookie_of_proxy: Mapping[str, int]

    @classmethod
    def of(cls, session: ClientSession, store: LedgerStore, ledger_id: int) -> _LedgerNaming:
        metadata, _version = store.read(ledger_id)
        first = metadata.segments[0].bookies
        index_of_id = {bookie_id: i for i, bookie_id in enumerate(first)}
        spare = iter(range(len(first), len(session.bookie_ids)))
        model_index = {
            bookie_id: index_of_id[bookie_id] if bookie_id in index_of_id else next(spare)
            for bookie_id in session.bookie_ids
        }
        bookie_of_proxy = {
            proxy: model_index[bookie_id]
            for proxy, bookie_id in zip(session.proxies, session.bookie_ids, strict=True)
        }
        return cls(model_index, bookie_of_proxy)

    def bookie_id(self, name: str | None) -> str:
        """The id of the bookie this ledger names ``name`` (``b1``...)."""
        wanted = int(str(name).removeprefix("b")) - 1
        return next(b for b, index in self.model_index.items() if index == wanted)


class WriterRole(Role[WriterRunPlan, WriterRecord]):
    """The Java client as the spec's writer on a ledger of ``shape``."""

    name = "writer"
    guidance_budget_s = 10.0
    records = WRITER_RECORDS
    #: The writer's reading of the spec: its guidance's, and its judge's (``judge_reading``).
    reading = JAVA_WRITER
    #: The model's story of a run and its verdict.
    judge = staticmethod(judge_writer)

    def __init__(
        self,
        shape: WriterShape,
        *,
        max_faults: int = 3,
        add_entry_timeout_s: int = 1,
        callbacks_timeout: float = 20.0,
        faults: FaultSet = FaultSet.EXTENDED,
        client_properties: Mapping[str, str] | None = None,
        entry_bytes: int | None = None,
    ) -> None:
        """``add_entry_timeout_s``: how soon a dropped add makes the client change its
        ensemble; ``callbacks_timeout``: how long the client may take to call back every add
        (an ensemble change, then resends); ``client_properties``: more of the client's
        configuration, as ``ClientConfiguration.setProperty`` takes it (``throttle``: adds a
        second; ``waitTimeoutOnBackpressureMs``...); ``entry_bytes``: each add's payload
        (None: a short text naming the ledger and the add)."""
        if entry_bytes is not None and not 1 <= entry_bytes <= MAX_ENTRY_BYTES:
            raise PlanError(f"an entry has 1..{MAX_ENTRY_BYTES} bytes, not {entry_bytes}")
        self.shape = shape
        self.max_faults = max_faults
        self.add_entry_timeout_s = add_entry_timeout_s
        self.callbacks_timeout = callbacks_timeout
        self.faults = faults
        self.client_properties = dict(sorted((client_properties or {}).items()))
        self.entry_bytes = entry_bytes

    def layout(self) -> SessionLayout:
        return SessionLayout(
            bookies=self.shape.bookies,
            add_entry_timeout_s=self.add_entry_timeout_s,
            records_adds=True,
            # Several writers' ledgers may each have a client of their own.
            more_writers=MAX_LEDGERS - 1,
            refusal_hint="older clients can be searched as the recovering reader (--role recovery)",
            client_properties=tuple(self.client_properties.items()),
        )

    def config(self) -> ModelConfig:
        return writer_config(self.shape, SEARCHED_ENTRIES)

    def settings(self) -> dict[str, Any]:
        return {
            "role": self.name,
            "shape": self.shape.key(),
            "add_entry_timeout_s": self.add_entry_timeout_s,
            "faults": self.faults.value,
            **({"client_properties": self.client_properties} if self.client_properties else {}),
            **({"entry_bytes": self.entry_bytes} if self.entry_bytes is not None else {}),
        }

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Self:
        """The role its :meth:`settings` describe (a recorded run's, or a command's: its
        ``shape`` E/WQ/AQ[+SPARES], default the first of ``DEFAULT_SHAPES``; ``faults``,
        default extended; the add timeout, the client's properties, the entries' size);
        :class:`PlanError` for settings no writer can have. Other keys (the model options'
        ``bookies`` and ``clients``) are not the writer's: its cluster is its shape's."""
        shape = settings.get("shape")
        entry_bytes = settings.get("entry_bytes")
        return cls(
            DEFAULT_SHAPES[0] if shape is None else WriterShape.parse(str(shape)),
            add_entry_timeout_s=int(settings.get("add_entry_timeout_s", 1)),
            faults=fault_set(settings.get("faults")),
            client_properties={
                str(key): str(value)
                for key, value in dict(settings.get("client_properties", {})).items()
            },
            entry_bytes=None if entry_bytes is None else int(entry_bytes),
        )

    @classmethod
    def matrix_columns(cls, shapes: Sequence[WriterShape]) -> dict[str, dict[str, Any]]:
        """The role's columns in the version matrix, one per ledger shape: the configuration's
        name (``E3-WQ2-AQ2``; ``E4-WQ2-AQ2+2`` with two spares) -> the settings that build
        the role for it (:meth:`from_settings`)."""
        if not shapes:
            raise PlanError(f"--role {cls.name} needs at least one ledger shape (--writer-shapes)")
        return {
            matrix_configuration(shape): {"role": cls.name, "shape": shape.key()}
            for shape in shapes
        }

    def describe(self) -> str:
        extra = [f"{key}={value}" for key, value in self.client_properties.items()]
        if self.entry_bytes is not None:
            extra.append(f"{self.entry_bytes}-byte entries")
        more = "".join(f", {item}" for item in extra)
        spares = "one spare" if self.shape.spares == 1 else f"{self.shape.spares} spares"
        return f"writing ({self.shape.describe()}, {self.shape.bookies} bookies, {spares}{more})"

    @property
    def max_hold_s(self) -> float:
        return self.add_entry_timeout_s * HOLD_FRACTION

    def plans(self) -> st.SearchStrategy[WriterRunPlan]:
        return writer_run_plans(
            self.shape, self.max_faults, self.faults, add_timeout_s=self.add_entry_timeout_s
        )

    def guided_plans(self, seed: int, budget_s: float) -> list[WriterRunPlan]:
        # The danger plans are ordered by score, not drawn: the seed changes nothing here.
        realizations = (
            tuple(Realization) if self.faults is FaultSet.EXTENDED else (Realization.DROP,)
        )
        return writer_guided_plans(
            self.shape,
            budget_s=budget_s,
            realizations=realizations,
            limit=40 * len(realizations),
            reading=self.reading,
        )

    def smaller_plans(self, plan: WriterRunPlan) -> Iterator[WriterRunPlan]:
        return smaller_writer_plans(plan)

    def plan_from_json(self, data: Mapping[str, Any]) -> WriterRunPlan:
        plan = WriterRunPlan.from_json(data)
        if plan.role != self.name:
            raise PlanError(f"the plan is for --role {plan.role}; this run is --role {self.name}")
        if plan.shape != self.shape:
            raise PlanError(
                f"the plan is for {plan.shape.describe()}; this run is {self.shape.describe()}"
            )
        return plan

    def perform(
        self, session: ClientSession, plan: WriterRunPlan, arrange: Arrangement
    ) -> WriterRecord:
        """One example on fresh ledgers (see the module docstring): the plan's ``ledgers``,
        written together by its ``writers`` clients (ledger ``i`` by client ``i mod writers``),
        add by add in turn; the plan's frame decisions
        are the first ledger's, its faults hit every ledger's bookies. The plan's last
        ``delayed`` entries are added ``delay_ms`` after the others."""
        shape = self.shape
        if plan.shape != shape:
            raise PlanError(
                f"the plan is for {plan.shape.describe()}; the run is {shape.describe()}"
            )
        store = session.ledger_store()
        ledgers = [
            session.writer(number % plan.writers).create_ledger(
                shape.ensemble, shape.write_quorum, shape.ack_quorum, JavaDigestType.CRC32, PASSWORD
            )
            for number in range(plan.ledgers)
        ]
        namings = [_LedgerNaming.of(session, store, ledger.ledger_id) for ledger in ledgers]
        primary = ledgers[0]
        mark = session.group.mark()
        pipelines = [PipelinedAdds(ledger, plan.entries) for ledger in ledgers]
        closes: list[tuple[float | None, str | None]] = []
        takeover: Takeover | None = None
        names = model_bookie_names(namings[0].bookie_of_proxy)
        with arrange(primary.ledger_id, names) as arranged:
            controller = fault_carrier(arranged)
            for index in range(plan.entries):
                if index == plan.entries - plan.delayed and plan.delay_ms > 0:
                    time.sleep(plan.delay_ms / 1000)
                if index == plan.recover_after:
                    takeover = self._take_over(session, plan, primary.ledger_id, controller)
                for ledger, pipeline in zip(ledgers, pipelines, strict=True):
                    pipeline.add(index, payload(ledger.ledger_id, index, self.entry_bytes))
            if plan.recover_after == plan.entries:
                takeover = self._take_over(session, plan, primary.ledger_id, controller)
            for pipeline in pipelines:
                pipeline.wait(self.callbacks_timeout)
            for ledger in ledgers:
                try:
                    ledger.close()
                    closes.append((time.monotonic(), None))
                except BKError as exc:
                    closes.append((None, f"{type(exc).__name__}: {exc}"))
            session.settle()
        ends = [
            self._read_back(session, store, ledger.ledger_id, naming, plan.entries)
            for ledger, naming in zip(ledgers, namings, strict=True)
        ]
        frames, deliveries = session.frames_since(mark)
        # The bookies the plan wiped (restarted without their data), by bookie id, with when
        # the restart was done: what they held before is lost by design, not by the client.
        wiped_ids = {
            namings[0].bookie_id(event.bookie): done
            for done, event in controller.events_done
            if event.kind is FaultKind.RESTART_EMPTY and event.bookie in names.values()
        }
        # The stalls the plan made, by bookie id: from when the proxy stopped reading to
        # when its timer resumes it (the run's end may resume it sooner).
        stalled_ids: dict[str, tuple[tuple[float, float], ...]] = {}
        for done, event in controller.events_done:
            if event.kind is FaultKind.STALL and event.bookie in names.values():
                bookie_id = namings[0].bookie_id(event.bookie)
                window = (done, done + (event.duration_ms or 0) / 1000)
                stalled_ids[bookie_id] = (*stalled_ids.get(bookie_id, ()), window)
        # The connection resets the plan made, by bookie id, with when each was done; and its
        # restarts with data, upgrades and downgrades alike.
        done_here = [
            (done, event)
            for done, event in controller.events_done
            if event.bookie in names.values()
        ]
        reset_ids = fault_moments(done_here, (FaultKind.RESET,), namings[0].bookie_id)
        restart_ids = fault_moments(
            done_here, [k for k in FaultKind if k.restarts_with_data], namings[0].bookie_id
        )
        records = []
        for number, (ledger, naming, pipeline, (closed_at, close_error), end) in enumerate(
            zip(ledgers, namings, pipelines, closes, ends, strict=True)
        ):
            outcomes = pipeline.outcomes()
            segments, closed, stored, unreachable = end
            # After the frames are taken: the reads are the user's check, not the writer's.
            client_reads = (
                _read_with_the_client(session, ledger.ledger_id, outcomes, self.entry_bytes)
                if closed is not None
                else {}
            )
            records.append(
                WriterRecord(
                    ledger_id=ledger.ledger_id,
                    shape=shape,
                    entries=plan.entries,
                    bookie_of_proxy=naming.bookie_of_proxy,
                    frames=frames,
                    deliveries=deliveries,
                    outcomes=outcomes,
                    segments=segments,
                    closed_last_entry=closed,
                    closed_at=closed_at,
                    close_error=close_error,
                    stored=stored,
                    unreachable=unreachable,
                    add_timeout_s=self.add_entry_timeout_s,
                    timeout_check_s=timeout_check_interval_s(self.add_entry_timeout_s),
                    client_reads=client_reads,
                    wiped={naming.model_index[b]: at for b, at in wiped_ids.items()},
                    stalled={naming.model_index[b]: w for b, w in stalled_ids.items()},
                    resets={naming.model_index[b]: r for b, r in reset_ids.items()},
                    restarts={naming.model_index[b]: r for b, r in restart_ids.items()},
                    takeover=takeover if number == 0 else None,
                )
            )
        return dataclasses.replace(records[0], others=tuple(records[1:]))

    @staticmethod
    def _read_back(
        session: ClientSession,
        store: LedgerStore,
        ledger_id: int,
        naming: _LedgerNaming,
        entries: int,
    ) -> tuple[
        list[tuple[int, tuple[int, ...]]], int | None, dict[int, tuple[int, ...]], tuple[int, ...]
    ]:
        """The ledger's ensembles and end from its metadata, and its entries read from each
        bookie directly (with the bookies that could not be reached)."""
        metadata, _version = store.read(ledger_id)
        segments = [
            (segment.first_entry_id, tuple(naming.model_index[b] for b in segment.bookies))
            for segment in metadata.segments
        ]
        closed = _closed_end(metadata)
        addresses = {naming.model_index[b]: session.bookie_address(b) for b in session.bookie_ids}
        stored, unreachable = stored_entries(
            ledger_id, entries, addresses, session.options.request_timeout
        )
        return segments, closed, stored, unreachable

    def _take_over(
        self,
        session: ClientSession,
        plan: WriterRunPlan,
        ledger_id: int,
        controller: FaultCarrier,
    ) -> Takeover:
        """The second client recovers the ledger ``plan.recover_delay_ms`` after the writer's
        first ``plan.recover_after`` adds were sent (bounded: a recovery that does not return
        leaves the run undecided); the plan's faults before and after the recovery are carried
        out by the ``controller``'s executor, one after another."""
        assert plan.recover_after is not None
        time.sleep(plan.recover_delay_ms / 1000)
        if plan.before_recovery:
            _carry_out(controller, plan.before_recovery)
        started = time.monotonic()
        error: str | None = None
        try:
            recovered = session.recovering_client.open_ledger(
                ledger_id,
                JavaDigestType.CRC32,
                PASSWORD,
                recovery=True,
                timeout=self.callbacks_timeout,
            )
        except JavaCallTimeout as exc:
            raise RunUndecided(f"the second client's recovery did not return: {exc}") from exc
        except BKError as exc:
            error = f"{type(exc).__name__}: {exc}"
        else:
            with contextlib.suppress(BKError):
                recovered.close(timeout=CLIENT_READ_TIMEOUT_S)
        returned = time.monotonic()
        metadata, _version = session.ledger_store().read(ledger_id)
        last = _closed_end(metadata)
        if plan.after_recovery:
            _carry_out(controller, plan.after_recovery)
        return Takeover(plan.recover_after, started, returned, last, error)

    def record_from_json(self, data: dict[str, Any]) -> WriterRecord:
        """A recorded run back; one recorded before the client's timeouts were takes this
        role's (the settings it was recorded with)."""
        return writer_record_from_json(
            data,
            add_timeout_s=self.add_entry_timeout_s,
            timeout_check_s=timeout_check_interval_s(self.add_entry_timeout_s),
        )

    def story_lines(self, record: WriterRecord) -> list[str]:
        lines = []
        for outcome in record.outcomes:
            at = "" if outcome.at is None else f"{outcome.at:.3f} "
            lines.append(f"{at}callback: {outcome.describe()}")
        if record.takeover is not None:
            lines.append(record.takeover.describe())
        lines.append(f"ensembles: {segments_text(record.segments)}")
        if record.close_error:
            lines.append(f"close failed: {record.close_error}")
        else:
            lines.append(f"closed at e{record.closed_last_entry} ({record.closed_at:.3f})")
        stored = "; ".join(
            f"e{entry}: {','.join(f'b{b + 1}' for b in bookies) or 'nowhere'}"
            for entry, bookies in sorted(record.stored.items())
        )
        lines.append(f"read back: {stored}")
        if record.client_reads:
            reads = "; ".join(
                f"e{entry}: {read}" for entry, read in sorted(record.client_reads.items())
            )
            lines.append(f"read by the Java client: {reads}")
        for other in record.others:
            names = ", ".join(f"{p} = b{i + 1}" for p, i in sorted(other.bookie_of_proxy.items()))
            lines.append(f"-- ledger {other.ledger_id}, written together with it ({names}):")
            lines.extend(f"   {line}" for line in self.story_lines(other))
        return lines

    def tallies(self, example: Example[WriterRunPlan, WriterRecord]) -> dict[str, Any]:
        record = example.record
        callbacks = [
            "no callback" if o.code is None else code_name(o.code) for o in record.outcomes
        ]
        close = "OK" if record.close_error is None else record.close_error.split(":")[0]
        ensembles = [bookies for _first, bookies in record.segments]
        came_back = any(
            set(b) == set(a) for i, a in enumerate(ensembles) for b in ensembles[i + 1 :]
        )
        return {
            "callbacks": callbacks,
            "closes": [close],
            "entries_acknowledged": sum(o.acknowledged for o in record.outcomes),
            "examples_where_a_bookie_came_back": int(came_back),
        }

    def steering(self, example: Example[WriterRunPlan, WriterRecord]) -> dict[str, float]:
        """The windows of #3005 and #4097: pending adds an ensemble change moved, answers
        released after a change (the client no longer takes them), and completions the client
        held back (an entry's callback long after its ack quorum answered)."""
        judgement = example.judgement
        if judgement is None:
            return {}
        return {
            "pending adds moved by ensemble changes": float(judgement.actions.get(_RESEND, 0)),
            "answers released after an ensemble change": float(judgement.stale_answers),
            "completions held back": float(held_completions(example.record)),
        }

    def example_facts(self, example: Example[WriterRunPlan, WriterRecord]) -> dict[str, Any]:
        judgement = example.judgement
        return {
            "ensemble_changes": judgement.ensemble_changes if judgement else None,
            "callbacks": [o.describe() for o in example.record.outcomes],
            "close_error": example.record.close_error,
        }


__all__ = [
    "HELD_COMPLETION_S",
    "HOLD_FRACTION",
    "MAX_ENTRY_BYTES",
    "FaultCarrier",
    "FaultSet",
    "WriterRole",
    "fault_carrier",
    "fault_moments",
    "fault_set",
    "held_completions",
    "matrix_configuration",
    "payload",
    "read_acknowledged",
    "smaller_writer_plans",
    "stored_entries",
    "writer_run_plans",
]
