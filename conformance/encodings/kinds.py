"""Every captured frame and znode as a *kind* and a normalised encoding.

A kind names what a frame or znode is, independently of when it was sent and to which bookie
(``write: ADD_ENTRY request entry 0``, ``write: ADD_ENTRY response EOK to entry 0``,
``probe add-fenced-ledger: response``, ``znode ledger v2 CLOSED``): two releases are compared
kind by kind, whatever the interleaving of their sessions.

The normalisation replaces only what legitimately differs between two runs, and keeps the
order of the fields as they stood on the wire (:mod:`adapters.protobuf_wire`):

* the txnId of a v3 header (a JVM-wide counter: README of the golden captures);
* the session's ledger id, wherever it stands: a ``ledgerId`` field, the first 8 bytes of an
  entry body, whose digest is then zeroed too (it covers the ledger id; it is checked first,
  and kept as it is when it does not verify, so a bad digest still shows);
* in znodes: bookie ids and ports (the cluster's ports are free ports), the random creation
  token ``cToken`` of an OPEN ledger, a creation time ``ctime`` if one is stored, and in a
  cookie the machine's directories and the cluster's instance id.

Everything else, field order included, must be equal byte for byte.

Each READ_ENTRY answer of the session also carries its :class:`ReadTiming`, read from the
frames' log order: which adds sent to the answering bookie were still unanswered when it
answered, and so which ``maxLAC`` it could have answered. Nothing is normalised with it; the
comparison's timing rules (:mod:`.compare`) use it as their evidence.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from adapters import protobuf_wire
from adapters.bookkeeper import framing, v2
from adapters.bookkeeper.entry import DigestType, parse_entry, verify_entry
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.protobuf_wire import MessageDescriptor
from adapters.zookeeper.metadata import VERSION_HEADER_KEY
from adapters.zookeeper.proto.bookkeeper_data_formats_pb2 import (
    BookieServiceInfoFormat,
    LedgerMetadataFormat,
)
from conformance.encodings.captures import CapturedFrame, CapturedZnode, ReleaseCapture
from conformance.encodings.probes import PASSWORD
from conformance.errors import ConformanceError

SESSION = "session"
PROBE = "probe"
ZNODE = "znode"
GROUPS = (SESSION, PROBE, ZNODE)

#: Stand-ins for what varies between runs.
LEDGER = 0
BOOKIE = b"<bookie>"
_ENTRY_IDS = struct.Struct(">q")
_BODY_FIELDS = ("body", "lastEntryBody")
_CRC32_DIGEST = DigestType.CRC32.length
_ENTRY_HEADER_SIZE = 32


@dataclass(frozen=True)
class ReadTiming:
    """When a bookie answered a READ_ENTRY request, relative to the adds sent to it.

    A bookie stores an entry before it answers its add (and the entry's piggy-backed LAC with
    it); an add whose answer the proxies had not yet seen may or may not be stored."""

    bookie: str
    #: The entry read.
    entry: int
    #: The entries whose adds were sent to the bookie before it answered, and not yet answered.
    unanswered_adds: tuple[int, ...]
    #: The highest LAC piggy-backed on an add the bookie had answered (-1: none), and on any
    #: add sent to it before it answered: the ``maxLAC`` it could answer lies between them.
    lac_answered: int
    lac_sent: int
    #: For an answer without the entry: the bookie whose EOK answer to a later read of the
    #: same entry, in the same step, the client got instead (None: no such read).
    read_elsewhere_from: str | None = None

    @property
    def raced(self) -> bool:
        return bool(self.unanswered_adds)

    def describe(self) -> str:
        pending = ", ".join(f"e{e}" for e in self.unanswered_adds)
        text = (
            f"{self.bookie} answered the read of e{self.entry} "
            + (f"with its adds of {pending} unanswered" if pending else "with no add unanswered")
            + f" (the adds it had answered carried LAC up to {self.lac_answered}, those sent "
            f"to it up to {self.lac_sent})"
        )
        if self.read_elsewhere_from is not None:
            text += f"; the client then read e{self.entry} from {self.read_elsewhere_from} (EOK)"
        return text


@dataclass(frozen=True)
class Encoding:
    """One frame or znode of a kind, normalised."""

    group: str
    kind: str
    #: The normalised bytes (for a frame: with its length prefix).
    normalized: bytes
    #: The normalised message's fields in wire order (None: not protobuf, e.g. v2 or text).
    fields: tuple[protobuf_wire.WireField, ...] | None
    #: The message type of ``fields``.
    message: str
    #: Where it came from (file-like label), for the report.
    source: str
    #: The original bytes.
    original: bytes
    #: A session's READ_ENTRY answer: when its bookie answered it (None: any other frame).
    timing: ReadTiming | None = None

    def describe(self) -> str:
        if self.fields is not None:
            return protobuf_wire.describe(self.fields)
        try:
            return self.normalized.decode("utf-8")
        except UnicodeDecodeError:
            return self.normalized.hex()


class KindError(ConformanceError, ValueError):
    """A capture's frame or znode that cannot be read as any kind (it is reported, and the
    comparison cannot decide it)."""


# -- frames ---------------------------------------------------------------------------------


def _v3_descriptor(is_request: bool) -> MessageDescriptor:
    return pb.Request.DESCRIPTOR if is_request else pb.Response.DESCRIPTOR


def _parse_v3(frame: CapturedFrame) -> tuple[protobuf_wire.WireField, ...] | None:
    """The frame's v3 fields in wire order, or None when it is not a v3 message (v2, or a
    frame no bookie could decode)."""
    payload = frame.payload
    if payload[:1] == bytes([v2.CURRENT_PROTOCOL_VERSION]):
        return None  # a v2 header's version byte: field 0, which no protobuf message has
    try:
        fields = protobuf_wire.parse(payload, _v3_descriptor(frame.is_request))
    except protobuf_wire.WireFormatError:
        return None
    header = protobuf_wire.find(fields, "header")
    return fields if header is not None else None


def _enum_name(descriptor: MessageDescriptor, field_name: str, number: int) -> str:
    enum_type = descriptor.fields_by_name[field_name].enum_type
    value = enum_type.values_by_number.get(number) if enum_type is not None else None
    return value.name if value is not None else str(number)


def _request_label(fields: Sequence[protobuf_wire.WireField]) -> str:
    """``ADD_ENTRY request entry 0 RECOVERY_ADD priority 100`` from a v3 request's fields."""
    header = protobuf_wire.find(fields, "header")
    assert header is not None
    operation = protobuf_wire.find(header.fields, "operation")
    words = [
        _enum_name(pb.BKPacketHeader.DESCRIPTOR, "operation", operation.signed())
        if operation is not None
        else "?"
    ]
    for field in fields:
        if field.name == "header" or not field.is_message:
            continue
        entry = protobuf_wire.find(field.fields, "entryId")
        if entry is not None:
            words.append(f"entry {entry.signed()}")
        flag = protobuf_wire.find(field.fields, "flag")
        if flag is not None and field.descriptor is not None:
            words.append(_enum_name(field.descriptor.message_type, "flag", flag.signed()))
    priority = protobuf_wire.find(header.fields, "priority")
    if priority is not None:
        words.append(f"priority {priority.signed()}")
    return " ".join(words)


def _status(fields: Sequence[protobuf_wire.WireField]) -> str:
    status = next((f for f in fields if f.name == "status"), None)
    if status is None:
        return "no status"
    return _enum_name(pb.Response.DESCRIPTOR, "status", status.signed())


def _txn_id(fields: Sequence[protobuf_wire.WireField]) -> int | None:
    header = protobuf_wire.find(fields, "header")
    txn = protobuf_wire.find(header.fields, "txnId") if header is not None else None
    return txn.value if txn is not None and isinstance(txn.value, int) else None


def _normalize_body(body: bytes, ledger_id: int | None) -> bytes:
    """An entry body with its ledger id (and the digest that covers it) replaced, once the
    digest verified; any other body as it is."""
    if ledger_id is None or len(body) < _ENTRY_HEADER_SIZE + _CRC32_DIGEST:
        return body
    if _ENTRY_IDS.unpack_from(body)[0] != ledger_id:
        return body
    try:
        verify_entry(body, DigestType.CRC32, PASSWORD)
    except WireError:
        return body
    header = _ENTRY_IDS.pack(LEDGER) + body[8:_ENTRY_HEADER_SIZE]
    return header + bytes(_CRC32_DIGEST) + body[_ENTRY_HEADER_SIZE + _CRC32_DIGEST :]


def _normalize_v3(
    fields: Sequence[protobuf_wire.WireField], ledger_id: int | None
) -> tuple[protobuf_wire.WireField, ...]:
    def change(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        if field.name == "txnId":
            return replace(field, value=0)
        if field.name == "ledgerId" and ledger_id is not None and field.value == ledger_id:
            return replace(field, value=LEDGER)
        if field.name in _BODY_FIELDS and isinstance(field.value, bytes):
            return replace(field, value=_normalize_body(field.value, ledger_id))
        return field

    return protobuf_wire.map_fields(fields, change)


def _normalize_v2(frame: CapturedFrame, ledger_id: int | None) -> bytes:
    """A v2 frame with the session's ledger id replaced; the bytes as they are when the v2
    codec does not give them back exactly (then nothing is hidden)."""
    payload = frame.payload
    try:
        if frame.is_request:
            request = v2.decode_request(payload)
            if v2.encode_request(request) != payload:
                return frame.frame
            if isinstance(request, v2.V2ReadRequest) and request.ledger_id == ledger_id:
                request = replace(request, ledger_id=LEDGER)
            elif isinstance(request, v2.V2AddRequest):
                request = replace(request, body=_normalize_body(request.body, ledger_id))
            return framing.encode_frame(v2.encode_request(request))
        response = v2.decode_response(payload)
        if v2.encode_response(response) != payload or not isinstance(response, v2.V2Response):
            return frame.frame
        if response.ledger_id == ledger_id:
            response = replace(response, ledger_id=LEDGER)
        response = replace(response, payload=_normalize_body(response.payload, ledger_id))
        return framing.encode_frame(v2.encode_response(response))
    except WireError:
        return frame.frame


def _frame_encoding(group: str, kind: str, frame: CapturedFrame, ledger_id: int | None) -> Encoding:
    fields = _parse_v3(frame)
    source = f"{frame.version} {frame.scenario} conn {frame.conn} {frame.direction}"
    if fields is not None and protobuf_wire.round_trips(
        frame.payload, _v3_descriptor(frame.is_request)
    ):
        normalized = _normalize_v3(fields, ledger_id)
        message = "Request" if frame.is_request else "Response"
        return Encoding(
            group,
            kind,
            framing.encode_frame(protobuf_wire.emit(normalized)),
            normalized,
            message,
            source,
            frame.frame,
        )
    return Encoding(
        group,
        kind,
        _normalize_v2(frame, ledger_id),
        None,
        "v2 or undecodable",
        source,
        frame.frame,
    )


def _operation(fields: Sequence[protobuf_wire.WireField]) -> str:
    header = protobuf_wire.find(fields, "header")
    operation = protobuf_wire.find(header.fields, "operation") if header is not None else None
    if operation is None:
        return "?"
    return _enum_name(pb.BKPacketHeader.DESCRIPTOR, "operation", operation.signed())


def _entry_of(fields: Sequence[protobuf_wire.WireField], message: str) -> int | None:
    sub = protobuf_wire.find(fields, message)
    entry = protobuf_wire.find(sub.fields, "entryId") if sub is not None else None
    return entry.signed() if entry is not None else None


def _add_lac(fields: Sequence[protobuf_wire.WireField]) -> int:
    """The LAC an add request's entry body carries (-1 when it has none to read)."""
    sub = protobuf_wire.find(fields, "addRequest")
    body = protobuf_wire.find(sub.fields, "body") if sub is not None else None
    if body is None or not isinstance(body.value, bytes):
        return -1
    try:
        return parse_entry(body.value, DigestType.CRC32).last_add_confirmed
    except WireError:
        return -1


def read_timings(frames: Sequence[CapturedFrame]) -> dict[int, ReadTiming]:
    """For each READ_ENTRY answer among ``frames`` (by index, in log order): its
    :class:`ReadTiming`."""
    adds: dict[tuple[int, int | None], tuple[str, int, int]] = {}  # -> bookie, entry, LAC
    answered: dict[str, int] = {}  # bookie -> highest LAC of the adds it answered
    reads: dict[tuple[int, int | None], int] = {}  # -> the entry read
    timings: dict[int, ReadTiming] = {}
    eok_reads: list[tuple[int, str, str, int]] = []  # index, step, bookie, entry
    refused: list[int] = []  # the answers other than EOK
    for index, frame in enumerate(frames):
        fields = _parse_v3(frame)
        if fields is None:
            continue
        key = (frame.conn, _txn_id(fields))
        operation = _operation(fields)
        if frame.is_request:
            if operation == "ADD_ENTRY":
                adds[key] = (frame.bookie, _entry_of(fields, "addRequest") or 0, _add_lac(fields))
            elif operation == "READ_ENTRY":
                reads[key] = _entry_of(fields, "readRequest") or 0
            continue
        add = adds.pop(key, None)
        if add is not None:
            answered[add[0]] = max(answered.get(add[0], -1), add[2])
            continue
        if key not in reads:
            continue
        entry = reads[key]
        mine = [(e, lac) for bookie, e, lac in adds.values() if bookie == frame.bookie]
        lac_answered = answered.get(frame.bookie, -1)
        timings[index] = ReadTiming(
            frame.bookie,
            entry,
            tuple(sorted({e for e, _ in mine})),
            lac_answered,
            max([lac_answered, *(lac for _, lac in mine)]),
        )
        if _status(fields) == "EOK":
            eok_reads.append((index, frame.scenario, frame.bookie, entry))
        else:
            refused.append(index)
    for index in refused:
        timing = timings[index]
        later = next(
            (
                bookie
                for at, step, bookie, entry in eok_reads
                if at > index
                and step == frames[index].scenario
                and bookie != timing.bookie
                and entry == timing.entry
            ),
            None,
        )
        if later is not None:
            timings[index] = replace(timing, read_elsewhere_from=later)
    return timings


def session_encodings(capture: ReleaseCapture) -> list[Encoding]:
    """The session's frames by kind: a request by its step, operation, entry, flag and
    priority; an answer by its request's kind and its status (a READ_ENTRY answer with its
    :class:`ReadTiming`)."""
    ledger_id = capture.ledger_id if capture.ledger_id is not None else _ledger_of(capture)
    requests: dict[tuple[int, int | None], str] = {}
    timings = read_timings(capture.session)
    found = []
    for index, frame in enumerate(capture.session):
        fields = _parse_v3(frame)
        if fields is None:
            raise KindError(f"{frame.label}: not a v3 frame ({frame.summary[:80]})")
        if frame.is_request:
            label = _request_label(fields)
            requests[(frame.conn, _txn_id(fields))] = label
            kind = f"{frame.scenario}: {label.replace(' ', ' request ', 1)}"
        else:
            asked = requests.get((frame.conn, _txn_id(fields)), "unmatched request")
            kind = f"{frame.scenario}: response {_status(fields)} to {asked}"
        encoding = _frame_encoding(SESSION, kind, frame, ledger_id)
        if index in timings:
            encoding = replace(encoding, timing=timings[index])
        found.append(encoding)
    return found


def probe_encodings(capture: ReleaseCapture) -> list[Encoding]:
    """The probes' frames by kind: ``probe NAME: request``, ``probe NAME: response``, and for a
    probe without an answer ``probe NAME: no answer`` (its ending)."""
    ledger_id = capture.ledger_id if capture.ledger_id is not None else _ledger_of(capture)
    found = []
    answered = {f.scenario for f in capture.probes if not f.is_request}
    for frame in capture.probes:
        direction = "request" if frame.is_request else "response"
        found.append(
            _frame_encoding(PROBE, f"probe {frame.scenario}: {direction}", frame, ledger_id)
        )
        if frame.is_request and frame.scenario not in answered:
            # Golden files do not say how an unanswered probe's connection ended: "no answer"
            # is what both formats know.
            ending = b"no answer"
            found.append(
                Encoding(
                    PROBE,
                    f"probe {frame.scenario}: ending",
                    ending,
                    None,
                    "ending",
                    f"{frame.version} {frame.scenario}",
                    ending,
                )
            )
    return found


def _ledger_of(capture: ReleaseCapture) -> int | None:
    """The session's ledger id, read from its first v3 add or read request."""
    for frame in capture.session:
        fields = _parse_v3(frame)
        found = protobuf_wire.find(fields, "ledgerId") if fields is not None else None
        if found is not None:
            return found.signed()
    return None


# -- znodes ---------------------------------------------------------------------------------

_LEDGER_PATH = re.compile(r"/L\d+$")
_STATES = {1: "OPEN", 2: "IN_RECOVERY", 3: "CLOSED"}
#: Cookie values that name the machine: the directories keep their last component (what the
#: bookie calls them), the rest is the machine's.
_COOKIE_VALUE = re.compile(r'^(\w+): "(.*)"$')


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if offset >= len(data):
            raise KindError("the ledger znode's length prefix runs past its end")
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7


def _ledger_encoding(znode: CapturedZnode, source: str) -> Encoding:
    """``BookieMetadataFormatVersion\\t3\\n`` + varint length + ``LedgerMetadataFormat``."""
    data = znode.data
    header_end = data.find(b"\n")
    if not data.startswith(VERSION_HEADER_KEY) or header_end < 0:
        raise KindError(f"{source}: {znode.path} has no format header")
    header = data[: header_end + 1]
    length, start = _read_varint(data, header_end + 1)
    body = data[start : start + length]
    fields = protobuf_wire.parse(body, LedgerMetadataFormat.DESCRIPTOR)
    if protobuf_wire.emit(fields) != body or start + length != len(data):
        raise KindError(f"{source}: {znode.path} is not one minimal delimited message")
    state = protobuf_wire.find(fields, "state")
    state_name = _STATES.get(state.signed(), "?") if state is not None else "?"

    def change(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        if field.name in ("cToken", "ctime"):
            return replace(field, value=0)
        if field.name == "ensembleMember":
            return replace(field, value=BOOKIE)
        return field

    normalized = protobuf_wire.map_fields(fields, change)
    emitted = protobuf_wire.emit(normalized)
    return Encoding(
        ZNODE,
        f"znode ledger v{znode.stat_version} {state_name}",
        header + protobuf_wire.encode_varint(len(emitted)) + emitted,
        normalized,
        "LedgerMetadataFormat",
        source,
        data,
    )


def _registration_encoding(znode: CapturedZnode, source: str) -> Encoding:
    fields = protobuf_wire.parse(znode.data, BookieServiceInfoFormat.DESCRIPTOR)

    def change(field: protobuf_wire.WireField) -> protobuf_wire.WireField:
        if field.name == "port":
            return replace(field, value=0)
        return field

    normalized = protobuf_wire.map_fields(fields, change)
    return Encoding(
        ZNODE,
        "znode bookie registration",
        protobuf_wire.emit(normalized),
        normalized,
        "BookieServiceInfoFormat",
        source,
        znode.data,
    )


def _cookie_encoding(znode: CapturedZnode, source: str) -> Encoding:
    """A cookie's text with the machine's values replaced: the bookie id, the instance id,
    and the directories' paths but their last component (the dirs count prefix stays)."""
    lines = []
    for line in znode.data.decode("utf-8", "replace").split("\n"):
        found = _COOKIE_VALUE.match(line)
        if found is None:
            lines.append(line)
            continue
        key, value = found.groups()
        if key == "bookieHost":
            value = BOOKIE.decode()
        elif key == "instanceId":
            value = "<instance-id>"
        elif key.endswith(("Dir", "Dirs")):
            value = re.sub(r"/[^\\\t\"]*/", "<dir>/", value)
        lines.append(f'{key}: "{value}"')
    normalized = "\n".join(lines).encode()
    return Encoding(
        ZNODE, "znode bookie cookie", normalized, None, "cookie text", source, znode.data
    )


def znode_encodings(capture: ReleaseCapture) -> list[Encoding]:
    """The znodes the release wrote: the ledger at each version, bookie registrations and
    cookies. ``LAYOUT`` and ``INSTANCEID`` are left out: the suite's own clusters are formatted
    by the suite (``init_new_cluster``), not by the release."""
    found = []
    for znode in capture.znodes:
        source = f"{capture.version} {znode.path} v{znode.stat_version}"
        if _LEDGER_PATH.search(znode.path):
            found.append(_ledger_encoding(znode, source))
        elif "/available/" in znode.path and "/readonly" not in znode.path:
            found.append(_registration_encoding(znode, source))
        elif "/cookies/" in znode.path:
            found.append(_cookie_encoding(znode, source))
    return found


def encodings(capture: ReleaseCapture, groups: Iterable[str] = GROUPS) -> list[Encoding]:
    wanted = set(groups)
    found: list[Encoding] = []
    if SESSION in wanted:
        found += session_encodings(capture)
    if PROBE in wanted:
        found += probe_encodings(capture)
    if ZNODE in wanted:
        found += znode_encodings(capture)
    return found


__all__ = [
    "GROUPS",
    "PROBE",
    "SESSION",
    "ZNODE",
    "Encoding",
    "KindError",
    "ReadTiming",
    "encodings",
    "probe_encodings",
    "read_timings",
    "session_encodings",
    "znode_encodings",
]
