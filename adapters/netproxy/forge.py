"""Forged answers: the response a bookie sends with a given error status, built by the proxy.

Two origins, one shape. A forged answer to a REQUEST is the error response a bookie would have
sent for it (§1.3/§1.5 of the protocol reference, and the golden captures ``errors_*.jsonl``):
v3 ``Response{header{VERSION_THREE, operation, txnId}, status, <op>Response{status, ledgerId
[, entryId]}}``, v2 ``header(request version, opcode, 0) | rc | ledgerId | entryId`` with no
payload. A forged RESPONSE is the bookie's own answer with its status replaced, outer and inner:
same header (so the same txnId), same ids, and without the payload fields a bookie only sends
with EOK (read body, maxLAC, LAC bodies, disk figures), because a real error answer never carries
them. Either way the client matches the forgery to its request exactly as it would the bookie's
answer (v3 by txnId, v2 by opcode and ids).

What cannot be forged: an undecodable frame (no txnId, no ids) and a v2 AUTH exchange (its
answer has no status field).
"""

from __future__ import annotations

from adapters.bookkeeper import codec, v2, v3
from adapters.bookkeeper.errors import MalformedFrame
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy.errors import InvalidPolicy
from adapters.netproxy.frames import Direction, FrameInfo, Operation, Protocol

# v3 operation -> (request body, response body, whether that response echoes an entryId). The
# response bodies' required fields are exactly status, ledgerId and (reads, adds) entryId.
_V3_BODIES: dict[int, tuple[str, str, bool]] = {
    pb.READ_ENTRY: ("readRequest", "readResponse", True),
    pb.ADD_ENTRY: ("addRequest", "addResponse", True),
    pb.WRITE_LAC: ("writeLacRequest", "writeLacResponse", False),
    pb.READ_LAC: ("readLacRequest", "readLacResponse", False),
    pb.FORCE_LEDGER: ("forceLedgerRequest", "forceLedgerResponse", False),
    pb.GET_LIST_OF_ENTRIES_OF_LEDGER: (
        "getListOfEntriesOfLedgerRequest",
        "getListOfEntriesOfLedgerResponse",
        False,
    ),
}


def unforgeable(info: FrameInfo) -> str | None:
    """Why a frame described by ``info`` has no answer to forge, or None if it has one."""
    if not info.decoded:
        return "an undecodable frame names no request to answer"
    if info.protocol is Protocol.V2 and info.operation is Operation.AUTH:
        return "a v2 AUTH answer carries no status"
    return None


def forged_payload(info: FrameInfo, payload: bytes, status: StatusCode) -> bytes:
    """The payload (no length prefix) of the answer with ``status`` to the frame ``payload``.

    ``info`` is the frame's description (its direction and protocol say how to read
    ``payload``). Raises :class:`InvalidPolicy` for a frame :func:`unforgeable` refuses.
    """
    why = unforgeable(info)
    if why is not None:
        raise InvalidPolicy(f"cannot forge {status.name} for {info.describe()}: {why}")
    try:
        if info.direction is Direction.REQUEST:
            return _answer_request(codec.decode_request(payload), status)
        if info.protocol is Protocol.V2:
            return _restatus_v2(v2.decode_response(payload), status)
        return v3.encode_message(_restatus_v3(v3.decode_response(payload), status))
    except MalformedFrame as exc:  # the describer decoded it, so this is a codec mismatch
        raise InvalidPolicy(f"cannot forge {status.name} for {info.describe()}: {exc}") from exc


def _answer_request(request: codec.AnyRequest, status: StatusCode) -> bytes:
    if isinstance(request, v3.Request):
        return v3.encode_message(_v3_error_answer(request, status))
    if isinstance(request, v2.V2AuthRequest):
        raise MalformedFrame("a v2 AUTH answer carries no status")
    # The bookie's own builder for v2 answers: requested ids echoed, flags cleared, no payload.
    return v2.encode_response(v2.v2_response_for(request, status))


def _v3_error_answer(request: v3.Request, status: StatusCode) -> v3.Response:
    # A bookie answers with VERSION_THREE and does not echo the request's priority (§1.3).
    header = v3.header(request.header.operation, request.header.txnId)
    response = pb.Response(header=header, status=status)  # type: ignore[arg-type]
    operation = request.header.operation
    # The header's operation picks the answer's body, as on a bookie: a range read carries a
    # readRequest, yet its answer is header and status only (golden unknown-op-range-read).
    if operation in _V3_BODIES:
        request_body, response_body, has_entry = _V3_BODIES[operation]
        if request.HasField(request_body):
            asked = getattr(request, request_body)
            answer = getattr(response, response_body)
            answer.status = status
            answer.ledgerId = asked.ledgerId
            if has_entry:
                answer.entryId = asked.entryId
    elif operation == pb.GET_BOOKIE_INFO and request.HasField("getBookieInfoRequest"):
        response.getBookieInfoResponse.status = status  # type: ignore[assignment]
    # AUTH, START_TLS, unsupported operations and requests without their body: header and
    # status only, as a bookie refuses them.
    return response


def _restatus_v3(original: v3.Response, status: StatusCode) -> v3.Response:
    response = pb.Response(status=status)  # type: ignore[arg-type]
    response.header.CopyFrom(original.header)
    for _request_body, response_body, has_entry in _V3_BODIES.values():
        if original.HasField(response_body):
            sent = getattr(original, response_body)
            answer = getattr(response, response_body)
            answer.status = status
            answer.ledgerId = sent.ledgerId
            if has_entry:
                answer.entryId = sent.entryId
            return response
    if original.HasField("getBookieInfoResponse"):
        response.getBookieInfoResponse.status = status  # type: ignore[assignment]
    return response


def _restatus_v2(original: v2.V2Response | v2.V2AuthResponse, status: StatusCode) -> bytes:
    if isinstance(original, v2.V2AuthResponse):
        raise MalformedFrame("a v2 AUTH answer carries no status")
    forged = v2.V2Response(
        original.opcode, int(status.v2), original.ledger_id, original.entry_id,
        version=original.version,
    )  # fmt: skip
    return v2.encode_response(forged)


__all__ = ["forged_payload", "unforgeable"]
