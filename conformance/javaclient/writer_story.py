"""The model's story of a Java-client writer run, and the judgement of what the client did.

The run (:mod:`.writer_role`): the real Java client, the spec's writer ``c1``, creates a
ledger of a :class:`~.writer_plans.WriterShape` on E + 1 bookies (one spare), sends its adds
pipelined through one frame proxy per bookie, and closes the ledger; a dropped add times out
in the client (its add timeout), which then changes its ensemble. Afterwards every entry is
read back from every bookie directly.

What was observed becomes the model's steps (the spec's action names, under the
configuration of the run: Bookies = E + 1, Clients = 1, E/WQ/AQ, SendLimit = InflightLimit =
the entries), each taken where the frame log shows it, the invariants checked after each:

========================================  ===================================================
what was observed                          the model's step
========================================  ===================================================
``createLedger`` (before any frame)        ``ClientCreatesLedger``: the first ensemble, named
                                           b1..bE by position (the model's CHOOSE)
the first add frame of a new entry         ``ClientSendsAddEntryRequests``; the bookies whose
                                           frame a proxy dropped, or that got it after the
                                           client timed it out, get a lost message
a forged error answer reaching the client  none yet: the client starts its change, no add
                                           completes until it ends (answers are held), and
                                           the change is taken where its resends show
an add frame the model's writer has no     ``ClientChangesEnsemble`` (as many as it takes:
open add of that entry to that bookie      the client may change twice before it resends),
                                           each followed by ``ClientResendsPendingAddOp``
                                           for every pending add, lowest entry first
a bookie's answer at the proxy             ``BookieSendsAddConfirmedResponse`` (or
                                           ``...AddFencedResponse``), when the request reached
                                           the bookie; the answer lost if it reached the
                                           client after its timeout (:func:`add_fates`)
that answer delivered to the client        ``ClientReceivesAddConfirmedResponse`` (ignored,
                                           with a note, when the model's client no longer
                                           takes it: the bookie left the ensemble)
the callback of ``asyncAddEntry``          no step: the entry must be confirmed in the model
(``System.nanoTime`` = the frames' clock)  by then (the writer's LAC covers it), else the
                                           client acknowledged what the spec's writer had not
``close`` returned                         ``ClientClosesLedgerSuccess``: the metadata's last
                                           entry and ensembles must be the model's
========================================  ===================================================

Every add the model's writer sends must show as one frame (a dropped one too), and every
frame must be such an add: one the model's writer sent and no frame matched yet. Where the
model offers several ensemble changes, :func:`judge` tells the alternatives until one explains
the run. Finally the invariant that matters to a
user is checked on the real cluster itself: every entry the client acknowledged must be
returned by a bookie of its write set in the closed ledger's metadata (a violation whatever
the model says: #4097's unreadable entries would show here).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from adapters.bookkeeper.status import StatusCode
from adapters.javaclient.pipelined_adds import AddOutcome, code_name
from adapters.netproxy import DeliveryRecord, FrameRecord
from conformance import translation
from conformance.javaclient import observed
from conformance.javaclient.metadata_writes import MetadataWrite
from conformance.javaclient.model_replay import Judgement, Stuck
from conformance.javaclient.observed import (
    CONCURRENT_AT_CLIENT_S,
    FORGED,
    FrameKind,
    JavaEvent,
    Phase,
    java_events,
    recovery_reads_fenced,
)
from conformance.javaclient.plan_wipes import ReadabilityBeyondWipes
from conformance.javaclient.story import (
    RECOVERER,
    RECOVERY_CLOSE,
    RECOVERY_KINDS,
    RecoverySteps,
    RecoveryStory,
)
from conformance.javaclient.writer_plans import WriterShape
from conformance.live.faults import FaultEvent
from conformance.observations import Observation
from conformance.verdict import Verdict, run_verdict
from model.bookkeeper.action_table import Actor, Move, WriteEnd, the_action
from model.bookkeeper.action_table import Phase as ProtocolPhase
from model.bookkeeper.actions import Label, successors, writeset
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import FAILOVER, JAVA_WRITER, Reading
from model.bookkeeper.records import (
    CLIENT_CLOSING,
    DELIVERED,
    STATUS_OPEN,
    AddEntryRequest,
    PendingAddOp,
    bookie_name,
)
from model.bookkeeper.scripted import ScriptedStep, enabled, step
from model.bookkeeper.scripted import take as take_step

WRITER = "c1"
#: The writer's actions, each found by what it is in the action table.
_CREATE = the_action(actor=Actor.CLIENT, phase=ProtocolPhase.CREATE)  # ClientCreatesLedger
_SEND_ADDS = observed.send_action(FrameKind.ADD)  # ClientSendsAddEntryRequests
_CHANGE = the_action(  # ClientChangesEnsemble
    actor=Actor.CLIENT, phase=ProtocolPhase.ENSEMBLE_CHANGE, move=Move.NONE, recovery=False
)
_RESEND = the_action(  # ClientResendsPendingAddOp
    actor=Actor.CLIENT, phase=ProtocolPhase.ENSEMBLE_CHANGE, move=Move.SEND, recovery=False
)
_CLOSE = the_action(  # ClientClosesLedgerSuccess
    actor=Actor.CLIENT, phase=ProtocolPhase.CLOSE, recovery=False, write_ends=WriteEnd.SUCCEEDS
)
_RESTARTS_EMPTY = the_action(actor=Actor.FAULT)  # BookieRestartsEmpty
_CLOSE_FAILS = the_action(  # ClientClosesLedgerFail
    actor=Actor.CLIENT,
    phase=ProtocolPhase.CLOSE,
    recovery=False,
    write_ends=WriteEnd.VERSION_MISMATCH,
)


@dataclass(frozen=True)
class Takeover:
    """What the second client of a fail-over run (``--role both``) did: it recovered the
    writer's ledger (``openLedger``) after the writer's first ``after_adds`` adds."""

    after_adds: int
    #: When ``openLedger`` started and returned (``time.monotonic()``, the frames' clock).
    started_at: float
    returned_at: float
    #: The last entry of the ledger as the recovery closed it (None: it did not).
    last_entry: int | None
    #: Why ``openLedger`` failed, if it did.
    error: str | None = None

    def describe(self) -> str:
        end = (
            f"failed: {self.error}"
            if self.error
            else f"closed the ledger at e{self.last_entry}"
            if self.last_entry is not None
            else "returned with the ledger not closed"
        )
        return (
            f"{self.started_at:.3f} the second client recovers the ledger (after the writer's "
            f"first {self.after_adds} adds); {self.returned_at:.3f} {end}"
        )


@dataclass(frozen=True)
class WriterRecord:
    """Everything a writer run observed, as plain data (a recorded run can be judged again)."""

    ledger_id: int
    shape: WriterShape
    entries: int
    #: Proxy name -> the model's bookie index in this run (0 for b1: position 0 of the first
    #: ensemble; E for the spare).
    bookie_of_proxy: Mapping[str, int]
    frames: Sequence[FrameRecord]
    deliveries: Mapping[int, DeliveryRecord]
    #: The callbacks of the client's adds, in add order.
    outcomes: Sequence[AddOutcome]
    #: The metadata after the run: ``(first entry, model bookie indexes by position)``.
    segments: Sequence[tuple[int, tuple[int, ...]]]
    #: The closed ledger's last entry (None: not closed).
    closed_last_entry: int | None
    #: When ``close`` returned (``time.monotonic()``), None if it failed.
    closed_at: float | None = None
    close_error: str | None = None
    #: Entry -> the model bookies that returned it when read directly after the run.
    stored: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    #: The model bookies that could not be read back (down after a crash the plan made).
    unreachable: tuple[int, ...] = ()
    #: The client's add timeout (``addEntryTimeoutSec``) and how often it looks for timed-out
    #: requests (``timeoutMonitorIntervalSec``): together they say when an answer came too late.
    add_timeout_s: float = 1.0
    timeout_check_s: float = 1.0
    #: Each acknowledged entry read back by the Java client from the closed ledger: ``OK``,
    #: ``wrong data`` or the client's error (empty: not read, or recorded before reads were).
    client_reads: Mapping[int, str] = field(default_factory=dict)
    #: Model bookie -> when the plan wiped it (restarted it without its data): the copies it
    #: held then are lost by the plan, not by the client.
    wiped: Mapping[int, float] = field(default_factory=dict)
    #: Model bookie -> the windows ``(start, end)`` in which the plan stalled its proxy (it
    #: read nothing from the client): a frame it read at a stall's end may have left the
    #: client at any moment of the stall, so its proxy time says nothing of its delay.
    stalled: Mapping[int, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    #: Model bookie -> when the plan reset the client's connections to it: an answer the
    #: proxy handed the client just before may never have been read.
    resets: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    #: Model bookie -> when the plan restarted it with its data (killed, started again).
    restarts: Mapping[int, tuple[float, ...]] = field(default_factory=dict)
    #: The second client's recovery of the ledger (None: a writer run, nobody else touched it).
    takeover: Takeover | None = None
    #: The other ledgers the client wrote together with this one in the run (each its own
    #: record: its ledger id, its bookie names; the same frames).
    others: tuple[WriterRecord, ...] = ()
    #: Every fault the run's plan injected and every heal, in order (the frames' clock; the
    #: first ledger's record keeps them): the wipes, stalls, resets and restarts above are
    #: what the judge reads of them.
    faults: tuple[FaultEvent, ...] = ()
    #: The writes of the ledger's metadata through the ZooKeeper proxy while the plan was
    #: applied (ensemble changes, the close), with when each was sent and answered: where
    #: they came among the answers is part of a finding's recorded order.
    metadata_writes: tuple[MetadataWrite, ...] = ()


def timeout_check_interval_s(add_timeout_s: int, read_timeout_s: int = 5) -> int:
    """The client's ``timeoutMonitorIntervalSec`` when it is not set: half the least of the
    add-quorum, add and read timeouts, at least 1 s (``ClientConfiguration``, 4.x). The
    add-quorum timeout is off (-1) by default, which makes the interval 1 s."""
    add_quorum_timeout_s = -1
    least = min(add_quorum_timeout_s, add_timeout_s, read_timeout_s)
    return max(int(least / 2), 1)  # Java's int division truncates toward zero


class AddFate(enum.Enum):
    """What the client's add timeout made of one add request, in the spec's terms."""

    #: Its answer reached the client before the client timed the add out.
    ON_TIME = "on time"
    #: The client timed it out before it reached its bookie (or it never did, or the bookie
    #: never answered): the spec's lost request (the bookie may store it LATE, after the
    #: change).
    REQUEST_TIMED_OUT = "request timed out"
    #: The bookie had it in time; its answer reached the client after the timeout, or never:
    #: the spec's lost answer.
    ANSWER_TIMED_OUT = "answer timed out"


#: Clock skew allowed between the proxy's log and the client's timer (the client starts its
#: timer just before the proxy sees the frame, and its checks run a little late).
_TIMER_SLACK_S = 0.05


def add_fates(record: WriterRecord, events: Sequence[JavaEvent]) -> dict[int, tuple[AddFate, ...]]:
    """Request frame id -> the fates its timing allows, the likeliest first.

    The client times an add out at some moment between ``add_timeout_s`` and
    ``add_timeout_s + timeout_check_s`` after it sent it (its checker runs every interval): an
    answer back before the first is on time, a request that reached its bookie after the
    second timed out; in between both readings are possible, and the judge tries each. A
    frame its proxy read as a stall of its bookie ended may have left the client when the
    stall began (:func:`_sent_no_earlier_than`): it may have timed out before its bookie had
    it, however soon it was answered."""
    first_cut = record.add_timeout_s - _TIMER_SLACK_S
    last_cut = record.add_timeout_s + record.timeout_check_s + _TIMER_SLACK_S
    middle = record.add_timeout_s + record.timeout_check_s / 2
    answers = {
        observed.pairing_key(e.frame): e
        for e in events
        if e.phase is Phase.RECEIVED and e.kind is FrameKind.ADD
    }
    fates: dict[int, tuple[AddFate, ...]] = {}
    for event in events:
        if event.phase is not Phase.SENT or event.kind is not FrameKind.ADD:
            continue
        request = event.frame.frame_id
        reached = record.deliveries.get(request)
        if not event.delivered or reached is None:
            fates[request] = (AddFate.REQUEST_TIMED_OUT,)
            continue
        if not event.answered:
            # Handed to its bookie, and no answer came (a crash, a reset connection): the
            # bookie may have stored it, its answer lost (a later read of it tells).
            fates[request] = (AddFate.REQUEST_TIMED_OUT, AddFate.ANSWER_TIMED_OUT)
            continue
        request_delay = reached.at - event.at
        # Read at a stall's end, the frame may have waited in the socket since the stall
        # began: the client's timer may have run that long already.
        stalled_delay = reached.at - _sent_no_earlier_than(record, event)
        answer = answers.get(observed.pairing_key(event.frame))
        answer_delay = float("inf") if answer is None else answer.at - event.at
        possible = []
        if answer_delay < last_cut:
            possible.append(AddFate.ON_TIME)
        if (answer_delay > first_cut or _lost_in_a_reset(record, answer)) and (
            request_delay < last_cut
        ):
            possible.append(AddFate.ANSWER_TIMED_OUT)
        if stalled_delay > first_cut:
            possible.append(AddFate.REQUEST_TIMED_OUT)
        if request_delay > middle:
            likeliest = AddFate.REQUEST_TIMED_OUT
        elif answer_delay > middle:
            likeliest = AddFate.ANSWER_TIMED_OUT
        else:
            likeliest = AddFate.ON_TIME
        fates[request] = (likeliest, *(f for f in possible if f is not likeliest))
    return fates


#: How soon after a stall ends its proxy reads what the client sent during it.
_STALL_READ_S = 0.25


#: How long before a reset of its connection an answer handed to the client may go unread
#: (a reset discards what the client's socket has not read yet).
_UNREAD_BEFORE_A_RESET_S = 0.05


def _lost_in_a_reset(record: WriterRecord, answer: JavaEvent | None) -> bool:
    """Whether ``answer`` reached the client's socket so shortly before the plan reset the
    connection that the client may never have read it."""
    if answer is None:
        return False
    return any(
        0 <= reset - answer.at <= _UNREAD_BEFORE_A_RESET_S
        for reset in record.resets.get(answer.bookie, ())
    )


def _sent_no_earlier_than(record: WriterRecord, event: JavaEvent) -> float:
    """The earliest moment the client can have sent ``event``'s frame: when its proxy read
    it, or, read as a stall of its bookie's proxy ended, when that stall began."""
    for start, end in record.stalled.get(event.bookie, ()):
        if start <= event.at <= end + _STALL_READ_S:
            return start
    return event.at


def writer_config(
    shape: WriterShape, entries: int, clients: int = 1, reading: Reading = JAVA_WRITER
) -> ModelConfig:
    """The model's configuration of a writer run (``clients=2``: a fail-over run, whose
    recovering client is the model's ``c2``), read as ``reading``: by default the writer's
    (:data:`~.readings.JAVA_WRITER`: BookKeeper's placement may bring back a bookie that
    failed before and replaces failed bookies a change at a time; an add the client timed
    out may still reach its bookie, and an answer from outside the entry's write set is
    dropped; a resend carries the LAC the add was packaged with; a bookie takes adds as they
    arrive; each switch's evidence is in the reading)."""
    return reading.apply(
        ModelConfig(
            bookies=shape.bookies,
            clients=clients,
            ensemble_size=shape.ensemble,
            write_quorum=shape.write_quorum,
            ack_quorum=shape.ack_quorum,
            send_limit=entries,
            inflight_limit=entries,
        )
    )


def judge_reading(record: WriterRecord) -> Reading:
    """The reading ``record`` is judged under: the fail-over's (:data:`~.readings.FAILOVER`)
    for a run with a second client's recovery, the writer's (:data:`~.readings.JAVA_WRITER`)
    otherwise. The writer role's and the fail-over role's guidance take the same."""
    return JAVA_WRITER if record.takeover is None else FAILOVER


#: An ensemble change of the model's writer: the failed bookies and the new ensemble (masks).
ChangeKey = tuple[int, int]


def _receipt(event: JavaEvent) -> ScriptedStep:
    """The model's writer's step for the delivery of a bookie's answer to one of its adds."""
    assert event.entry_id is not None
    return step(
        observed.receive_action(event.kind, event.status),
        client=WRITER,
        peer=bookie_name(event.bookie),
        entry=translation.spec_entry_id(event.entry_id),
    )


def _ignored(label: Label) -> bool:
    """Whether ``label`` is a client's step that consumes a stale answer without effect."""
    return dict(label.detail).get("ignored") == 1


def _change_key(label: Label) -> ChangeKey:
    detail = dict(label.detail)
    return int(detail["failed"]), int(detail["ensemble"])


class _Kind(enum.IntEnum):
    FRAME = 0
    FAILURE = 1
    CALLBACK = 2
    TAKEOVER = 3
    WIPE = 4


#: Error answers on which the client fails the handle instead of changing its ensemble
#: (``PendingAddOp.writeComplete``): any other error starts an ensemble change at once.
_UNRECOVERABLE = frozenset({StatusCode.EFENCED, StatusCode.EUA})


@dataclass(frozen=True)
class _Failure:
    """The client told a bookie failed by an error answer the harness forged."""

    at: float
    bookie: int
    frame: FrameRecord


def forged_failures(record: WriterRecord) -> list[_Failure]:
    """When the client got each forged error answer that makes it change its ensemble: it
    starts the change then (its new ensemble begins after the LAC of that moment), however
    long the metadata write and the resends take to show."""
    failures = []
    for frame in record.frames:
        delivery = record.deliveries.get(frame.frame_id)
        if (
            frame.decision != FORGED
            or frame.info.ledger_id != record.ledger_id
            or frame.info.status in _UNRECOVERABLE
            or delivery is None
            or not delivery.delivered
        ):
            continue
        failures.append(_Failure(delivery.at, record.bookie_of_proxy[frame.proxy], frame))
    return failures


@dataclass(frozen=True)
class _Callback:
    at: float
    outcome: AddOutcome


def _failures_first(
    merged: list[tuple[float, int, int, object]],
) -> list[tuple[float, int, int, object]]:
    """``merged`` with the answer deliveries of other bookies that came within
    :data:`CONCURRENT_AT_CLIENT_S` before a forged failure moved after it: the client may
    have processed the failure first (its ensemble change then starts below the entries those
    answers complete, as its resends show). A connection's own deliveries keep their order."""
    out: list[tuple[float, int, int, object]] = []
    for item in merged:
        at, kind, _i, what = item
        if kind != _Kind.FAILURE:
            out.append(item)
            continue
        assert isinstance(what, _Failure)
        moved: list[tuple[float, int, int, object]] = []
        index = len(out)
        while index > 0 and at - out[index - 1][0] <= CONCURRENT_AT_CLIENT_S:
            index -= 1
            _before_at, before_kind, _j, before = out[index]
            if (
                before_kind == _Kind.FRAME
                and isinstance(before, JavaEvent)
                and before.phase is Phase.RECEIVED
                and before.bookie != what.bookie
            ):
                moved.insert(0, out.pop(index))
        out += [item, *moved]
    return out


class _WriterReplay(RecoveryStory):
    """The model fed with the writer's frames and callbacks (its ``c1``), and in a fail-over
    run with the recovering client's too (``c2``, through :class:`~.story.RecoverySteps`)."""

    def __init__(
        self,
        record: WriterRecord,
        cfg: ModelConfig,
        fates: Mapping[int, AddFate],
        prescribed: Sequence[ChangeKey] = (),
        spec_cfg: ModelConfig | None = None,
        failures_first: bool = False,
    ) -> None:
        super().__init__(cfg, spec_cfg or cfg)
        self.record = record
        #: Take each forged failure before the answers of other bookies delivered just
        #: before it (:func:`_failures_first`).
        self.failures_first = failures_first
        #: The recovering client's steps (a fail-over run's), set by :meth:`run`.
        self.recovery: RecoverySteps | None = None
        #: Request frame id -> what the client's timeout made of it (:func:`add_fates`).
        self.fates = fates
        #: An answer's pairing key -> its request's frame id.
        self.request_of: dict[object, int] = {}
        #: The requests that reached a proxy after the writer's close returned.
        self.sent_after_close: set[int] = set()
        #: The first ensemble changes (failed set, new ensemble), if prescribed; at each
        #: change the ones the model offered, and the one taken.
        self.prescribed = list(prescribed)
        self.options: list[list[ChangeKey]] = []
        self.chosen: list[ChangeKey] = []
        #: Requests sent again to a bookie that had them (their answers are ignored too).
        self.duplicates: set[tuple[str, int, object]] = set()
        #: Adds a fenced handle sent after the model's writer was done, which the client
        #: failed to its caller (their answers are ignored too).
        self.given_up: set[object] = set()
        #: (model entry, bookie) -> adds the model's writer sent that no frame matched yet.
        self.expected: dict[tuple[int, int], int] = {}
        #: (model entry, bookie) of every add the model's writer resent.
        self.resent: set[tuple[int, int]] = set()
        self.ensemble_changes = 0
        self.changed_at = 0.0
        #: A change the client started at a forged failure, whose resends no frame has shown
        #: yet: it is in progress (``changingEnsemble``), so no add completes and the
        #: writer's answers wait (:attr:`held_answers`) until a resend frame shows.
        self.changing = False
        self.held_answers: list[JavaEvent] = []
        #: The bookies of the forged failures the model's writer has not replaced yet, in
        #: the order the client learnt of them.
        self.reported_failures: list[int] = []
        #: Answers that reached the client when its writer no longer took them (released
        #: after an ensemble change, or after the close).
        self.stale_answers = 0
        #: Those answers' deliveries, in order (:meth:`_count_stale_answers_of_returned_bookies`).
        self.stale_deliveries: list[JavaEvent] = []
        #: Add frames read as a stall of their bookie's connection ended, which the model's
        #: writer cannot place (:meth:`sent_add`): the story is undecided about them.
        self.hidden_by_a_stall: list[str] = []
        #: The events :meth:`run` is taking (before the close, then after it), and all of them.
        self.events: Sequence[JavaEvent] = ()
        #: Request frame id -> when its proxy read it, of :attr:`events` (set by :meth:`run`).
        self.sent_at: dict[int, float] = {}
        self.all_events: Sequence[JavaEvent] = ()
        #: Where the model's bookies restart empty (the plan's wipes, in a fail-over), the
        #: copies the plan erased are its own loss, not a violation (:mod:`.plan_wipes`).
        self.wipes: ReadabilityBeyondWipes | None = None
        if cfg.max_crashes:
            self.wipes = ReadabilityBeyondWipes()
            self.wipes.observe(self.state)
            self.execution.invariants = self.wipes.replacing(self.execution.invariants)

    def taken(self, label: Label) -> None:
        """The adds the model's writer just sent: each must show as one frame at a proxy
        (a dropped frame too)."""
        if self.wipes is not None:
            self.wipes.observe(self.state)
        if label.action not in (_SEND_ADDS, _RESEND):
            return
        for message, _delivered in label.sent:
            key = (message.entry.id, message.bookie)  # type: ignore[union-attr]
            self.expected[key] = self.expected.get(key, 0) + 1
            if label.action == _RESEND:
                self.resent.add(key)

    # -- the model's writer ------------------------------------------------------------------

    def _writer_fragment_members(self, entry: int) -> int:
        c1 = self.state.clients[0]
        assert c1.curr_fragment is not None
        f = c1.curr_fragment
        return writeset(self.cfg, f.ensemble, entry, f.order)

    def _fate(self, request: JavaEvent) -> AddFate:
        return self.fates.get(request.frame.frame_id, AddFate.REQUEST_TIMED_OUT)

    def _lost_for(self, entry: int, bookies: int, since: float) -> set[str]:
        """Of ``bookies``, those whose add of ``entry`` sent from ``since`` on never reached
        them in time (dropped, held or paused past the client's timeout, or never sent at
        all) or that never answered it (crashed): the client times such an add out, which the
        spec's writer sees as a lost message."""
        lost = set()
        for b in range(self.cfg.bookies):
            if not bookies >> b & 1:
                continue
            frames = [
                e
                for e in self.events
                if e.phase is Phase.SENT
                and e.kind is FrameKind.ADD
                and e.bookie == b
                and e.entry_id == entry
                and e.at >= since
            ]
            if not frames or self._fate(frames[0]) is AddFate.REQUEST_TIMED_OUT:
                lost.add(bookie_name(b))
        return lost

    def _metadata_fragments(self) -> set[tuple[int, int]]:
        """The ledger's ensembles in the metadata as the model names fragments: (the spec's
        first entry id, the bookies as a mask). In a fail-over, not those that name a bookie
        only the recovering client wrote to: the recovery's own replacement, which it names
        in the metadata as it closes the ledger (the writer never sent it an add)."""
        recovery_only = self._recovery_only_bookies()
        return {
            (translation.spec_entry_id(first), sum(1 << b for b in bookies))
            for first, bookies in self.record.segments
            if not recovery_only & set(bookies)
        }

    def _recovery_only_bookies(self) -> set[int]:
        """The recovering client's replacements: the bookies it wrote to and the writer never
        did, and those it wrote entries back to without having fenced them (it replaced a
        bookie of the ensemble it fenced by them)."""
        if self.record.takeover is None:
            return set()
        sent = [e for e in self.all_events if e.phase is Phase.SENT]
        by_writer = {e.bookie for e in sent if e.kind is FrameKind.ADD}
        fenced = {e.bookie for e in sent if e.kind is FrameKind.FENCE_READ}
        written_back = {e.bookie for e in sent if e.kind is FrameKind.RECOVERY_ADD}
        return ({e.bookie for e in sent} - by_writer) | (written_back - fenced)

    def _moves_past_a_change(self, receive: ScriptedStep) -> bool:
        """Whether taking ``receive`` would move the model's writer's LAC past an entry the
        metadata starts a new ensemble at, which its current fragment is not: the client made
        that change before its LAC moved, so it comes first."""
        if not enabled(self.cfg, self.state, receive):
            return False
        c1 = self.state.clients[0]
        after = take_step(self.cfg, self.state, receive).state.clients[0]
        if after.lac == c1.lac:
            return False
        assert c1.curr_fragment is not None
        current = (c1.curr_fragment.first_entry_id, c1.curr_fragment.ensemble)
        return any(
            first == c1.lac + 1 and (first, ensemble) != current
            for first, ensemble in self._metadata_fragments()
        )

    def _change_the_recovery_read(self, first: JavaEvent) -> None:
        """Before the recovery starts: if its fence reads go to an ensemble the model's writer
        can change to, the writer's change came first (its metadata write committed before the
        recovery read the metadata and marked it IN_RECOVERY; its resends may show later)."""
        fenced = {
            e.bookie
            for e in self.all_events
            if e.kind is FrameKind.FENCE_READ
            and e.phase is Phase.SENT
            and first.at <= e.at <= first.at + CONCURRENT_AT_BOOKIE_S
        }
        wanted = sum(1 << b for b in fenced)
        current = self.state.clients[0].curr_fragment
        if current is None or current.ensemble == wanted:
            return
        shown = [
            _change_key(t.label)
            for t in successors(self.cfg, self.state)
            if t.label.action == _CHANGE
            and t.label.client == 0
            and _change_key(t.label)[1] == wanted
        ]
        if shown and self.change_ensemble(
            f"frame #{first.frame.frame_id}: the recovery fences "
            + ", ".join(bookie_name(b) for b in sorted(fenced))
            + ": the writer's change to that ensemble came before it read the metadata",
            first.at,
            among=shown,
        ):
            self.resend_all()

    def _take_the_change_the_metadata_shows(self, why: str, at: float) -> bool:
        """Take a ``ClientChangesEnsemble`` whose new fragment (first entry and bookies) is one
        of the ledger's ensembles in the metadata, and the resends it causes, if the model's
        writer can: True if taken."""
        named = self._metadata_fragments()
        shown = [
            _change_key(t.label)
            for t in successors(self.cfg, self.state)
            if t.label.action == _CHANGE
            and t.label.client == 0
            and (int(dict(t.label.detail)["first_entry_id"]), _change_key(t.label)[1]) in named
        ]
        if not shown or not self.change_ensemble(why, at, among=shown):
            return False
        self.resend_all()
        return True

    def change_ensemble(
        self, why: str, at: float, among: Collection[ChangeKey] | None = None
    ) -> bool:
        """Take a ``ClientChangesEnsemble`` (one of ``among``, if given) if the model's writer
        can: True if taken. ``at``: no later than this the client had changed it (its resends
        are logged from then).

        With several timed-out bookies the model may replace them all at once or a subset
        first (``partial_ensemble_changes``, as BookKeeper handles failures a change at a
        time); which one the client did shows only in what follows, so the change taken is
        the prescribed one (:func:`judge` tries the alternatives), else the spec's own: all
        of them at once when possible, else the largest subset that can be replaced. With more
        than one spare the replacements are a choice too: first the new ensemble whose bookies
        the ledger's metadata names together, if one does."""
        candidates = [
            t
            for t in successors(self.cfg, self.state)
            if t.label.action == _CHANGE and t.label.client == 0
        ]
        by_key = {
            _change_key(t.label): t
            for t in candidates
            if among is None or _change_key(t.label) in among
        }
        if not by_key:
            return False
        named = {ensemble for _first, ensemble in self._metadata_fragments()}
        # The bookie of the first forged failure not yet replaced is the one BookKeeper
        # replaces first (handleBookieFailure: the failures queued during a change wait for
        # the next one).
        reported = next(iter(self.reported_failures), None)
        keys = sorted(
            by_key,
            key=lambda key: (
                reported is not None and not key[0] >> reported & 1,
                -key[0].bit_count(),
                key[1] not in named,
                key,
            ),
        )
        index = len(self.chosen)
        prescribed = self.prescribed[index] if index < len(self.prescribed) else None
        key = prescribed if prescribed in by_key else keys[0]
        self.options.append(keys)
        self.chosen.append(key)
        transition = by_key[key]
        self.execution.apply_observed(transition, request=why)
        self.reported_failures = [b for b in self.reported_failures if not key[0] >> b & 1]
        self.ensemble_changes += 1
        self.changed_at = at
        return True

    # -- events ------------------------------------------------------------------------------

    def note_timeouts(self, events: Sequence[JavaEvent]) -> None:
        """Say which adds the story reads as timed out by their timing alone: the answer
        reached the client, too late."""
        answered = {
            observed.pairing_key(e.frame)
            for e in events
            if e.phase is Phase.RECEIVED and e.kind is FrameKind.ADD
        }
        for event in events:
            fate = self.fates.get(event.frame.frame_id)
            if event.phase is not Phase.SENT or fate in (None, AddFate.ON_TIME):
                continue
            if observed.pairing_key(event.frame) not in answered:
                continue  # never got through: lost whatever the time
            self.notes.append(
                f"frame #{event.frame.frame_id} (add e{event.entry_id} to "
                f"{bookie_name(event.bookie)}): {fate.value} (the client's add timeout is "
                f"{self.record.add_timeout_s:g} s): the spec's lost "
                f"{'request' if fate is AddFate.REQUEST_TIMED_OUT else 'answer'}"
            )

    def run(
        self,
        events: Sequence[JavaEvent],
        callbacks: Sequence[_Callback],
        failures: Sequence[_Failure] = (),
    ) -> None:
        self.events = events
        self.sent_at = {e.frame.frame_id: e.at for e in events if e.phase is Phase.SENT}
        closed_at = self.record.closed_at
        for event in events:
            if event.phase is Phase.SENT:
                self.request_of.setdefault(observed.pairing_key(event.frame), event.frame.frame_id)
                if closed_at is not None and event.at > closed_at:
                    self.sent_after_close.add(event.frame.frame_id)
        merged: list[tuple[float, int, int, object]] = [
            (e.at, _Kind.FRAME, i, e) for i, e in enumerate(events)
        ]
        merged += [(c.at, _Kind.CALLBACK, i, c) for i, c in enumerate(callbacks)]
        merged += [(f.at, _Kind.FAILURE, i, f) for i, f in enumerate(failures)]
        takeover = self.record.takeover
        if takeover is not None and self.recovery is None:
            self.recovery = RecoverySteps(self, self.all_events, self.record.add_timeout_s)
            merged.append((takeover.returned_at, _Kind.TAKEOVER, 0, takeover))
            # In a fail-over a wiped bookie's lost state (its fence above all) decides what it
            # answers both clients: the model's bookie restarts empty too.
            merged += [(at, _Kind.WIPE, b, b) for b, at in sorted(self.record.wiped.items())]
        merged.sort(key=lambda item: (item[0], item[1], item[2]))
        if self.failures_first:
            merged = _failures_first(merged)
        for _at, kind, _i, item in merged:
            if self.changing and not self._holds_during_a_change(kind, item):
                self._end_the_change()
            if kind is _Kind.TAKEOVER:
                assert isinstance(item, Takeover)
                self.recovered(item)
                continue
            if kind is _Kind.WIPE:
                assert isinstance(item, int)
                self.take(
                    step(_RESTARTS_EMPTY, bookie=bookie_name(item)),
                    request=f"the plan restarts {bookie_name(item)} without its data",
                )
                continue
            if kind is _Kind.CALLBACK:
                assert isinstance(item, _Callback)
                self.callback(item)
                continue
            if kind is _Kind.FAILURE:
                assert isinstance(item, _Failure)
                self.failure(item)
                continue
            assert isinstance(item, JavaEvent)
            if self.recovery is not None and item.kind in RECOVERY_KINDS:
                if item.kind is FrameKind.FENCE_READ and self.state.clients[1].status is None:
                    self._change_the_recovery_read(item)
                self.recovery.event(item)
                continue
            if item.kind is not FrameKind.ADD:
                if item.phase is Phase.SENT:
                    self.frame_divergences.append(
                        f"frame #{item.frame.frame_id} to {bookie_name(item.bookie)}: "
                        f"{item.frame.info.describe()}: the spec's writer sends only adds"
                    )
                continue
            if item.phase is Phase.SENT:
                resend = self.changing and self._needs_a_change(item)
                self.sent_add(item)
                if resend:
                    # The change's resends show: it ended (changingEnsemble is off).
                    self._end_the_change()
            elif item.phase is Phase.ANSWERED:
                self.answered(item)
            elif self.changing:
                self.held_answers.append(item)
            else:
                self.received_in_packaging_order(item)
        if self.changing:
            self._end_the_change()
        held, self.held_answers = self.held_answers, []
        for event in held:  # held for a change that never came: taken as they are
            self.received(event, final=True)
        self._settle_stale_answers()

    def received_in_packaging_order(self, event: JavaEvent) -> None:
        """Take an answer's delivery, after the sends of the adds the client had packaged
        before it processed the answer: an add whose frame leaves later but carries a LAC
        (its entry header) below the one this answer raises the model's writer to. The
        application's thread packages an add (``PendingAddOp.initiate``, with the handle's
        LAC of that moment) while the client's threads process answers, and the add's frame
        may leave the client after answers the proxy delivered before it."""
        while (packaged := self._next_new_add(event)) is not None and self._raises_past(
            event, packaged
        ):
            assert packaged.entry_id is not None
            self._send_up_to(
                translation.spec_entry_id(packaged.entry_id),
                f"frame #{packaged.frame.frame_id} to {bookie_name(packaged.bookie)}: add "
                f"e{packaged.entry_id}",
                packaged_earlier=True,
            )
        self.received(event)

    def _raises_past(self, event: JavaEvent, packaged: JavaEvent) -> bool:
        """Whether taking ``event``'s delivery would raise the model's writer's LAC above
        the one the add ``packaged`` carries."""
        lac = packaged.frame.info.lac
        if lac is None or event.entry_id is None:
            return False
        scripted = _receipt(event)
        return (
            self.state.clients[0].status == STATUS_OPEN
            and enabled(self.cfg, self.state, scripted)
            and take_step(self.cfg, self.state, scripted).state.clients[0].lac
            > translation.spec_entry_id(lac)
        )

    def _next_new_add(self, event: JavaEvent) -> JavaEvent | None:
        """The first frame of the next entry the client sends after ``event``, if any."""
        lap = translation.bk_entry_id(self.state.clients[0].lap)
        for later in self.events:
            if (
                later.at >= event.at
                and later.phase is Phase.SENT
                and later.kind is FrameKind.ADD
                and later.entry_id is not None
                and later.entry_id > lap
            ):
                return later
        return None

    def _holds_during_a_change(self, kind: int, item: object) -> bool:
        """Whether the client's change in progress goes on past ``item``: a bookie's answer,
        its delivery, another forged failure, an add frame (a new add goes to the current
        ensemble; the change's resends end it once taken: :meth:`run`); not a callback, a
        fault or the recovery."""
        if kind == _Kind.FAILURE:
            return True
        if kind != _Kind.FRAME:
            return False
        assert isinstance(item, JavaEvent)
        return item.kind is FrameKind.ADD

    def _needs_a_change(self, event: JavaEvent) -> bool:
        """Whether the model's writer must change its ensemble before ``event``'s add frame:
        an add it has not sent to that bookie, of an entry sent already or to a bookie outside
        the entry's write set (a resend to a replacement)."""
        assert event.entry_id is not None
        entry = translation.spec_entry_id(event.entry_id)
        if self.expected.get((entry, event.bookie)):
            return False
        c1 = self.state.clients[0]
        return not (entry > c1.lap and self._in_current_writeset(entry, event.bookie))

    def _end_the_change(self) -> None:
        self.changing = False
        self._release_held_answers()

    def _release_held_answers(self) -> None:
        """The change ended (its resends show): the answers that reached the client during it
        count now, as BookKeeper's next ``sendAddSuccessCallbacks`` completes them."""
        held, self.held_answers = self.held_answers, []
        for event in held:
            self.received(event)

    def recovered(self, takeover: Takeover) -> None:
        """The second client's ``openLedger`` returned: the ledger was closed by then (the
        spec's ``RecoveryClientClosesLedger``), at the end the model's recovery reaches."""
        recovery = self.recovery
        assert recovery is not None
        if recovery.fence_answers:
            recovery.settle_fencing(None)  # the client sent no recovery read
        if takeover.error is not None and takeover.last_entry is not None:
            # A failed recovery closes nothing (ReadOnlyLedgerHandle closes the ledger only
            # once every entry is written back): the writer, fenced, closed it over the
            # recovery's IN_RECOVERY (fenced_writer_closes), at its LAC.
            self.notes.append(f"the second client's recovery failed: {takeover.error}")
            if not self._writer_closed_at(
                translation.spec_entry_id(takeover.last_entry), "over the failed recovery"
            ):
                self.execution.add_divergence(
                    f"the second client's recovery failed and the ledger is closed at "
                    f"e{takeover.last_entry}, which the model's writer cannot have closed it at"
                )
            return
        if takeover.last_entry is None:
            self.notes.append(
                "the second client's recovery did not close the ledger"
                + (f": {takeover.error}" if takeover.error else "")
            )
            return
        real_last = translation.spec_entry_id(takeover.last_entry)
        recovery_close = step(RECOVERY_CLOSE, client=RECOVERER)
        if self.state.clients[1].status is None:
            # The recovery sent nothing: it found the ledger closed already (BookKeeper's
            # openLedger then returns it as it is), which only the writer can have done.
            if self._writer_closed_at(real_last, "before the recovery starts"):
                self.notes.append(
                    "the second client found the ledger closed by the writer: nothing to recover"
                )
            elif given_up := self._failed_to_the_caller(
                takeover.last_entry + 1, translation.bk_entry_id(self.state.clients[0].lac)
            ):
                # As at the writer's own close (close()): it failed these adds on an answer
                # that fails the handle (EUA, a forged EFENCED) and closed below them.
                self.notes.append(
                    f"the writer closed the ledger at e{takeover.last_entry}, below the model's "
                    f"writer's LAC, before the recovery started: it failed {', '.join(given_up)} "
                    "to its caller (it gave up; the spec's writer cannot); the second client "
                    "found the ledger closed"
                )
            else:
                self.execution.add_divergence(
                    f"the second client's recovery sent nothing and the ledger is closed at "
                    f"e{takeover.last_entry}, which the model's writer cannot have closed it at"
                )
            return
        if (
            enabled(self.cfg, self.state, recovery_close)
            and take_step(self.cfg, self.state, recovery_close).state.meta_last_entry != real_last
        ):
            # The ledger ends where the writer's LAC is, not where the recovery would close
            # it: the writer, fenced, closed it first (over IN_RECOVERY), and the recovery
            # found it closed (``fenced_writer_closes``).
            self._writer_closed_at(real_last, "after a fenced add, before the recovery's close")
        self.take(
            recovery_close,
            request=f"the second client's recovery ends with the ledger closed at "
            f"e{takeover.last_entry}",
            observed=Observation("metadata", "OK", success=True),
        )
        model_last = translation.bk_entry_id(self.state.meta_last_entry)
        if model_last != takeover.last_entry:
            self.execution.add_divergence(
                f"the second client's recovery closed the ledger at e{takeover.last_entry}; "
                f"the model's recovery closes it at e{model_last}"
            )

    def _writer_closed_at(self, last: int, when: str) -> bool:
        """Take the writer's close (``ClientClosesLedgerSuccess``) if the model's writer can
        close the ledger and its LAC is the model's entry ``last``: True if taken."""
        writer_close = step(_CLOSE, client=WRITER)
        if not enabled(self.cfg, self.state, writer_close) or self.state.clients[0].lac != last:
            return False
        self.take(
            writer_close,
            request=f"the writer closes the ledger at e{translation.bk_entry_id(last)} (its "
            f"LAC) {when}",
            observed=Observation("metadata", "OK", success=True),
        )
        return True

    def failure(self, failure: _Failure) -> None:
        """A forged error reached the client: it starts an ensemble change now
        (``handleBookieFailure``: ``changingEnsemble``). No add completes until the change
        ends (``sendAddSuccessCallbacks`` waits while it is on), so the writer's answers are
        held from now on; the adds the application issues meanwhile still go to the current
        ensemble; a failure reported meanwhile waits for the next change, made from the same
        entry as soon as this one's metadata write returns. The change, and any next one, is
        taken when its resends show (:meth:`_catch_up`), from the entry after the LAC of
        this moment: the held answers count only after the resends."""
        self.changing = True
        if failure.bookie not in self.reported_failures:
            self.reported_failures.append(failure.bookie)
        self.notes.append(
            f"{failure.at:.3f} frame #{failure.frame.frame_id} to the client: "
            f"{failure.frame.info.describe()} (forged): the client starts an ensemble change"
        )

    def sent_add(self, event: JavaEvent) -> None:
        """An add frame: the model's writer must have sent that add (to that bookie) and not
        yet matched it with a frame. If it has not: a new entry means sending it (and every
        entry before it: frames to different proxies arrive in any order); an add to a bookie
        the model has no open add of that entry for means the client changed its ensemble
        first (once or more: it may change twice before it resends)."""
        assert event.entry_id is not None
        entry = translation.spec_entry_id(event.entry_id)
        frame = (
            f"frame #{event.frame.frame_id} to {bookie_name(event.bookie)}: add e{event.entry_id}"
        )
        key = (entry, event.bookie)
        c1 = self.state.clients[0]
        if c1.status != STATUS_OPEN and entry > c1.lap and self._fenced_handle_stayed_open(event):
            # The handle stayed open though the model's writer is done: an ensemble change
            # that met the recovery's IN_RECOVERY metadata only fails the pending adds
            # (handleUnrecoverableErrorDuringAdd: "we should not close ledger if ledger is
            # recovery mode"), and so does each EFENCED answer after it, so a later add goes
            # out to the current ensemble and fails. The client failed it to its caller.
            self.given_up.add(observed.pairing_key(event.frame))
            self.notes.append(
                f"{frame}: sent by a handle the recovery had fenced (it stayed open, its "
                "metadata IN_RECOVERY, or the add waited for its bookie's connection); the "
                f"client failed e{event.entry_id} to its caller; the add and its answers are "
                "no step of the spec's writer"
            )
            return
        if not self.expected.get(key):
            self._catch_up(entry, event, frame)
        c1 = self.state.clients[0]
        if not self.expected.get(key) and entry > c1.lap:
            self._send_up_to(entry, frame)
        if not self.expected.get(key):
            # The entry's first adds never reached a proxy (a bookie down from the start, a
            # stalled connection: the client failed them itself), so this frame is already a
            # resend, after a change made once those adds were sent. Taken only when the
            # metadata shows that very change: otherwise an add to the wrong bookie (the
            # throttle finding's) would be explained by a change the client never made.
            self._take_the_change_the_metadata_shows(
                f"{frame}: the entry's first adds never reached a proxy; the client changed "
                "its ensemble as the metadata shows",
                event.at,
            )
        if self.expected.get(key):
            self.expected[key] -= 1
            return
        if entry <= self.state.clients[0].lap and self._in_current_writeset(entry, event.bookie):
            # The same add to the same bookie again, in the same ensemble: BookKeeper resends
            # the pending adds at each failure it handles, and two notices of one failure
            # (e.g. a connection refused, then the timeout) resend twice. A bookie stores an
            # entry once; the spec's writer sends once: the copy and its answer are noted.
            self.duplicates.add(observed.pairing_key(event.frame))
            self.notes.append(f"{frame}: sent again in the same ensemble; ignored")
            return
        if self._created_before_the_change(entry, event):
            # LedgerHandle.asyncAddEntry creates the add with getCurrentEnsemble(), and
            # PendingAddOp.initiate sends it to that ensemble: an add created while a change
            # was being written goes to the bookie the change replaces too (the change's
            # completion then resends it to the replacement). The client ignores that
            # bookie's answer (writeComplete: another bookie holds the position now).
            self.duplicates.add(observed.pairing_key(event.frame))
            self.notes.append(
                f"{frame}: created before the ensemble change replacing "
                f"{bookie_name(event.bookie)} completed, sent to the old ensemble; its answer "
                "is ignored"
            )
            return
        if _sent_no_earlier_than(self.record, event) < event.at:
            # Read when a stall of its bookie's connection ended: the client wrote it at a
            # moment the stall hid, e.g. the resend of a change that brought the bookie back
            # for a while (4.17.3 moves a failed position back and forth between bookies
            # whose channels are unwritable: a change per failed add, each resending the
            # pending adds into the stalled connection's buffer). Neither those changes
            # (replaced in place, from the same entry) nor their order shows in the frames or
            # the metadata: the judge cannot place the frame, so it decides nothing about it.
            self.hidden_by_a_stall.append(frame)
            return
        names = [
            bookie_name(b)
            for b in range(self.cfg.bookies)
            if self._writer_fragment_members(entry) >> b & 1
        ]
        self.frame_divergences.append(
            f"{frame}: the spec's writer sends no such add here (e{event.entry_id}'s write set "
            f"in its current ensemble: {', '.join(names)}; each add is sent once per ensemble)"
        )

    def _created_before_the_change(self, entry: int, event: JavaEvent) -> bool:
        """Whether ``event``'s add (of the model's ``entry``) can be one the client created
        before its last ensemble change completed: the bookie is one that change replaced,
        the entry is in the model's pending adds, and its first frame and this one came
        within :data:`CONCURRENT_AT_BOOKIE_S` of the change's evidence (an add sent long
        before is a resend, which goes to the new ensemble only)."""
        if not self.chosen or event.at - self.changed_at > CONCURRENT_AT_BOOKIE_S:
            return False
        failed, _ensemble = self.chosen[-1]
        c1 = self.state.clients[0]
        first_sent = min(
            (
                e.at
                for e in self.events
                if e.phase is Phase.SENT
                and e.kind is FrameKind.ADD
                and e.entry_id == event.entry_id
            ),
            default=event.at,
        )
        return (
            bool(failed >> event.bookie & 1)
            and any(op.entry.id == entry for op in c1.pending_add_ops)
            and first_sent >= self.changed_at - CONCURRENT_AT_BOOKIE_S
        )

    def _send_up_to(self, entry: int, frame: str, *, packaged_earlier: bool = False) -> None:
        """``ClientSendsAddEntryRequests`` for every entry the model's writer has not sent, up
        to ``entry`` (the model's), whose first frame is ``frame``."""
        c1 = self.state.clients[0]
        for sent in range(c1.lap + 1, entry + 1):
            bk_sent = translation.bk_entry_id(sent)
            members = self._writer_fragment_members(sent)
            first = (
                f"{frame} (the client's first frame of e{bk_sent}, packaged before the answer "
                "below was processed: the LAC it carries)"
                if packaged_earlier
                else f"{frame} (the client's first frame of e{bk_sent})"
            )
            self.take(
                step(
                    _SEND_ADDS,
                    client=WRITER,
                    lost=self._lost_for(bk_sent, members, self.changed_at),
                ),
                request=(
                    first
                    if sent == entry
                    else f"e{bk_sent} (sent before {frame}; its frames are logged after)"
                ),
            )

    def _catch_up(self, entry: int, event: JavaEvent, frame: str) -> None:
        """Take ensemble changes, each followed by the resends it causes, until the model's
        writer has an open add of ``entry`` to ``event``'s bookie (an earlier entry), or the
        bookie is in the write set of ``entry`` (a new one), or it can change no more."""
        key = (entry, event.bookie)
        for _ in range(self.cfg.bookies):
            c1 = self.state.clients[0]
            if self.expected.get(key):
                return
            if entry > c1.lap and self._in_current_writeset(entry, event.bookie):
                return
            if not self.change_ensemble(
                f"{frame}: an add the model's writer has not sent, so the client changed its "
                "ensemble",
                event.at,
            ):
                return
            self.resend_all()

    def _in_current_writeset(self, entry: int, bookie: int) -> bool:
        return bool(self._writer_fragment_members(entry) >> bookie & 1)

    def _needs_resend(self, entry: int) -> bool:
        c1 = self.state.clients[0]
        f = c1.curr_fragment
        assert f is not None
        return any(
            op.entry.id == entry and (op.ensemble != f.ensemble or op.order != f.order)
            for op in c1.pending_add_ops
        )

    def _new_bookies(self, op: PendingAddOp) -> int:
        f = self.state.clients[0].curr_fragment
        assert f is not None
        entry = op.entry.id
        return writeset(self.cfg, f.ensemble, entry, f.order) & ~writeset(
            self.cfg, op.ensemble, entry, op.order
        )

    def _lowest_needing_resend(self) -> PendingAddOp | None:
        c1 = self.state.clients[0]
        waiting = [op for op in c1.pending_add_ops if self._needs_resend(op.entry.id)]
        return min(waiting, default=None)

    def resend_all(self) -> None:
        """After an ensemble change, every pending add moves to the new ensemble, lowest entry
        first, as the spec's ``ClientResendsPendingAddOp`` does and as the client resends them
        all at once; an add to a new bookie of its write set is lost if no frame of it reached
        that bookie after the change (the same frame serves a later change that keeps the
        bookie: the client sends once, after its last change)."""
        while (op := self._lowest_needing_resend()) is not None:
            bk_entry = translation.bk_entry_id(op.entry.id)
            new = self._new_bookies(op)
            lost = self._lost_for(bk_entry, new, self.changed_at)
            request = (
                f"e{bk_entry} resent to the bookies new to its write set (frames logged after)"
                if new
                else f"e{bk_entry} moves to the new ensemble (no bookie new to its write set: "
                "no frame)"
            )
            self._resend_one(op.entry.id, request, lost)

    def _resend_one(self, entry: int, request: str, lost: set[str]) -> None:
        self.take(
            step(_RESEND, client=WRITER, entry=entry, lost=lost),
            request=request,
        )

    def _duplicate(self, event: JavaEvent) -> bool:
        if observed.pairing_key(event.frame) in self.given_up:
            return True
        if observed.pairing_key(event.frame) not in self.duplicates:
            return False
        self.notes.append(f"frame #{event.frame.frame_id}: the answer to a copy; ignored")
        return True

    def answered(self, event: JavaEvent) -> None:
        assert event.entry_id is not None
        if self._duplicate(event):
            return
        entry = translation.spec_entry_id(event.entry_id)
        bookie = bookie_name(event.bookie)
        status = event.status
        if status not in (StatusCode.EOK, StatusCode.EFENCED):
            self.execution.add_divergence(
                f"{bookie} answered the add of e{event.entry_id} {status}: the model's bookie "
                "confirms it or answers EFENCED"
            )
            raise Stuck(f"{bookie} answered {status}")
        request = self.request_of.get(observed.pairing_key(event.frame))
        timed_out = request is not None and (self.fates.get(request) is AddFate.ANSWER_TIMED_OUT)
        if request is not None and self._a_resend_is_answered_after(
            event,
            request,
            since_a_change=self.fates.get(request) is not AddFate.REQUEST_TIMED_OUT,
        ):
            # The client timed this copy out before it reached the bookie, or replaced the
            # bookie after sending it, and resent the add to the same bookie (it came back
            # after a change, or comes back later). The copy the client counts is the resend,
            # whose answer follows (PendingAddOp.writeComplete ignores an answer from an
            # ensemble position the bookie no longer holds). The bookie processes this copy
            # (the spec's bag holds it, alone or with the identical resend) and the client
            # drops its answer: the spec's lost answer.
            self.duplicates.add(observed.pairing_key(event.frame))
            self.notes.append(
                f"frame #{event.frame.frame_id}: {bookie} answered a copy of e{event.entry_id} "
                "the client no longer counts (timed out, or sent before the bookie left the "
                "ensemble and came back); its answer is dropped"
            )
            dropped = step(
                observed.answer_action(event.kind, status),
                bookie=bookie,
                entry=entry,
                lost={bookie},
                sender=WRITER,
                late=self._late(event, entry),
            )
            late, in_order = (
                dataclasses.replace(dropped, late=True),
                dataclasses.replace(dropped, late=False),
            )
            if enabled(self.cfg, self.state, late):
                # The copy was the spec's lost add, LATE since a change replaced the bookie.
                self.take(late, request=f"frame #{event.frame.frame_id} from {bookie}")
            elif enabled(self.cfg, self.state, in_order) and (
                (entry, event.bookie) not in self.resent or self._copies(entry, event.bookie) > 1
            ):
                # The copy is in flight in the model, alone (the model's writer has not resent
                # the add yet) or with the resend (one message of the bag, counted twice).
                self.take(in_order, request=f"frame #{event.frame.frame_id} from {bookie}")
            # Else the model's only message is the resend's (the copy was the spec's lost
            # add, which the resend replaced): nothing of the copy is left to process.
            return
        if status is StatusCode.EOK and self._fence_lost_on_restart(event):
            self.execution.add_divergence(
                f"{bookie} accepted the writer's add of e{event.entry_id} (frame "
                f"#{event.frame.frame_id}) after the recovery fenced it and the plan restarted "
                "it with its data: the fence was lost on the restart "
                "(docs/findings/fence-lost-on-restart.md)"
            )
            raise Stuck(f"{bookie} lost its fence")
        answer = step(
            observed.answer_action(event.kind, status),
            bookie=bookie,
            entry=entry,
            # An answer the client timed out before it came is the spec's lost answer.
            lost=set() if event.delivered and not timed_out else {bookie},
            sender=WRITER,
            late=self._late(event, entry),
        )
        if (
            not answer.late
            and request is not None
            and self.fates.get(request) is AddFate.REQUEST_TIMED_OUT
            and enabled(self.cfg, self.state, dataclasses.replace(answer, late=True))
        ):
            # The answer to the copy the client timed out before it reached the bookie (its
            # request frame says so), while a resend to the same bookie is also on its way:
            # the bookie processes the LATE add.
            answer = dataclasses.replace(answer, late=True)
        if not enabled(self.cfg, self.state, answer):
            # Not the copy the timing suggests: the other (a bookie may hold both a timed-out
            # add and its resend; the judge tells them apart by when they reached it).
            answer = dataclasses.replace(answer, late=not answer.late)
        if not enabled(self.cfg, self.state, answer) and self._holds(event.bookie, entry):
            # A second copy of an add the bookie already stored in the model: the timed-out
            # add and its resend carry the same LAC when nothing was confirmed in between, so
            # the spec's message bag holds them as one message, processed once. Storing the
            # entry again changes nothing; an answer the client counts is still judged.
            self.notes.append(
                f"frame #{event.frame.frame_id}: {bookie} answered a second copy of "
                f"e{event.entry_id}, which its model already holds (one message to the spec); "
                "ignored"
            )
            return
        if not enabled(self.cfg, self.state, answer) and request in self.sent_after_close:
            # The request reached the proxy only after the writer's close returned: the
            # client had given up on the add (its handle closed: a fenced add, or the adds'
            # callbacks all in) while the request waited for its connection. Storing it is
            # no step of the spec's writer; its answer cannot count.
            self.notes.append(
                f"frame #{event.frame.frame_id}: {bookie} stored e{event.entry_id}, sent "
                "after the writer's close returned (the client had given up on it): no step "
                "of the spec's; ignored"
            )
            return
        if (
            not enabled(self.cfg, self.state, answer)
            and request is not None
            and self.fates.get(request) is AddFate.REQUEST_TIMED_OUT
        ):
            # The client timed this add out before it reached the bookie, and the model's
            # writer has not (yet) replaced the bookie, so the spec's message is still lost,
            # not LATE: the bookie storing it is no step of the spec's. Its answer cannot count
            # (the client dropped the request), so nothing the judge checks depends on it.
            self.notes.append(
                f"frame #{event.frame.frame_id}: {bookie} stored e{event.entry_id} after the "
                "client had timed the add out, before any ensemble change the model took "
                "replaced it (or after the client gave up): no step of the spec's; ignored"
            )
            return
        self.take(
            answer,
            request=f"frame #{event.frame.frame_id} from {bookie}: {event.frame.info.describe()}",
            observed=translation.add_observation(status),
        )

    def _fence_lost_on_restart(self, event: JavaEvent) -> bool:
        """Whether the model's bookie of ``event`` is fenced (it must answer EFENCED), and
        the plan restarted the real one with its data since the recovery's first fence read
        reached it: the finding of docs/findings/fence-lost-on-restart.md."""
        if not self.state.b_fenced[event.bookie]:
            return False
        fenced_at = min(
            (
                e.at
                for e in self.all_events
                if e.kind is FrameKind.FENCE_READ
                and e.phase is Phase.SENT
                and e.bookie == event.bookie
                and e.delivered
            ),
            default=None,
        )
        return fenced_at is not None and any(
            fenced_at < at < event.at for at in self.record.restarts.get(event.bookie, ())
        )

    def _a_resend_is_answered_after(
        self, event: JavaEvent, request: int, *, since_a_change: bool
    ) -> bool:
        """Whether the same bookie answers another request for ``event``'s entry later (a
        resend of the add, on its own txnId). ``since_a_change``: only a resend sent after an
        ensemble change that came after ``request`` (the bookie was replaced, then came back;
        a copy sent again in the same ensemble is a duplicate, :meth:`sent_add`)."""
        key = observed.pairing_key(event.frame)
        sent_at = self.sent_at
        if since_a_change and not sent_at.get(request, float("inf")) < self.changed_at:
            return False
        for e in self.events:
            if not (
                e.phase is Phase.ANSWERED
                and e.kind is FrameKind.ADD
                and e.bookie == event.bookie
                and e.entry_id == event.entry_id
                and e.at >= event.at
                and observed.pairing_key(e.frame) != key
            ):
                continue
            resend = self.request_of.get(observed.pairing_key(e.frame))
            if not since_a_change or sent_at.get(resend or -1, 0.0) >= self.changed_at:
                return True
        return False

    def _copies(self, entry: int, bookie: int) -> int:
        """How many copies of the writer's add of ``entry`` the model's ``bookie`` has still
        to process."""
        return sum(
            count
            for m, count in self.state.messages
            if isinstance(m, AddEntryRequest)
            and m.bookie == bookie
            and m.cid == 0
            and m.entry.id == entry
            and count >= DELIVERED
        )

    def _holds(self, bookie: int, entry: int) -> bool:
        """Whether the model's ``bookie`` has stored the spec's entry ``entry``."""
        return any(stored.id == entry for stored in self.state.b_entries[bookie])

    def _late(self, event: JavaEvent, entry: int) -> bool:
        """Whether the add this answer is for reached its bookie after the client had timed it
        out: after an ensemble change that left the bookie out of the entry's write set."""
        return self.ensemble_changes > 0 and (
            event.at >= self.changed_at and not self._in_current_writeset(entry, event.bookie)
        )

    def received(self, event: JavaEvent, *, final: bool = False) -> None:
        """Take the delivery of a bookie's answer to the writer (``final``: at the end of the
        run, no longer held for a change that did not come)."""
        assert event.entry_id is not None
        key = observed.pairing_key(event.frame)
        if key in self.duplicates or key in self.given_up:
            return
        peer = bookie_name(event.bookie)
        scripted = _receipt(event)
        c1 = self.state.clients[0]
        if c1.status == STATUS_OPEN and self._moves_past_a_change(scripted):
            # The metadata has a change from the entry after the model's LAC: the client made
            # it before its LAC moved on (a failure it learnt of at once, e.g. a connection to
            # a crashed bookie refused), however late its frames show it.
            self._take_the_change_the_metadata_shows(
                f"frame #{event.frame.frame_id} delivered to the client: the metadata shows a "
                "change from the entry after the LAC, made before this answer counted",
                event.at,
            )
            c1 = self.state.clients[0]
            if not final and self._moves_past_a_change(scripted):
                # The model's writer cannot make that change yet (its failure comes later):
                # the client counted this answer only after it, as the change's first entry
                # (its LAC + 1 when it changed) says. It waits with the answers of a change.
                self.held_answers.append(event)
                self.notes.append(
                    f"frame #{event.frame.frame_id} ({peer}'s answer to e{event.entry_id}): "
                    "counted after the ensemble change the metadata shows from the entry after "
                    "the LAC (the change's first entry says the client's LAC had not moved)"
                )
                return
        if event.status is StatusCode.EOK and event.entry_id in self._failed_to_the_caller_ids():
            # The client failed this add to its caller: the handle's close (a fenced add's
            # doAsyncCloseInternal, a task on the ledger's ordered executor) or a failed
            # change drained it before this answer was processed (an answer delivered earlier
            # on another connection may be processed later). Had it counted, the add would
            # have completed OK. It met an add completed with an error and raised no LAC; the
            # answers that ran before the close count (closing_writer_takes_answers).
            self.stale_answers += 1
            self.notes.append(
                f"frame #{event.frame.frame_id} ({peer}'s answer to e{event.entry_id}) was "
                f"processed after the client had failed e{event.entry_id} to the caller; "
                "ignored"
            )
            return
        if c1.status in (STATUS_OPEN, CLIENT_CLOSING) and not enabled(
            self.cfg, self.state, scripted
        ):
            # An earlier answer of the same bookie may still be in the spec's bag: a stale
            # copy the client dropped (sent before the bookie left the ensemble and came
            # back), identical to one it counted. The spec's client takes a bookie's answers
            # earliest entry first, so those copies go first.
            self._settle_stale_answers(
                event.bookie, up_to_entry=event.entry_id, ahead_of=event.frame.frame_id
            )
        if c1.status not in (STATUS_OPEN, CLIENT_CLOSING) or not enabled(
            self.cfg, self.state, scripted
        ):
            self.stale_answers += 1
            self.stale_deliveries.append(event)
            self.notes.append(
                f"frame #{event.frame.frame_id} ({peer}'s answer to e{event.entry_id}) reached "
                "the client when the model's writer no longer takes it (not in its ensemble, "
                "or withdrawn); ignored, as BookKeeper's PendingAddOp ignores it"
            )
            return
        if _ignored(take_step(self.cfg, self.state, scripted).label):
            # A stale answer (its bookie is out of the entry's write set): the client drops it
            # if it processes it now, counts it if it processes it after a change brought the
            # bookie back to that place. Which, the client's later steps show: consumed
            # before the bookie's next answer, counted if a callback needs it.
            self.stale_answers += 1
            self.stale_deliveries.append(event)
            return
        # Settling other entries' stale answers only consumes earlier messages: this answer's
        # step stays enabled.
        self._settle_stale_answers(event.bookie, but_entry=event.entry_id)
        self.take(scripted, request=f"frame #{event.frame.frame_id} delivered to the client")

    def _settle_stale_answers(
        self,
        bookie: int | None = None,
        *,
        but_entry: int | None = None,
        up_to_entry: int | None = None,
        ahead_of: int | None = None,
    ) -> None:
        """Take the stale answers waiting (of ``bookie``; None: all), each as the model's
        writer takes it now: dropped (its bookie still out), or counted (back in place).
        ``but_entry``: not those of that entry (the answer being taken is the same message
        of the spec's bag). ``up_to_entry``: only those of that entry and earlier ones that
        count now (a copy identical to one the client counted, ahead of the answer being
        taken in the bag). Of one bookie's, those the model's writer cannot take now wait (an
        earlier message of their bookie is still ahead of them in the bag)."""
        for event in list(self.stale_deliveries):
            if bookie is not None and event.bookie != bookie:
                continue
            if but_entry is not None and event.entry_id == but_entry:
                continue
            assert event.entry_id is not None
            if up_to_entry is not None and event.entry_id > up_to_entry:
                continue
            scripted = _receipt(event)
            if bookie is not None and not enabled(self.cfg, self.state, scripted):
                continue
            if up_to_entry is not None and _ignored(
                take_step(self.cfg, self.state, scripted).label
            ):
                continue  # dropped now, it could not free the way; it may count later
            self.stale_deliveries.remove(event)
            if enabled(self.cfg, self.state, scripted):
                self.take(
                    scripted,
                    request=f"frame #{event.frame.frame_id} delivered to the client (stale)"
                    + (
                        f": a copy the client dropped, the same message of the spec's bag as "
                        f"one it counted, ahead of frame #{ahead_of}'s"
                        if ahead_of is not None
                        else ""
                    ),
                )

    def _count_stale_answers_of_returned_bookies(self, entry: int) -> None:
        """Take the deliveries of stale answers, up to the model's ``entry``, that the model's
        writer takes now: their bookie is back at its place in the entry's write set.
        ``PendingAddOp.writeComplete`` checks only that the bookie now at the answer's
        ensemble position is the one that answered, so an answer the client processes after
        a change brought its bookie back to that position counts (and that bookie stores
        the entry: it answered EOK). Called when a callback shows the client had the ack
        quorum the model's writer lacks. A stale answer of the same bookie ahead of it in the
        spec's bag, which the model's writer drops now, is taken first (the client dropped it
        when it came: its bookie was out of that entry's write set)."""
        for event in list(self.stale_deliveries):
            assert event.entry_id is not None
            if translation.spec_entry_id(event.entry_id) > entry or enabled(
                self.cfg, self.state, _receipt(event)
            ):
                continue
            for ahead in list(self.stale_deliveries):
                assert ahead.entry_id is not None
                scripted = _receipt(ahead)
                if (
                    ahead.bookie == event.bookie
                    and ahead.entry_id < event.entry_id
                    and enabled(self.cfg, self.state, scripted)
                    and _ignored(take_step(self.cfg, self.state, scripted).label)
                ):
                    self.stale_deliveries.remove(ahead)
                    self.take(
                        scripted,
                        request=f"frame #{ahead.frame.frame_id} delivered to the client (stale, "
                        f"dropped: ahead of frame #{event.frame.frame_id} in the spec's bag)",
                    )
        for event in list(self.stale_deliveries):
            assert event.entry_id is not None
            if translation.spec_entry_id(event.entry_id) > entry:
                continue
            scripted = _receipt(event)
            if not enabled(self.cfg, self.state, scripted) or _ignored(
                take_step(self.cfg, self.state, scripted).label
            ):
                continue
            self.stale_deliveries.remove(event)
            self.take(
                scripted,
                request=f"frame #{event.frame.frame_id}, delivered when its bookie was out of "
                "the ensemble, processed by the client after a change brought it back to the "
                "same place (the callback below shows it counted)",
            )

    def _fenced_handle_stayed_open(self, event: JavaEvent) -> bool:
        """Whether ``event``'s add, a new entry the model's writer (done with) cannot send,
        is one the client failed to its caller and sent anyway: either from a handle that had
        failed its adds LedgerFenced and stayed open (its metadata IN_RECOVERY: the client
        failed an add LedgerFenced before this frame, and this one LedgerFenced too), or an
        add issued before the handle closed that waited for its bookie's connection
        (``PerChannelBookieClient.connectIfNeededAndDoOp`` queues it while connecting: the
        first frame of a new connection). A handle that closed fails later adds LedgerClosed,
        without a frame."""
        own = [o for o in self.record.outcomes if o.entry_id == event.entry_id]
        failed = [o for o in own if o.code is not None and not o.acknowledged]
        if not own or len(failed) != len(own):
            return False
        fenced = [
            o
            for o in self.record.outcomes
            if o.code is not None and code_name(o.code) == "LedgerFenced"
        ]
        if any(code_name(o.code or 0) == "LedgerFenced" for o in failed) and any(
            o.at is not None and o.at < event.at for o in fenced
        ):
            return True
        connection = (event.frame.proxy, event.frame.connection_id)
        return not any(
            (e.frame.proxy, e.frame.connection_id) == connection and e.at < event.at
            for e in self.all_events
        )

    def _failed_to_the_caller_ids(self) -> set[int]:
        """The entry ids whose add the client failed to its caller (an error callback)."""
        return {
            o.entry_id
            for o in self.record.outcomes
            if o.code is not None and not o.acknowledged and o.entry_id is not None
        }

    def _take_the_changes_before_a_callback(self, callback: _Callback) -> None:
        """Take the changes of the forged failures the client learnt of before ``callback``
        and the model's writer has not made: a callback cannot run during a change
        (``LedgerHandle.sendAddSuccessCallbacks`` stops while ``changingEnsemble`` is on), so
        a change started before it had completed, its resends sent
        (``ensembleChangeLoop``'s completion, ``unsetSuccessAndSendWriteRequest``), however
        late their frames reach a proxy. Tried only when the callback needs it."""
        for _ in range(self.cfg.bookies):
            if not self.reported_failures:
                return
            if not self.change_ensemble(
                f"the client called back {callback.outcome.describe()} after a forged failure: "
                "the change it started had completed (no callback runs during a change)",
                callback.at,
            ):
                return
            self.resend_all()

    def callback(self, callback: _Callback) -> None:
        outcome = callback.outcome
        c1 = self.state.clients[0]
        if not outcome.acknowledged:
            self.notes.append(f"the client failed {outcome.describe()}")
            if c1.status == STATUS_OPEN:
                # A change that committed, then a next one that found no bookie (the client
                # fails its adds and resends nothing): only the metadata shows the first,
                # and it came before anything else the ledger saw (a recovery reads it).
                for _ in range(self.cfg.bookies):
                    if self._model_segments() == self._real_segments():
                        break
                    if not self._take_the_change_the_metadata_shows(
                        f"the client failed {outcome.describe()}: the metadata shows an "
                        "ensemble change it made before, with no frame after it",
                        callback.at,
                    ):
                        break
            return
        assert outcome.entry_id is not None
        entry = translation.spec_entry_id(outcome.entry_id)
        if c1.lac < entry and self.reported_failures:
            self._take_the_changes_before_a_callback(callback)
            c1 = self.state.clients[0]
        if c1.lac < entry:
            self._count_stale_answers_of_returned_bookies(entry)
            c1 = self.state.clients[0]
        if c1.lac < entry:
            self.execution.add_divergence(
                f"the Java client acknowledged e{outcome.entry_id} to its caller when the "
                f"model's writer had confirmed only up to "
                f"e{translation.bk_entry_id(c1.lac)} (its LAC): an entry without an ack quorum "
                "in its current write set reported as written (cf. apache/bookkeeper#3005)"
            )

    # -- the end -----------------------------------------------------------------------------

    def close(self) -> None:
        record = self.record
        takeover = record.takeover
        if takeover is not None and takeover.last_entry is not None:
            # The recovery closed the ledger: the writer's close (after it) can only fail, or
            # find the end it would have written (BookKeeper's close then succeeds); the
            # spec's writer has no step for either. What it acknowledged is checked against
            # the recovery's end (check_readable).
            self.notes.append(
                "the writer's close after the recovery "
                + (f"failed: {record.close_error}" if record.close_error else "returned OK")
            )
            closing_fails = step(_CLOSE_FAILS, client=WRITER)
            if enabled(self.cfg, self.state, closing_fails):
                # The writer's close finds the ledger CLOSED (BookKeeper's close then fails,
                # or returns OK if it would have written the same end): it withdraws.
                self.take(closing_fails, request="the writer's close finds the ledger closed")
            self._compare_segments()
            return
        if record.closed_last_entry is None:
            if record.close_error:
                self.notes.append(f"the Java client's close failed: {record.close_error}")
            return
        # Changes the client made but sent nothing after (it gave up, or had nothing left to
        # resend) show only in the metadata: take them until the model's ensembles are the
        # metadata's, or it can change no more (then the comparison below tells).
        at = record.closed_at if record.closed_at is not None else float("inf")
        for _ in range(self.cfg.bookies):
            if self._model_segments() == self._real_segments():
                break
            if not self.change_ensemble(
                "the metadata shows an ensemble change with no frame after it", at
            ):
                break
            self.resend_all()
        self.take(
            step(_CLOSE, client=WRITER),
            request=f"the Java client closes the ledger at {record.closed_last_entry}",
            observed=Observation("metadata", "OK", success=True),
        )
        s = self.state
        model_last = translation.bk_entry_id(s.meta_last_entry)
        given_up = self._failed_to_the_caller(record.closed_last_entry + 1, model_last)
        if record.closed_last_entry < model_last and given_up:
            # The client failed these adds (an ensemble change that found no bookie, a fenced
            # or unauthorized answer) though the model's writer had their ack quorum: it gave
            # up on them, which the spec's writer cannot, and closed below them. Its caller was
            # told they failed, so nothing acknowledged is lost.
            self.notes.append(
                f"the Java client closed the ledger at e{record.closed_last_entry}, below the "
                f"model's writer's LAC e{model_last}: it failed "
                f"{', '.join(given_up)} to its caller (it gave up; the spec's writer cannot)"
            )
        elif model_last != record.closed_last_entry:
            self.execution.add_divergence(
                f"the Java client closed the ledger at e{record.closed_last_entry}; the model's "
                f"writer closes it at e{model_last} (its LAC)"
            )
        self._compare_segments()

    def _compare_segments(self) -> None:
        model_segments, real = self._model_segments(), self._real_segments()
        if model_segments != real:
            self.execution.add_divergence(
                f"the ledger's ensembles are {segments_text(real)}; the model's "
                f"are {segments_text(model_segments)}"
            )

    def _failed_to_the_caller(self, first: int, last: int) -> list[str]:
        """The callbacks of entries ``first``..``last`` if every one of them failed (the
        writer adds in order, so add number ``i`` is entry ``i``); else the empty list."""
        by_index = {o.index: o for o in self.record.outcomes}
        wanted = [by_index.get(entry) for entry in range(first, last + 1)]
        if not wanted or any(o is None or o.code is None or o.acknowledged for o in wanted):
            return []
        return [o.describe() for o in wanted if o is not None]

    def _model_segments(self) -> list[tuple[int, tuple[int, ...]]]:
        return [
            (translation.bk_entry_id(f.first_entry_id), _positions(self.cfg, f.ensemble, f.order))
            for f in self.state.meta_fragments
        ]

    def _real_segments(self) -> list[tuple[int, tuple[int, ...]]]:
        """The metadata's ensembles as the model writes them: by position when striped (an
        entry's write set depends on them), else as sets in ascending order (every bookie gets
        every entry, and the model keeps such ensembles as sets: the client's positions, e.g.
        a replacement in position 0, say nothing)."""
        if self.cfg.striped:
            return [(first, tuple(bookies)) for first, bookies in self.record.segments]
        return [(first, tuple(sorted(bookies))) for first, bookies in self.record.segments]

    def _wiped_copies(self, entry: int, holders: set[int]) -> set[int]:
        """The bookies of ``holders`` (the entry's write set in the metadata) its add reached
        before the plan wiped them; the empty set unless the add reached some holder and every
        holder it reached was wiped afterwards. A write set the add never reached (the
        metadata names bookies that never got it) leaves the loss to the client."""
        reached = {
            event.bookie: event.at
            for event in self.all_events
            if event.phase is Phase.ANSWERED
            and event.kind is FrameKind.ADD
            and event.entry_id == entry
            and event.bookie in holders
        }
        if not reached:
            return set()
        wiped = self.record.wiped
        erased = {b for b, at in reached.items() if b in wiped and wiped[b] >= at}
        return erased if erased == set(reached) else set()

    def check_readable(self) -> None:
        """Every acknowledged entry is returned by a bookie of its write set in the metadata
        (``AllAckedEntriesAreReadable``), and by AQ of them (``AllCommittedEntriesReachAck
        Quorum``: fewer is an entry acknowledged as durable that is not, on the cluster)."""
        record = self.record
        if not record.segments:
            return
        self._check_acknowledged_within_the_end()
        for outcome in record.outcomes:
            if not outcome.acknowledged or outcome.entry_id is None:
                continue
            entry = outcome.entry_id
            first, holders = metadata_write_set(record.segments, entry, record.shape.write_quorum)
            copies = holders & set(record.stored.get(entry, ()))
            if copies:
                self._check_ack_quorum(entry, first, holders, copies)
                continue
            names = ", ".join(bookie_name(b) for b in sorted(holders))
            erased = self._wiped_copies(entry, holders)
            if erased:
                # Data loss by design: every copy its write set had was on a bookie the
                # plan wiped afterwards (with AQ=1 one wipe loses an entry).
                self.notes.append(
                    f"e{entry} is on no bookie of its write set ({names}): "
                    f"{', '.join(bookie_name(b) for b in sorted(erased))} held it and was "
                    "wiped by the plan afterwards (data loss by design, not the client's)"
                )
                continue
            if self._unreachable(entry, holders):
                # Not readable now, but the bookie that may hold it is down, not wrong.
                continue
            read = record.client_reads.get(entry)
            self.execution.add_violation(
                f"AllAckedEntriesAreReadable (on the real cluster): the Java client "
                f"acknowledged e{entry}, and none of its write set in the metadata "
                f"({names}, ensemble from e{first}) returns it"
                + ("" if read is None else f" (the Java client reading it back: {read})")
            )

    def _check_acknowledged_within_the_end(self) -> None:
        """No entry acknowledged to the writer lies beyond the closed ledger's last entry
        (``NoDivergenceBetweenClientAndMetaData``, on the real cluster): a reader stops at the
        last entry, so such an entry is lost, however many bookies hold it. In a fail-over run
        the end is the recovery's (apache/bookkeeper#4812's symptom)."""
        record = self.record
        end = record.closed_last_entry
        if end is None:
            return
        who = "the second client's recovery" if record.takeover is not None else "the writer"
        for outcome in record.outcomes:
            if outcome.acknowledged and outcome.entry_id is not None and outcome.entry_id > end:
                self.execution.add_violation(
                    f"NoDivergenceBetweenClientAndMetaData (on the real cluster): the Java "
                    f"client acknowledged e{outcome.entry_id} to its caller; {who} closed the "
                    f"ledger at e{end}: no reader will see e{outcome.entry_id}"
                )

    def _unreachable(self, entry: int, holders: set[int]) -> bool:
        """Whether a bookie of ``entry``'s write set could not be read back (down after a
        crash the plan made): what it holds is unknown, and the run undecided."""
        down = holders & set(self.record.unreachable)
        if down and self.execution.error is None:
            self.execution.error = (
                f"e{entry} could not be read back: "
                f"{', '.join(bookie_name(b) for b in sorted(down))} of its write set "
                f"({', '.join(bookie_name(b) for b in sorted(holders))}) could not be reached"
            )
        return bool(down)

    def _check_ack_quorum(
        self, entry: int, first: int, holders: set[int], copies: set[int]
    ) -> None:
        """An acknowledged entry has at least AQ copies in its write set in the metadata. A
        write set bookie the plan wiped, or one that could not be read back, may explain a
        missing copy: a note, or undecided, not a violation."""
        record = self.record
        quorum = record.shape.ack_quorum
        if len(copies) >= quorum:
            return
        names = ", ".join(bookie_name(b) for b in sorted(holders))
        having = ", ".join(bookie_name(b) for b in sorted(copies))
        wiped = holders & set(record.wiped)
        if wiped:
            self.notes.append(
                f"e{entry} has {len(copies)} of AQ={quorum} copies in its write set ({names}): "
                f"{', '.join(bookie_name(b) for b in sorted(wiped))} was wiped by the plan"
            )
            return
        if self._unreachable(entry, holders):
            return
        elsewhere = set(record.stored.get(entry, ())) - holders
        outside = (
            f"; {', '.join(bookie_name(b) for b in sorted(elsewhere))}, outside it, has it"
            if elsewhere
            else ""
        )
        self.execution.add_violation(
            f"AllCommittedEntriesReachAckQuorum (on the real cluster): the Java client "
            f"acknowledged e{entry} (AQ={quorum}), and only {having} of its write set in the "
            f"metadata ({names}, ensemble from e{first}) has it{outside}"
        )


def _positions(cfg: ModelConfig, ensemble: int, order: tuple[int, ...]) -> tuple[int, ...]:
    return order or tuple(b for b in range(cfg.bookies) if ensemble >> b & 1)


def segments_text(segments: Sequence[tuple[int, tuple[int, ...]]]) -> str:
    """A ledger's ensembles as ``from e0: b1,b2; from e3: b1,b3`` (model bookie indexes)."""
    return "; ".join(
        f"from e{first}: {','.join(bookie_name(b) for b in bookies)}" for first, bookies in segments
    )


def metadata_write_set(
    segments: Sequence[tuple[int, tuple[int, ...]]], entry: int, write_quorum: int
) -> tuple[int, set[int]]:
    """The first entry of the ensemble the metadata names for ``entry``, and the entry's write
    set in it (by position, as BookKeeper stripes); ``(-1, set())`` if none names it."""
    covering = [seg for seg in segments if seg[0] <= entry]
    if not covering:
        return -1, set()
    first, positions = max(covering, key=lambda seg: seg[0])
    return first, {positions[(entry + i) % len(positions)] for i in range(write_quorum)}


#: At most this many stories are told per run when looking for the ensemble changes that
#: explain it (each a cheap offline replay; a clean run stops at its first clean story). An
#: E=4 writer run whose eight changes swapped two bookies' positions needed more than 64.
MAX_STORIES = 512

#: How a story undecided only about frames a stall hid ends its error.
_HIDDEN_BY_A_STALL = ": undecided about them"


#: At most this many adds whose timing allows two readings have both told (the others take
#: the likelier reading): 2**N fate assignments at most.
MAX_UNCERTAIN_ADDS = 4


def judge(record: WriterRecord) -> Judgement:
    """Judge ``record``'s ledger (:func:`judge_ledger`) and each other ledger written with it:
    one judgement, the first ledger's story with every ledger's findings (each other's
    prefixed with its ledger), the worst verdict of all."""
    first = judge_ledger(record)
    if not record.others:
        return first
    outcome = first.outcome
    violations, divergences = list(outcome.violations), list(outcome.divergences)
    errors = [outcome.error] if outcome.error else []
    notes = [outcome.note] if outcome.note else []
    for other in record.others:
        found = judge_ledger(other).outcome
        tag = f"ledger {other.ledger_id} (written with {record.ledger_id}): "
        violations += [tag + v for v in found.violations]
        divergences += [tag + d for d in found.divergences]
        errors += [tag + found.error] if found.error else []
        notes += [tag + found.note.replace(chr(10), chr(10) + tag)] if found.note else []
    verdict = run_verdict(
        violations=bool(violations), divergences=bool(divergences), error=bool(errors)
    )
    merged = dataclasses.replace(
        outcome,
        verdict=verdict,
        violations=violations,
        divergences=divergences,
        error="; ".join(errors) or None,
        note="\n".join(notes) or None,
    )
    return dataclasses.replace(first, outcome=merged)


def judge_ledger(record: WriterRecord) -> Judgement:
    """Replay ``record`` as the model's story and judge it (see the module docstring).

    Where an add's timing allows two readings (its answer came about when the client's timer
    fired: :func:`add_fates`), and where the model offers several ensemble changes (a subset
    of the timed-out bookies first, or all), the stories of the alternatives are told too
    until one is clean (at most :data:`MAX_STORIES`): the client's behaviour is allowed if
    some behaviour of the model explains it. If none does, the likeliest story (the likelier
    reading of each add; every timed-out bookie replaced at once, where it can be) is the one
    reported."""
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    if record.takeover is not None:
        events = fencing_order(events)
    fates = add_fates(record, events)
    uncertain = _likeliest_to_matter_first(
        record, events, [request for request, possible in fates.items() if len(possible) > 1]
    )
    likeliest = {request: possible[0] for request, possible in fates.items()}
    told_both = uncertain[:MAX_UNCERTAIN_ADDS]
    readings = itertools.product(
        *([(request, fate) for fate in fates[request]] for request in told_both)
    )
    assignments = [{**likeliest, **dict(reading)} for reading in readings]
    # Each reading's own story first (one each), then their alternative ensemble changes with
    # what is left of the budget: one reading's alternatives must not use up the stories
    # before the right reading is told.
    first: Judgement | None = None
    # A story undecided about some frames (a stall hid when they were sent) contradicts
    # nothing: it is reported if no story is clean, before any divergence.
    undecided: Judgement | None = None
    for assignment in assignments:
        judgement, _options, _chosen = _story(record, events, assignment, ())
        first = first or judgement
        if judgement.verdict is Verdict.UNDECIDED and judgement.outcome.error is not None:
            undecided = undecided or judgement
            if not _undecided_about_a_stall(judgement):
                return judgement
            continue
        if judgement.verdict is not Verdict.DIVERGENCE:
            return judgement
    assert first is not None
    told = len(assignments)
    # Then with each forged failure processed before the other bookies' answers delivered
    # just before it (the order of two connections' deliveries is not the client's).
    for failures_first in (False, True):
        for assignment in assignments:
            if told >= MAX_STORIES:
                break
            # Each reading's first story in delivery order is told already (above).
            already = 0 if failures_first else 1
            judgement, told = _stories(record, events, assignment, told - already, failures_first)
            if judgement.verdict is Verdict.UNDECIDED and _undecided_about_a_stall(judgement):
                undecided = undecided or judgement
                continue
            if judgement.verdict is not Verdict.DIVERGENCE:
                return judgement
    return undecided or first


def _undecided_about_a_stall(judgement: Judgement) -> bool:
    """Whether ``judgement`` is undecided only about frames a stall hid (:meth:`_WriterReplay
    .sent_add`): another story may place them, so the stories go on."""
    return judgement.verdict is Verdict.UNDECIDED and (judgement.outcome.error or "").endswith(
        _HIDDEN_BY_A_STALL
    )


def _likeliest_to_matter_first(
    record: WriterRecord, events: Sequence[JavaEvent], uncertain: list[int]
) -> list[int]:
    """``uncertain`` (request frame ids) with those whose answer came last before a reset of
    its bookie's connections first (the nearer the reset, the likelier it went unread), then
    the others in their order: only the first :data:`MAX_UNCERTAIN_ADDS` are told both ways."""
    answers = {
        observed.pairing_key(e.frame): e
        for e in events
        if e.phase is Phase.RECEIVED and e.kind is FrameKind.ADD
    }
    request_events = {e.frame.frame_id: e for e in events if e.phase is Phase.SENT}

    def gap_to_a_reset(request: int) -> float:
        event = request_events.get(request)
        answer = answers.get(observed.pairing_key(event.frame)) if event is not None else None
        if answer is None or not _lost_in_a_reset(record, answer):
            return float("inf")
        return min(r - answer.at for r in record.resets.get(answer.bookie, ()) if r >= answer.at)

    return sorted(uncertain, key=gap_to_a_reset)


def _stories(
    record: WriterRecord,
    events: Sequence[JavaEvent],
    fates: Mapping[int, AddFate],
    told: int,
    failures_first: bool = False,
) -> tuple[Judgement, int]:
    """The story under one reading of the adds' timing, and its alternative ensemble changes
    breadth first until one is not a divergence; with the stories told so far."""
    first, options, chosen = _story(record, events, fates, (), failures_first)
    told += 1
    if (first.verdict is not Verdict.DIVERGENCE or not options) and not (
        _undecided_about_a_stall(first) and options
    ):
        return first, told
    undecided = first if _undecided_about_a_stall(first) else None
    queue: deque[tuple[tuple[ChangeKey, ...], list[list[ChangeKey]], list[ChangeKey]]] = deque(
        [((), options, chosen)]
    )
    while queue and told < MAX_STORIES:
        prefix, options, chosen = queue.popleft()
        for index in range(len(prefix), len(options)):
            for key in options[index]:
                if key == chosen[index] or told >= MAX_STORIES:
                    continue
                alternative = (*chosen[:index], key)
                judgement, more, taken = _story(record, events, fates, alternative, failures_first)
                told += 1
                if judgement.verdict is Verdict.CLEAN:
                    return judgement, told
                if _undecided_about_a_stall(judgement):
                    undecided = undecided or judgement
                queue.append((alternative, more, taken))
    return undecided or first, told


#: Two requests handed to one bookie within this long of each other, on different
#: connections, may be processed in either order: a fence read and an add go to different
#: thread pools of the bookie (the add's fence check comes when its write is processed).
CONCURRENT_AT_BOOKIE_S = 0.05


def _is_a_fence(event: JavaEvent) -> bool:
    return event.phase is Phase.ANSWERED and (
        event.kind is FrameKind.FENCE_READ
        or (event.kind is FrameKind.RECOVERY_READ and event.fence)
    )


def _fences_after_the_adds_they_waited_with(events: Sequence[JavaEvent]) -> list[JavaEvent]:
    """``events`` with each fence read processed after the adds answered EOK that were handed
    to its bookie after it but answered no later than it: they waited there together (a
    paused or slow bookie handles the requests of two connections in any order of its thread
    pools), and EOK says the add came first. A fence answered before an add was even handed
    to the bookie stays first: an EOK after it is the bookie's to explain."""
    adds = [
        e
        for e in events
        if e.phase is Phase.ANSWERED and e.kind is FrameKind.ADD and e.status is StatusCode.EOK
    ]
    moved = []
    for event in events:
        if _is_a_fence(event):
            waited_with = [
                a.at
                for a in adds
                if a.bookie == event.bookie and a.at > event.at and a.frame.at <= event.frame.at
            ]
            if waited_with:
                event = dataclasses.replace(event, at=max(waited_with) + 1e-6)
        moved.append(event)
    return moved


def fencing_order(events: Sequence[JavaEvent]) -> list[JavaEvent]:
    """``events`` with each add that raced a fence read at its bookie placed where its answer
    says the bookie processed it: an add answered EFENCED after the fence that caused it (a
    fence read handed to the bookie before the add's answer left it), an add answered EOK
    before a fence it came within :data:`CONCURRENT_AT_BOOKIE_S` of. A
    bookie's events are otherwise ordered by when the proxy handed it each request
    (:func:`~.observed.processing_time`), which cannot order two requests that arrived
    together on two clients' connections. And a fenced answer reaching the writer is taken
    after the adds the writer sent within that time after it (the client had them on their
    way before it handled the answer). An event that no such race explains keeps its place
    (and the model says whether it is possible)."""
    events = _fences_after_the_adds_they_waited_with(events)
    fences: dict[int, list[float]] = {}
    for event in events:
        if _is_a_fence(event):
            fences.setdefault(event.bookie, []).append(event.at)
    placed = []
    for event in events:
        near = [
            at
            for at in fences.get(event.bookie, ())
            if abs(at - event.at) <= CONCURRENT_AT_BOOKIE_S
        ]
        if (
            event.phase is Phase.ANSWERED
            and event.kind is FrameKind.ADD
            and event.status is StatusCode.EFENCED
        ):
            # EFENCED: the fence came first at the bookie, whenever the add was handed to it:
            # any fence read handed to it before its answer left (a paused or slow bookie
            # handles the requests waiting for it in any order of its thread pools).
            before_the_answer = [at for at in fences.get(event.bookie, ()) if at <= event.frame.at]
            if before_the_answer and all(at > event.at for at in before_the_answer):
                event = dataclasses.replace(event, at=min(before_the_answer) + 1e-6)
        elif (
            event.phase is Phase.ANSWERED
            and event.kind is FrameKind.ADD
            and event.status is StatusCode.EOK
            and any(at < event.at for at in near)
        ):
            event = dataclasses.replace(event, at=min(at for at in near if at < event.at) - 1e-6)
        placed.append(event)
    # The writer handles an answer on its ordered executor, where an add its caller had
    # already submitted may go first: an add sent just after a fenced answer reached the
    # client was on its way before the client knew.
    sends = [e.at for e in placed if e.phase is Phase.SENT and e.kind is FrameKind.ADD]
    for index, event in enumerate(placed):
        if (
            event.phase is Phase.RECEIVED
            and event.kind is FrameKind.ADD
            and event.status is StatusCode.EFENCED
        ):
            following = [at for at in sends if event.at <= at <= event.at + CONCURRENT_AT_BOOKIE_S]
            if following:
                placed[index] = dataclasses.replace(event, at=max(following) + 1e-6)
    placed.sort(key=lambda e: (e.at, e.phase, e.frame.frame_id))
    return placed


def story_configs(
    record: WriterRecord, events: Sequence[JavaEvent]
) -> tuple[ModelConfig, ModelConfig]:
    """The model's configuration of ``record``'s story, and the spec's the recovering client's
    frames are checked against (a writer run has none: the two are the same).

    A fail-over run's is the writer's with the recovering client ``c2``, read as
    :func:`judge_reading` says (:data:`~.readings.FAILOVER`: the writer's reading, the
    recovering role's, :func:`~.story.judge`'s, and the fenced writer's), under what its
    frames reveal: recovery reads fence as observed; a decided read's late answers
    are ignored and its requests still reach their bookies; read errors count per entry;
    write-backs complete from the recovered LAC on; the writer closes the ledger when an add
    is fenced (``fenced_writer_closes``), once the answers queued before its close completed
    their adds (``closing_writer_takes_answers``), and not on the EFENCED answer to an add
    that had its ack quorum (``completed_adds_ignore_fence``); and a bookie the plan wiped
    restarts empty (``BookieRestartsEmpty``, as many as it wiped). The spec's client reads
    with the fence."""
    reading = judge_reading(record)
    if record.takeover is None:
        cfg = writer_config(record.shape, record.entries, reading=reading)
        return cfg, cfg
    spec_cfg = writer_config(record.shape, record.entries, clients=2)
    fenced = recovery_reads_fenced(events)
    return (
        dataclasses.replace(
            writer_config(record.shape, record.entries, clients=2, reading=reading),
            recovery_reads_fence=spec_cfg.recovery_reads_fence if fenced is None else fenced,
            # The bookies the plan wiped restart empty (BookieRestartsEmpty): no fence, no
            # entries (BookKeeper's data integrity check is off by default: no limbo).
            max_crashes=len(record.wiped),
        ),
        spec_cfg,
    )


def _story(
    record: WriterRecord,
    events: Sequence[JavaEvent],
    fates: Mapping[int, AddFate],
    prescribed: Sequence[ChangeKey],
    failures_first: bool = False,
) -> tuple[Judgement, list[list[ChangeKey]], list[ChangeKey]]:
    cfg, spec_cfg = story_configs(record, events)
    callbacks = [_Callback(o.at, o) for o in record.outcomes if o.at is not None]
    replay = _WriterReplay(record, cfg, fates, prescribed, spec_cfg, failures_first)
    replay.all_events = events
    replay.note_timeouts(events)
    try:
        replay.take(
            step(_CREATE, client=WRITER),
            request="the Java client creates the ledger (first ensemble: b1..b"
            f"{record.shape.ensemble} by position)",
        )
        cut = record.closed_at
        replay.run(
            [e for e in events if cut is None or e.at <= cut],
            [c for c in callbacks if cut is None or c.at <= cut],
            [f for f in forged_failures(record) if cut is None or f.at <= cut],
        )
        replay.close()
        replay.run([e for e in events if cut is not None and e.at > cut], [])
    except Stuck:
        pass
    missing = [o for o in record.outcomes if o.code is None]
    unfinished = []
    if missing:
        unfinished.append(
            "the Java client never called back "
            + ", ".join(o.describe().split(":")[0] for o in missing)
            + " (its adds' outcome is unknown)"
        )
    if record.closed_last_entry is None:
        unfinished.append(
            f"the ledger was not closed ({record.close_error or 'close did not return'}): its "
            "end is unknown"
        )
    if unfinished and replay.execution.error is None:
        # Nothing can be said of what the run did not finish: never clean (a violation or a
        # divergence found before still stands).
        replay.execution.error = "; ".join(unfinished)
    replay.check_readable()
    if replay.hidden_by_a_stall:
        hidden = (
            f"{len(replay.hidden_by_a_stall)} add frame(s) read as a stall of their bookie's "
            "connection ended, to a bookie outside the model's write set, sent at moments the "
            "stall hid ("
            + "; ".join(replay.hidden_by_a_stall[:4])
            + ("; ..." if len(replay.hidden_by_a_stall) > 4 else "")
            + "): the judge cannot place them"
        )
        execution = replay.execution
        if execution.violations:
            replay.notes.append(hidden)  # a broken invariant stands: it is the data's
        else:
            # The changes the stall hid leave the model's writer in another ensemble than the
            # client's from then on: what diverges after them may be their consequence.
            found = [*execution.divergences, *replay.frame_divergences]
            if found:
                hidden += (
                    f"; the story's {len(found)} divergence(s) may follow from the changes the "
                    "stall hid, so they are not decided either ("
                    + "; ".join(found[:3])
                    + ("; ..." if len(found) > 3 else "")
                    + ")"
                )
                execution.divergences.clear()
                replay.frame_divergences.clear()
            if execution.error is None:
                execution.error = hidden + _HIDDEN_BY_A_STALL
            else:
                replay.notes.append(hidden)
    if replay.wipes is not None and replay.wipes.excused:
        replay.notes.append(
            "the model's AllAckedEntriesAreReadable does not count "
            + ", ".join(f"e{translation.bk_entry_id(e)}" for e in sorted(replay.wipes.excused))
            + ": every bookie of its write set that held it was wiped by the plan (data loss by "
            "design, not the client's)"
        )
    judgement = Judgement(
        replay.finish(),
        cfg,
        list(replay.frame_divergences),
        ensemble_changes=replay.ensemble_changes,
        stale_answers=replay.stale_answers,
    )
    return judgement, replay.options, replay.chosen


__all__ = [
    "CONCURRENT_AT_CLIENT_S",
    "MAX_UNCERTAIN_ADDS",
    "WRITER",
    "AddFate",
    "WriterRecord",
    "add_fates",
    "judge",
    "judge_ledger",
    "judge_reading",
    "metadata_write_set",
    "segments_text",
    "timeout_check_interval_s",
    "writer_config",
]
