"""What the proxy knows about one frame: a summary decoded with ``adapters.bookkeeper.codec``.

A frame is described, never rebuilt: the proxy forwards the original bytes, so a summary that
misses a field changes nothing on the wire. Each request is decoded v3 first, then v2
(:func:`~adapters.bookkeeper.codec.decode_request`; a v2 payload starts with a byte protobuf
rejects). The bookie's stickiness (v2 for the rest of a connection after one v3 failure) is not
copied, because a frame the proxy drops never reaches the bookie. Responses are decoded with
the protocol of the connection's last decoded request.

Responses carry no flags of their own; :attr:`FrameInfo.flags` of a response holds the flags
of the request it answers (matched by txnId for v3, by operation and ids for v2), so a policy can
say "the answer to the fence read" without naming a txnId.
"""

from __future__ import annotations

import collections
import dataclasses
import enum
from dataclasses import dataclass, field

from adapters.bookkeeper import codec, v2, v3
from adapters.bookkeeper.entry import ENTRY_HEADER
from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode


class Direction(enum.Enum):
    """``REQUEST``: client to bookie; ``RESPONSE``: bookie to client."""

    REQUEST = "request"
    RESPONSE = "response"


class Operation(enum.Enum):
    """The bookie operation a frame carries (v3 ``OperationType`` names; v2 mapped onto them)."""

    READ_ENTRY = "READ_ENTRY"
    ADD_ENTRY = "ADD_ENTRY"
    AUTH = "AUTH"
    WRITE_LAC = "WRITE_LAC"
    READ_LAC = "READ_LAC"
    GET_BOOKIE_INFO = "GET_BOOKIE_INFO"
    FORCE_LEDGER = "FORCE_LEDGER"
    OTHER = "OTHER"
    #: The frame did not decode (see :attr:`FrameInfo.error`).
    UNDECODABLE = "UNDECODABLE"


class FrameFlag(enum.Enum):
    """Request flags that matter to the protocol (v3 flag enums and v2 header bits)."""

    FENCE_LEDGER = "FENCE_LEDGER"
    ENTRY_PIGGYBACK = "ENTRY_PIGGYBACK"
    RECOVERY_ADD = "RECOVERY_ADD"
    HIGH_PRIORITY = "HIGH_PRIORITY"


class Protocol(enum.Enum):
    V3 = "v3"
    V2 = "v2"


_V3_OPERATIONS = {
    pb.READ_ENTRY: Operation.READ_ENTRY,
    pb.ADD_ENTRY: Operation.ADD_ENTRY,
    pb.AUTH: Operation.AUTH,
    pb.WRITE_LAC: Operation.WRITE_LAC,
    pb.READ_LAC: Operation.READ_LAC,
    pb.GET_BOOKIE_INFO: Operation.GET_BOOKIE_INFO,
    pb.FORCE_LEDGER: Operation.FORCE_LEDGER,
}
_V2_OPERATIONS: dict[int, Operation] = {
    v2.OpCode.ADDENTRY: Operation.ADD_ENTRY,
    v2.OpCode.READENTRY: Operation.READ_ENTRY,
    v2.OpCode.AUTH: Operation.AUTH,
}
# Sub-messages with a ledgerId (and sometimes an entryId), per v3 request/response field.
_V3_REQUEST_BODIES = (
    "readRequest",
    "addRequest",
    "writeLacRequest",
    "readLacRequest",
    "forceLedgerRequest",
)
_V3_RESPONSE_BODIES = (
    "readResponse",
    "addResponse",
    "writeLacResponse",
    "readLacResponse",
    "forceLedgerResponse",
)


@dataclass(frozen=True, slots=True)
class FrameInfo:
    """The decoded summary of one frame (``None`` where the frame carries no such field)."""

    direction: Direction
    operation: Operation
    protocol: Protocol | None = None
    ledger_id: int | None = None
    entry_id: int | None = None
    flags: frozenset[FrameFlag] = field(default_factory=frozenset)
    txn_id: int | None = None
    #: Responses only: the effective status (outer status, else the sub-response's).
    status: StatusCode | None = None
    #: Why the frame did not decode (``operation`` is then ``UNDECODABLE``).
    error: str | None = None
    #: The LAC in the entry the frame carries (its digest header): an add request's (what
    #: the client packaged the add with), a read answer's (a fence read's answer: the LAC of
    #: the bookie's last entry); None for any other frame.
    lac: int | None = None

    @property
    def decoded(self) -> bool:
        return self.operation is not Operation.UNDECODABLE

    def describe(self) -> str:
        """A one-line summary such as ``READ_ENTRY 7/0 [FENCE_LEDGER] -> EOK``."""
        if not self.decoded:
            return f"undecodable {self.direction.value}: {self.error}"
        parts = [self.operation.value]
        if self.ledger_id is not None:
            entry = "" if self.entry_id is None else f"/{self.entry_id}"
            parts.append(f"{self.ledger_id}{entry}")
        if self.flags:
            parts.append("[" + ",".join(sorted(flag.value for flag in self.flags)) + "]")
        if self.status is not None:
            parts.append(f"-> {self.status.name}")
        return " ".join(parts)


class FrameDescriber:
    """Decodes the frames of ONE proxied connection, both directions, keeping its state.

    The state is the protocol the client speaks (sticky, as on the bookie) and the flags of
    requests awaiting an answer, so that responses can be described by the request they answer.
    """

    def __init__(self) -> None:
        self._protocol = Protocol.V3
        self._v3_flags: dict[int, frozenset[FrameFlag]] = {}
        self._v2_flags: dict[tuple[Operation, int, int], collections.deque[frozenset[FrameFlag]]]
        self._v2_flags = {}

    def request(self, payload: bytes) -> FrameInfo:
        try:
            request = codec.decode_request(payload)
        except MalformedFrame as exc:
            return FrameInfo(Direction.REQUEST, Operation.UNDECODABLE, error=str(exc))
        if isinstance(request, v3.Request):
            self._protocol = Protocol.V3
            info = _describe_v3_request(request)
            if info.txn_id is not None:
                self._v3_flags[info.txn_id] = info.flags
            return info
        self._protocol = Protocol.V2
        info = _describe_v2_request(request)
        if info.ledger_id is not None and info.entry_id is not None:
            key = (info.operation, info.ledger_id, info.entry_id)
            self._v2_flags.setdefault(key, collections.deque()).append(info.flags)
        return info

    def response(self, payload: bytes, *, protocol: Protocol | None = None) -> FrameInfo:
        """Describe a response; ``protocol`` overrides the connection's (a forged answer is in
        the protocol of the request it answers, whatever the connection spoke since)."""
        info = describe_response(payload, self._protocol if protocol is None else protocol)
        if not info.decoded or (info.protocol is Protocol.V2 and info.operation is Operation.AUTH):
            return info
        if info.protocol is Protocol.V3:
            flags = self._v3_flags.pop(info.txn_id, None) if info.txn_id is not None else None
        else:
            flags = self._pop_v2_flags(info)
        return dataclasses.replace(info, flags=flags) if flags else info

    def _pop_v2_flags(self, info: FrameInfo) -> frozenset[FrameFlag] | None:
        if info.ledger_id is None or info.entry_id is None:
            return None
        key = (info.operation, info.ledger_id, info.entry_id)
        queue = self._v2_flags.get(key)
        if not queue:
            return None
        flags = queue.popleft()
        if not queue:
            del self._v2_flags[key]
        return flags


def describe_response(payload: bytes, protocol: Protocol) -> FrameInfo:
    """A response's summary decoded as ``protocol``, without the flags of its request (which
    only a :class:`FrameDescriber`, knowing the connection's requests, can add)."""
    try:
        if protocol is Protocol.V3:
            response: codec.AnyResponse = codec.decode_response(payload)
        else:
            response = v2.decode_response(payload)
    except MalformedFrame as exc:
        return FrameInfo(Direction.RESPONSE, Operation.UNDECODABLE, error=str(exc))
    if isinstance(response, v3.Response):
        return _describe_v3_response(response)
    if isinstance(response, v2.V2AuthResponse):
        return FrameInfo(Direction.RESPONSE, Operation.AUTH, Protocol.V2)
    return _describe_v2_response(response)


def _entry_lac(body: bytes) -> int | None:
    """The LAC field of a packaged entry (ledgerId, entryId, LAC, length, digest, data), or
    None if ``body`` is too short to hold one."""
    if len(body) < ENTRY_HEADER.size:
        return None
    return int(ENTRY_HEADER.unpack_from(body)[2])


def _describe_v3_request(request: v3.Request) -> FrameInfo:
    header = request.header
    operation = _V3_OPERATIONS.get(header.operation, Operation.OTHER)
    flags: set[FrameFlag] = set()
    if header.HasField("priority") and header.priority > 0:
        flags.add(FrameFlag.HIGH_PRIORITY)
    ledger_id = entry_id = None
    for name in _V3_REQUEST_BODIES:
        if request.HasField(name):
            body = getattr(request, name)
            ledger_id = body.ledgerId
            entry_id = getattr(body, "entryId", None)
            break
    if request.HasField("readRequest") and request.readRequest.HasField("flag"):
        if request.readRequest.flag == pb.ReadRequest.FENCE_LEDGER:
            flags.add(FrameFlag.FENCE_LEDGER)
        elif request.readRequest.flag == pb.ReadRequest.ENTRY_PIGGYBACK:
            flags.add(FrameFlag.ENTRY_PIGGYBACK)
    if request.HasField("addRequest") and request.addRequest.HasField("flag"):
        flags.add(FrameFlag.RECOVERY_ADD)
    lac = _entry_lac(request.addRequest.body) if request.HasField("addRequest") else None
    return FrameInfo(
        Direction.REQUEST, operation, Protocol.V3, ledger_id, entry_id, frozenset(flags),
        header.txnId, lac=lac,
    )  # fmt: skip


def _describe_v3_response(response: v3.Response) -> FrameInfo:
    header = response.header
    operation = _V3_OPERATIONS.get(header.operation, Operation.OTHER)
    ledger_id = entry_id = None
    for name in _V3_RESPONSE_BODIES:
        if response.HasField(name):
            body = getattr(response, name)
            ledger_id = body.ledgerId
            entry_id = getattr(body, "entryId", None)
            break
    try:
        status: StatusCode | None = v3.effective_status(response)
    except ValueError:
        status = None  # a status this codec does not know; the frame still decoded
    lac = (
        _entry_lac(response.readResponse.body)
        if response.HasField("readResponse") and response.readResponse.HasField("body")
        else None
    )
    return FrameInfo(
        Direction.RESPONSE, operation, Protocol.V3, ledger_id, entry_id, frozenset(),
        header.txnId, status, lac=lac,
    )  # fmt: skip


def _v2_flags(raw: int) -> frozenset[FrameFlag]:
    flags = set()
    if raw & v2.Flag.DO_FENCING:
        flags.add(FrameFlag.FENCE_LEDGER)
    if raw & v2.Flag.RECOVERY_ADD:
        flags.add(FrameFlag.RECOVERY_ADD)
    if raw & v2.Flag.HIGH_PRIORITY:
        flags.add(FrameFlag.HIGH_PRIORITY)
    return frozenset(flags)


def _describe_v2_request(request: v2.V2Request) -> FrameInfo:
    if isinstance(request, v2.V2AddRequest):
        return FrameInfo(
            Direction.REQUEST, Operation.ADD_ENTRY, Protocol.V2, request.ledger_id,
            request.entry_id, _v2_flags(request.flags), lac=_entry_lac(request.body),
        )  # fmt: skip
    if isinstance(request, v2.V2ReadRequest):
        return FrameInfo(
            Direction.REQUEST, Operation.READ_ENTRY, Protocol.V2, request.ledger_id,
            request.entry_id, _v2_flags(request.flags),
        )  # fmt: skip
    return FrameInfo(Direction.REQUEST, Operation.AUTH, Protocol.V2, flags=_v2_flags(request.flags))


def _describe_v2_response(response: v2.V2Response) -> FrameInfo:
    try:
        status: StatusCode | None = response.status
    except MalformedFrame:
        status = None
    operation = _V2_OPERATIONS.get(response.opcode, Operation.OTHER)
    lac = _entry_lac(response.payload) if operation is Operation.READ_ENTRY else None
    return FrameInfo(
        Direction.RESPONSE, operation, Protocol.V2, response.ledger_id, response.entry_id,
        frozenset(), None, status, lac=lac,
    )  # fmt: skip


__all__ = [
    "Direction",
    "FrameDescriber",
    "FrameFlag",
    "FrameInfo",
    "Operation",
    "Protocol",
    "describe_response",
]
