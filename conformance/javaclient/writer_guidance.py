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
- a second ensemble change, and one that brings back a bookie the ledger had dropped;
- a pending entry resent to a new bookie while an earlier answer from the replaced one is
  still on its way.

A trace scores its most dangerous step. Each state that scores is turned into a plan: every
add request the trace lost becomes a ``drop`` of that add (with the extended faults also, in
plans of their own, a forged EIO in place of its answer, and its answer held past the add
timeout: :class:`Realization`) (bookie names are the model's,
which are the run's: b1..bE by position in the first ensemble, b{E+1} the spare, and with one
spare the model's replacement is the client's). Plans are deduplicated and ordered by score
(highest first), then by fewer faults.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.javaclient.plans import DROP, FrameKey, FrameSchedule, forge, hold_for
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
from model.bookkeeper.records import ADD_ENTRY_REQUEST, State, bookie_name

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


@dataclass(frozen=True)
class _Node:
    """What a state's trace did so far: its lost adds, its changes, its score."""

    lost: frozenset[tuple[str, int]]
    changes: int
    score: int


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
    found: dict[frozenset[tuple[str, int]], int],
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
            score = max(node.score, _danger(cfg, state, label, t.state, node.changes))
            child = _Node(lost, changes, score)
            if score > 0 and lost:
                key = frozenset(lost)
                found[key] = max(found.get(key, 0), score)
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


#: Held this long, an answer comes after the client timed its add out (1 s, checked every
#: second).
_LATE_MS = 2500


def _schedule(lost: frozenset[tuple[str, int]], realization: Realization) -> FrameSchedule:
    if realization is Realization.DROP:
        return FrameSchedule({add_key(bookie, entry): DROP for bookie, entry in lost})
    choice = forge("EIO") if realization is Realization.FORGED_ERROR else hold_for(_LATE_MS)
    return FrameSchedule(
        {FrameKey("add", bookie, entry, answer=True): choice for bookie, entry in lost}
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
    plans: list[tuple[int, int, int, WriterRunPlan]] = []
    per_shape = budget_s / max(1, len(entries))
    for count in entries:
        cfg = writer_config(shape, count, reading=reading)
        found: dict[frozenset[tuple[str, int]], int] = {}
        _explore(cfg, max_faults, time.monotonic() + per_shape, found)
        for lost, score in found.items():
            for realization in realizations:
                schedule = _schedule(lost, realization)
                plan = WriterRunPlan(shape, count, schedule, origin=_origin(score))
                plans.append((-score, len(lost), count, plan))
    plans.sort(key=lambda item: (item[0], item[1], item[2], item[3].schedule.describe()))
    unique: list[WriterRunPlan] = []
    keys: set[tuple[int, tuple[str, ...]]] = set()
    for _score, _faults, _count, plan in plans:
        key = (plan.entries, tuple(plan.schedule.describe()))
        if key not in keys:
            keys.add(key)
            unique.append(plan)
    return unique[:limit]


def _origin(score: int) -> str:
    return f"the model's writer (danger {score})"


__all__ = ["Realization", "writer_guided_plans"]
