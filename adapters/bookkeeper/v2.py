"""The v2 (pre-protobuf) wire protocol: adds, reads and auth (``BookieProtocol.java``; §1.5).

A v2 payload starts with the packet header int ``(version << 24) | (opCode << 16) | flags``.
Requests: ADD = header + 20-byte masterKey + entry body; READ = header + ledgerId + entryId
(+ 20-byte masterKey when ``FLAG_DO_FENCING``); AUTH = header + ``AuthMessage`` bytes.
Responses: header + int32 rc + ledgerId + entryId + payload (the entry body of a successful
read); AUTH responses carry the ``AuthMessage`` after the header.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.status import StatusCode, V2ReturnCode

CURRENT_PROTOCOL_VERSION = 2
MASTER_KEY_LENGTH = 20
LAST_ADD_CONFIRMED = -1

_HEADER = struct.Struct(">BBH")
_IDS = struct.Struct(">qq")
_RESPONSE = struct.Struct(">BBHiqq")
_ENTRY_IDS_IN_BODY = struct.Struct(">qq")


class OpCode(enum.IntEnum):
    """v2 opcodes."""

    ADDENTRY = 1
    READENTRY = 2
    AUTH = 3
    READ_LAC = 4
    WRITE_LAC = 5
    GET_BOOKIE_INFO = 6
    BATCH_READ_ENTRY = 7


class Flag(enum.IntFlag):
    """v2 header flags (low 16 bits)."""

    NONE = 0
    DO_FENCING = 0x0001
    RECOVERY_ADD = 0x0002
    HIGH_PRIORITY = 0x0004


@dataclass(frozen=True, slots=True)
class V2AddRequest:
    """ADDENTRY; the bookie takes ledger and entry id from the body, not from elsewhere."""

    master_key: bytes
    body: bytes
    flags: int = 0
    version: int = CURRENT_PROTOCOL_VERSION

    def __post_init__(self) -> None:
        if len(self.body) < _ENTRY_IDS_IN_BODY.size:
            raise ValueError("a v2 add body starts with ledgerId and entryId (16 bytes)")

    @property
    def ledger_id(self) -> int:
        return int(_ENTRY_IDS_IN_BODY.unpack_from(self.body)[0])

    @property
    def entry_id(self) -> int:
        return int(_ENTRY_IDS_IN_BODY.unpack_from(self.body)[1])

    @property
    def is_recovery(self) -> bool:
        return bool(self.flags & Flag.RECOVERY_ADD)


@dataclass(frozen=True, slots=True)
class V2ReadRequest:
    """READENTRY; ``master_key`` is present exactly when ``flags`` has ``DO_FENCING``."""

    ledger_id: int
    entry_id: int
    flags: int = 0
    master_key: bytes | None = None
    version: int = CURRENT_PROTOCOL_VERSION

    @property
    def is_fencing(self) -> bool:
        return bool(self.flags & Flag.DO_FENCING)


@dataclass(frozen=True, slots=True)
class V2AuthRequest:
    """AUTH; ``auth_message`` is a serialized v3 ``AuthMessage``."""

    auth_message: bytes
    flags: int = 0
    version: int = CURRENT_PROTOCOL_VERSION


V2Request = V2AddRequest | V2ReadRequest | V2AuthRequest


@dataclass(frozen=True, slots=True)
class V2Response:
    """A v2 response: add/read carry ``rc`` and the requested ids; reads add the body."""

    opcode: int
    rc: int
    ledger_id: int
    entry_id: int
    payload: bytes = b""
    flags: int = 0
    version: int = CURRENT_PROTOCOL_VERSION

    @property
    def status(self) -> StatusCode:
        """The v3 status of ``rc``; raises :class:`MalformedFrame` for an unknown code."""
        try:
            return StatusCode.from_v2(self.rc)
        except ValueError:
            raise MalformedFrame(f"unknown v2 return code {self.rc}") from None


@dataclass(frozen=True, slots=True)
class V2AuthResponse:
    """The v2 answer to AUTH: header + serialized ``AuthMessage``."""

    auth_message: bytes
    flags: int = 0
    version: int = CURRENT_PROTOCOL_VERSION


def encode_header(version: int, opcode: int, flags: int) -> bytes:
    return _HEADER.pack(version, opcode, flags)


def encode_request(request: V2Request) -> bytes:
    """The frame payload of a v2 request (without the length prefix)."""
    if isinstance(request, V2AddRequest):
        if len(request.master_key) != MASTER_KEY_LENGTH:
            raise ValueError(f"v2 master keys are {MASTER_KEY_LENGTH} bytes")
        header = encode_header(request.version, OpCode.ADDENTRY, request.flags)
        return header + request.master_key + request.body
    if isinstance(request, V2ReadRequest):
        header = encode_header(request.version, OpCode.READENTRY, request.flags)
        ids = _IDS.pack(request.ledger_id, request.entry_id)
        if request.is_fencing and request.version >= 2:
            if request.master_key is None or len(request.master_key) != MASTER_KEY_LENGTH:
                raise ValueError(f"a v2 fencing read needs a {MASTER_KEY_LENGTH}-byte master key")
            return header + ids + request.master_key
        if request.master_key is not None:
            raise ValueError("a v2 read carries a master key only with DO_FENCING")
        return header + ids
    header = encode_header(request.version, OpCode.AUTH, request.flags)
    return header + request.auth_message


def decode_request(payload: bytes) -> V2Request:
    """Decode a v2 request payload, as the bookie's ``RequestDecoder`` does after v3 fails."""
    if len(payload) < _HEADER.size:
        raise MalformedFrame(f"v2 request of {len(payload)} bytes has no header")
    version, opcode, flags = _HEADER.unpack_from(payload)
    body = payload[_HEADER.size :]
    if opcode == OpCode.ADDENTRY:
        if len(body) < MASTER_KEY_LENGTH + _ENTRY_IDS_IN_BODY.size:
            raise MalformedFrame(f"v2 ADDENTRY of {len(payload)} bytes is too short")
        return V2AddRequest(
            master_key=body[:MASTER_KEY_LENGTH],
            body=body[MASTER_KEY_LENGTH:],
            flags=flags,
            version=version,
        )
    if opcode == OpCode.READENTRY:
        fencing = bool(flags & Flag.DO_FENCING) and version >= 2
        expected = _IDS.size + (MASTER_KEY_LENGTH if fencing else 0)
        if len(body) != expected:
            raise MalformedFrame(f"v2 READENTRY body of {len(body)} bytes, expected {expected}")
        ledger_id, entry_id = _IDS.unpack_from(body)
        key = body[_IDS.size :] if fencing else None
        return V2ReadRequest(ledger_id, entry_id, flags=flags, master_key=key, version=version)
    if opcode == OpCode.AUTH:
        return V2AuthRequest(auth_message=body, flags=flags, version=version)
    raise MalformedFrame(f"v2 opcode {opcode} is not served over v2 (version {version})")


def encode_response(response: V2Response | V2AuthResponse) -> bytes:
    """The frame payload of a v2 response."""
    if isinstance(response, V2AuthResponse):
        header = encode_header(response.version, OpCode.AUTH, response.flags)
        return header + response.auth_message
    return (
        _RESPONSE.pack(
            response.version,
            response.opcode,
            response.flags,
            response.rc,
            response.ledger_id,
            response.entry_id,
        )
        + response.payload
    )


def decode_response(payload: bytes) -> V2Response | V2AuthResponse:
    """Decode a v2 response payload."""
    if len(payload) < _HEADER.size:
        raise MalformedFrame(f"v2 response of {len(payload)} bytes has no header")
    version, opcode, flags = _HEADER.unpack_from(payload)
    if opcode == OpCode.AUTH:
        return V2AuthResponse(auth_message=payload[_HEADER.size :], flags=flags, version=version)
    if opcode not in (OpCode.ADDENTRY, OpCode.READENTRY):
        raise MalformedFrame(f"unexpected v2 response opcode {opcode}")
    if len(payload) < _RESPONSE.size:
        raise MalformedFrame(f"v2 response of {len(payload)} bytes, need at least {_RESPONSE.size}")
    _, _, _, rc, ledger_id, entry_id = _RESPONSE.unpack_from(payload)
    rest = payload[_RESPONSE.size :]
    if opcode == OpCode.ADDENTRY and rest:
        raise MalformedFrame(f"v2 ADDENTRY response with {len(rest)} trailing bytes")
    return V2Response(opcode, rc, ledger_id, entry_id, rest, flags=flags, version=version)


def v2_response_for(
    request: V2AddRequest | V2ReadRequest, status: StatusCode, payload: bytes = b""
) -> V2Response:
    """The response a bookie sends for ``request``: requested ids echoed, flags cleared."""
    if isinstance(request, V2AddRequest):
        return V2Response(
            OpCode.ADDENTRY,
            int(status.v2),
            request.ledger_id,
            request.entry_id,
            version=request.version,
        )
    return V2Response(
        OpCode.READENTRY,
        int(status.v2),
        request.ledger_id,
        request.entry_id,
        payload,
        version=request.version,
    )


__all__ = [
    "CURRENT_PROTOCOL_VERSION",
    "LAST_ADD_CONFIRMED",
    "MASTER_KEY_LENGTH",
    "Flag",
    "OpCode",
    "V2AddRequest",
    "V2AuthRequest",
    "V2AuthResponse",
    "V2ReadRequest",
    "V2Request",
    "V2Response",
    "V2ReturnCode",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "v2_response_for",
]
