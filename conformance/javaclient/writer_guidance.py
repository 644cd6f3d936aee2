"""Writer plans read from the model: where the spec's writer meets its hardest moments.

The spec's writer is safe (no invariant of the writer-only configuration breaks), so the
model cannot hand the writer search a counterexample as it does the recovery search. What it
can hand over is *danger*: the interleavings in which a client implementation has the most to
get right, and the faults that lead there. :func:`writer_guided_plans` explores the writer's
configuration (:func:`~.writer_story.writer_config`: E + 1 bookies, one client, the plan's
shape, SendLimit = InflightLimit = the entries) breadth first, restricted to what the harness
can make happen (the proxies lose add requests, at most ``max_faults`` of them; bookies'
answers are never lost; the writer closes only once every entry was sent), and scores each
state by what the issue's open bugs need:

- an ensemble change while two or more entries are pending (#4097: a write completing while
  its ensemble is replaced; #3005: an entry whose ack set the change broke);
- above all (a score of its own, whatever else the trace did), #3005's own precondition: the
  change fails a bookie that confirmed a pending entry, every pending entry from the first to
  that one but the first has its ack quorum, and the first one's answer, from a bookie that
  stays, is on its way (when it arrives during the change, the client acknowledges the run at
  once, before the change unsets the failed bookie's confirmation:
  ``PendingAddOp.unsetSuccessAndSendWriteRequest``);
- a second ensemble change, and one that brings back a bookie the ledger had dropped;
- a pending entry resent to a new bookie while an earlier answer from the replaced one is
  still on its way.

A trace scores its most dangerous step. Each state that scores is turned into a plan: every
add request the trace lost becomes a ``drop`` of that add (with the extended faults also, in
plans of their own, a forged EIO in place of its answer, its answer held past the add
timeout, and a forged EIO whose ensemble change is written while the answers the trace had in
flight at its most dangerous change arrive: :class:`Realization`) (bookie names are the model's,
which are the run's: b1..bE by position in the first ensemble, b{E+1} the spare, and with one
spare the model's replacement is the client's). Plans are deduplicated and ordered by score
(highest first), then by fewer faults, then the held change first (of a danger's
realizations, the one that makes its window happen rather than leave it to the threads).
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from conformance.javaclient.plans import (
    DROP,
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlannedFault,
    forge,
    hold_for,
)
from conformance.javaclient.writer_plans import (
    SEARCHED_ENTRIES,
    WriterRunPlan,
    WriterShape,
    add_key,
)
from conformance.javaclient.writer_story import writer_config
from model.bookkeeper.action_table import (
    Actor,
    AddAnswer,
    Move,
    Phase,
    actions_where,
    add_answer,
    the_action,
)
from model.bookkeeper.actions import Label, init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import JAVA_WRITER, Reading
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    ADD_ENTRY_RESPONSE,
    DELIVERED,
    State,
    bookie_name,
)

#: The model's one client, the writer.
_WRITER = 0

# The actions are named by what they are (model.bookkeeper.action_table), never spelled out.
#: The writer's actions the harness can make happen: the creation, the adds and their
#: confirmations (the bookies' and the writer's), the ensemble changes and the resends. No
#: crash (bookies stay up), no close (only after every entry was sent), no fenced answer (no
#: one recovers the ledger, so no bookie is fenced).
_WRITER_ACTIONS = actions_where(
    phase=(Phase.CREATE, Phase.ADD, Phase.ENSEMBLE_CHANGE), recovery=False
) - actions_where(answer=AddAnswer.FENCED)
#: The writer's sends (all of them adds): ClientSendsAddEntryRequests, ClientResendsPendingAddOp.
_SENDS = actions_where(actor=Actor.CLIENT, move=Move.SEND, recovery=False)
#: ClientCreatesLedger.
_CREATE = the_action(phase=Phase.CREATE)
#: BookieSendsAddConfirmedResponse.
_BOOKIE_CONFIRMS = add_answer(Actor.BOOKIE, fenced=False)
#: ClientChangesEnsemble.
_CHANGE = the_action(
    actor=Actor.CLIENT, phase=Phase.ENSEMBLE_CHANGE, move=Move.NONE, recovery=False
)
#: ClientResendsPendingAddOp.
_RESEND = the_action(
    actor=Actor.CLIENT, phase=Phase.ENSEMBLE_CHANGE, move=Move.SEND, recovery=False
)


#: Adds as ``(bookie, entry)``: BookKeeper's entry ids, the model's bookie names.
_Adds = frozenset[tuple[str, int]]


@dataclass(frozen=True)
class _Node:
    """What a state's trace did so far: its lost adds, its changes, its score, and the
    answers in flight to the writer at its most dangerous change."""

    lost: _Adds
    changes: int
    score: int
    in_flight: _Adds = frozenset()


@dataclass(frozen=True)
class _Danger:
    """A trace's lost adds, how dangerous it got, and the answers in flight at its most
    dangerous change (those a realization may bring while that change is written)."""

    score: int
    in_flight: _Adds


#: The score of a change that meets #3005's precondition: above every other change's (at most
#: 2 + 2 + 2), and the same whatever else the trace did, so that of the traces meeting it the
#: one with the fewest faults goes first.
_BREAKS_AN_ACK_SET = 10


def _breaks_an_ack_set(cfg: ModelConfig, before: State, label: Label) -> bool:
    """#3005's precondition at the change ``label``: the writer's first pending entry is
    answered by a bookie that stays, that answer on its way; the pending entries after it
    up to one the failed bookie confirmed all have their ack quorum. When that answer arrives
    during the change, the client acknowledges the run of them at once
    (``sendAddSuccessCallbacks``), before the change unsets the failed bookie's confirmation."""
    c1 = before.clients[_WRITER]
    failed = int(dict(label.detail).get("failed", 0))
    pending = sorted(op.entry.id for op in c1.pending_add_ops)
    if len(pending) < 2:
        return False
    first, *later = pending
    if not any(
        entry == first and not (1 << bookie) & failed
        for bookie, entry in _answers_on_their_way(before)
    ):
        return False
    for entry in later:
        confirmed = c1.confirmed[entry - 1] if entry - 1 < len(c1.confirmed) else 0
        if confirmed.bit_count() < cfg.ack_quorum:
            return False
        if confirmed & failed:
            return True
    return False


def _answers_on_their_way(state: State) -> Iterator[tuple[int, int]]:
    """``(bookie index, the model's entry id)`` of each add answer on its way to the writer."""
    for m, count in state.messages:
        if count >= DELIVERED and m.kind == ADD_ENTRY_RESPONSE and m.cid == _WRITER:
            yield m.bookie, m.entry.id  # type: ignore[union-attr]


def _answers_in_flight(state: State) -> _Adds:
    """The bookies' add answers on their way to the writer in ``state``, as adds."""
    return frozenset(
        (bookie_name(bookie), entry - 1) for bookie, entry in _answers_on_their_way(state)
    )


def _lost_in(label: Label) -> frozenset[tuple[str, int]]:
    return frozenset(
        (bookie_name(m.bookie), m.entry.id - 1)  # type: ignore[union-attr]
        for m, delivered in label.sent
        if not delivered and m.kind == ADD_ENTRY_REQUEST
    )


def _danger(cfg: ModelConfig, before: State, label: Label, after: State, changes: int) -> int:
    """What ``label`` adds to a trace's score (see the module docstring)."""
    c1 = before.clients[_WRITER]
    if label.action == _CHANGE:
        if _breaks_an_ack_set(cfg, before, label):
            return _BREAKS_AN_ACK_SET
        score = 2 if len(c1.pending_add_ops) >= 2 else 1
        if changes >= 1:
            score += 2
        ensemble = dict(label.detail).get("ensemble")
        if any(f.ensemble == ensemble for f in before.meta_fragments):
            score += 2  # a bookie the ledger dropped comes back
        return score
    if label.action == _RESEND:
        # An answer of the replaced bookie still in flight to the client.
        in_flight = any(
            count > 0 and m.kind != ADD_ENTRY_REQUEST and m.cid == _WRITER
            for m, count in after.messages
        )
        return 1 if in_flight else 0
    return 0


def _explore(
    cfg: ModelConfig,
    max_faults: int,
    deadline: float,
    found: dict[_Adds, _Danger],
) -> None:
    start = successors(cfg, init_state(cfg))
    queue: deque[tuple[State, _Node]] = deque()
    seen: set[State] = set()
    for t in start:
        if t.label.action == _CREATE:
            queue.append((t.state, _Node(frozenset(), 0, 0)))
            seen.add(t.state)
    while queue and time.monotonic() < deadline:
        state, node = queue.popleft()
        for t in successors(cfg, state):
            label = t.label
            if label.action not in _WRITER_ACTIONS:
                continue
            if label.action == _BOOKIE_CONFIRMS and label.lost:
                continue  # the proxies drop requests, never answers
            lost = node.lost | _lost_in(label) if label.action in _SENDS else node.lost
            if len(lost) > max_faults:
                continue
            if t.state in seen:
                continue
            seen.add(t.state)
            changes = node.changes + (label.action == _CHANGE)
            danger = _danger(cfg, state, label, t.state, node.changes)
            in_flight = node.in_flight
            if danger > node.score and label.action == _CHANGE:
                in_flight = _answers_in_flight(state)
            score = max(node.score, danger)
            child = _Node(lost, changes, score, in_flight)
            if score > 0 and lost:
                key = frozenset(lost)
                known = found.get(key)
                if known is None or (score, len(in_flight)) > (
                    known.score,
                    len(known.in_flight),
                ):
                    found[key] = _Danger(score, in_flight)
            queue.append((t.state, child))


class Realization(enum.Enum):
    """How the harness makes an add the spec's writer lost: each is a lost message to the
    spec, and each takes the client down another path."""

    #: The proxy never sends the request: the client's add timeout fires.
    DROP = "drop"
    #: The bookie stores it, and its answer is replaced by a forged EIO: the client fails the
    #: bookie at once.
    FORGED_ERROR = "forged error"
    #: The bookie stores it, and its answer is held past the add timeout: a late answer.
    LATE_ANSWER = "late answer"
    #: Its answer is a forged EIO, as above; the ensemble change that starts has its metadata
    #: write held, and the answers the trace had in flight at its most dangerous change come
    #: while it is held: the window of #3005 (an earlier entry's answer taken while the change
    #: is being written) made to happen, not left to the threads' timing. Only for traces with
    #: answers in flight at that change.
    HELD_CHANGE = "held change"


#: Held this long, an answer comes after the client timed its add out (1 s, checked every
#: second).
_LATE_MS = 2500
#: A held change's answers in flight are held this long: long enough for the client to take
#: the forged error and send its change's metadata write, within the add timeout (1 s).
_IN_FLIGHT_MS = 400
#: ... and its metadata write this long from the forged answer on: past the answers' hold
#: (#3005's scenario holds the write 3 s and the answer 1.5 s).
_HELD_WRITE_MS = 1500


def _answer_key(bookie: str, entry: int) -> FrameKey:
    return FrameKey("add", bookie, entry, answer=True)


def _schedule(lost: _Adds, realization: Realization, in_flight: _Adds) -> FrameSchedule | None:
    """The plan's schedule; None when ``realization`` has nothing to work with."""
    if realization is Realization.DROP:
        return FrameSchedule({add_key(bookie, entry): DROP for bookie, entry in lost})
    if realization is Realization.LATE_ANSWER:
        return FrameSchedule({_answer_key(*add): hold_for(_LATE_MS) for add in lost})
    forged = {_answer_key(*add): forge("EIO") for add in lost}
    if realization is Realization.FORGED_ERROR:
        return FrameSchedule(forged)
    # The answers of the lost adds' bookies are not held: they come before the forged error
    # on their connection (the proxies keep a connection's add answers in order), so holding
    # them would hold the error, and the change, with them.
    failing = {bookie for bookie, _entry in lost}
    held = {(bookie, entry) for bookie, entry in in_flight if bookie not in failing}
    if not held:
        return None
    first = min(forged, key=lambda key: (key.entry_id, key.bookie))
    return FrameSchedule(
        {**forged, **{_answer_key(*add): hold_for(_IN_FLIGHT_MS) for add in held}},
        (PlannedFault(FaultKind.HOLD_METADATA, first, None, _HELD_WRITE_MS),),
    )


def writer_guided_plans(
    shape: WriterShape,
    *,
    budget_s: float = 10.0,
    max_faults: int = 2,
    entries: Sequence[int] = (2, 3, SEARCHED_ENTRIES),
    limit: int = 40,
    realizations: Sequence[Realization] = (Realization.DROP,),
    reading: Reading = JAVA_WRITER,
) -> list[WriterRunPlan]:
    """Plans from the model's most dangerous writer interleavings (see the module
    docstring), each danger made by each of ``realizations``, at most ``limit``, exploring
    for at most ``budget_s`` seconds in all, the model read as ``reading``: the judge's (each
    role passes its own)."""
    plans: list[tuple[int, int, bool, int, WriterRunPlan]] = []
    per_shape = budget_s / max(1, len(entries))
    for count in entries:
        cfg = writer_config(shape, count, reading=reading)
        found: dict[_Adds, _Danger] = {}
        _explore(cfg, max_faults, time.monotonic() + per_shape, found)
        for lost, danger in found.items():
            for realization in realizations:
                schedule = _schedule(lost, realization, danger.in_flight)
                if schedule is None:
                    continue
                plan = WriterRunPlan(shape, count, schedule, origin=_origin(danger.score))
                held = realization is Realization.HELD_CHANGE
                plans.append((-danger.score, len(lost), not held, count, plan))
    plans.sort(key=lambda item: (*item[:4], item[4].schedule.describe()))
    unique: list[WriterRunPlan] = []
    keys: set[tuple[int, tuple[str, ...]]] = set()
    for *_order, plan in plans:
        key = (plan.entries, tuple(plan.schedule.describe()))
        if key not in keys:
            keys.add(key)
            unique.append(plan)
    return unique[:limit]


def _origin(score: int) -> str:
    return f"the model's writer (danger {score})"


__all__ = ["Realization", "writer_guided_plans"]
