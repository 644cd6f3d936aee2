"""The values of the BookKeeperProtocol TLA+ specification, as immutable Python values.

Every record of the spec is a ``NamedTuple`` and every set of bookies is a bitmask, so a whole
model state is hashable and two states are equal exactly when TLC would consider them equal.
That is what lets the breadth-first explorer reproduce TLC's distinct-state counts.

Names follow the spec (``meta_status``, ``b_fenced``, ``curr_fragment``...). Entry ids are the
spec's 1-based ids and a LAC of 0 means "nothing confirmed"; the conformance layer maps them to
BookKeeper's 0-based ids and -1 in one place.

Constants are plain ``int``s rather than ``enum.Enum`` members on purpose: enum members hash
through a Python-level ``__hash__``, which would make every state lookup several times slower.
"""

from __future__ import annotations

from typing import NamedTuple

from model.bitsets import members

# A TLA+ model value ``Nil`` is Python's ``None`` wherever the spec allows Nil.

# Ledger statuses (metadata) and client statuses.
STATUS_OPEN = 1
STATUS_IN_RECOVERY = 2
STATUS_CLOSED = 3
CLIENT_WITHDRAWN = 4
RECOVERY_ABORTED = 5
#: A writer that learnt of fencing and closes the ledger at its LAC (``fenced_writer_closes``
#: only: BookKeeper's ``LedgerHandle.handleUnrecoverableErrorDuringAdd``).
CLIENT_CLOSING = 6

STATUS_NAMES: dict[int | None, str] = {
    None: "Nil",
    STATUS_OPEN: "OPEN",
    STATUS_IN_RECOVERY: "IN_RECOVERY",
    STATUS_CLOSED: "CLOSED",
    CLIENT_WITHDRAWN: "WITHDRAWN",
    RECOVERY_ABORTED: "RECOVERY_ABORTED",
    CLIENT_CLOSING: "CLOSING",
}

# Recovery phases.
NOT_STARTED = 0
FENCING_PHASE = 1
READ_WRITE_PHASE = 2

# Read response codes (and the read outcome NeedMoreResponses, never sent on the wire).
OK = 1
NO_SUCH_ENTRY = 2
UNKNOWN = 3
NEED_MORE_RESPONSES = 4

CODE_NAMES: dict[int, str] = {
    OK: "OK",
    NO_SUCH_ENTRY: "NoSuchEntry",
    UNKNOWN: "Unknown",
    NEED_MORE_RESPONSES: "NeedMoreResponses",
}

# Message kinds. The kind is the first field of every message so that messages of different
# kinds never compare equal, as TLA+ records with different ``type`` fields never do.
ADD_ENTRY_REQUEST = 0
ADD_ENTRY_RESPONSE = 1
FENCE_REQUEST = 2
FENCE_RESPONSE = 3
READ_REQUEST = 4
READ_RESPONSE = 5

KIND_NAMES: dict[int, str] = {
    ADD_ENTRY_REQUEST: "AddEntryRequestMessage",
    ADD_ENTRY_RESPONSE: "AddEntryResponseMessage",
    FENCE_REQUEST: "FenceRequestMessage",
    FENCE_RESPONSE: "FenceResponseMessage",
    READ_REQUEST: "ReadRequestMessage",
    READ_RESPONSE: "ReadResponseMessage",
}

REQUEST_KINDS = frozenset({ADD_ENTRY_REQUEST, FENCE_REQUEST, READ_REQUEST})

# Delivery counts of MessagePassing: 1 = will be delivered, 0 = processed (or ignored),
# -1 = lost (a timeout the sender may act on).
DELIVERED = 1
PROCESSED = 0
LOST = -1
#: Extension (``late_adds_after_timeout``): an add request whose loss its client acted on (it
#: timed out and the client changed its ensemble) but which may still reach its bookie. Not
#: a timeout any more (not LOST) and not receivable in order (not >= DELIVERED): its bookie
#: may process it at any time, or never. Never present with the switch off.
LATE = -2


# The spec's ``Nil`` as entry data (in the entry of a negative read response). Entry data are
# 1..SendLimit, so 0 stands for Nil one to one, and every message stays a tuple of ints that
# sorts and hashes the same on every run.
NIL_DATA = 0


class Entry(NamedTuple):
    """``[id, data]``; ``data`` is ``NIL_DATA`` in a negative read response."""

    id: int
    data: int


class Fragment(NamedTuple):
    """``[id, ensemble, first_entry_id]``; ``ensemble`` is a bitmask of bookie indexes.

    ``order`` (striping only, else empty) lists the ensemble's bookies by position: entry
    ``e`` goes to the write quorum starting at position ``(e - 1) mod E``, and an ensemble
    change puts each replacement in the failed bookie's position, as BookKeeper's
    ``LedgerMetadata`` ensembles are lists, not sets. Without striping the write set is the
    whole ensemble, so the order means nothing and stays ``()`` (the spec's state, unchanged).
    """

    id: int
    ensemble: int
    first_entry_id: int
    order: tuple[int, ...] = ()


class PendingAddOp(NamedTuple):
    """``[entry, fragment_id, ensemble]``: an add not yet confirmed by an ack quorum.

    ``order``: the ensemble's positions when striped (see :class:`Fragment`), else ``()``.
    ``lac``: with ``resends_carry_first_lac``, the LAC its first requests carried (what its
    resends carry too); else ``None`` (the spec's resends carry the client's LAC now).
    """

    entry: Entry
    fragment_id: int
    ensemble: int
    order: tuple[int, ...] = ()
    lac: int | None = None


class AddEntryRequest(NamedTuple):
    kind: int
    bookie: int
    cid: int
    entry: Entry
    lac: int
    recovery: bool


class AddEntryResponse(NamedTuple):
    kind: int
    bookie: int
    cid: int
    entry: Entry
    recovery: bool
    success: bool


class FenceRequest(NamedTuple):
    """The fencing read-LAC request of ledger recovery."""

    kind: int
    bookie: int
    cid: int


class FenceResponse(NamedTuple):
    """Answer to a fencing read-LAC.

    ``code`` is an extension for the limbo status: a bookie in limbo answers Unknown instead of
    its LAC. Without limbo it is always OK, so the state space is the spec's, one to one.
    """

    kind: int
    bookie: int
    cid: int
    lac: int
    code: int


class ReadRequest(NamedTuple):
    kind: int
    bookie: int
    cid: int
    entry_id: int
    fence: bool


class ReadResponse(NamedTuple):
    kind: int
    bookie: int
    cid: int
    entry: Entry
    fence: bool
    code: int


Message = (
    AddEntryRequest | AddEntryResponse | FenceRequest | FenceResponse | ReadRequest | ReadResponse
)


class ClientState(NamedTuple):
    """The spec's ``ClientState`` record, field for field."""

    id: int
    meta_version: int | None
    status: int | None
    fragments: tuple[Fragment, ...]
    curr_fragment: Fragment | None
    pending_add_ops: frozenset[PendingAddOp]
    lap: int
    lac: int
    confirmed: tuple[int, ...]  # index i holds the bookie bitmask that confirmed entry id i + 1
    fenced: int
    recovery_ensemble: int
    curr_read_entry: int | None
    read_responses: frozenset[ReadResponse]
    recovery_phase: int
    last_recoverable_entry: int | None
    #: The positions of ``recovery_ensemble`` when striped (see :class:`Fragment`), else ``()``.
    recovery_order: tuple[int, ...] = ()


class State(NamedTuple):
    """One state of the spec: its variables, plus the extensions' ``b_limbo`` and ``crashes``."""

    meta_status: int | None
    meta_fragments: tuple[Fragment, ...]
    meta_last_entry: int
    meta_version: int
    b_entries: tuple[frozenset[Entry], ...]
    b_fenced: tuple[bool, ...]
    b_lac: tuple[int, ...]
    b_limbo: tuple[bool, ...]
    crashes: int
    clients: tuple[ClientState, ...]
    messages: frozenset[tuple[Message, int]]


def init_client(cid: int, send_limit: int) -> ClientState:
    """``InitClient(cid)``: each client starts empty."""
    return ClientState(
        id=cid,
        meta_version=None,
        status=None,
        fragments=(),
        curr_fragment=None,
        pending_add_ops=frozenset(),
        lap=0,
        lac=0,
        confirmed=(0,) * send_limit,
        fenced=0,
        recovery_ensemble=0,
        curr_read_entry=None,
        read_responses=frozenset(),
        recovery_phase=NOT_STARTED,
        last_recoverable_entry=None,
    )


#: The bookie indexes in a bitmask, ascending (the same function: no call on the hot path).
bookies_of = members


def bookie_name(index: int) -> str:
    return f"b{index + 1}"


def client_name(cid: int) -> str:
    return f"c{cid + 1}"


def format_bookies(mask: int) -> str:
    return "{" + ",".join(bookie_name(b) for b in bookies_of(mask)) + "}"
