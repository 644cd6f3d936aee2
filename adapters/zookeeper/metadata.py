"""Ledger metadata: the value, its invariants, its state changes, and its znode encoding.

The encoding follows ``meta/LedgerMetadataSerDe.java`` (reference section 2.3):

* format 3 (what BookKeeper writes by default)::

      b"BookieMetadataFormatVersion\\t3\\n" + varint(len(pb)) + pb

  where ``pb`` is a binary ``LedgerMetadataFormat``;
* format 2: the same header followed by the message in protobuf TextFormat (read only here);
* format 1, a tab-separated legacy text, is refused with :class:`UnsupportedMetadataFormat`.

:func:`serialize_ledger_metadata` writes exactly the fields BookKeeper writes, in the same order,
so the bytes are identical to a Java client's for the same value (checked against the golden
znodes of 4.17.4 and 4.11.1). Parsing mirrors BookKeeper's leniency where it matters for reading
real znodes: ``length``/``lastEntryId`` are ignored unless CLOSED, a missing ``ackQuorumSize``
means the write quorum, and trailing bytes after the delimited message are ignored.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, TypeVar

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from adapters.zookeeper._protobuf import missing_required_fields
from adapters.zookeeper.bookie_id import is_valid_bookie_id
from adapters.zookeeper.errors import (
    InvalidLedgerMetadata,
    InvalidMetadataTransition,
    MalformedMetadata,
    UnsupportedMetadataFormat,
)
from adapters.zookeeper.proto.bookkeeper_data_formats_pb2 import LedgerMetadataFormat

METADATA_FORMAT_VERSION: Final = 3
VERSION_HEADER_KEY: Final = b"BookieMetadataFormatVersion\t"
_MAX_VERSION_DIGITS: Final = 10
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_JAVA_INT: Final = re.compile(rb"[+-]?[0-9]+")


class LedgerState(enum.IntEnum):
    """``LedgerMetadataFormat.State``; the values are the protobuf enum numbers."""

    OPEN = 1
    IN_RECOVERY = 2
    CLOSED = 3


class DigestType(enum.IntEnum):
    """``LedgerMetadataFormat.DigestType``; the values are the protobuf enum numbers.

    ``HMAC`` is the Java API's ``DigestType.MAC``.
    """

    CRC32 = 1
    HMAC = 2
    CRC32C = 3
    DUMMY = 4


@dataclass(frozen=True)
class Segment:
    """One ensemble of a ledger: the bookies (ensemble index order) from ``first_entry_id`` on."""

    first_entry_id: int
    bookies: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.bookies, str):
            raise InvalidLedgerMetadata(f"bookies must be a sequence of ids, not {self.bookies!r}")
        try:
            object.__setattr__(self, "bookies", tuple(self.bookies))
        except TypeError as exc:
            raise InvalidLedgerMetadata(f"bookies must be a sequence: {exc}") from exc
        if not _is_int(self.first_entry_id) or not 0 <= self.first_entry_id <= _INT64_MAX:
            raise InvalidLedgerMetadata(
                f"segment first entry id must be in [0, 2**63-1], not {self.first_entry_id!r}"
            )
        for bookie in self.bookies:
            if not is_valid_bookie_id(bookie):
                raise InvalidLedgerMetadata(f"segment has an invalid bookie id {bookie!r}")


@dataclass(frozen=True)
class LedgerMetadata:
    """What BookKeeper stores in a ledger's znode.

    ``write_quorum_size`` is the protobuf's ``quorumSize``. ``password`` is the *plain* ledger
    password (the wire master key is SHA-1(``"ledger"`` + password)). ``digest_type`` and
    ``password`` are both set or both ``None`` (``None`` only for pre-4.2 ledgers).
    ``ctime`` is ``None`` unless the creator stored it (``storeSystemtimeAsLedgerCreationTime``).
    ``ctoken`` is BookKeeper's creation token: random on create, 0 after any rewrite.
    ``custom_metadata`` is ordered; the order is the order on the wire.

    Invariants (``LedgerMetadataImpl`` / ``LedgerMetadataBuilder``), checked on construction:

    * ``1 <= ack_quorum_size <= write_quorum_size <= ensemble_size`` (all int32);
    * at least one segment; the first starts at entry 0; first entry ids strictly ascend;
      every segment has exactly ``ensemble_size`` valid bookie ids;
    * CLOSED: ``last_entry_id >= -1`` and ``length >= 0``; otherwise ``last_entry_id == -1``
      and ``length == 0`` (BookKeeper has no values for them until the ledger is closed);
    * ``digest_type`` and ``password`` are both present or both absent;
    * custom metadata keys are distinct.
    """

    ensemble_size: int
    write_quorum_size: int
    ack_quorum_size: int
    segments: tuple[Segment, ...]
    digest_type: DigestType | None
    password: bytes | None
    state: LedgerState = LedgerState.OPEN
    last_entry_id: int = -1
    length: int = 0
    ctime: int | None = None
    custom_metadata: tuple[tuple[str, bytes], ...] = field(default=())
    ctoken: int = 0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "segments", tuple(self.segments))
        except TypeError as exc:
            raise InvalidLedgerMetadata(f"segments must be a sequence: {exc}") from exc
        object.__setattr__(self, "custom_metadata", _custom_metadata_tuple(self.custom_metadata))
        if self.digest_type is not None:
            object.__setattr__(self, "digest_type", _enum_member(DigestType, self.digest_type))
        object.__setattr__(self, "state", _enum_member(LedgerState, self.state))
        self._check()

    def _check(self) -> None:
        for name in ("ensemble_size", "write_quorum_size", "ack_quorum_size"):
            value = getattr(self, name)
            if not _is_int(value) or not 1 <= value <= _INT32_MAX:
                raise InvalidLedgerMetadata(f"{name} must be an int in [1, 2**31-1], not {value!r}")
        if not self.ack_quorum_size <= self.write_quorum_size <= self.ensemble_size:
            raise InvalidLedgerMetadata(
                "need ack quorum <= write quorum <= ensemble size, got "
                f"{self.ack_quorum_size} / {self.write_quorum_size} / {self.ensemble_size}"
            )
        if not self.segments:
            raise InvalidLedgerMetadata("a ledger has at least one ensemble segment")
        for segment in self.segments:
            if not isinstance(segment, Segment):
                raise InvalidLedgerMetadata(f"segments must be Segment values, not {segment!r}")
        if self.segments[0].first_entry_id != 0:
            raise InvalidLedgerMetadata(
                f"the first segment starts at entry 0, not {self.segments[0].first_entry_id}"
            )
        previous = -1
        for segment in self.segments:
            if segment.first_entry_id <= previous:
                raise InvalidLedgerMetadata(
                    "segment first entry ids must strictly ascend, got "
                    f"{[s.first_entry_id for s in self.segments]}"
                )
            previous = segment.first_entry_id
            if len(segment.bookies) != self.ensemble_size:
                raise InvalidLedgerMetadata(
                    f"segment at entry {segment.first_entry_id} has {len(segment.bookies)} "
                    f"bookies, ensemble size is {self.ensemble_size}"
                )
        for name in ("last_entry_id", "length", "ctoken"):
            value = getattr(self, name)
            if not _is_int(value) or not _INT64_MIN <= value <= _INT64_MAX:
                raise InvalidLedgerMetadata(f"{name} must be an int64, not {value!r}")
        if self.ctime is not None and (
            not _is_int(self.ctime) or not _INT64_MIN <= self.ctime <= _INT64_MAX
        ):
            raise InvalidLedgerMetadata(f"ctime must be an int64 or None, not {self.ctime!r}")
        if self.state is LedgerState.CLOSED:
            if self.last_entry_id < -1 or self.length < 0:
                raise InvalidLedgerMetadata(
                    "a CLOSED ledger needs last_entry_id >= -1 and length >= 0, got "
                    f"{self.last_entry_id} / {self.length}"
                )
        elif self.last_entry_id != -1 or self.length != 0:
            raise InvalidLedgerMetadata(
                f"a {self.state.name} ledger has last_entry_id -1 and length 0, got "
                f"{self.last_entry_id} / {self.length}"
            )
        if (self.digest_type is None) != (self.password is None):
            raise InvalidLedgerMetadata("digest_type and password are both set or both None")
        if self.password is not None and not isinstance(self.password, bytes):
            raise InvalidLedgerMetadata(f"password must be bytes, not {type(self.password)}")
        keys = [key for key, _ in self.custom_metadata]
        if len(set(keys)) != len(keys):
            raise InvalidLedgerMetadata(f"custom metadata keys must be distinct, got {keys}")

    # --- views ---------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self.state is LedgerState.CLOSED

    @property
    def current_ensemble(self) -> tuple[str, ...]:
        """The bookies of the last segment (where new entries go while the ledger is open)."""
        return self.segments[-1].bookies

    def ensemble_at(self, entry_id: int) -> tuple[str, ...]:
        """The bookies responsible for ``entry_id`` (``LedgerMetadata.getEnsembleAt``)."""
        chosen = self.segments[0]
        for segment in self.segments:
            if segment.first_entry_id > entry_id:
                break
            chosen = segment
        return chosen.bookies

    def custom_metadata_dict(self) -> dict[str, bytes]:
        return dict(self.custom_metadata)

    # --- the state changes a BookKeeper client makes -----------------------------------------
    #
    # BookKeeper rebuilds metadata with LedgerMetadataBuilder.from(), which does not copy the
    # creation token: every rewrite stores cToken = 0. The golden IN_RECOVERY and CLOSED znodes
    # show exactly that, so each change below resets ctoken too.

    def to_in_recovery(self) -> LedgerMetadata:
        """The metadata a recovering client writes before it fences (OPEN -> IN_RECOVERY).

        Rewriting IN_RECOVERY again is allowed (a second recovery client does that).
        """
        if self.state is LedgerState.CLOSED:
            raise InvalidMetadataTransition("a CLOSED ledger cannot go back into recovery")
        return replace(self, state=LedgerState.IN_RECOVERY, ctoken=0)

    def to_closed(self, last_entry_id: int, length: int) -> LedgerMetadata:
        """The metadata that closes the ledger at ``last_entry_id`` with ``length`` bytes."""
        if self.state is LedgerState.CLOSED:
            raise InvalidMetadataTransition(
                f"the ledger is already CLOSED at entry {self.last_entry_id}"
            )
        return replace(
            self,
            state=LedgerState.CLOSED,
            last_entry_id=last_entry_id,
            length=length,
            ctoken=0,
        )

    def with_new_segment(self, first_entry_id: int, bookies: Sequence[str]) -> LedgerMetadata:
        """Append an ensemble starting at ``first_entry_id`` (an ensemble change)."""
        if self.state is LedgerState.CLOSED:
            raise InvalidMetadataTransition("a CLOSED ledger's ensembles cannot change")
        if first_entry_id <= self.segments[-1].first_entry_id:
            raise InvalidMetadataTransition(
                f"a new segment must start after entry {self.segments[-1].first_entry_id}, "
                f"not at {first_entry_id}"
            )
        new_segment = Segment(first_entry_id, tuple(bookies))
        return replace(self, segments=(*self.segments, new_segment), ctoken=0)

    def with_replaced_segment(self, first_entry_id: int, bookies: Sequence[str]) -> LedgerMetadata:
        """Replace the bookies of the segment starting at ``first_entry_id``."""
        if self.state is LedgerState.CLOSED:
            raise InvalidMetadataTransition("a CLOSED ledger's ensembles cannot change")
        starts = [segment.first_entry_id for segment in self.segments]
        if first_entry_id not in starts:
            raise InvalidMetadataTransition(
                f"no segment starts at entry {first_entry_id} (segments start at {starts})"
            )
        segments = tuple(
            Segment(first_entry_id, tuple(bookies)) if s.first_entry_id == first_entry_id else s
            for s in self.segments
        )
        return replace(self, segments=segments, ctoken=0)


# --- encoding ------------------------------------------------------------------------------


def serialize_ledger_metadata(metadata: LedgerMetadata) -> bytes:
    """Format-3 znode bytes, identical to ``LedgerMetadataSerDe.serialize`` for the same value."""
    body = _to_protobuf(metadata).SerializeToString()
    header = VERSION_HEADER_KEY + str(METADATA_FORMAT_VERSION).encode() + b"\n"
    return header + _encode_varint(len(body)) + body


def parse_ledger_metadata(data: bytes, *, path: str | None = None) -> LedgerMetadata:
    """Decode a ledger znode written in format 3 or 2.

    ``path`` only goes into error messages.

    :raises UnsupportedMetadataFormat: format version 1 or above 3.
    :raises MalformedMetadata: anything else that is not valid ledger metadata.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MalformedMetadata(f"ledger metadata must be bytes, not {type(data)}", path=path)
    raw = bytes(data)
    version, offset = _read_header(raw, path)
    if version == 3:
        fmt = _parse_binary(raw, offset, path)
    elif version == 2:
        fmt = _parse_text(raw[offset:], path)
    else:
        raise UnsupportedMetadataFormat(
            f"ledger metadata format version {version} is not supported (only 2 and 3)", path=path
        )
    return _from_protobuf(fmt, path)


def _to_protobuf(metadata: LedgerMetadata) -> LedgerMetadataFormat:
    # Field presence mirrors LedgerMetadataSerDe.buildLedgerMetadataFormat: length, lastEntryId,
    # ackQuorumSize and cToken are always written; ctime only when stored; password (and with it
    # the digest type) whenever the metadata has one. protobuf writes fields in number order,
    # as BookKeeper's encoder does.
    fmt = LedgerMetadataFormat(
        quorumSize=metadata.write_quorum_size,
        ensembleSize=metadata.ensemble_size,
        length=metadata.length,
        lastEntryId=metadata.last_entry_id,
        state=metadata.state.name,
        ackQuorumSize=metadata.ack_quorum_size,
        cToken=metadata.ctoken,
    )
    for segment in metadata.segments:
        fmt.segment.add(ensembleMember=segment.bookies, firstEntryId=segment.first_entry_id)
    if metadata.digest_type is not None and metadata.password is not None:
        fmt.MergeFrom(
            LedgerMetadataFormat(digestType=metadata.digest_type.name, password=metadata.password)
        )
    if metadata.ctime is not None:
        fmt.ctime = metadata.ctime
    for key, value in metadata.custom_metadata:
        fmt.customMetadata.add(key=key, value=value)
    return fmt


def _from_protobuf(fmt: LedgerMetadataFormat, path: str | None) -> LedgerMetadata:
    missing = missing_required_fields(fmt)
    if missing:
        raise MalformedMetadata(
            f"ledger metadata lacks required fields {', '.join(missing)}", path=path
        )
    state = LedgerState(fmt.state)
    segments = []
    for segment in fmt.segment:
        members = tuple(_text(member, "ensembleMember", path) for member in segment.ensembleMember)
        try:
            segments.append(Segment(segment.firstEntryId, members))
        except InvalidLedgerMetadata as exc:
            raise MalformedMetadata(f"invalid ensemble segment: {exc}", path=path) from exc
    custom: dict[str, bytes] = {}
    for entry in fmt.customMetadata:
        # BookKeeper collects these into a HashMap: a repeated key keeps the last value.
        custom[_text(entry.key, "customMetadata.key", path)] = bytes(entry.value)
    has_password = fmt.HasField("password")
    closed = state is LedgerState.CLOSED
    try:
        return LedgerMetadata(
            ensemble_size=fmt.ensembleSize,
            write_quorum_size=fmt.quorumSize,
            ack_quorum_size=fmt.ackQuorumSize if fmt.HasField("ackQuorumSize") else fmt.quorumSize,
            segments=tuple(segments),
            digest_type=DigestType(fmt.digestType) if has_password else None,
            password=bytes(fmt.password) if has_password else None,
            state=state,
            last_entry_id=fmt.lastEntryId if closed else -1,
            length=fmt.length if closed else 0,
            ctime=fmt.ctime if fmt.HasField("ctime") else None,
            custom_metadata=tuple(custom.items()),
            ctoken=fmt.cToken,
        )
    except InvalidLedgerMetadata as exc:
        raise MalformedMetadata(f"ledger metadata breaks an invariant: {exc}", path=path) from exc


def _read_header(raw: bytes, path: str | None) -> tuple[int, int]:
    if not raw.startswith(VERSION_HEADER_KEY):
        raise MalformedMetadata(
            f"ledger metadata does not start with {VERSION_HEADER_KEY!r}: {raw[:40]!r}", path=path
        )
    start = len(VERSION_HEADER_KEY)
    end = raw.find(b"\n", start, start + _MAX_VERSION_DIGITS + 1)
    if end < 0:
        raise MalformedMetadata(
            "no newline within 10 bytes after the metadata format version", path=path
        )
    digits = raw[start:end]
    # Java reads the version with Integer.parseInt, which also takes a sign.
    if not _JAVA_INT.fullmatch(digits) or not -(2**31) <= int(digits) <= _INT32_MAX:
        raise MalformedMetadata(f"bad metadata format version {digits!r}", path=path)
    return int(digits), end + 1


def _parse_binary(raw: bytes, offset: int, path: str | None) -> LedgerMetadataFormat:
    size, offset = _decode_varint32(raw, offset, path)
    if size < 0 or offset + size > len(raw):
        raise MalformedMetadata(
            f"delimited length {size} exceeds the {len(raw) - offset} bytes that follow", path=path
        )
    fmt = LedgerMetadataFormat()
    try:
        fmt.ParseFromString(raw[offset : offset + size])
    except (DecodeError, ValueError, RecursionError) as exc:
        raise MalformedMetadata(f"bad LedgerMetadataFormat protobuf: {exc}", path=path) from exc
    return fmt


def _parse_text(text: bytes, path: str | None) -> LedgerMetadataFormat:
    fmt = LedgerMetadataFormat()
    try:
        text_format.Parse(text.decode("utf-8"), fmt)
    except (text_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise MalformedMetadata(f"bad LedgerMetadataFormat TextFormat: {exc}", path=path) from exc
    return fmt


def _decode_varint32(raw: bytes, offset: int, path: str | None) -> tuple[int, int]:
    # CodedInputStream.readRawVarint32 semantics as in LedgerMetadataSerDe: at most 5 bytes,
    # the value taken as a signed 32-bit int.
    result = 0
    for index in range(5):
        if offset + index >= len(raw):
            raise MalformedMetadata("metadata ends inside the length varint", path=path)
        byte = raw[offset + index]
        result |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            result &= 0xFFFFFFFF
            if result >= 2**31:
                result -= 2**32
            return result, offset + index + 1
    raise MalformedMetadata("malformed varint32 length prefix", path=path)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            out.append(value)
            return bytes(out)
        out.append((value & 0x7F) | 0x80)
        value >>= 7


def _text(value: str | bytes, what: str, path: str | None) -> str:
    # Python's protobuf hands back proto2 strings that are not valid UTF-8 as bytes.
    if isinstance(value, str):
        return value
    raise MalformedMetadata(f"{what} is not valid UTF-8: {value!r}", path=path)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_E = TypeVar("_E", bound=enum.IntEnum)


def _enum_member(kind: type[_E], value: object) -> _E:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidLedgerMetadata(f"{value!r} is not a {kind.__name__}")
    try:
        return kind(value)
    except ValueError as exc:
        raise InvalidLedgerMetadata(f"{value!r} is not a {kind.__name__}") from exc


def _custom_metadata_tuple(
    value: Iterable[tuple[str, bytes]] | Mapping[str, bytes],
) -> tuple[tuple[str, bytes], ...]:
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = tuple((key, val) for key, val in items)
    except (TypeError, ValueError) as exc:
        raise InvalidLedgerMetadata(f"custom metadata must be (str, bytes) pairs: {exc}") from exc
    for key, val in pairs:
        if not isinstance(key, str) or not isinstance(val, bytes):
            raise InvalidLedgerMetadata(f"custom metadata must map str to bytes, got {key!r}")
        try:
            key.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidLedgerMetadata(f"custom metadata key {key!r} is not UTF-8") from exc
    return pairs
