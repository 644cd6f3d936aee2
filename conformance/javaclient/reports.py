"""The open upstream reports against the Java client's ensemble change, replayed frame by frame,
and hypotheses read from the client's code, tried the same way.

Each :class:`ClientScenario` is a writer plan (plain data: the frames' fates and the faults at
chosen frames) that forces the interleaving a report of apache/bookkeeper's tracker (or a
reading of the client's code) describes,
the role it runs in (its shape, the client's add timeout), and a check that the interleaving
was really reached in the run (its frames in order, quoted from the run's log): a clean
verdict on a run that did not reach the report's window says nothing about the report.

``bkconform scenario bk-3005-java-client --bookkeeper 4.17.3 --target local`` runs one
(:mod:`conformance.commands.java_client_scenario`); docs/findings/ has what each showed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from adapters.netproxy import FrameRecord
from conformance.engine import Outcome
from conformance.javaclient import REPORT_SCENARIOS
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.observed import FORGED, FrameKind, frame_kind
from conformance.javaclient.plans import (
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlannedFault,
    forge,
    hold_for,
)
from conformance.javaclient.role import Example
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_role import WriterRole
from conformance.javaclient.writer_story import WriterRecord, metadata_write_set, segments_text

#: Long enough that a hold of a few seconds never times an add out: the reports' windows are
#: made by answers held and errors forged, not by the client's timer.
REPORT_ADD_TIMEOUT_S = 10


def answer_key(bookie: str, entry: int) -> FrameKey:
    return FrameKey("add", bookie, entry, answer=True)


@dataclass(frozen=True)
class Window:
    """Whether a run reached a report's interleaving, and the evidence (the log's lines)."""

    reached: bool
    evidence: tuple[str, ...]


#: Reads a run for a report's interleaving.
WindowCheck = Callable[[Example[WriterRunPlan, WriterRecord], WriterRole], Window]


@dataclass(frozen=True)
class ClientScenario:
    """An interleaving forced on the real Java client: an upstream report's, or a hypothesis
    read from the client's code."""

    #: The scenario's name on the command line.
    name: str
    #: Where the interleaving comes from: ``apache/bookkeeper#3005``, or the code it was read
    #: from.
    source: str
    title: str
    #: What the source says happens, in its own terms (the bookies renamed b1.. as here).
    story: str
    shape: WriterShape
    plan: WriterRunPlan
    check: WindowCheck
    #: More of the client's configuration (``ClientConfiguration.setProperty``).
    client_properties: Mapping[str, str] = field(default_factory=dict)
    #: Each add's payload in bytes (None: the writer's short text).
    entry_bytes: int | None = None

    def role(self) -> WriterRole:
        """The writer, or with a recovery in the plan the fail-over role (``--role both``)."""
        kind = FailoverRole if self.plan.role == FailoverRole.name else WriterRole
        return kind(
            self.shape,
            add_entry_timeout_s=REPORT_ADD_TIMEOUT_S,
            client_properties=self.client_properties,
            entry_bytes=self.entry_bytes,
        )


class _Log:
    """The run's frames and faults, by what they are (the role's bookie names)."""

    def __init__(self, example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> None:
        record = example.record
        self.names = role.names(record)
        self.record = record
        self.faults = example.faults

    def delivered_answer_frame(
        self, bookie: str, entry: int, kind: FrameKind | None = None
    ) -> tuple[float, FrameRecord] | None:
        """When the client got ``bookie``'s real answer to ``entry`` (not a forgery), and
        that answer; with ``kind``, an answer to that kind of request only (``FrameKind.ADD``:
        the writer's add, not a recovering client's read or write-back of the entry)."""
        for frame in self.record.frames:
            if (
                self.names.get(frame.proxy) == bookie
                and frame.info.direction.value == "response"
                and frame.info.entry_id == entry
                and (kind is None or frame_kind(frame) is kind)
                and frame.decision != FORGED
            ):
                delivery = self.record.deliveries.get(frame.frame_id)
                if delivery is not None and delivery.delivered:
                    return delivery.at, frame
        return None

    def delivered_answer(
        self, bookie: str, entry: int, kind: FrameKind | None = None
    ) -> tuple[float, str] | None:
        """:meth:`delivered_answer_frame`, as a line of evidence."""
        found = self.delivered_answer_frame(bookie, entry, kind)
        if found is None:
            return None
        at, frame = found
        return at, f"{at:.3f} [{bookie}] {frame.describe()}"

    def forged_answer(self, bookie: str, entry: int) -> tuple[float, str] | None:
        """When the harness answered ``bookie``'s add of ``entry`` with a forged error."""
        return self._first(bookie, entry, lambda frame: frame.decision == FORGED)

    def request(self, bookie: str, entry: int) -> tuple[float, str] | None:
        """When the client's first add of ``entry`` to ``bookie`` reached its proxy."""
        return self._first(bookie, entry, lambda frame: frame.info.direction.value == "request")

    def _first(
        self, bookie: str, entry: int, wanted: Callable[[FrameRecord], bool]
    ) -> tuple[float, str] | None:
        for frame in self.record.frames:
            mine = self.names.get(frame.proxy) == bookie and frame.info.entry_id == entry
            if mine and wanted(frame):
                return frame.at, f"{frame.at:.3f} [{bookie}] {frame.describe()}"
        return None

    def fault(self, what: str) -> tuple[float, str] | None:
        for at, done in self.faults:
            if done.startswith(what):
                return at, f"{at:.3f} fault: {done}"
        return None


def _in_order(*steps: tuple[float, str] | None, within: float | None = None) -> Window:
    """Reached when every step happened, in this order (the last within ``within`` s of the
    first, when given)."""
    found = [step for step in steps if step is not None]
    evidence = tuple(line for _at, line in found)
    if len(found) != len(steps):
        return Window(False, evidence)
    times = [at for at, _line in found]
    ordered = times == sorted(times)
    close = within is None or times[-1] - times[0] <= within
    return Window(ordered and close, evidence)


# #3005 -------------------------------------------------------------------------------------

_SHAPE_3005 = WriterShape(2, 1, 1)
_HOLD_ZK_3005_MS = 3000


def _check_3005(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
    log = _Log(example, role)
    held = log.fault(FaultKind.HOLD_METADATA.value)
    window = _in_order(
        log.delivered_answer("b2", 1),  # e1 acknowledged by b2 while e0's answer is held
        log.forged_answer("b2", 3),  # e3 fails on b2: the ensemble change starts
        held,  # its metadata write held
        log.delivered_answer("b1", 0),  # e0's answer released during the held write
    )
    if window.reached and held is not None:
        released = log.delivered_answer("b1", 0)
        assert released is not None
        window = Window(released[0] - held[0] < _HOLD_ZK_3005_MS / 1000, window.evidence)
    return window


BK_3005 = ClientScenario(
    "bk-3005-java-client",
    "apache/bookkeeper#3005",
    "An entry acknowledged to the application while its ensemble change is in flight",
    "E=2, WQ=AQ=1, four pipelined entries (e0, e2 to b1; e1, e3 to b2). b1's answer to e0 is "
    "held while b2 acknowledges e1; e3 fails on b2 (an error answer); e0's answer is released "
    "while the ensemble change's metadata write is in flight. PendingAddOp."
    "unsetSuccessAndSendWriteRequest calls sendAddSuccessCallbacks before the later pending "
    "adds are unset: e1 is acknowledged although it exists only on b2, which the new ensemble "
    "no longer names.",
    _SHAPE_3005,
    WriterRunPlan(
        _SHAPE_3005,
        4,
        FrameSchedule(
            {answer_key("b1", 0): hold_for(1500), answer_key("b2", 3): forge("EIO")},
            (PlannedFault(FaultKind.HOLD_METADATA, answer_key("b2", 3), None, _HOLD_ZK_3005_MS),),
        ),
        origin="apache/bookkeeper#3005",
    ),
    _check_3005,
)


# #4097 -------------------------------------------------------------------------------------

#: Two spares: the report's second change (e6 failing on b3 and b4) needs two new bookies;
#: with one the client gives up (NotEnoughBookies) and the window closes.
_SHAPE_4097 = WriterShape(4, 2, 2, spares=2)


_HOLD_ZK_4097_MS = 4500


def _check_4097(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
    log = _Log(example, role)
    paused, held = log.fault(FaultKind.PAUSE.value), log.fault(FaultKind.HOLD_METADATA.value)
    failed = log.fault("crash b3")  # e5 fails on b3: a first change, blocked
    resumed = log.delivered_answer("b1", 0)  # b1 resumes: e0 completes while it waits
    steps = (paused, held, failed, resumed)
    evidence = tuple(line for step in steps if step is not None for _at, line in [step])
    if paused is None or held is None or failed is None or resumed is None:
        return Window(False, evidence)
    blocked_until = held[0] + _HOLD_ZK_4097_MS / 1000
    reached = max(paused[0], held[0]) <= failed[0] <= resumed[0] < blocked_until
    # The report's second change (e6 on b3 and b4) needs two new bookies: with fewer the
    # client gives up (NotEnoughBookies) instead of queueing it, and the window closes.
    gave_up = [o for o in example.record.outcomes if o.code is not None and not o.acknowledged]
    if gave_up:
        evidence += (
            f"the client failed every add it had not acknowledged ({gave_up[0].describe()})",
        )
    # A change from the entry after the LAC replaces the last ensemble in place when no entry
    # of it was confirmed (here: from e0, b1 being paused): count bookies replaced, not
    # segments.
    first = tuple(range(example.record.shape.ensemble))
    replaced = {b for _first, bookies in example.record.segments for b in bookies} - set(first)
    segments = segments_text(example.record.segments)
    evidence += (f"metadata: {segments} ({len(replaced)} bookie(s) brought in)",)
    return Window(reached and not gave_up and bool(replaced), evidence)


BK_4097 = ClientScenario(
    "bk-4097-java-client",
    "apache/bookkeeper#4097",
    "Entries written to bookies the ledger's metadata does not name (NoSuchEntry on read)",
    "E=4 WQ=AQ=2 (the PR's test), two spare bookies. b1 is paused; e0..e3 are written, e1 "
    "and e2 complete; ZooKeeper stalls; e4..e6 are written: b3 crashes as e5 reaches it (a "
    "first ensemble change, whose metadata write waits), b4 as e6 does (a second, queued); "
    "b1 resumes, so e0, e3 and e4 "
    "complete while the change is blocked; ZooKeeper resumes. Entries end up on bookies the "
    "metadata does not name.",
    _SHAPE_4097,
    WriterRunPlan(
        _SHAPE_4097,
        7,
        FrameSchedule(
            events=(
                PlannedFault(FaultKind.PAUSE, None, "b1", 3000),
                PlannedFault(FaultKind.HOLD_METADATA, None, None, _HOLD_ZK_4097_MS),
                # The failed bookies crash (they start again when the run ends, so what they
                # stored is read back): a bookie failed by a forged error stays registered, and
                # once replaced the client's placement may pick it again for another position
                # (seen: b4 moved to b3's place), which decides whether e2 is readable.
                PlannedFault(FaultKind.CRASH, add_key("b3", 5), "b3"),
                PlannedFault(FaultKind.CRASH, add_key("b4", 6), "b4"),
            ),
        ),
        origin="apache/bookkeeper#4097",
        delayed=3,
        delay_ms=700,
    ),
    _check_4097,
)

# The throttle hypothesis ---------------------------------------------------------------------

_SHAPE_THROTTLE = WriterShape(2, 1, 1)
_HOLD_ZK_THROTTLE_MS = 1500


def _check_throttle(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
    """Reached when the change replacing b2 completed while the add of e3 waited on the
    throttle: after e2's request was sent (the application's adds run one after another on one
    thread, so its call for e3 begins, and takes the ensemble, as its call for e2 returns) and
    before e3's first request. Where e3 then went is for the judges: to b2, the replaced bookie,
    on the releases (the hypothesis: acknowledged by b2 alone, unreadable); to b3 with the
    candidate fix (reproducers/bookkeeper/patches), clean."""
    log = _Log(example, role)
    failed = log.forged_answer("b2", 1)
    held = log.fault(FaultKind.HOLD_METADATA.value)
    e2_sent = log.request("b1", 2)
    sent = [step for step in (log.request("b2", 3), log.request("b3", 3)) if step is not None]
    e3_sent = min(sent) if sent else None
    window = _in_order(failed, held, e2_sent, e3_sent)
    if held is None or e2_sent is None or e3_sent is None:
        return window
    released = held[0] + _HOLD_ZK_THROTTLE_MS / 1000
    replaced = [first for first, bookies in example.record.segments if 1 not in bookies]
    stale = log.request("b2", 3)
    evidence = (
        *window.evidence,
        f"{released:.3f} the held metadata write released (the change completes)",
        f"metadata: {len(example.record.segments) - 1} ensemble change(s); b2 out from "
        + (f"e{replaced[0]}" if replaced else "nowhere"),
        "e3 went to b2, the replaced bookie"
        if stale is not None and stale[0] > released
        else "e3 went to the new ensemble only",
    )
    during_wait = e2_sent[0] < released < e3_sent[0]
    return Window(window.reached and during_wait and bool(replaced) and replaced[0] <= 3, evidence)


THROTTLE = ClientScenario(
    "throttle-stale-ensemble-java-client",
    "a hypothesis read from LedgerHandle.asyncAddEntry (4.17.3), issue 29",
    "An add throttled across an ensemble change goes to the replaced bookie",
    "E=2 WQ=AQ=1, the client's throttle at 1 add a second, four adds. asyncAddEntry takes the "
    "current ensemble (PendingAddOp.create) before doAsyncAddEntry waits on the throttle "
    "(RateLimiter.acquire), and the ensemble change resends only the adds already pending. "
    "b2's answer to e1 is a forged EIO: the change replacing b2 starts, its metadata write "
    "held 1.5 s; e3 takes the old ensemble while it waits on the throttle, the change "
    "completes, and e3 goes to b2, which the metadata no longer names for it. If b2 "
    "acknowledges it, the client acknowledges an entry no reader following the metadata finds.",
    _SHAPE_THROTTLE,
    WriterRunPlan(
        _SHAPE_THROTTLE,
        4,
        FrameSchedule(
            {answer_key("b2", 1): forge("EIO")},
            (
                PlannedFault(
                    FaultKind.HOLD_METADATA, answer_key("b2", 1), None, _HOLD_ZK_THROTTLE_MS
                ),
            ),
        ),
        origin="throttle hypothesis (issue 29)",
    ),
    _check_throttle,
    client_properties={"throttle": "1"},
)

# #4651 -------------------------------------------------------------------------------------

_SHAPE_4651 = WriterShape(2, 2, 1, spares=2)
#: Large enough that a stalled connection's socket buffers fill (on localhost the kernel
#: takes several MiB: 3 MiB entries did not fill them) and netty's channel becomes unwritable
#: (its high-water mark is 512 KiB) within the first adds.
_ENTRY_BYTES_4651 = 3 * 1024 * 1024
_STALL_4651_MS = 4000


def _check_4651(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
    """Reached when the client acknowledged an entry on the strength of answers from bookies
    the ledger's metadata does not name for it: such an answer came before the callback, and
    none from a bookie the metadata names (the report: entries written to [BK1, BK2], their
    callbacks sent, ZooKeeper recording [BK3, BK4] for them)."""
    log = _Log(example, role)
    record = example.record
    stalls = (log.fault("stall b1"), log.fault("stall b2"))
    evidence = [line for step in stalls if step is not None for _at, line in [step]]
    evidence.append(f"metadata: {segments_text(record.segments)}")
    reached = False
    for outcome in record.outcomes:
        if not outcome.acknowledged or outcome.entry_id is None or outcome.at is None:
            continue
        entry = outcome.entry_id
        _first, named = metadata_write_set(record.segments, entry, record.shape.write_quorum)
        answers = {
            bookie: log.delivered_answer(f"b{bookie + 1}", entry)
            for bookie in range(record.shape.bookies)
        }
        before = {b: a for b, a in answers.items() if a is not None and a[0] <= outcome.at}
        if before and not set(before) & named:
            reached = True
            evidence.extend(line for _at, line in before.values())
            evidence.append(
                f"{outcome.at:.3f} callback: {outcome.describe()} (no answer yet from "
                f"{', '.join(f'b{b + 1}' for b in sorted(named))}, its write set in the metadata)"
            )
    return Window(reached, tuple(evidence))


BK_4651 = ClientScenario(
    "bk-4651-java-client",
    "apache/bookkeeper#4651",
    "ZooKeeper records the new bookies for entries written to the old ones",
    "E=2 WQ=2 AQ=1, waitTimeoutOnBackpressureMs=0 (fail an add at once on an unwritable "
    "channel), 3 MiB entries. The client's connections to b1 and b2 stall: the first entries "
    "are on their way to both, a later one fails at once (the channels are not writable), so "
    "the client "
    "changes its ensemble from LAC+1 = e0 to b3,b4; then e0 and e1 succeed on b1 and b2 and "
    "complete while the change's callback waits. The entries are on b1,b2; the metadata names "
    "b3,b4 for them. (A narrow race: the report's own words.)",
    _SHAPE_4651,
    WriterRunPlan(
        _SHAPE_4651,
        8,
        FrameSchedule(
            events=(
                PlannedFault(FaultKind.STALL, None, "b1", _STALL_4651_MS),
                PlannedFault(FaultKind.STALL, None, "b2", _STALL_4651_MS),
            ),
        ),
        origin="apache/bookkeeper#4651",
    ),
    _check_4651,
    client_properties={"waitTimeoutOnBackpressureMs": "0"},
    entry_bytes=_ENTRY_BYTES_4651,
)

# #4812 -------------------------------------------------------------------------------------

_SHAPE_4812 = WriterShape(2, 2, 2)


def _check_4812(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
    """Reached when the recovery closed the ledger below the writer's next add, both bookies
    of the writer's ensemble were then restarted without their data, and that add reached
    them (and was answered) after both restarts."""
    log = _Log(example, role)
    record = example.record
    takeover = record.takeover
    if takeover is None or takeover.last_entry is None:
        return Window(False, ("the recovery did not close the ledger",))
    closed = (takeover.returned_at, takeover.describe())
    wiped = (log.fault("restart empty b1"), log.fault("restart empty b2"))
    later = takeover.last_entry + 1
    answers = tuple(log.delivered_answer(b, later, FrameKind.ADD) for b in ("b1", "b2"))
    window = _in_order(closed, *wiped, *sorted(a for a in answers if a is not None))
    reached = window.reached and all(a is not None for a in answers)
    outcome = next((o for o in record.outcomes if o.index == later), None)
    evidence = window.evidence
    if outcome is not None:
        evidence += (f"{outcome.at or 0:.3f} callback: {outcome.describe()}",)
    if record.close_error:
        evidence += (f"the writer's close: {record.close_error}",)
    return Window(reached, evidence)


BK_4812 = ClientScenario(
    "bk-4812-java-client",
    "apache/bookkeeper#4812",
    "An add acknowledged after recovery closed the ledger below it, on bookies replaced at the "
    "same address",
    "E=2 WQ=AQ=2 on three bookies. The writer adds e0 and waits. Another client recovers the "
    "ledger (the report: the decommission's autorecovery), closing it at e0 and fencing b1 and "
    "b2; then b1 and b2 are replaced one at a time by fresh bookies at the same addresses "
    "(restarted without their data: their fence is gone). The writer's next add, e1, goes to "
    "its ensemble b1,b2, which accept it: e1 is acknowledged (no fencing error), beyond the "
    "ledger's end (e0); the writer's close fails with a metadata version error. (The report's "
    "decommission also copies e0 to the spare first; here e0 is lost with the wiped bookies, "
    "by the plan.)",
    _SHAPE_4812,
    WriterRunPlan(
        _SHAPE_4812,
        2,
        origin="apache/bookkeeper#4812",
        recover_after=1,
        recover_delay_ms=500,
        after_recovery=(
            PlannedFault(FaultKind.RESTART_EMPTY, None, "b1"),
            PlannedFault(FaultKind.RESTART_EMPTY, None, "b2"),
        ),
    ),
    _check_4812,
)

# A fence that a restart loses -----------------------------------------------------------

_SHAPE_FENCE_LOST = WriterShape(3, 2, 2)


def _status_name(frame: FrameRecord) -> str | None:
    """The status of an answer, by its name (None: the frame carries none)."""
    return None if frame.info.status is None else frame.info.status.name


def _fence_lost_check(
    restart: FaultKind,
) -> WindowCheck:
    """The window of a lost fence whose bookie b3 restarts as ``restart`` says."""

    def check(example: Example[WriterRunPlan, WriterRecord], role: WriterRole) -> Window:
        """Reached when the recovery fenced b3 while b3 held nothing of the ledger (its fence
        read answered ``ENOENTRY``) and closed the ledger below e1, b3 was then restarted
        with its data, and the writer's e1 reached b3 after that and was answered: refused
        (``EFENCED``: the fence held, the window reached and clean), or accepted and answered
        by b2 as well (up after its crash), so that e1 could be acknowledged."""
        log = _Log(example, role)
        record = example.record
        takeover = record.takeover
        if takeover is None or takeover.last_entry is None:
            return Window(False, ("the recovery did not close the ledger",))
        fenced_empty = log._first(
            "b3",
            -1,
            lambda frame: (
                frame.info.direction.value == "response"
                and frame_kind(frame) is FrameKind.FENCE_READ
                and frame.info.status is not None
                and frame.info.status.name in ("ENOENTRY", "ENOLEDGER")
            ),
        )
        closed = (takeover.returned_at, takeover.describe())
        later = takeover.last_entry + 1
        window = _in_order(
            log.fault("crash b2"),
            fenced_empty,
            closed,
            log.fault(f"{restart.value} b3"),
            log.delivered_answer("b3", later, FrameKind.ADD),
        )
        b2_answer = log.delivered_answer("b2", later, FrameKind.ADD)
        b3_frame = log.delivered_answer_frame("b3", later, FrameKind.ADD)
        held = b3_frame is not None and _status_name(b3_frame[1]) == "EFENCED"
        outcome = next((o for o in record.outcomes if o.index == later), None)
        evidence = window.evidence + ((b2_answer[1],) if b2_answer is not None else ())
        if outcome is not None:
            evidence += (f"{outcome.at or 0:.3f} callback: {outcome.describe()}",)
        return Window(window.reached and (held or b2_answer is not None), evidence)

    return check


_FENCE_LOST_STORY = (
    "E=3 WQ=AQ=2 on four bookies. The writer adds e0 (to b1, b2). b2 crashes; another client "
    "recovers the ledger: b1 answers its fence read, b3, which holds nothing of the ledger, "
    "answers NoSuchEntry (ReadLastConfirmedOp counts that towards the fencing quorum; the bookie "
    "fences the ledger in memory, but journals no master key for it, so replaying the journal "
    "drops the fence); the recovery writes e0 back (b4 replacing b2) and closes the ledger at "
    "e0. {restart} b2 comes back. The writer's e1 goes to b2 and b3: b2 was never fenced; if "
    "b3 lost its fence, both accept it: e1 is acknowledged beyond the ledger's end, with no "
    "bookie wiped."
)


def _fence_lost(
    name: str, title: str, restart_story: str, *restart: PlannedFault
) -> ClientScenario:
    """The lost fence with b3's restart (and what comes before it) as ``restart`` says."""
    return ClientScenario(
        name,
        "a hypothesis read from BookieImpl's journal replay (4.17.3), issue 29",
        title,
        _FENCE_LOST_STORY.format(restart=restart_story),
        _SHAPE_FENCE_LOST,
        WriterRunPlan(
            _SHAPE_FENCE_LOST,
            2,
            origin="fence lost on restart (issue 29)",
            recover_after=1,
            recover_delay_ms=300,
            before_recovery=(PlannedFault(FaultKind.CRASH, None, "b2"),),
            after_recovery=(*restart, PlannedFault(FaultKind.RESTART, None, "b2")),
        ),
        _fence_lost_check(restart[-1].kind),
    )


#: b3 crashes before its next checkpoint (the finding as first shown).
FENCE_LOST = _fence_lost(
    "fence-lost-on-restart-java-client",
    "A fence on a bookie that holds none of the ledger's entries is lost when it restarts",
    "b3 is killed at once (before its SyncThread's next checkpoint) and restarts with its data;",
    PlannedFault(FaultKind.RESTART, None, "b3"),
)
#: b3 crashes after its next checkpoint: is the fence in what the checkpoint made durable?
FENCE_LOST_AFTER_CHECKPOINT = _fence_lost(
    "fence-lost-after-checkpoint-java-client",
    "The lost fence, with b3 killed after its ledger storage's next checkpoint",
    "The bookies' checkpoint interval (flushInterval) passes: on DbLedgerStorage b3's "
    "SyncThread has checkpointed its ledger storage since (SortedLedgerStorage has no "
    "periodic checkpoint: it waits for nothing there); then b3 is killed and restarts with "
    "its data;",
    PlannedFault(FaultKind.AWAIT_CHECKPOINT),
    PlannedFault(FaultKind.RESTART, None, "b3"),
)
#: b3 is stopped as an operator stops it: does a clean shutdown keep the fence?
FENCE_LOST_ON_CLEAN_RESTART = _fence_lost(
    "fence-lost-on-clean-restart-java-client",
    "The lost fence, with b3 stopped cleanly (SIGTERM) and started again",
    "b3 is stopped as an operator stops it (SIGTERM: BookKeeper's shutdown closes the journal "
    "and flushes the ledger storage) and started again with its data;",
    PlannedFault(FaultKind.CLEAN_RESTART, None, "b3"),
)

#: The scenarios, by name (the names the command line knows, checked here).
REPORTS: dict[str, ClientScenario] = {
    scenario.name: scenario
    for scenario in (
        BK_3005,
        BK_4097,
        BK_4651,
        BK_4812,
        FENCE_LOST,
        FENCE_LOST_AFTER_CHECKPOINT,
        FENCE_LOST_ON_CLEAN_RESTART,
        THROTTLE,
    )
}
if tuple(REPORTS) != REPORT_SCENARIOS:
    raise ValueError(f"conformance.javaclient.REPORT_SCENARIOS must be {tuple(REPORTS)}")


def window_of(report: ClientScenario, example: Any) -> Window:
    return report.check(example, report.role())


@dataclass(frozen=True)
class ReportVerdict:
    """What a run says of its report's bug: the scenario's exit code and why, in words."""

    exit_code: int
    says: str


#: The exit codes of a report scenario (issue 46): what happened to the report's bug.
REPRODUCED, REACHED_CLEAN, NOT_DECIDED = 1, 0, 2


def report_verdict(
    report: ClientScenario, outcome: Outcome, window: Window | None
) -> ReportVerdict:
    """The report's bug **reproduced** (1: the interleaving reached and an invariant broken,
    the data loss each report describes), the window **reached and clean** (0), or neither
    (2: the window not reached, or reached by a run that then diverged from the model or
    failed, so that nothing can be said of the report). A divergence met on the way is the
    run's finding, reported as itself (its class: conformance.javaclient.divergences), never
    as the report's bug."""
    source = report.source
    if window is None:
        why = outcome.error or "the run left no example to read"
        return ReportVerdict(NOT_DECIDED, f"not reached: {why}; undecided about {source}")
    if not window.reached:
        return ReportVerdict(
            NOT_DECIDED,
            f"not reached: the run's frames do not show the interleaving of {source} (the "
            "window's evidence below says how far it got); undecided about it",
        )
    if outcome.violations:
        broken = ", ".join(outcome.violations)
        return ReportVerdict(
            REPRODUCED, f"reproduced: the interleaving of {source} was reached and broke {broken}"
        )
    if outcome.divergences or outcome.error:
        what = "diverged from the model" if outcome.divergences else "could not be judged"
        return ReportVerdict(
            NOT_DECIDED,
            f"reached, but the run then {what} (below, as itself): undecided about {source}",
        )
    return ReportVerdict(
        REACHED_CLEAN,
        f"reached and clean: the interleaving of {source} happened, and every invariant held",
    )


__all__ = [
    "BK_3005",
    "BK_4097",
    "BK_4651",
    "BK_4812",
    "FENCE_LOST",
    "FENCE_LOST_AFTER_CHECKPOINT",
    "FENCE_LOST_ON_CLEAN_RESTART",
    "NOT_DECIDED",
    "REACHED_CLEAN",
    "REPORTS",
    "REPORT_ADD_TIMEOUT_S",
    "REPRODUCED",
    "THROTTLE",
    "ClientScenario",
    "ReportVerdict",
    "Window",
    "answer_key",
    "report_verdict",
    "window_of",
]
