"""The recovering client: the real Java client recovers a ledger another writer left open.

An example is a :class:`~.plans.RecoveryPlan`: w1's adds (how many entries, which bookie got
each before the recovery, which after, which never) and the proxies' schedule for the frames
the Java client sends (the fence reads, the recovery reads, the write-backs). w1 is the model's
``c1``, our Python wire client, talking to the bookies directly (the proxies never see it); it
writes the ledger's metadata itself (E = WQ = 3, AQ = 2, on three bookies), so a client that
cannot be routed through the proxies (before 4.12) still plays: the metadata names the proxies.
The Java client (the model's ``c2``) then recovers the ledger (``openLedger``), and w1 makes its
late adds. :func:`~.story.judge` tells the story.

Plans come from Hypothesis (:func:`generated_plans`) and from the model's counterexamples
(:func:`~.guidance.model_guided_plans`); a finding shrinks by :func:`smaller_plans`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Self

from hypothesis import strategies as st

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import package_entry
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.status import StatusCode
from adapters.javaclient import BKError, JavaDigestType
from adapters.zookeeper.metadata import DigestType, LedgerMetadata, LedgerState, Segment
from conformance import translation
from conformance.javaclient.guidance import model_guided_plans
from conformance.javaclient.model_replay import Judgement
from conformance.javaclient.plans import (
    BOOKIES,
    DROP,
    FORWARD,
    Choice,
    FrameKey,
    FrameSchedule,
    PlanError,
    RecoveryPlan,
    WriterPlan,
    hold,
    searched_frames,
    writer_from_phases,
)
from conformance.javaclient.recording import RECOVERY_RECORDS
from conformance.javaclient.role import Arrangement, Example, Role
from conformance.javaclient.session import (
    ClientSession,
    RunUndecided,
    SessionLayout,
    model_bookie_names,
)
from conformance.javaclient.story import SPEC_CONFIG, RecoveryRecord
from conformance.javaclient.story import judge as judge_recovery
from conformance.javaclient.writer_role import FaultSet
from conformance.targets.cluster_target import DIGEST, KEY, PASSWORD
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import JAVA_RECOVERY

# Generation -------------------------------------------------------------------------------


def choices(max_after: int = 4) -> st.SearchStrategy[Choice]:
    return st.one_of(st.just(FORWARD), st.just(DROP), st.integers(1, max_after).map(hold))


def frame_schedules(writer: WriterPlan, max_after: int = 4) -> st.SearchStrategy[FrameSchedule]:
    """A decision for each frame a recovery of ``writer``'s ledger may send."""
    return st.fixed_dictionaries({key: choices(max_after) for key in searched_frames(writer)}).map(
        lambda decisions: FrameSchedule(decisions).without_forwards()
    )


_PHASES = ("before", "after", "lost")


@st.composite
def writer_plans(draw: st.DrawFn, max_entries: int = 2) -> WriterPlan:
    """w1's part: 0 or 1 acked entries, then 1..``max_entries`` unconfirmed ones, each reaching
    each bookie before the recovery, after it, or never."""
    acked = draw(st.integers(0, 1))
    entries = draw(st.integers(1, max_entries))
    phases = {
        (entry, bookie): draw(st.sampled_from(_PHASES))
        for entry in range(acked, acked + entries)
        for bookie in BOOKIES
    }
    return writer_from_phases(phases, entries, acked)


def generated_plans(max_entries: int = 2) -> st.SearchStrategy[RecoveryPlan]:
    return writer_plans(max_entries).flatmap(
        lambda writer: frame_schedules(writer).map(lambda schedule: RecoveryPlan(writer, schedule))
    )


# Shrinking --------------------------------------------------------------------------------


def smaller_plans(plan: RecoveryPlan) -> Iterator[RecoveryPlan]:
    """Each plan one simplification away from ``plan``: a frame decision back to forward, a
    hold made shorter, one of w1's adds left out, its last unconfirmed entry or its acked
    entry left out."""
    for schedule in plan.schedule.smaller():
        yield _with(plan, schedule=schedule)
    writer = plan.writer
    for add in writer.adds:
        smaller = _writer(writer, adds=tuple(a for a in writer.adds if a != add))
        if smaller is not None:
            yield _with(plan, writer=smaller)
    if writer.entries > 1:
        last = writer.acked + writer.entries - 1
        smaller = _writer(
            writer,
            entries=writer.entries - 1,
            adds=tuple(a for a in writer.adds if a.entry != last),
        )
        if smaller is not None:
            keep = set(searched_frames(smaller))
            yield _with(plan, writer=smaller, schedule=plan.schedule.restricted(keep.__contains__))
    if writer.acked:
        smaller = _writer(
            writer,
            acked=0,
            adds=tuple(dataclasses.replace(a, entry=a.entry - writer.acked) for a in writer.adds),
        )
        if smaller is not None:
            yield _with(plan, writer=smaller, schedule=_shift(plan.schedule, -writer.acked))


def _writer(writer: WriterPlan, **changes: object) -> WriterPlan | None:
    try:
        return dataclasses.replace(writer, **changes)  # type: ignore[arg-type]
    except PlanError:
        return None


def _with(
    plan: RecoveryPlan,
    *,
    writer: WriterPlan | None = None,
    schedule: FrameSchedule | None = None,
) -> RecoveryPlan:
    return RecoveryPlan(
        writer or plan.writer,
        plan.schedule if schedule is None else schedule,
        origin=f"shrunk from {plan.origin}"
        if not plan.origin.startswith("shrunk")
        else plan.origin,
    )


def _shift(schedule: FrameSchedule, by: int) -> FrameSchedule:
    """The schedule with every entry ``by`` lower (what falls below e0 goes)."""

    def shifted(key: FrameKey) -> FrameKey:
        return key if key.entry_id < 0 else dataclasses.replace(key, entry_id=key.entry_id + by)

    kept = schedule.restricted(lambda key: key.entry_id < 0 or key.entry_id + by >= 0)
    return FrameSchedule(
        {shifted(k): c for k, c in kept.decisions.items()},
        tuple(
            dataclasses.replace(e, at=None if e.at is None else shifted(e.at)) for e in kept.events
        ),
    )


# w1, our wire client ----------------------------------------------------------------------


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
        raise RunUndecided(f"w1's add to {address[0]}:{address[1]} failed: {exc}") from exc


def _metadata(ensemble: Sequence[str]) -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=3,
        write_quorum_size=3,
        ack_quorum_size=2,
        segments=(Segment(0, tuple(ensemble)),),
        digest_type=DigestType.CRC32,
        password=PASSWORD,
    )


# The role ---------------------------------------------------------------------------------


class RecoveryRole(Role[RecoveryPlan, RecoveryRecord]):
    """The Java client as the recovering ``c2`` of Defect 1's configuration."""

    name = "recovery"
    guidance_budget_s = 30.0
    records = RECOVERY_RECORDS
    #: The recovering client's reading of the spec: its guidance and its judge take this one.
    reading = JAVA_RECOVERY

    def __init__(
        self,
        *,
        max_entries: int = 2,
        speculative_read_timeout_ms: int = 300,
        read_entry_timeout_s: int = 2,
    ) -> None:
        """``read_entry_timeout_s``: short, as a dropped read costs the client that long in
        every example."""
        self.max_entries = max_entries
        self.speculative_read_timeout_ms = speculative_read_timeout_ms
        self.read_entry_timeout_s = read_entry_timeout_s

    def layout(self) -> SessionLayout:
        return SessionLayout(
            bookies=len(BOOKIES),
            speculative_read_timeout_ms=self.speculative_read_timeout_ms,
            read_entry_timeout_s=self.read_entry_timeout_s,
            metadata_may_name_proxies=True,
        )

    def config(self) -> ModelConfig:
        return SPEC_CONFIG

    def describe(self) -> str:
        return "recovering"

    #: Defect 1's ledger, the one every recovery run has: E=WQ=3 AQ=2 on 3 bookies, and 2
    #: clients (w1 and the Java client), as the model's options and the matrix name it.
    SHAPE = f"{SPEC_CONFIG.bookies}/{SPEC_CONFIG.write_quorum}/{SPEC_CONFIG.ack_quorum}"
    CONFIGURATION = (
        f"E{SPEC_CONFIG.bookies}-WQ{SPEC_CONFIG.write_quorum}-AQ{SPEC_CONFIG.ack_quorum}"
    )

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Self:
        """The recovering role; :class:`PlanError` for settings it cannot run: a ``shape``
        (E/WQ/AQ), ``bookies`` or ``clients`` other than Defect 1's, or ``faults`` other than
        requests' (its search draws the fates of the recovering client's requests only)."""
        shape = str(settings.get("shape", cls.SHAPE))
        bookies = int(settings.get("bookies", SPEC_CONFIG.bookies))
        clients = int(settings.get("clients", SPEC_CONFIG.clients))
        if (shape, bookies, clients) != (cls.SHAPE, SPEC_CONFIG.bookies, SPEC_CONFIG.clients):
            raise PlanError(
                f"the recovering role runs E=WQ=3, AQ=2 on 3 bookies with 2 clients (w1 and the "
                f"Java client); got E/WQ/AQ {shape}, {bookies} bookies, {clients} clients"
            )
        faults = settings.get("faults")
        if faults is not None and faults != FaultSet.REQUESTS.value:
            raise PlanError(
                f"the recovering role draws the fates of its client's requests only "
                f"(--java-faults {FaultSet.REQUESTS.value}); got --java-faults {faults}"
            )
        return cls()

    @classmethod
    def matrix_columns(cls, shapes: Sequence[object]) -> dict[str, dict[str, Any]]:
        """The role's one column in the version matrix (its ledger is Defect 1's, whatever
        ledger shapes the writers are asked for): its configuration's name -> its settings."""
        return {cls.CONFIGURATION: {"role": cls.name}}

    def plans(self) -> st.SearchStrategy[RecoveryPlan]:
        return generated_plans(self.max_entries)

    def guided_plans(self, seed: int, budget_s: float) -> list[RecoveryPlan]:
        # The model's recovery reads are unfenced: the counterexamples the client must resist.
        return model_guided_plans(
            reads_fence=False,
            seed=seed,
            budget_s=budget_s,
            max_entries=self.max_entries,
            reading=self.reading,
        )

    def judge(self, record: RecoveryRecord) -> Judgement:
        """The model's story of a run and its verdict, under the role's reading."""
        return judge_recovery(record, reading=self.reading)

    def smaller_plans(self, plan: RecoveryPlan) -> Iterator[RecoveryPlan]:
        return smaller_plans(plan)

    def plan_from_json(self, data: Mapping[str, Any]) -> RecoveryPlan:
        return RecoveryPlan.from_json(data)

    def perform(
        self, session: ClientSession, plan: RecoveryPlan, arrange: Arrangement
    ) -> RecoveryRecord:
        """w1 writes the metadata and makes ``plan.writer``'s adds before the recovery, the
        Java client recovers with the proxies ``arrange``d, then w1 makes the adds after it."""
        writer = plan.writer
        store = session.ledger_store()
        ledger_id = store.allocate_ledger_id()
        store.create(ledger_id, _metadata(session.ensemble_ids()))
        timeout = session.options.request_timeout
        bookie_of_proxy = {proxy: index for index, proxy in enumerate(session.proxies)}

        def add(bookie: str, bk_entry: int, bk_lac: int) -> StatusCode:
            address = session.bookie_address(session.bookie_ids[BOOKIES.index(bookie)])
            return writer_add(address, ledger_id, timeout, bk_entry, bk_lac)

        for bk_entry in range(writer.acked):
            for bookie in BOOKIES:
                status = add(bookie, bk_entry, bk_entry - 1)
                if status is not StatusCode.EOK:
                    raise RunUndecided(
                        f"w1's add of e{bk_entry} to {bookie}, before any recovery, got "
                        f"{status.name}"
                    )
        # Every unconfirmed entry carries the LAC of the acked ones, as the model's w1 sends
        # them all before any answer comes.
        lac = writer.acked - 1
        answers = {(a.entry, a.bookie): add(a.bookie, a.entry, lac) for a in writer.before()}
        mark = session.group.mark()
        java_error: str | None = None
        with arrange(ledger_id, model_bookie_names(bookie_of_proxy)):
            try:
                session.client.open_ledger(ledger_id, JavaDigestType.CRC32, PASSWORD, recovery=True)
            except BKError as exc:
                java_error = f"{type(exc).__name__}: {exc}"
            recovered_at = time.monotonic()
            session.settle()
        metadata, _version = store.read(ledger_id)
        closed = metadata.last_entry_id if metadata.state is LedgerState.CLOSED else None
        answers.update({(a.entry, a.bookie): add(a.bookie, a.entry, lac) for a in writer.after()})
        frames, deliveries = session.frames_since(mark)
        return RecoveryRecord(
            ledger_id=ledger_id,
            bookie_of_proxy=bookie_of_proxy,
            frames=frames,
            deliveries=deliveries,
            writer=writer,
            writer_answers=answers,
            closed_last_entry=closed,
            java_error=java_error,
            recovered_at=recovered_at,
        )

    def story_lines(self, record: RecoveryRecord) -> list[str]:
        lines = []
        if record.java_error:
            lines.append(f"Java client: {record.java_error}")
        if record.recovered_at is not None:
            lines.append(f"openLedger returned at {record.recovered_at:.3f}")
        lines.append(f"closed at {record.closed_last_entry}")
        return lines

    def tallies(self, example: Example[RecoveryPlan, RecoveryRecord]) -> dict[str, list[str]]:
        error = example.record.java_error
        return {"recoveries": ["OK" if error is None else error.split(":")[0]]}

    def example_facts(self, example: Example[RecoveryPlan, RecoveryRecord]) -> dict[str, Any]:
        return {"java_error": example.record.java_error}

    def finding_facts(self, judgement: Judgement) -> dict[str, Any]:
        return {"recovery_reads_fence": judgement.reads_fenced}


__all__ = [
    "RecoveryRole",
    "choices",
    "frame_schedules",
    "generated_plans",
    "smaller_plans",
    "writer_add",
    "writer_plans",
]
