"""Every action of the spec's ``Next``, one record each: the one table every per-action decision
is derived from (the conformance engine's operations, the search's encoding, the swarm, the
report).

A record says, in the spec's terms, who acts, which of the spec's variables the action may
change (its ``UNCHANGED`` clause, read the other way), what it does outside the acting client's
memory (a bookie answers a request, the ledger's metadata is compared-and-set, a bookie
crashes), how that metadata write ends in the spec, and which function of
:mod:`model.bookkeeper.actions` generates its steps. It also classifies the action: the part of
the protocol it belongs to (``phase``), what it does with the messages (``move``) and, for an
add's answer, which answer (``answer``). With ``actor``, ``recovery`` and ``write_ends`` these
name each action uniquely, so code outside the model picks actions by what they are
(:func:`actions_where`, :func:`the_action`, :func:`add_answer`), never by a name spelled out. The
table is checked when it is imported: a record that contradicts itself (a bookie action that
does not answer, a metadata write with no expected end) or two records classified alike fail at
once, not in the middle of a search.

The order of the table is the order in which the search names an action kind in its choices
(``conformance.search.program``): it is part of every stored example. It is pinned by
``ENCODING_DIGEST``; changing the order (or a name) without bumping ``ENCODING_VERSION`` fails
at import, so stored examples are never silently misread.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from enum import Enum

from model.bookkeeper import actions


class Actor(Enum):
    BOOKIE = "bookie"
    CLIENT = "client"  # the writer or the recovering client; the spec's clients play both
    FAULT = "fault"  # the environment (extension: seed 001's crash with data loss)
    #: A bookie's own background service (extension, ``bookie_recovers_limbo``: BP-46's
    #: data-integrity service repairing a limbo ledger); no request, no answer.
    SERVICE = "bookie service"


class Var(Enum):
    """The spec's variables, grouped as the conformance engine sees them."""

    METADATA = "metadata"  # meta_status, meta_fragments, meta_last_entry, meta_version
    BOOKIES = "bookies"  # b_entries, b_fenced, b_lac, b_limbo
    CLIENTS = "clients"
    MESSAGES = "messages"
    CRASHES = "crashes"


class Effect(Enum):
    """What an action does outside the acting client's memory: what a target carries out."""

    NONE = "none"  # the client's own bookkeeping, or a message queued or taken from a queue
    ANSWER = "answer"  # a bookie processes a request and answers it
    METADATA_WRITE = "metadata write"  # a compare-and-set on the ledger's metadata
    CRASH = "crash"  # a bookie restarts with this ledger's data lost


class WriteEnd(Enum):
    """How a metadata write ends in the spec."""

    SUCCEEDS = "succeeds"
    VERSION_MISMATCH = "version mismatch"  # the client's version is stale: the CAS fails


class Phase(Enum):
    """Which part of the protocol an action belongs to (the spec's comments group them so)."""

    CREATE = "create"  # ClientCreatesLedger
    # Adds and their answers, the recovering client's write-backs included (they are adds
    # with the recovery flag: the same requests and answers).
    ADD = "add"
    ENSEMBLE_CHANGE = "ensemble change"  # the changes and the resends they cause
    CLOSE = "close"  # the writer's closes and the recovering client's
    FENCING = "fencing"  # the recovery's start (its fence reads) and their answers
    READ = "read"  # the recovery reads and their answers
    FAULT = "fault"  # BookieRestartsEmpty (extension)
    REPAIR = "repair"  # BookieLeavesLimbo (extension: the bookie repairs a limbo ledger)


class Move(Enum):
    """What an action does with the protocol's messages (seen from the acting party)."""

    NONE = "none"  # no request sent, no answer taken: bookkeeping, metadata, a crash
    SEND = "send"  # a client sends requests
    RECEIVE = "receive"  # a client takes an answer
    ANSWER = "answer"  # a bookie processes a request and answers it


class AddAnswer(Enum):
    """How a bookie answers an add: the one answer that comes in two actions per side."""

    CONFIRMED = "confirmed"
    FENCED = "fenced"  # the bookie is fenced and the add is not a recovery write-back


@dataclass(frozen=True)
class SpecAction:
    name: str  # the spec's action name, as TLC prints it
    actor: Actor
    writes: frozenset[Var]
    effect: Effect
    generator: str  # the function of model.bookkeeper.actions that yields its steps
    write_ends: WriteEnd | None = None  # for Effect.METADATA_WRITE only
    recovery: bool = False  # taken by a client recovering the ledger
    # Keyword-only: the fields above keep their positions, and these need no defaults.
    _: KW_ONLY
    phase: Phase
    move: Move
    answer: AddAnswer | None = None  # for the add answers only, the bookie's and the client's

    def check(self) -> None:
        """Raise ValueError when the record contradicts itself or the model."""
        problems = []
        if (self.actor is Actor.BOOKIE) != (self.effect is Effect.ANSWER):
            problems.append("bookie actions, and only they, answer a request")
        if (self.actor is Actor.FAULT) != (self.effect is Effect.CRASH):
            problems.append("fault actions, and only they, crash a bookie")
        if (self.effect is Effect.METADATA_WRITE) != (self.write_ends is not None):
            problems.append("a metadata write, and only it, has an expected end")
        if self.write_ends is WriteEnd.SUCCEEDS and Var.METADATA not in self.writes:
            problems.append("a metadata write that succeeds changes the metadata")
        if self.write_ends is not WriteEnd.SUCCEEDS and Var.METADATA in self.writes:
            problems.append("only a metadata write that succeeds changes the metadata")
        if self.effect is Effect.ANSWER and Var.MESSAGES not in self.writes:
            problems.append("an answer is a message")
        if self.recovery and self.actor is not Actor.CLIENT:
            problems.append("only a client recovers")
        if (self.actor is Actor.BOOKIE) != (self.move is Move.ANSWER):
            problems.append("bookie actions, and only they, take the move ANSWER")
        if (self.actor is Actor.FAULT) != (self.phase is Phase.FAULT):
            problems.append("fault actions, and only they, are in the phase FAULT")
        is_add_answer = self.phase is Phase.ADD and self.move in (Move.ANSWER, Move.RECEIVE)
        if is_add_answer != (self.answer is not None):
            problems.append("an add's answer, and only it, says how the add was answered")
        if self.move in (Move.SEND, Move.RECEIVE) and Var.MESSAGES not in self.writes:
            problems.append("sending a request or taking an answer changes the messages")
        if (
            self.actor is Actor.CLIENT
            and self.phase in (Phase.FENCING, Phase.READ)
            and not self.recovery
        ):
            problems.append("a client fences and reads only while recovering")
        if self.phase is Phase.CREATE and self.recovery:
            problems.append("a recovering client does not create the ledger")
        if not callable(getattr(actions, self.generator, None)):
            problems.append(f"model.bookkeeper.actions has no generator {self.generator}")
        if problems:
            raise ValueError(f"{self.name}: " + "; ".join(problems))


_B, _C, _F = Actor.BOOKIE, Actor.CLIENT, Actor.FAULT
_META, _BK, _CL, _MSG = Var.METADATA, Var.BOOKIES, Var.CLIENTS, Var.MESSAGES


def _action(
    name: str,
    actor: Actor,
    writes: set[Var],
    effect: Effect,
    generator: str,
    write_ends: WriteEnd | None = None,
    *,
    recovery: bool = False,
    phase: Phase,
    move: Move,
    answer: AddAnswer | None = None,
) -> SpecAction:
    return SpecAction(
        name,
        actor,
        frozenset(writes),
        effect,
        generator,
        write_ends,
        recovery,
        phase=phase,
        move=move,
        answer=answer,
    )


_ANSWER, _NONE, _WRITE = Effect.ANSWER, Effect.NONE, Effect.METADATA_WRITE
_OK, _STALE = WriteEnd.SUCCEEDS, WriteEnd.VERSION_MISMATCH
_ADD, _CHANGE, _CLOSE = Phase.ADD, Phase.ENSEMBLE_CHANGE, Phase.CLOSE
_FENCING, _READ = Phase.FENCING, Phase.READ
_STAYS, _SENDS, _RECEIVES, _ANSWERS = Move.NONE, Move.SEND, Move.RECEIVE, Move.ANSWER
_CONFIRMED, _FENCED = AddAnswer.CONFIRMED, AddAnswer.FENCED

#: The spec's actions, in the search's encoding order (bookies, clients, faults).
ACTION_TABLE: tuple[SpecAction, ...] = (
    _action(
        "BookieSendsAddConfirmedResponse",
        _B,
        {_BK, _MSG},
        _ANSWER,
        "_bookie_actions",
        phase=_ADD,
        move=_ANSWERS,
        answer=_CONFIRMED,
    ),
    _action(
        "BookieSendsAddFencedResponse",
        _B,
        {_MSG},
        _ANSWER,
        "_bookie_actions",
        phase=_ADD,
        move=_ANSWERS,
        answer=_FENCED,
    ),
    _action(
        "BookieSendsFencingReadLacResponse",
        _B,
        {_BK, _MSG},
        _ANSWER,
        "_bookie_actions",
        phase=_FENCING,
        move=_ANSWERS,
    ),
    _action(
        "BookieSendsReadResponse",
        _B,
        {_BK, _MSG},
        _ANSWER,
        "_bookie_actions",
        phase=_READ,
        move=_ANSWERS,
    ),
    _action(
        "ClientCreatesLedger",
        _C,
        {_META, _CL},
        _WRITE,
        "_client_creates_ledger",
        _OK,
        phase=Phase.CREATE,
        move=_STAYS,
    ),
    _action(
        "ClientSendsAddEntryRequests",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_sends_add_entry_requests",
        phase=_ADD,
        move=_SENDS,
    ),
    _action(
        "ClientReceivesAddConfirmedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_receive_add_confirmed_response",
        phase=_ADD,
        move=_RECEIVES,
        answer=_CONFIRMED,
    ),
    _action(
        "ClientReceivesAddFencedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_add_fenced_response",
        phase=_ADD,
        move=_RECEIVES,
        answer=_FENCED,
    ),
    _action(
        "ClientChangesEnsemble",
        _C,
        {_META, _CL, _MSG},
        _WRITE,
        "_change_ensemble",
        _OK,
        phase=_CHANGE,
        move=_STAYS,
    ),
    _action(
        "ClientResendsPendingAddOp",
        _C,
        {_CL, _MSG},
        _NONE,
        "_resend_pending_add_op",
        phase=_CHANGE,
        move=_SENDS,
    ),
    _action(
        "ClientClosesLedgerSuccess",
        _C,
        {_META, _CL},
        _WRITE,
        "_client_closes_ledger_success",
        _OK,
        phase=_CLOSE,
        move=_STAYS,
    ),
    _action(
        "ClientClosesLedgerFail",
        _C,
        {_CL},
        _WRITE,
        "_client_closes_ledger_fail",
        _STALE,
        phase=_CLOSE,
        move=_STAYS,
    ),
    _action(
        "ClientStartsRecovery",
        _C,
        {_META, _CL, _MSG},
        _WRITE,
        "_client_starts_recovery",
        _OK,
        recovery=True,
        phase=_FENCING,
        move=_SENDS,
    ),
    _action(
        "ClientReceivesFencingReadLacResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_fencing_read_lac_response",
        recovery=True,
        phase=_FENCING,
        move=_RECEIVES,
    ),
    _action(
        "ClientSendsRecoveryReadRequests",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_sends_recovery_read_requests",
        recovery=True,
        phase=_READ,
        move=_SENDS,
    ),
    _action(
        "ClientReceivesRecoveryReadResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_recovery_read_response",
        recovery=True,
        phase=_READ,
        move=_RECEIVES,
    ),
    _action(
        "ClientWritesBackEntry",
        _C,
        {_MSG},  # the write-back is tracked by its messages, not in the client's state
        _NONE,
        "_client_writes_back_entry",
        recovery=True,
        phase=_ADD,
        move=_SENDS,
    ),
    _action(
        "RecoveryClientReceivesAddConfirmedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_receive_add_confirmed_response",
        recovery=True,
        phase=_ADD,
        move=_RECEIVES,
        answer=_CONFIRMED,
    ),
    # The recovering client's ensemble change stays in its memory until it closes the
    # ledger (the spec writes no metadata here; the close writes its fragments).
    _action(
        "RecoveryClientChangesEnsemble",
        _C,
        {_CL, _MSG},
        _NONE,
        "_change_ensemble",
        recovery=True,
        phase=_CHANGE,
        move=_STAYS,
    ),
    _action(
        "RecoveryClientSendsPendingAddOp",
        _C,
        {_CL, _MSG},
        _NONE,
        "_resend_pending_add_op",
        recovery=True,
        phase=_CHANGE,
        move=_SENDS,
    ),
    _action(
        "RecoveryClientClosesLedger",
        _C,
        {_META, _CL},
        _WRITE,
        "_recovery_client_closes_ledger",
        _OK,
        recovery=True,
        phase=_CLOSE,
        move=_STAYS,
    ),
    _action(
        "BookieRestartsEmpty",
        _F,
        {_BK, Var.CRASHES, _MSG},
        Effect.CRASH,
        "_bookie_restarts_empty",
        phase=Phase.FAULT,
        move=_STAYS,
    ),
    _action(
        "BookieLeavesLimbo",
        Actor.SERVICE,
        {_BK},
        Effect.NONE,
        "_bookie_leaves_limbo",
        phase=Phase.REPAIR,
        move=_STAYS,
    ),
)

#: Bumped whenever the table's order or names change; with ``ENCODING_DIGEST``, what makes
#: the search's stored examples readable (``conformance.search.runner.database_key``).
ENCODING_VERSION = 2
ENCODING_DIGEST = "de0ad085bbe2a537"


def encoding_digest(table: tuple[SpecAction, ...]) -> str:
    """A short digest of the table's order of names."""
    names = "\n".join(a.name for a in table)
    return hashlib.sha256(names.encode()).hexdigest()[:16]


def classification(action: SpecAction) -> tuple[object, ...]:
    """What names ``action`` among the others: a query on these attributes can ask for it."""
    return (
        action.actor,
        action.phase,
        action.move,
        action.answer,
        action.recovery,
        action.write_ends,
    )


def check_table(table: tuple[SpecAction, ...], pinned_digest: str) -> None:
    """Raise ValueError when a record is inconsistent, a name repeats, two records are
    classified alike, or the order changed without a new ``ENCODING_VERSION``."""
    for action in table:
        action.check()
    names = [a.name for a in table]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"the action table names these actions twice: {repeated}")
    # Alike records could not be told apart by a query: the_action() would refuse both.
    alike: dict[tuple[object, ...], list[str]] = {}
    for action in table:
        alike.setdefault(classification(action), []).append(action.name)
    clashes = sorted(group for group in alike.values() if len(group) > 1)
    if clashes:
        raise ValueError(
            "these actions have the same actor, phase, move, answer, recovery and write end, "
            f"so no query tells them apart: {clashes}"
        )
    digest = encoding_digest(table)
    if digest != pinned_digest:
        raise ValueError(
            "the action table's order is part of every stored search example: after changing "
            f"it, bump ENCODING_VERSION and set ENCODING_DIGEST = {digest!r}"
        )


check_table(ACTION_TABLE, ENCODING_DIGEST)

BY_NAME: dict[str, SpecAction] = {a.name: a for a in ACTION_TABLE}
#: The action names, in the table's (the encoding's) order.
ALL_ACTIONS: tuple[str, ...] = tuple(BY_NAME)


def spec_action(name: str) -> SpecAction:
    """The record of the action named ``name`` (KeyError names what is known)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"{name!r} is not an action of the spec (known: {ALL_ACTIONS})") from None


def names_with(effect: Effect) -> frozenset[str]:
    """The names of the actions with this effect."""
    return frozenset(a.name for a in ACTION_TABLE if a.effect is effect)


# Queries -----------------------------------------------------------------------------------
# Code outside the model names the actions it means by these, not by a string: a renamed or
# reclassified action then changes every decision that depends on it, or fails at import.


def actions_where(
    *,
    actor: Actor | None = None,
    phase: Phase | Iterable[Phase] | None = None,
    move: Move | None = None,
    answer: AddAnswer | None = None,
    recovery: bool | None = None,
    effect: Effect | None = None,
    write_ends: WriteEnd | None = None,
) -> frozenset[str]:
    """The names of the actions matching every given attribute (None: any); ``phase`` is one
    phase or several (an action in any of them matches)."""
    phases = None if phase is None else _phases(phase)
    return _actions_where(actor, phases, move, answer, recovery, effect, write_ends)


def _phases(phase: Phase | Iterable[Phase]) -> frozenset[Phase]:
    # One phase or several, as one hashable value for the cache.
    return frozenset((phase,)) if isinstance(phase, Phase) else frozenset(phase)


@functools.cache
def _actions_where(
    actor: Actor | None,
    phases: frozenset[Phase] | None,
    move: Move | None,
    answer: AddAnswer | None,
    recovery: bool | None,
    effect: Effect | None,
    write_ends: WriteEnd | None,
) -> frozenset[str]:
    # Cached: the table is immutable, and callers query in their inner loops.
    return frozenset(
        a.name
        for a in ACTION_TABLE
        if (actor is None or a.actor is actor)
        and (phases is None or a.phase in phases)
        and (move is None or a.move is move)
        and (answer is None or a.answer is answer)
        and (recovery is None or a.recovery == recovery)
        and (effect is None or a.effect is effect)
        and (write_ends is None or a.write_ends is write_ends)
    )


def the_action(
    *,
    actor: Actor | None = None,
    phase: Phase | Iterable[Phase] | None = None,
    move: Move | None = None,
    answer: AddAnswer | None = None,
    recovery: bool | None = None,
    effect: Effect | None = None,
    write_ends: WriteEnd | None = None,
) -> str:
    """The one action matching (the keywords of :func:`actions_where`); ValueError naming the
    matches when none or several match."""
    if phase is not None and not isinstance(phase, Phase):
        phase = _phases(phase)  # an iterator would be spent by the query, before the message
    found = actions_where(
        actor=actor,
        phase=phase,
        move=move,
        answer=answer,
        recovery=recovery,
        effect=effect,
        write_ends=write_ends,
    )
    if len(found) != 1:
        query = {
            "actor": actor,
            "phase": phase,
            "move": move,
            "answer": answer,
            "recovery": recovery,
            "effect": effect,
            "write_ends": write_ends,
        }
        asked = ", ".join(f"{k}={v}" for k, v in query.items() if v is not None)
        matches = sorted(found, key=ALL_ACTIONS.index)
        raise ValueError(f"{len(found)} actions match ({asked}), not one: {matches}")
    (name,) = found
    return name


def add_answer(actor: Actor, fenced: bool, *, recovery: bool = False) -> str:
    """The add-answer action of a bookie (actor BOOKIE: ``BookieSendsAddFencedResponse`` or
    ``BookieSendsAddConfirmedResponse``) or of a client taking it (actor CLIENT:
    ``ClientReceivesAdd{Fenced,Confirmed}Response``, or with ``recovery`` the recovering
    client's ``RecoveryClientReceivesAddConfirmedResponse``).

    A bookie answers the writer's adds and the recovering client's write-backs by the same
    actions, so for a bookie ``recovery`` changes nothing. A write-back is never fenced (the
    spec's ``BookieSendsAddFencedResponse`` takes non-recovery adds only): a recovering client
    has no fenced answer, and asking for it is a ValueError; so is any other actor."""
    if actor is Actor.BOOKIE:
        move, recovering = Move.ANSWER, None
    elif actor is Actor.CLIENT:
        move, recovering = Move.RECEIVE, recovery
    else:
        raise ValueError(f"only bookies and clients have add answers, not {actor}")
    if actor is Actor.CLIENT and recovery and fenced:
        raise ValueError("a recovering client's write-backs are never fenced: no such answer")
    return the_action(
        actor=actor,
        phase=Phase.ADD,
        move=move,
        answer=AddAnswer.FENCED if fenced else AddAnswer.CONFIRMED,
        recovery=recovering,
    )
