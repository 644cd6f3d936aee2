"""Operations: what the engine asks a target to do, as plain data (Jepsen keeps its operations
as plain maps).

The engine turns each model step into at most one operation, from the step's record in the
action table (:mod:`model.bookkeeper.action_table`): a bookie's answer becomes
:class:`Deliver`, a metadata write :class:`CreateLedger` or :class:`WriteMetadata`, a crash
:class:`Crash`; a client's own bookkeeping becomes nothing. Before each example the engine asks
for a :class:`FreshLedger`. A target carries an operation out with ``invoke(op)`` and answers
with an :class:`~conformance.observations.Observation`.

Operations hold the spec's values (bookie indices, spec entry ids, spec metadata versions);
:mod:`conformance.translation` turns them into BookKeeper's. They hold what the target needs to
act, never what the model predicts: the prediction stays with the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.bookkeeper.records import (
    STATUS_NAMES,
    AddEntryRequest,
    FenceRequest,
    Fragment,
    ReadRequest,
    bookie_name,
    client_name,
    format_bookies,
)
from model.bookkeeper.render import describe_message

Request = AddEntryRequest | FenceRequest | ReadRequest


@dataclass(frozen=True)
class FreshLedger:
    """A ledger of its own for the next example: a new id, nothing stored under it yet."""

    def describe(self) -> str:
        return "a fresh ledger"


@dataclass(frozen=True)
class Deliver:
    """The request reaches its bookie (``request.bookie``), on the connection of the client
    that sent it (``request.cid``), and is processed; the observation is its answer."""

    request: Request

    def describe(self) -> str:
        return f"deliver {describe_message(self.request)}"


@dataclass(frozen=True)
class LedgerView:
    """A ledger's metadata in the spec's terms: status, fragments, last entry (if closed)."""

    status: int
    fragments: tuple[Fragment, ...]
    last_entry: int

    def describe(self) -> str:
        fragments = ", ".join(
            f"{f.first_entry_id}:{format_bookies(f.ensemble)}" for f in self.fragments
        )
        return f"{STATUS_NAMES[self.status]} [{fragments}] last {self.last_entry}"


@dataclass(frozen=True)
class CreateLedger:
    """The client creates the ledger's metadata (status OPEN, its first fragment)."""

    client: int
    metadata: LedgerView

    def describe(self) -> str:
        return f"{client_name(self.client)} creates the ledger: {self.metadata.describe()}"


@dataclass(frozen=True)
class WriteMetadata:
    """A compare-and-set of the ledger's metadata by ``client``, from the spec's action
    ``action``: write ``metadata`` if the znode is still at ``expected_version`` (the spec's
    version the client holds).

    ``known_version`` is the spec's current version: any other version on the target means a
    writer outside the model changed the ledger (a real bookie's data-integrity service
    recovers limbo ledgers by itself), and the step cannot be judged.
    """

    action: str
    client: int
    expected_version: int
    known_version: int
    metadata: LedgerView

    def describe(self) -> str:
        return (
            f"{client_name(self.client)} writes {self.metadata.describe()} "
            f"if at version {self.expected_version}"
        )


@dataclass(frozen=True)
class Crash:
    """The bookie crashes and restarts with this ledger's data lost."""

    bookie: int

    def describe(self) -> str:
        return f"{bookie_name(self.bookie)} crashes and restarts empty"


Operation = FreshLedger | Deliver | CreateLedger | WriteMetadata | Crash


def operation_record(op: Operation) -> dict[str, Any]:
    """An operation as one JSON object for ``history.jsonl``."""
    return {"type": type(op).__name__, "description": op.describe()}
