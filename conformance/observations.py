"""What a target answered, in the model's terms, and how it differs from the prediction."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from model.bookkeeper.records import (
    ADD_ENTRY_RESPONSE,
    CODE_NAMES,
    FENCE_RESPONSE,
    NIL_DATA,
    READ_RESPONSE,
    AddEntryResponse,
    FenceResponse,
    Message,
    ReadResponse,
)


@dataclass(frozen=True)
class Observation:
    """One answer: an add (``success``), a fencing LAC read (``code``, ``lac``), a read
    (``code``, ``data``), a metadata write (``success``), a crash, or a fresh ledger
    (``ledger``, its id on the target). ``status`` is the wire's own word
    (e.g. ``EFENCED``, ``ENOLEDGER``, ``MetadataVersionMismatch``), kept for the report."""

    kind: str
    status: str
    success: bool | None = None
    code: str | None = None
    lac: int | None = None
    data: int | None = None
    ledger: int | None = None  # the ledger a FreshLedger operation gave the example
    #: Fields the observer could not see (a proxy sees an answer's status, not its body):
    #: never compared, whatever the model predicts for them.
    unobserved: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        # The fields are plain values: read directly (dataclasses.asdict deep-copies each, a
        # tenth of a search step's own time on the model target).
        found = {
            f.name: value
            for f in _OBSERVATION_FIELDS
            if f.name != "unobserved" and (value := getattr(self, f.name)) is not None
        }
        if self.unobserved:
            found["unobserved"] = list(self.unobserved)
        return found


_OBSERVATION_FIELDS = fields(Observation)


def predicted(reply: Message) -> Observation:
    """The observation the model predicts for a bookie's reply message."""
    if reply.kind == ADD_ENTRY_RESPONSE:
        assert isinstance(reply, AddEntryResponse)
        return Observation("add", "EOK" if reply.success else "EFENCED", success=reply.success)
    if reply.kind == FENCE_RESPONSE:
        assert isinstance(reply, FenceResponse)
        code = CODE_NAMES[reply.code]
        return Observation("fence", code, code=code, lac=reply.lac if code == "OK" else None)
    if reply.kind == READ_RESPONSE:
        assert isinstance(reply, ReadResponse)
        code = CODE_NAMES[reply.code]
        data = reply.entry.data if reply.entry.data != NIL_DATA else None
        return Observation("read", code, code=code, data=data)
    raise ValueError(f"not a bookie reply: {reply}")


#: The fields the model decides for every kind of answer.
COMPARED_FIELDS = ("kind", "success", "code", "lac", "data")
#: Kinds whose ``status`` is the model's word too, and is compared: a metadata write fails
#: for one reason only in the model (a lost compare-and-set, ``MetadataVersionMismatch``), so
#: any other failure (``NoSuchLedger``, ``LedgerExists``...) is a divergence even where the
#: model expects a failure. (A ZooKeeper outage is no answer at all: the target raises
#: ``TargetError`` and the run is undecided.)
STATUS_COMPARED_KINDS = frozenset({"metadata"})


def compared_fields(expected_kind: object, observed_kind: object) -> tuple[str, ...]:
    """The fields a prediction and an observation of these kinds are compared on: the one
    rule of the engine's diff and the qualification's (``conformance.distributed.diff``)."""
    if expected_kind in STATUS_COMPARED_KINDS or observed_kind in STATUS_COMPARED_KINDS:
        return (*COMPARED_FIELDS, "status")
    return COMPARED_FIELDS


def differences(expected: Observation, observed: Observation) -> list[str]:
    """Field-by-field differences that matter (``status`` is the wire's detail, not compared
    where the model's terms already agree, e.g. ENOENTRY and ENOLEDGER are both NoSuchEntry;
    for metadata writes it is compared, see ``STATUS_COMPARED_KINDS``)."""
    diffs = []
    for name in compared_fields(expected.kind, observed.kind):
        if name in observed.unobserved:
            continue
        want, got = getattr(expected, name), getattr(observed, name)
        if want != got:
            diffs.append(f"{name}: predicted {want!r}, observed {got!r} ({observed.status})")
    return diffs
