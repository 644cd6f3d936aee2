"""Every action of the spec's ``Next``, one record each: the one table every per-action decision
is derived from (the conformance engine's operations, the search's encoding, the swarm, the
report).

A record says, in the spec's terms, who acts, which of the spec's variables the action may
change (its ``UNCHANGED`` clause, read the other way), what it does outside the acting client's
memory (a bookie answers a request, the ledger's metadata is compared-and-set, a bookie
crashes), how that metadata write ends in the spec, and which function of
:mod:`model.bookkeeper.actions` generates its steps. The table is checked when it is imported:
a record that contradicts itself (a bookie action that does not answer, a metadata write with
no expected end) fails at once, not in the middle of a search.

The order of the table is the order in which the search names an action kind in its choices
(``conformance.search.program``): it is part of every stored example. It is pinned by
``ENCODING_DIGEST``; changing the order (or a name) without bumping ``ENCODING_VERSION`` fails
at import, so stored examples are never silently misread.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum

from model.bookkeeper import actions


class Actor(Enum):
    BOOKIE = "bookie"
    CLIENT = "client"  # the writer or the recovering client; the spec's clients play both
    FAULT = "fault"  # the environment (extension: seed 001's crash with data loss)


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


@dataclass(frozen=True)
class SpecAction:
    name: str  # the spec's action name, as TLC prints it
    actor: Actor
    writes: frozenset[Var]
    effect: Effect
    generator: str  # the function of model.bookkeeper.actions that yields its steps
    write_ends: WriteEnd | None = None  # for Effect.METADATA_WRITE only
    recovery: bool = False  # taken by a client recovering the ledger

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
) -> SpecAction:
    return SpecAction(name, actor, frozenset(writes), effect, generator, write_ends, recovery)


_ANSWER, _NONE, _WRITE = Effect.ANSWER, Effect.NONE, Effect.METADATA_WRITE
_OK, _STALE = WriteEnd.SUCCEEDS, WriteEnd.VERSION_MISMATCH

#: The spec's actions, in the search's encoding order (bookies, clients, faults).
ACTION_TABLE: tuple[SpecAction, ...] = (
    _action("BookieSendsAddConfirmedResponse", _B, {_BK, _MSG}, _ANSWER, "_bookie_actions"),
    _action("BookieSendsAddFencedResponse", _B, {_MSG}, _ANSWER, "_bookie_actions"),
    _action("BookieSendsFencingReadLacResponse", _B, {_BK, _MSG}, _ANSWER, "_bookie_actions"),
    _action("BookieSendsReadResponse", _B, {_BK, _MSG}, _ANSWER, "_bookie_actions"),
    _action("ClientCreatesLedger", _C, {_META, _CL}, _WRITE, "_client_creates_ledger", _OK),
    _action(
        "ClientSendsAddEntryRequests", _C, {_CL, _MSG}, _NONE, "_client_sends_add_entry_requests"
    ),
    _action(
        "ClientReceivesAddConfirmedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_receive_add_confirmed_response",
    ),
    _action(
        "ClientReceivesAddFencedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_add_fenced_response",
    ),
    _action("ClientChangesEnsemble", _C, {_META, _CL, _MSG}, _WRITE, "_change_ensemble", _OK),
    _action("ClientResendsPendingAddOp", _C, {_CL, _MSG}, _NONE, "_resend_pending_add_op"),
    _action(
        "ClientClosesLedgerSuccess",
        _C,
        {_META, _CL},
        _WRITE,
        "_client_closes_ledger_success",
        _OK,
    ),
    _action("ClientClosesLedgerFail", _C, {_CL}, _WRITE, "_client_closes_ledger_fail", _STALE),
    _action(
        "ClientStartsRecovery",
        _C,
        {_META, _CL, _MSG},
        _WRITE,
        "_client_starts_recovery",
        _OK,
        recovery=True,
    ),
    _action(
        "ClientReceivesFencingReadLacResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_fencing_read_lac_response",
        recovery=True,
    ),
    _action(
        "ClientSendsRecoveryReadRequests",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_sends_recovery_read_requests",
        recovery=True,
    ),
    _action(
        "ClientReceivesRecoveryReadResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_client_receives_recovery_read_response",
        recovery=True,
    ),
    _action(
        "ClientWritesBackEntry",
        _C,
        {_MSG},  # the write-back is tracked by its messages, not in the client's state
        _NONE,
        "_client_writes_back_entry",
        recovery=True,
    ),
    _action(
        "RecoveryClientReceivesAddConfirmedResponse",
        _C,
        {_CL, _MSG},
        _NONE,
        "_receive_add_confirmed_response",
        recovery=True,
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
    ),
    _action(
        "RecoveryClientSendsPendingAddOp",
        _C,
        {_CL, _MSG},
        _NONE,
        "_resend_pending_add_op",
        recovery=True,
    ),
    _action(
        "RecoveryClientClosesLedger",
        _C,
        {_META, _CL},
        _WRITE,
        "_recovery_client_closes_ledger",
        _OK,
        recovery=True,
    ),
    _action(
        "BookieRestartsEmpty",
        _F,
        {_BK, Var.CRASHES, _MSG},
        Effect.CRASH,
        "_bookie_restarts_empty",
    ),
)

#: Bumped whenever the table's order or names change; with ``ENCODING_DIGEST``, what makes
#: the search's stored examples readable (``conformance.search.runner.database_key``).
ENCODING_VERSION = 1
ENCODING_DIGEST = "f844a1cc758d0a6c"


def encoding_digest(table: tuple[SpecAction, ...]) -> str:
    """A short digest of the table's order of names."""
    names = "\n".join(a.name for a in table)
    return hashlib.sha256(names.encode()).hexdigest()[:16]


def check_table(table: tuple[SpecAction, ...], pinned_digest: str) -> None:
    """Raise ValueError when a record is inconsistent, a name repeats, or the order changed
    without a new ``ENCODING_VERSION``."""
    for action in table:
        action.check()
    names = [a.name for a in table]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"the action table names these actions twice: {repeated}")
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
