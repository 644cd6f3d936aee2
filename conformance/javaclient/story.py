"""The model's story of a Java-client recovery run, and the judgement of what the client sent.

The run (see :mod:`.scenario`): w1 (the model's ``c1``, our Python wire client) creates the
ledger and adds its entries directly to the bookies its :class:`~.plans.WriterPlan` names
(Defect 1's recipe: e0 reaches b2 only); w2 (``c2``, the real Java client) recovers the
ledger through the proxies; then w1's remaining adds reach their bookies (the recipe: e0 at
b3). A bookie the plan names for no add of an entry never gets it (the spec's lost message).
This module replays what happened as the model's steps
(:func:`~model.bookkeeper.scripted.take`), in the order the frame log shows, under the
configuration the client's frames reveal (``recovery_reads_fence`` from the recovery reads'
flags; late read answers ignored, as the Java client does; write-backs completed from the
recovered LAC on, as the Java client completes them). After every step the model's
invariants are checked.

The real client overlaps its recovery reads with its write-backs (it reads e2 while e1's
write-back is unconfirmed). The story still takes each event's step at the point the frame log
shows it, never reordered: the spec's read/write phase already allows that interleaving (see
:class:`RecoverySteps` and docs/javaclient-scenario.md, "Concurrent reads and write-backs").

Each frame the Java client sent is also checked against the SPEC's client (``spec_cfg``, reads
fence unless told otherwise): at that point of the story, would the spec's client send this
request? A frame it would not send (a recovery read without FENCE_LEDGER, a request the spec's
recovering client never sends, one sent twice) is a divergence. A bookie whose answer the
model does not predict, a metadata end the model does not reach, or an event the model does
not allow at all (the replay cannot go on) is a divergence too.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import DeliveryRecord, FrameRecord
from conformance import translation
from conformance.javaclient import observed
from conformance.javaclient.metadata_writes import MetadataWrite
from conformance.javaclient.model_replay import Judgement, ModelReplay, Stuck
from conformance.javaclient.observed import (
    CONCURRENT_AT_CLIENT_S,
    FrameKind,
    JavaEvent,
    Phase,
    answer_action,
    java_events,
    receive_action,
    recovery_reads_fenced,
    send_action,
)
from conformance.javaclient.plans import BOOKIES, WriterAdd, WriterPlan
from conformance.live.faults import FaultEvent
from conformance.observations import Observation
from conformance.verdict import Verdict
from model.bookkeeper.action_table import Actor, Move, WriteEnd, add_answer, the_action
from model.bookkeeper.action_table import Phase as ProtocolPhase
from model.bookkeeper.actions import Label, fencing_coverage, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import JAVA_RECOVERY, Reading
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    DELIVERED,
    FENCE_REQUEST,
    FENCING_PHASE,
    READ_REQUEST,
    STATUS_OPEN,
    FenceResponse,
    Message,
    bookie_name,
    bookies_of,
)
from model.bookkeeper.render import describe_message
from model.bookkeeper.scripted import enabled, step

#: The spec's configuration for Defect 1 (E = WQ = 3, AQ = 2), with the protection on.
SPEC_CONFIG = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2)
WRITER = "c1"
RECOVERER = "c2"
_STORES = "BookieSendsAddConfirmedResponse"
#: Two frames of one write-back to one bookie this close together come from one
#: ``PendingAddOp.initiate`` (see :meth:`RecoverySteps.sent_event`).
SAME_INITIATE_S = 0.05
#: The recovering client's requests, each sent in its own action of the spec.
RECOVERY_KINDS = frozenset({FrameKind.FENCE_READ, FrameKind.RECOVERY_READ, FrameKind.RECOVERY_ADD})
#: What the engine calls each kind of answer the proxies see.
_ANSWER_KINDS = {
    FrameKind.FENCE_READ: "fence",
    FrameKind.RECOVERY_READ: "read",
    FrameKind.RECOVERY_ADD: "add",
}
#: w1's part of the story, in the spec's actions (each found by what it is in the action
#: table): ClientCreatesLedger, ClientSendsAddEntryRequests, and the recovering client's
#: RecoveryClientClosesLedger.
_CREATE = the_action(actor=Actor.CLIENT, phase=ProtocolPhase.CREATE)
_SEND_ADDS = send_action(FrameKind.ADD)
RECOVERY_CLOSE = the_action(
    actor=Actor.CLIENT, phase=ProtocolPhase.CLOSE, recovery=True, write_ends=WriteEnd.SUCCEEDS
)
#: The recovering client's one receive action for its write-backs, whatever the answer (the
#: writer's ClientReceivesAddConfirmedResponse is enabled only on an OPEN ledger).
_WRITE_BACK_CONFIRMED = add_answer(Actor.CLIENT, fenced=False, recovery=True)
#: The recovering client's ensemble change and the write-backs it sends again after it.
_RECOVERY_CHANGE = the_action(
    actor=Actor.CLIENT, phase=ProtocolPhase.ENSEMBLE_CHANGE, move=Move.NONE, recovery=True
)
_RECOVERY_RESEND = the_action(
    actor=Actor.CLIENT, phase=ProtocolPhase.ENSEMBLE_CHANGE, move=Move.SEND, recovery=True
)


@dataclass(frozen=True)
class RecoveryRecord:
    """Everything a run observed, as plain data (a recorded run can be judged again)."""

    ledger_id: int
    #: Proxy name -> bookie index (0 for b1).
    bookie_of_proxy: Mapping[str, int]
    frames: Sequence[FrameRecord]
    deliveries: Mapping[int, DeliveryRecord]
    #: What w1 did (its acked entries, and where each unconfirmed entry went and when).
    writer: WriterPlan
    #: The bookies' answers to w1's adds of ``writer.adds``, keyed by (entry, bookie); an add
    #: with no answer here was never sent (the run stopped first).
    writer_answers: Mapping[tuple[int, str], StatusCode]
    #: BookKeeper's last entry id of the CLOSED metadata after the recovery (None: not closed).
    closed_last_entry: int | None
    #: Why the Java client's recovery open failed, if it did.
    java_error: str | None = None
    #: When ``openLedger`` returned (``time.monotonic()``, the frame log's clock): the ledger
    #: was closed by then, so the close step goes before any later frame (None: at the end).
    recovered_at: float | None = None
    #: Every fault the run's plan injected and every heal, in order (the frames' clock).
    faults: tuple[FaultEvent, ...] = ()
    #: The writes of the ledger's metadata through the ZooKeeper proxy while the plan was
    #: applied (the recovery's close among them), with when each was sent and answered.
    metadata_writes: tuple[MetadataWrite, ...] = ()


class RecoveryStory(ModelReplay):
    """The model fed with what was observed (:class:`ModelReplay`), and what the SPEC's
    client (``spec_cfg``) would do at each point, for the frame check."""

    def __init__(self, cfg: ModelConfig, spec_cfg: ModelConfig) -> None:
        super().__init__(cfg)
        self.spec_cfg = spec_cfg

    def recipients(self, action: str, entry: int | None) -> set[int]:
        """The bookies the model's c2 would message in ``action`` now (under ``cfg``)."""
        found: set[int] = set()
        for transition in successors(self.cfg, self.state):
            label = transition.label
            if label.action == action and label.client == 1 and _entry_matches(label, entry):
                found.update(m.bookie for m, _ in label.sent)
        return found

    def spec_requests(self, action: str, entry: int | None) -> set[Message]:
        """The requests the SPEC's client sends in ``action`` from the current state."""
        found: set[Message] = set()
        for transition in successors(self.spec_cfg, self.state):
            label = transition.label
            if label.action == action and label.client == 1 and _entry_matches(label, entry):
                found.update(m for m, _ in label.sent)
        return found


def _entry_matches(label: Label, entry: int | None) -> bool:
    return entry is None or dict(label.detail).get("entry") == entry


def _spec_entry(event: JavaEvent) -> int | None:
    if event.kind is FrameKind.FENCE_READ or event.entry_id is None:
        return None
    return translation.spec_entry_id(event.entry_id)


def _frame_message(event: JavaEvent, spec_requests: set[Message]) -> Message | None:
    """The spec's request that ``event``'s frame is, if the spec's client sends it."""
    entry = _spec_entry(event)
    for message in spec_requests:
        if message.bookie != event.bookie or message.cid != 1:
            continue
        if event.kind is FrameKind.FENCE_READ and message.kind == FENCE_REQUEST:
            return message
        if (
            event.kind is FrameKind.RECOVERY_READ
            and message.kind == READ_REQUEST
            and message.entry_id == entry  # type: ignore[union-attr]
            and message.fence == event.fence  # type: ignore[union-attr]
        ):
            return message
        if (
            event.kind is FrameKind.RECOVERY_ADD
            and message.kind == ADD_ENTRY_REQUEST
            and message.recovery  # type: ignore[union-attr]
            and message.entry.id == entry  # type: ignore[union-attr]
        ):
            return message
    return None


class RecoverySteps:
    """Steps for the Java client's events, and the frame check against the spec's client.

    Each event is taken where the frame log shows it, never moved: the Java client's
    concurrency is within what the spec's read/write phase allows, so no reordering (and no
    argument about commuting steps) is needed. The seed's phases are the fencing phase and the
    read/write phase; inside the latter the spec interleaves reads and write-backs freely:

    - ``ClientSendsRecoveryReadRequests`` needs ``recovery_phase = ReadWritePhase``,
      ``last_recoverable_entry = Nil`` and ``curr_read_entry = Nil`` (the previous entry is
      decided); nothing about ``pending_add_ops`` or add messages. It writes
      ``curr_read_entry``, ``fenced`` and read requests.
    - ``ClientWritesBackEntry`` needs ``recovery_phase = ReadWritePhase`` and an op of
      ``pending_add_ops`` whose recovery add is unsent, the lowest such; it reads no read state
      and writes only recovery add requests.
    - ``RecoveryClientReceivesAddConfirmedResponse`` needs ``status = STATUS_IN_RECOVERY`` and
      ``IsEarliestMsg`` (no lower entry's answer of the same bookie and ``recovery`` flag still
      receivable); it writes ``confirmed``, ``lac`` and ``pending_add_ops``, none of which a
      read step reads (``ReadPositive`` adds to ``pending_add_ops`` from ``lap``, which no add
      step writes).
    - ``RecoveryClientClosesLedger`` needs ``last_recoverable_entry # Nil`` and
      ``pending_add_ops = {}``: the one place where reads and write-backs meet.

    So the read of e2 may be sent, answered and decided, and e2 written back, before any
    confirmation of e1's write-back arrives, as the real client does; what the spec still
    orders is what the client must order too: one entry read at a time, write-backs sent
    lowest entry first, a bookie's answers to write-backs in entry order, and the close after
    the last read and every write-back's ack quorum.
    """

    def __init__(
        self,
        story: RecoveryStory,
        events: Sequence[JavaEvent],
        add_timeout_s: float | None = None,
    ) -> None:
        """``add_timeout_s``: the client's add timeout, when its write-backs can time out (a
        write-back that never got through, or reached its proxy after the timeout, is the
        spec's lost message: :meth:`lost_write_backs`); None: only a write-back a proxy
        dropped is lost (:meth:`dropped`, the recovering role's runs)."""
        self.story = story
        self.events = events
        self.add_timeout_s = add_timeout_s
        self.started: dict[tuple[FrameKind, int | None], set[Message]] = {}
        #: (kind, entry, bookie) of each request sent -> when its first frame showed.
        self.sent: dict[tuple[FrameKind, int | None, int], float] = {}
        self.ignored: set[int] = set()
        #: Write-backs sent twice to one bookie as one add was initiated (their answers are
        #: ignored, as the copy they answer).
        self.copies: set[object] = set()
        #: Fence answers delivered to the client during its fencing phase, not yet taken.
        self.fence_answers: list[JavaEvent] = []
        #: Write-backs the client timed out before their bookie's answer reached it (the
        #: answer is the spec's lost one: :meth:`answer_timed_out`).
        self.timed_out: set[object] = set()

    def lost_write_backs(
        self, entry: int | None, since: float, *, timed_out: bool = True
    ) -> set[int]:
        """Bookies whose write-back of ``entry`` sent from ``since`` on never got through in
        time: dropped, never answered (a crashed bookie), never sent at all (the connection to
        a crashed bookie failed), or reaching the proxy only after the client's add timeout (a
        stalled connection). The client times such a write-back out (the spec's lost
        message), and replaces the bookie (``RecoveryClientChangesEnsemble``).

        ``timed_out=False``: the client replaced no bookie of this entry's write-back
        (:meth:`replaced_for`), so a timeout, if it fired, changed nothing: BookKeeper's
        ``PendingAddOp`` had its ack quorum already and ignores the error. A write-back that
        got through late (a stalled connection) is then the spec's delivered request, which
        the bookie processes when its frame shows, and whose answer the client no longer
        takes."""
        deadline = (
            float("inf")
            if self.add_timeout_s is None or not timed_out
            else since + self.add_timeout_s
        )
        through = {
            e.bookie
            for e in self.events
            if e.phase is Phase.SENT
            and e.kind is FrameKind.RECOVERY_ADD
            and _spec_entry(e) == entry
            and since <= e.at < deadline
            and e.delivered
            and e.answered
        }
        return set(range(self.story.cfg.bookies)) - through

    def replaced_for(self, entry: int | None, since: float, recipients: set[int]) -> bool:
        """Whether the client wrote ``entry`` back, from ``since`` on, to a bookie outside
        ``recipients`` (its write set when the write-back started): it replaced a bookie."""
        return any(
            e.phase is Phase.SENT
            and e.kind is FrameKind.RECOVERY_ADD
            and _spec_entry(e) == entry
            and e.at >= since
            and e.bookie not in recipients
            for e in self.events
        )

    def change_ensemble_for(self, event: JavaEvent) -> bool:
        """A write-back to a bookie the model's recovering client has not sent it to: the
        client replaced a bookie whose write-back failed. Take the change whose new ensemble
        has that bookie (``RecoveryClientChangesEnsemble``) and the resends it causes
        (``RecoveryClientSendsPendingAddOp``); True if the model's client could."""
        story = self.story
        changes = [
            t
            for t in successors(story.cfg, story.state)
            if t.label.action == _RECOVERY_CHANGE
            and t.label.client == 1
            and int(dict(t.label.detail)["ensemble"]) >> event.bookie & 1
        ]
        if not changes:
            return False
        story.execution.apply_observed(
            changes[0],
            request=f"frame #{event.frame.frame_id}: a write-back to {bookie_name(event.bookie)}, "
            "outside the recovering client's ensemble: it replaced a bookie whose write-back "
            "failed",
        )
        for _ in range(story.cfg.send_limit):
            resends = [
                t
                for t in successors(story.cfg, story.state)
                if t.label.action == _RECOVERY_RESEND and t.label.client == 1
            ]
            if not resends:
                break
            label = resends[0].label
            resent = int(dict(label.detail)["entry"])
            lost = {
                bookie_name(m.bookie)
                for m, _ in label.sent
                if m.bookie in self.lost_write_backs(resent, event.at)
            }
            taken = story.take(
                step(_RECOVERY_RESEND, client=RECOVERER, entry=resent, lost=lost),
                request=f"e{translation.bk_entry_id(resent)} written back to the bookies new "
                "to its write set",
            )
            self.started.setdefault((FrameKind.RECOVERY_ADD, resent), set()).update(
                m for m, _ in taken.sent
            )
        return True

    def answer_timed_out(self, answer: JavaEvent) -> bool:
        """Whether ``answer``, a bookie's answer to a write-back, reached the client only
        after the client had timed the write-back out: it wrote the entry back to a
        replacement (a bookie its write-back did not go to first), at least the add timeout
        after this request and before this answer's delivery (``PendingAddOp``'s timeout,
        then ``handleBookieFailure``). The bookie stored the entry; to the spec the answer is
        lost (``WriteTimeoutForBookie``, which lets the recovering client change its
        ensemble). Its delivery is then no step of the spec's (:attr:`timed_out`)."""
        if self.add_timeout_s is None or answer.kind is not FrameKind.RECOVERY_ADD:
            return False
        key = observed.pairing_key(answer.frame)
        entry = _spec_entry(answer)
        writes = [
            e
            for e in self.events
            if e.phase is Phase.SENT
            and e.kind is FrameKind.RECOVERY_ADD
            and _spec_entry(e) == entry
        ]
        request = next((e for e in writes if observed.pairing_key(e.frame) == key), None)
        delivery = next(
            (
                e
                for e in self.events
                if e.phase is Phase.RECEIVED and observed.pairing_key(e.frame) == key
            ),
            None,
        )
        if request is None or delivery is None:
            return False
        first = {e.bookie for e in writes if e.at <= request.at}
        replaced = any(
            e.bookie not in first and request.at + self.add_timeout_s <= e.at < delivery.at
            for e in writes
        )
        if replaced:
            self.timed_out.add(key)
        return replaced

    def dropped(self, kind: FrameKind, entry: int | None) -> set[int]:
        """Bookies whose request of this step a proxy dropped: the model's lost messages.

        Recovery reads are the exception: a dropped read stays unprocessed at the model's
        bookie, not lost. The spec's client counts a lost read as a timeout at once
        (``ReadTimeoutCount``), where the real one learns of it only when its read timeout
        expires, seconds later, having gone on meanwhile (other answers, a decision, the
        write-backs); what the timeout leads to (a failed recovery) shows as the client's
        error. A request the client never sent is not lost either: the real client asks
        lazily (its reads go to one bookie after another, stopping once the entry is
        decided, where the spec's client sends to the whole write set at once).
        """
        if kind is FrameKind.RECOVERY_READ:
            return set()
        sent = [
            e
            for e in self.events
            if e.phase is Phase.SENT and e.kind is kind and _spec_entry(e) == entry
        ]
        return {e.bookie for e in sent} - {e.bookie for e in sent if e.delivered}

    def run(self, events: Sequence[JavaEvent]) -> None:
        for event in events:
            self.event(event)

    def event(self, event: JavaEvent) -> None:
        """Take the step of one event of the recovering client's."""
        if event.phase is not Phase.SENT and observed.pairing_key(event.frame) in self.copies:
            if event.phase is Phase.ANSWERED:
                self.ignore(event, "answers a copy of a write-back; ignored")
            return
        if event.phase is Phase.RECEIVED and observed.pairing_key(event.frame) in self.timed_out:
            self.ignore(event, "reached the client after it had timed the write-back out; ignored")
            return
        if event.phase is Phase.SENT:
            if event.kind is FrameKind.RECOVERY_READ and self.fence_answers:
                self.settle_fencing(_spec_entry(event))
            self.sent_event(event)
        elif event.kind not in RECOVERY_KINDS:
            return  # reported when it was sent
        elif event.phase is Phase.ANSWERED:
            self.answered(event)
        else:
            self.received(event)

    def sent_event(self, event: JavaEvent) -> None:
        story = self.story
        frame = f"frame #{event.frame.frame_id} to {bookie_name(event.bookie)}"
        if event.kind not in RECOVERY_KINDS:  # a writer's add, or no protocol request
            story.frame_divergences.append(
                f"{frame}: {event.frame.info.describe()}: the spec's recovering client sends "
                "no such request"
            )
            return
        entry = _spec_entry(event)
        batch = (event.kind, entry)
        action = send_action(event.kind)
        if batch not in self.started:
            self.started[batch] = story.spec_requests(action, entry)
            recipients = story.recipients(action, entry)
            lost = recipients & (
                self.lost_write_backs(
                    entry,
                    event.at,
                    timed_out=self.replaced_for(entry, event.at, recipients),
                )
                if event.kind is FrameKind.RECOVERY_ADD and self.add_timeout_s is not None
                else self.dropped(event.kind, entry)
            )
            story.take(
                step(action, client=RECOVERER, entry=entry, lost={bookie_name(b) for b in lost}),
                request=f"{frame}: {event.frame.info.describe()}",
            )
        if (
            event.kind is FrameKind.RECOVERY_ADD
            and _frame_message(event, self.started[batch]) is None
            and event.bookie not in self.recovery_ensemble()
        ):
            self.change_ensemble_for(event)
        key = (event.kind, entry, event.bookie)
        if key in self.sent:
            if (
                event.kind is FrameKind.RECOVERY_ADD
                and event.at - self.sent[key] <= SAME_INITIATE_S
            ):
                # PendingAddOp.initiate packages the add, then handles the write failures
                # noted meanwhile (maybeHandleDelayedWriteBookieFailure: the replacement is
                # sent every pending add, this one too), then sends to its write set, which
                # now holds the replacement: it gets the same add twice. One message to the
                # spec; the copy and its answer are noted.
                self.copies.add(observed.pairing_key(event.frame))
                story.notes.append(
                    f"{frame}: {event.frame.info.describe()} again, as the add was initiated "
                    "(a delayed write failure handled in PendingAddOp.initiate); ignored"
                )
                return
            story.frame_divergences.append(
                f"{frame}: {event.frame.info.describe()} again: the spec's client sends one "
                f"{event.kind.value} per bookie"
            )
            return
        self.sent[key] = event.at
        if _frame_message(event, self.started[batch]) is None:
            wanted = [
                describe_message(m) for m in sorted(self.started[batch]) if m.bookie == event.bookie
            ]
            fence = "TRUE" if story.spec_cfg.recovery_reads_fence else "FALSE"
            story.frame_divergences.append(
                f"{frame}: {event.frame.info.describe()}: the spec's client "
                f"(RecoveryReadsFence={fence}) sends "
                f"{' or '.join(wanted) if wanted else 'nothing to that bookie'} here"
                + (" (a recovery read without FENCE_LEDGER)" if _unfenced_read(event) else "")
            )

    def answered(self, event: JavaEvent) -> None:
        story = self.story
        entry = _spec_entry(event)
        status = event.status
        bookie = bookie_name(event.bookie)
        lost = set() if event.delivered and not self.answer_timed_out(event) else {bookie}
        # An add's real answer picks which of the model's two outcomes to take.
        scripted = step(
            answer_action(event.kind, status),
            bookie=bookie,
            entry=entry,
            lost=lost,
            sender=RECOVERER if event.kind is FrameKind.RECOVERY_ADD else None,
        )
        if (
            event.kind is FrameKind.RECOVERY_READ
            and self.decided(entry)
            and not enabled(story.cfg, story.state, scripted)
        ):
            self.ignore(event, "answered after the client decided")
            return
        if event.kind is FrameKind.RECOVERY_READ and status is StatusCode.EOK and entry is not None:
            self.stored_before_read(event, entry)
        label = story.take(
            scripted,
            request=f"frame #{event.frame.frame_id} from {bookie}: {event.frame.info.describe()}",
            observed=translation.answer_seen_in_passing(_ANSWER_KINDS[event.kind], status),
        )
        if event.kind is FrameKind.FENCE_READ:
            self.compare_fence_lac(event, label)

    def stored_before_read(self, event: JavaEvent, entry: int) -> None:
        """A bookie returns an entry its model lacks while the writer's add of it to that
        bookie is still in the spec's bag (its answer never reached the client: the connection
        was reset, or the client timed the add out): the bookie stored it before this read,
        and the answer was lost. Take that step first."""
        story = self.story
        b = event.bookie
        if any(e.id == entry for e in story.state.b_entries[b]):
            return
        bookie = bookie_name(b)
        for stored in (
            step(_STORES, bookie=bookie, entry=entry, sender=WRITER, late=True),
            step(_STORES, bookie=bookie, entry=entry, sender=WRITER, lost={bookie}),
        ):
            if enabled(story.cfg, story.state, stored):
                story.take(
                    stored,
                    request=f"frame #{event.frame.frame_id} from {bookie} returns "
                    f"e{translation.bk_entry_id(entry)}: it had stored the writer's add, whose "
                    "answer never reached the client, before this read",
                )
                return

    def compare_fence_lac(self, event: JavaEvent, label: Label) -> None:
        """A fence read's answer carries the bookie's last entry, whose header holds the LAC
        the recovery starts from: it must be the LAC the model's bookie answers (frames
        recorded before the LAC was decoded carry none: nothing to compare)."""
        seen = event.frame.info.lac
        answers = [m for m, _delivery in label.sent if isinstance(m, FenceResponse)]
        if seen is None or not answers:
            return
        predicted = translation.bk_entry_id(answers[0].lac)
        if predicted != seen:
            self.story.execution.add_divergence(
                f"frame #{event.frame.frame_id}: {bookie_name(event.bookie)} answered the fence "
                f"read with LAC e{seen}; the model's {bookie_name(event.bookie)} answers "
                f"LAC e{predicted}"
            )

    def received(self, event: JavaEvent) -> None:
        story = self.story
        if event.frame.frame_id in self.ignored:
            return
        entry = _spec_entry(event)
        peer = bookie_name(event.bookie)
        action = (
            _WRITE_BACK_CONFIRMED
            if event.kind is FrameKind.RECOVERY_ADD
            else receive_action(event.kind, event.status)
        )
        scripted = step(action, client=RECOVERER, peer=peer, entry=entry)
        if event.kind is FrameKind.FENCE_READ:
            c2 = story.state.clients[1]
            fencing = c2.recovery_phase == FENCING_PHASE
            if not fencing and not enabled(story.cfg, story.state, scripted):
                self.ignore(event, "reached the client after its fencing phase; ignored")
                return
            if fencing:
                # Which fence answers the client used is settled at its first recovery read
                # (:meth:`settle_fencing`), not in the order the proxies delivered them.
                self.fence_answers.append(event)
                return
        elif event.kind is FrameKind.RECOVERY_READ:
            if self.decided(entry) and not enabled(story.cfg, story.state, scripted):
                self.ignore(event, "reached the client after it decided; ignored")
                return
        elif not self.writing_back(entry) and not enabled(story.cfg, story.state, scripted):
            # An ack quorum had confirmed it already (the model's op is done; the ledger
            # may be closed): the real client, like the spec's, has no use for it.
            self.ignore(event, "reached the client after the write-back completed; ignored")
            return
        story.take(scripted, request=f"frame #{event.frame.frame_id} delivered to the client")

    def settle_fencing(self, first_read: int | None) -> None:
        """Take the fence answers the client used, now that its first recovery read (of
        ``first_read``, the model's entry; None: it sent none) shows which LAC it had.

        BookKeeper's ``ReadLastConfirmedOp`` completes at quorum coverage with the highest
        LAC heard so far and ignores the answers after it. Which answers came first is the
        client's own order: answers delivered within a millisecond on different connections
        may be handled in either order, so the proxies' delivery order does not settle it.
        The answers taken are the first of the delivered ones, in delivery order, that reach
        coverage and give the LAC the first read shows; failing that, simply the first ones
        in delivery order (and the first read's step will tell what is wrong). The rest
        reached the client after its fencing completed: noted, ignored.
        """
        story = self.story
        answers, self.fence_answers = self.fence_answers, []
        chosen = self._fence_answers_used(answers, first_read)
        for event in answers:
            if event in chosen:
                story.take(
                    step(
                        receive_action(event.kind, event.status),
                        client=RECOVERER,
                        peer=bookie_name(event.bookie),
                    ),
                    request=f"frame #{event.frame.frame_id} delivered to the client",
                )
            else:
                self.ignore(event, "reached the client after its fencing read completed")

    def _fence_answers_used(
        self, answers: Sequence[JavaEvent], first_read: int | None
    ) -> list[JavaEvent]:
        story = self.story
        c2 = story.state.clients[1]
        lacs = {
            m.bookie: m.lac
            for m, count in story.state.messages
            if isinstance(m, FenceResponse) and m.cid == c2.id and count >= DELIVERED
        }
        usable = [e for e in answers if e.bookie in lacs]
        floor = c2.lac

        def outcome(subset: Sequence[JavaEvent]) -> tuple[bool, int]:
            fenced, lac = c2.fenced, floor
            for e in subset:
                fenced |= 1 << e.bookie
                lac = max(lac, lacs[e.bookie])
            return fencing_coverage(story.cfg, fenced, c2.recovery_ensemble), lac

        def minimal(subset: Sequence[JavaEvent]) -> bool:
            covered, _ = outcome(subset)
            return covered and not outcome(subset[:-1])[0]

        in_order = next(
            (usable[:n] for n in range(len(usable) + 1) if outcome(usable[:n])[0]), usable
        )
        if first_read is None:
            return list(in_order)
        for size in range(1, len(usable) + 1):
            for subset in itertools.combinations(usable, size):
                if minimal(subset) and outcome(subset)[1] + 1 == first_read:
                    return list(subset)
        return list(in_order)

    def recovery_ensemble(self) -> set[int]:
        """The bookies of the model's recovering client's current ensemble."""
        fragment = self.story.state.clients[1].curr_fragment
        return set() if fragment is None else set(bookies_of(fragment.ensemble))

    def writing_back(self, entry: int | None) -> bool:
        """Whether the model's recovering client still waits for confirmations of ``entry``."""
        client = self.story.state.clients[1]
        return any(op.entry.id == entry for op in client.pending_add_ops)

    def decided(self, entry: int | None) -> bool:
        """Whether the model's recovering client no longer reads ``entry``."""
        client = self.story.state.clients[1]
        return client.curr_read_entry != entry

    def ignore(self, event: JavaEvent, why: str) -> None:
        self.ignored.add(event.frame.frame_id)
        self.story.notes.append(
            f"frame #{event.frame.frame_id} ({bookie_name(event.bookie)} "
            f"{event.frame.info.describe()}) {why}"
        )


def _unfenced_read(event: JavaEvent) -> bool:
    return event.kind is FrameKind.RECOVERY_READ and not event.fence


def _writer_add(
    story: RecoveryStory, add: WriterAdd, answers: Mapping[tuple[int, str], StatusCode]
) -> None:
    bookie, bk_entry = add.bookie, add.entry
    status = answers.get((bk_entry, bookie))
    if status is None:
        story.notes.append(f"w1's add of e{bk_entry} to {bookie} was never sent")
        raise Stuck(f"w1's add of e{bk_entry} to {bookie} was never sent")
    if status not in (StatusCode.EOK, StatusCode.EFENCED):
        story.diverge(
            f"w1's add of e{bk_entry} to {bookie} got {status.name}; the model's bookie "
            "confirms it or answers EFENCED"
        )
        raise Stuck(f"w1's add to {bookie} answered {status.name}")
    confirmed = status is StatusCode.EOK
    entry = translation.spec_entry_id(bk_entry)
    story.take(
        step(
            add_answer(Actor.BOOKIE, fenced=not confirmed),
            bookie=bookie,
            entry=entry,
            sender=WRITER,
        ),
        request=f"w1 adds e{bk_entry} to {bookie} (direct)",
        observed=translation.add_observation(status),
    )
    if story.state.clients[0].status != STATUS_OPEN:
        # w1 withdrew on an earlier EFENCED (ClientReceivesAddFencedResponse): the spec's
        # writer takes no further answer, as the real one stops at the first.
        return
    story.take(
        step(
            add_answer(Actor.CLIENT, fenced=not confirmed),
            client=WRITER,
            peer=bookie,
            entry=entry,
        )
    )


def judge(
    record: RecoveryRecord,
    spec_cfg: ModelConfig = SPEC_CONFIG,
    *,
    reading: Reading = JAVA_RECOVERY,
) -> Judgement:
    """Replay ``record`` as the model's story and judge it (see the module docstring), the
    model read as ``reading`` (the recovering role's: :data:`~.readings.JAVA_RECOVERY`, which
    its guidance shares)."""
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    first = _judge_events(record, spec_cfg, events, reading)
    if first.verdict is not Verdict.DIVERGENCE:
        return first
    # The client may have processed recovery-read answers delivered together on different
    # connections in the other order: an entry's read decides on the answers it has when it
    # has enough (PendingReadOp), so which came first can decide it.
    for negatives_first in (True, False):
        reordered = concurrent_read_answers_reordered(events, negatives_first=negatives_first)
        if reordered == events:
            continue
        judgement = _judge_events(
            record,
            spec_cfg,
            reordered,
            reading,
            order_note="recovery-read answers delivered on different connections within "
            f"{CONCURRENT_AT_CLIENT_S * 1000:g} ms of each other taken "
            + ("errors first" if negatives_first else "entries first")
            + " (each connection's thread hands them to the ledger's executor)",
        )
        if judgement.verdict is not Verdict.DIVERGENCE:
            return judgement
    return first


def _positive_read(event: JavaEvent) -> bool:
    return event.status is StatusCode.EOK


def concurrent_read_answers_reordered(
    events: Sequence[JavaEvent], *, negatives_first: bool
) -> list[JavaEvent]:
    """``events`` with each run of recovery-read answers delivered to the client within
    :data:`CONCURRENT_AT_CLIENT_S` of the run's first, from different bookies, sorted with
    the error answers (NoSuchEntry above all) first, or the entries first. A bookie's own
    answers keep their order (one connection); every other event keeps its place."""
    out = list(events)

    def answer(e: JavaEvent) -> bool:
        return e.phase is Phase.RECEIVED and e.kind is FrameKind.RECOVERY_READ

    index = 0
    while index < len(out):
        if not answer(out[index]):
            index += 1
            continue
        run = [index]
        j = index + 1
        while j < len(out) and out[j].at - out[index].at <= CONCURRENT_AT_CLIENT_S:
            if answer(out[j]):
                run.append(j)
            j += 1
        bookies = [out[k].bookie for k in run]
        if len(run) > 1 and len(set(bookies)) == len(bookies):
            members = sorted(
                (out[k] for k in run),
                key=lambda e: _positive_read(e) == negatives_first,
            )
            for k, member in zip(run, members, strict=True):
                out[k] = member
        index = run[-1] + 1
    return out


def _judge_events(
    record: RecoveryRecord,
    spec_cfg: ModelConfig,
    events: Sequence[JavaEvent],
    reading: Reading,
    order_note: str | None = None,
) -> Judgement:
    fenced = recovery_reads_fenced(events)
    entries, acked = record.writer.entries, record.writer.acked
    if acked + entries > spec_cfg.send_limit or entries > spec_cfg.inflight_limit:
        # w1 sends its unconfirmed entries before an ack quorum confirmed the first of them.
        spec_cfg = dataclasses.replace(
            spec_cfg,
            send_limit=max(spec_cfg.send_limit, acked + entries),
            inflight_limit=max(spec_cfg.inflight_limit, entries),
        )
    cfg = java_recovery_config(spec_cfg, fenced, reading)
    story = RecoveryStory(cfg, spec_cfg)
    try:
        story.take(step(_CREATE, client=WRITER), request="w1 writes the metadata")
        for bk_entry in range(acked):
            entry = translation.spec_entry_id(bk_entry)
            story.take(step(_SEND_ADDS, client=WRITER))
            for bookie in BOOKIES:
                story.take(
                    step(add_answer(Actor.BOOKIE, fenced=False), bookie=bookie, entry=entry),
                    request=f"w1 adds e{bk_entry} to {bookie} (direct)",
                    observed=translation.add_observation(StatusCode.EOK),
                )
                story.take(
                    step(
                        add_answer(Actor.CLIENT, fenced=False),
                        client=WRITER,
                        peer=bookie,
                        entry=entry,
                    )
                )
        for bk_entry in record.writer.entry_ids:
            lost = record.writer.lost(bk_entry)
            story.take(step(_SEND_ADDS, client=WRITER, lost=lost))
        for add in record.writer.before():
            _writer_add(story, add, record.writer_answers)
        replay = RecoverySteps(story, events)
        cut = record.recovered_at
        replay.run([e for e in events if cut is None or e.at <= cut])
        if replay.fence_answers:
            replay.settle_fencing(None)  # the client sent no recovery read
        if record.closed_last_entry is not None:
            story.take(
                step(RECOVERY_CLOSE, client=RECOVERER),
                request=f"the Java client closes the ledger at {record.closed_last_entry}",
                observed=Observation("metadata", "OK", success=True),
            )
            real_last = translation.spec_entry_id(record.closed_last_entry)
            if story.state.meta_last_entry != real_last:
                model_last = translation.bk_entry_id(story.state.meta_last_entry)
                story.diverge(
                    f"the Java client closed the ledger at entry {record.closed_last_entry}; "
                    f"the model's recovery closes it at {model_last}"
                )
        elif record.java_error:
            story.notes.append(f"the Java client's recovery failed: {record.java_error}")
        replay.run([e for e in events if cut is not None and e.at > cut])
        if replay.fence_answers:
            replay.settle_fencing(None)
        for add in record.writer.after():
            _writer_add(story, add, record.writer_answers)
    except Stuck:
        pass
    story.notes.insert(0, _fence_note(fenced))
    if order_note:
        story.notes.insert(1, order_note)
    outcome = story.finish()
    return Judgement(outcome, cfg, list(story.frame_divergences), reads_fenced=fenced)


def java_recovery_config(
    spec_cfg: ModelConfig, fenced: bool | None, reading: Reading = JAVA_RECOVERY
) -> ModelConfig:
    """``spec_cfg`` with the recovering client as the Java client is: read as ``reading``
    (:data:`~.readings.JAVA_RECOVERY`: late read answers ignored and late read requests
    processed, read errors counted per entry, write-backs completed from the recovered LAC,
    the bookies' LAC their highest entry's, resends carrying their first LAC, adds taken as
    they arrive; each switch's evidence is in the reading), its recovery reads fencing as its
    frames showed (``fenced``; None: it sent none, the spec's setting stays)."""
    fence = spec_cfg.recovery_reads_fence if fenced is None else fenced
    return dataclasses.replace(reading.apply(spec_cfg), recovery_reads_fence=fence)


def _fence_note(fenced: bool | None) -> str:
    if fenced is None:
        return "the Java client sent no recovery read"
    if fenced:
        return "the Java client's recovery reads carry FENCE_LEDGER"
    return "the Java client's recovery reads carry NO FENCE_LEDGER flag (Defect 1, #2614)"


__all__ = [
    "RECOVERER",
    "RECOVERY_CLOSE",
    "RECOVERY_KINDS",
    "SPEC_CONFIG",
    "RecoveryRecord",
    "RecoverySteps",
    "RecoveryStory",
    "java_recovery_config",
    "judge",
]
