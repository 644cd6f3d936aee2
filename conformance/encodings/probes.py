"""The raw probes of the error kinds, built with the suite's own v3 and v2 codecs.

The first seventeen are the probes of the golden ``errors_4.17.4.jsonl`` (README there, table
"errors_4.17.4.jsonl"), in its order and with its txnIds (1001...), so that for the golden's
ledger id (150) the requests are the golden's bytes exactly and the answers compare byte for
byte across releases and with the golden. Each runs on a connection of its own against a
bookie that holds the session's ledger, CLOSED and fenced.

Four more ask whether a bookie accepts a flagged request with its fields in either order: a
fence read and a recovery add written as protobuf-java writes them (field-number order,
``flag`` last; what our encoder writes) and as LightProto writes them (the ``.proto``'s
declaration order, ``flag`` first). Protobuf parsers accept fields in any order; these probes
check that each release's bookie does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters import protobuf_wire
from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb

#: The golden ledgers' password; its master key is what the session's client sends.
PASSWORD = b"golden"
#: A ledger no cluster here ever allocates (golden ``read-missing-ledger``).
MISSING_LEDGER = 999999
#: The golden's wrong password: master key SHA-1(b"ledgerwrong").
WRONG_PASSWORD = b"wrong"


@dataclass(frozen=True)
class Probe:
    name: str
    #: The request payload for the session's ledger.
    build: Callable[[int], bytes]
    #: What the golden 4.17.4 bookie did, for the report (not a verdict).
    golden: str


def _entry_body(ledger_id: int, entry_id: int) -> bytes:
    """The golden session's entry ``entry_id`` (``entry-N``, 7 bytes each, LAC one behind)."""
    payload = f"entry-{entry_id}".encode()
    return package_entry(
        DigestType.CRC32,
        PASSWORD,
        ledger_id,
        entry_id,
        entry_id - 1,
        len(payload) * (entry_id + 1),
        payload,
    )


def _v3(message: pb.Request) -> bytes:
    return v3.encode_message(message)


def _with_header(request: pb.Request, **values: int) -> bytes:
    """``request``'s bytes with header fields set to values the codec's enums refuse (an
    undefined protocol version, an operation a bookie does not serve)."""
    fields = protobuf_wire.parse(_v3(request), pb.Request.DESCRIPTOR)
    return protobuf_wire.emit(protobuf_wire.replace_values(fields, values))


def _flag_first(payload: bytes) -> bytes:
    """The same request with its sub-request's ``flag`` moved first: the ``.proto``'s
    declaration order, which LightProto writes (BookkeeperProtocol.proto declares ``flag =
    100`` before ``ledgerId = 1`` in ReadRequest and AddRequest)."""
    fields = protobuf_wire.parse(payload, pb.Request.DESCRIPTOR)
    reordered = []
    for field in fields:
        inner = field.fields
        if inner and any(f.name == "flag" for f in inner):
            ordered = tuple(
                sorted(inner, key=lambda f: 0 if f.name == "flag" else 1)  # stable: rest kept
            )
            field = protobuf_wire.WireField(
                field.number, field.wire_type, ordered, field.name, field.descriptor
            )
        reordered.append(field)
    return protobuf_wire.emit(reordered)


def _v2_read(ledger_id: int, entry_id: int) -> bytes:
    return v2.encode_request(v2.V2ReadRequest(ledger_id, entry_id))


def _v2_add(ledger_id: int, password: bytes) -> bytes:
    return v2.encode_request(v2.V2AddRequest(master_key(password), _entry_body(ledger_id, 5)))


def _unknown_v2_op(ledger_id: int) -> bytes:
    return (
        v2.encode_header(v2.CURRENT_PROTOCOL_VERSION, 9, 0)
        + v2.encode_request(v2.V2ReadRequest(ledger_id, 0))[4:]
    )


KEY = master_key(PASSWORD)
WRONG_KEY = master_key(WRONG_PASSWORD)

PROBES: tuple[Probe, ...] = (
    Probe(
        "read-missing-ledger",
        lambda ledger: _v3(v3.read_request(1001, MISSING_LEDGER, 0)),
        "ENOLEDGER 402",
    ),
    Probe(
        "read-missing-entry",
        lambda ledger: _v3(v3.read_request(1002, ledger, 99)),
        "ENOENTRY 403",
    ),
    Probe(
        "add-wrong-masterkey",
        lambda ledger: _v3(v3.add_request(1003, ledger, 5, WRONG_KEY, _entry_body(ledger, 5))),
        "EUA 502 (the key is checked before fencing)",
    ),
    Probe(
        "add-fenced-ledger",
        lambda ledger: _v3(v3.add_request(1004, ledger, 5, KEY, _entry_body(ledger, 5))),
        "EFENCED 504",
    ),
    Probe(
        "bad-version-read",
        lambda ledger: _v3(v3.read_request(1005, ledger, 0, version=pb.VERSION_TWO)),
        "EBADVERSION 503",
    ),
    Probe(
        "bad-version-add",
        lambda ledger: _v3(
            v3.add_request(1006, ledger, 5, KEY, _entry_body(ledger, 5), version=pb.VERSION_ONE)
        ),
        "EBADVERSION 503",
    ),
    Probe(
        "bad-version-undefined-enum",
        lambda ledger: _with_header(v3.read_request(1007, ledger, 0), version=4),
        "no answer: connection reset",
    ),
    Probe(
        "fence-read-no-masterkey",
        lambda ledger: _v3(v3.read_request(1008, ledger, -1, fence=True)),
        "EUA 502",
    ),
    Probe(
        "read-lac-existing",
        lambda ledger: _v3(v3.read_lac_request(1009, ledger)),
        "EOK with lastEntryBody only",
    ),
    Probe(
        "read-lac-missing",
        lambda ledger: _v3(v3.read_lac_request(1010, MISSING_LEDGER)),
        "ENOENTRY 403",
    ),
    Probe(
        "unknown-op-range-read",
        lambda ledger: _with_header(
            v3.read_request(1011, ledger, 0), operation=pb.RANGE_READ_ENTRY
        ),
        "EBADREQ 404, header and status only",
    ),
    Probe(
        "unknown-op-batch-read",
        lambda ledger: _with_header(
            v3.read_request(1012, ledger, 0), operation=pb.BATCH_READ_ENTRY
        ),
        "EBADREQ 404",
    ),
    Probe("v2-read-missing-ledger", lambda ledger: _v2_read(MISSING_LEDGER, 0), "rc 1"),
    Probe("v2-read-missing-entry", lambda ledger: _v2_read(ledger, 99), "rc 2"),
    Probe("v2-add-wrong-masterkey", lambda ledger: _v2_add(ledger, WRONG_PASSWORD), "rc 102"),
    Probe("v2-add-fenced-ledger", lambda ledger: _v2_add(ledger, PASSWORD), "rc 104"),
    Probe("v2-unknown-op", _unknown_v2_op, "no answer: connection reset"),
    # Not in the golden: both field orders of the flagged requests.
    Probe(
        "fence-read-flag-last",
        lambda ledger: _v3(v3.read_request(1018, ledger, -1, fence=True, master_key=KEY)),
        "(not in the golden)",
    ),
    Probe(
        "fence-read-flag-first",
        lambda ledger: _flag_first(
            _v3(v3.read_request(1019, ledger, -1, fence=True, master_key=KEY))
        ),
        "(not in the golden)",
    ),
    Probe(
        "recovery-add-flag-last",
        lambda ledger: _v3(
            v3.add_request(1020, ledger, 4, KEY, _entry_body(ledger, 4), recovery=True)
        ),
        "(not in the golden)",
    ),
    Probe(
        "recovery-add-flag-first",
        lambda ledger: _flag_first(
            _v3(v3.add_request(1021, ledger, 4, KEY, _entry_body(ledger, 4), recovery=True))
        ),
        "(not in the golden)",
    ),
)

#: The probes of the golden errors file (the others are ours).
GOLDEN_PROBES = tuple(probe.name for probe in PROBES[:17])
#: Probe name -> its twin with the other field order.
FIELD_ORDER_TWINS = {
    "fence-read-flag-last": "fence-read-flag-first",
    "recovery-add-flag-last": "recovery-add-flag-first",
}

__all__ = [
    "FIELD_ORDER_TWINS",
    "GOLDEN_PROBES",
    "KEY",
    "MISSING_LEDGER",
    "PASSWORD",
    "PROBES",
    "Probe",
]
