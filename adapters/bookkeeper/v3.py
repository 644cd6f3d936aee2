"""The v3 (protobuf) wire protocol: ``Request``/``Response`` with a ``BKPacketHeader`` (§1.3).

Builders here set every proto2 ``required`` field, because a v3 request that misses one fails
to parse on the bookie and silently flips the connection to v2 (reference §1.1).
"""

from __future__ import annotations

from google.protobuf.message import DecodeError, EncodeError

from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode

Request = pb.Request
Response = pb.Response
BKPacketHeader = pb.BKPacketHeader
OperationType = pb.OperationType
ProtocolVersion = pb.ProtocolVersion

VERSION_THREE = pb.VERSION_THREE
#: ``header.priority`` the Java client sets for recovery reads and recovery adds.
HIGH_PRIORITY = 100


def encode_message(message: Request | Response) -> bytes:
    """Serialize a complete message; raises :class:`MalformedFrame` if a required field is unset."""
    try:
        return message.SerializeToString()
    except EncodeError as exc:
        raise MalformedFrame(f"cannot encode {type(message).__name__}: {exc}") from exc


def decode_request(payload: bytes) -> Request:
    """Parse a v3 ``Request``; raises :class:`MalformedFrame` (e.g. missing required fields)."""
    request = pb.Request()
    try:
        request.ParseFromString(payload)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MalformedFrame(f"not a v3 Request: {exc}") from exc
    if not request.IsInitialized():
        # Closed proto2 enums park undefined values among unknown fields, which leaves a
        # required field unset: the bookie's parser rejects such a frame, and so do we.
        missing = ", ".join(request.FindInitializationErrors())  # type: ignore[attr-defined]
        raise MalformedFrame(f"v3 Request missing required fields: {missing}")
    return request


def decode_response(payload: bytes) -> Response:
    """Parse a v3 ``Response``; raises :class:`MalformedFrame`."""
    response = pb.Response()
    try:
        response.ParseFromString(payload)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise MalformedFrame(f"not a v3 Response: {exc}") from exc
    if not response.IsInitialized():
        # Closed proto2 enums park undefined values among unknown fields, which leaves a
        # required field unset: the bookie's parser rejects such a frame, and so do we.
        missing = ", ".join(response.FindInitializationErrors())  # type: ignore[attr-defined]
        raise MalformedFrame(f"v3 Response missing required fields: {missing}")
    return response


def header(
    operation: int, txn_id: int, *, priority: int | None = None, version: int = VERSION_THREE
) -> BKPacketHeader:
    """A packet header; ``priority`` is omitted from the wire unless given."""
    result = pb.BKPacketHeader(version=version, operation=operation, txnId=txn_id)  # type: ignore[arg-type]
    if priority is not None:
        result.priority = priority
    return result


def add_request(
    txn_id: int,
    ledger_id: int,
    entry_id: int,
    master_key: bytes,
    body: bytes,
    *,
    recovery: bool = False,
    priority: int | None = None,
    write_flags: int | None = None,
    version: int = VERSION_THREE,
) -> Request:
    """ADD_ENTRY; ``recovery`` sets ``flag=RECOVERY_ADD`` (accepted by a fenced bookie)."""
    add = pb.AddRequest(ledgerId=ledger_id, entryId=entry_id, masterKey=master_key, body=body)
    if recovery:
        add.flag = pb.AddRequest.RECOVERY_ADD
    if write_flags is not None:
        add.writeFlags = write_flags
    return pb.Request(
        header=header(pb.ADD_ENTRY, txn_id, priority=priority, version=version), addRequest=add
    )


def read_request(
    txn_id: int,
    ledger_id: int,
    entry_id: int,
    *,
    fence: bool = False,
    piggyback: bool = False,
    master_key: bytes | None = None,
    previous_lac: int | None = None,
    timeout_ms: int | None = None,
    priority: int | None = None,
    version: int = VERSION_THREE,
) -> Request:
    """READ_ENTRY; ``entry_id=-1`` reads the last entry; ``fence`` sets ``FENCE_LEDGER``."""
    if fence and piggyback:
        raise ValueError("a ReadRequest carries one flag: FENCE_LEDGER or ENTRY_PIGGYBACK")
    read = pb.ReadRequest(ledgerId=ledger_id, entryId=entry_id)
    if fence:
        read.flag = pb.ReadRequest.FENCE_LEDGER
    elif piggyback:
        read.flag = pb.ReadRequest.ENTRY_PIGGYBACK
    if master_key is not None:
        read.masterKey = master_key
    if previous_lac is not None:
        read.previousLAC = previous_lac
    if timeout_ms is not None:
        read.timeOut = timeout_ms
    return pb.Request(
        header=header(pb.READ_ENTRY, txn_id, priority=priority, version=version), readRequest=read
    )


def read_lac_request(txn_id: int, ledger_id: int) -> Request:
    return pb.Request(
        header=header(pb.READ_LAC, txn_id), readLacRequest=pb.ReadLacRequest(ledgerId=ledger_id)
    )


def write_lac_request(
    txn_id: int, ledger_id: int, lac: int, master_key: bytes, body: bytes
) -> Request:
    write = pb.WriteLacRequest(ledgerId=ledger_id, lac=lac, masterKey=master_key, body=body)
    return pb.Request(header=header(pb.WRITE_LAC, txn_id), writeLacRequest=write)


def force_ledger_request(txn_id: int, ledger_id: int) -> Request:
    force = pb.ForceLedgerRequest(ledgerId=ledger_id)
    return pb.Request(header=header(pb.FORCE_LEDGER, txn_id), forceLedgerRequest=force)


def get_bookie_info_request(txn_id: int, requested: int | None = None) -> Request:
    info = pb.GetBookieInfoRequest()
    if requested is not None:
        info.requested = requested
    return pb.Request(header=header(pb.GET_BOOKIE_INFO, txn_id), getBookieInfoRequest=info)


def auth_request(txn_id: int, plugin_name: str, payload: bytes) -> Request:
    auth = pb.AuthMessage(authPluginName=plugin_name, payload=payload)
    return pb.Request(header=header(pb.AUTH, txn_id), authRequest=auth)


def effective_status(response: Response) -> StatusCode:
    """``Response.status`` unless EOK, else the sub-response's status (the Java client's rule)."""
    outer = StatusCode(response.status)
    if outer is not StatusCode.EOK:
        return outer
    for field in _SUB_RESPONSES_WITH_STATUS:
        if response.HasField(field):
            return StatusCode(getattr(response, field).status)
    return outer


_SUB_RESPONSES_WITH_STATUS = (
    "readResponse",
    "addResponse",
    "writeLacResponse",
    "readLacResponse",
    "getBookieInfoResponse",
    "forceLedgerResponse",
    "getListOfEntriesOfLedgerResponse",
)
