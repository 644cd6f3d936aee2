"""The one place where the spec's values meet BookKeeper's, in both directions.

- **Entry ids and LACs**: the spec counts entries from 1 and uses LAC 0 for "nothing
  confirmed"; BookKeeper counts from 0 and uses -1.
- **Entry bodies**: each entry's payload is its spec data (an int) as 8 big-endian bytes, so a
  ledger's length up to an entry is 8 bytes per entry.
- **Metadata versions**: the spec's ``meta_version`` counts every write, from 1 at creation;
  ZooKeeper's znode version starts at 0.
- **Bookies**: the spec's bookie ``b`` (0-based index; ``b1`` in traces) is the ``b``-th of the
  registered bookies the target chose; an ensemble is a bitmask of indices.
- **Statuses**: a bookie's wire status becomes the spec's answer code (``OK``,
  ``NoSuchEntry``, ``Unknown``) or stays its own name where the spec has no word for it.
- **Metadata**: the spec's ledger status, fragments and last entry become BookKeeper's
  ``LedgerMetadata`` (state, segments, last entry id, length) and back.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence

from adapters.bookkeeper.entry import DigestType as WireDigestType
from adapters.bookkeeper.entry import parse_entry, verify_entry
from adapters.bookkeeper.status import StatusCode
from adapters.zookeeper.metadata import LedgerMetadata, LedgerState, Segment
from conformance.observations import Observation
from model.bookkeeper.records import (
    STATUS_CLOSED,
    STATUS_IN_RECOVERY,
    STATUS_OPEN,
    Fragment,
    bookies_of,
)

#: Each entry's payload is its spec data (an int) as 8 big-endian bytes.
PAYLOAD = struct.Struct(">q")
#: A bookie's answers that mean "I hold no such entry" (the ledger may be unknown to it).
ABSENT = (StatusCode.ENOENTRY, StatusCode.ENOLEDGER)
LEDGER_STATES = {
    STATUS_OPEN: LedgerState.OPEN,
    STATUS_IN_RECOVERY: LedgerState.IN_RECOVERY,
    STATUS_CLOSED: LedgerState.CLOSED,
}


# Entry ids, LACs, bodies ---------------------------------------------------------------------


def bk_entry_id(spec_entry_id: int) -> int:
    return spec_entry_id - 1


def spec_entry_id(bk_entry_id: int) -> int:
    return bk_entry_id + 1


def bk_lac(spec_lac: int) -> int:
    return spec_lac - 1


def spec_lac(bk_lac: int) -> int:
    return bk_lac + 1


def payload(data: int) -> bytes:
    return PAYLOAD.pack(data)


def data_of(payload_bytes: bytes) -> int:
    if len(payload_bytes) != PAYLOAD.size:
        raise ValueError(
            f"payload of {len(payload_bytes)} bytes is not one of ours ({PAYLOAD.size})"
        )
    value: int = PAYLOAD.unpack(payload_bytes)[0]
    return value


def ledger_length(spec_last_entry: int) -> int:
    """Cumulative ledger length up to and including a spec entry id (every payload is 8 bytes)."""
    return spec_last_entry * PAYLOAD.size


# Metadata versions ---------------------------------------------------------------------------


def znode_version(model_version: int) -> int:
    """The znode version at which the spec's ``meta_version`` is (model 1 is znode 0)."""
    return model_version - 1


def model_version(znode_version: int) -> int:
    return znode_version + 1


# Bookies and ensembles -----------------------------------------------------------------------


def ensemble_ids(ensemble: int, bookie_ids: Sequence[str]) -> tuple[str, ...]:
    """The registered ids of an ensemble's bookies, in ensemble order."""
    return tuple(bookie_ids[b] for b in bookies_of(ensemble))


def segments_of(fragments: Sequence[Fragment], bookie_ids: Sequence[str]) -> tuple[Segment, ...]:
    """BookKeeper's segments; a striped fragment lists its bookies by position."""
    return tuple(
        Segment(
            bk_entry_id(f.first_entry_id),
            tuple(bookie_ids[b] for b in f.order) or ensemble_ids(f.ensemble, bookie_ids),
        )
        for f in fragments
    )


def fragments_of(
    segments: Sequence[Segment], bookie_ids: Sequence[str]
) -> list[tuple[int, list[int]]]:
    """Segments as (spec first entry id, bookie indices): how the final state compares them."""
    return [
        (spec_entry_id(s.first_entry_id), [bookie_ids.index(b) for b in s.bookies])
        for s in segments
    ]


# Answers -------------------------------------------------------------------------------------


def answer_code(status: StatusCode) -> str:
    """The spec's code for a bookie's status: ``NoSuchEntry`` for an entry or ledger it does
    not hold, ``Unknown`` for a ledger in limbo; any other status keeps its wire name (and then
    differs from every code the spec predicts)."""
    if status in ABSENT:
        return "NoSuchEntry"
    if status is StatusCode.EUNKNOWNLEDGERSTATE:
        return "Unknown"
    return status.name


def add_observation(status: StatusCode) -> Observation:
    """An add's answer: confirmed (EOK) or rejected as fenced (EFENCED); any other status is
    neither, and differs from the spec's answers."""
    success = {StatusCode.EOK: True, StatusCode.EFENCED: False}.get(status)
    return Observation("add", status.name, success=success)


def fence_observation(
    status: StatusCode, body: bytes | None, digest: WireDigestType
) -> Observation:
    """A fencing read of the LAC: the LAC of the entry read back, or LAC "none" from a bookie
    that fenced a ledger it holds nothing of."""
    if status is StatusCode.EOK and body is not None:
        lac = spec_lac(parse_entry(body, digest).last_add_confirmed)
        return Observation("fence", "EOK", code="OK", lac=lac)
    if status in ABSENT:
        return Observation("fence", status.name, code="OK", lac=0)
    return Observation("fence", status.name, code=answer_code(status))


def read_observation(
    status: StatusCode, body: bytes | None, digest: WireDigestType, password: bytes
) -> Observation:
    """A read's answer: the entry's spec data (its body verified), or the spec's code."""
    if status is StatusCode.EOK and body is not None:
        entry = verify_entry(body, digest, password)
        return Observation("read", "EOK", code="OK", data=data_of(entry.payload))
    return Observation("read", status.name, code=answer_code(status))


def answer_seen_in_passing(kind: str, status: StatusCode | None) -> Observation:
    """A bookie's answer as a proxy between client and bookie sees it: its status, not its
    body. So the LAC of a fencing read and the data of a read are not observed (they are left
    out of the comparison); an answer whose status did not decode matches nothing."""
    if status is None:
        return Observation(kind, "undecoded", unobserved=("lac", "data"))
    if kind == "add":
        return add_observation(status)
    if kind == "fence":
        # Fenced, with a LAC (EOK) or with nothing stored (absent): the spec's OK either way.
        code = "OK" if status is StatusCode.EOK or status in ABSENT else answer_code(status)
        return Observation("fence", status.name, code=code, unobserved=("lac",))
    code = "OK" if status is StatusCode.EOK else answer_code(status)
    return Observation("read", status.name, code=code, unobserved=("data",))


# Ledger metadata -----------------------------------------------------------------------------


def with_spec_metadata(
    current: LedgerMetadata,
    status: int,
    fragments: Sequence[Fragment],
    last_entry: int,
    bookie_ids: Sequence[str],
) -> LedgerMetadata:
    """``current`` with the spec's status, fragments and (when closed) last entry: what a
    client's write of that metadata stores. Everything else (quorums, digest, password,
    creation details) is kept, as BookKeeper's clients keep it."""
    state = LEDGER_STATES[status]
    closed = state is LedgerState.CLOSED
    return dataclasses.replace(
        current,
        state=state,
        segments=segments_of(fragments, bookie_ids),
        # BookKeeper has no last entry or length for a ledger until it is closed.
        last_entry_id=bk_entry_id(last_entry) if closed else -1,
        length=ledger_length(last_entry) if closed else 0,
    )
