"""Protocol detection for whole frames: v3 protobuf first, v2 when protobuf rejects the bytes.

This mirrors ``BookieProtoEncoding.RequestDecoder`` (reference §1.1): a v2 payload starts with the
version byte ``0x02`` (protobuf field 0, which protobuf rejects), so detection is reliable for
well-formed frames. :class:`RequestDecoder` keeps the bookie's per-connection stickiness: once a
frame fails v3, the rest of the connection is decoded as v2.
"""

from __future__ import annotations

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.errors import MalformedFrame

AnyRequest = v3.Request | v2.V2Request
AnyResponse = v3.Response | v2.V2Response | v2.V2AuthResponse


def decode_request(payload: bytes) -> AnyRequest:
    """A v3 ``Request`` if the payload parses as one, else a v2 request; else MalformedFrame."""
    try:
        return v3.decode_request(payload)
    except MalformedFrame as v3_error:
        try:
            return v2.decode_request(payload)
        except MalformedFrame as v2_error:
            raise MalformedFrame(f"neither v3 ({v3_error}) nor v2 ({v2_error})") from v2_error


def decode_response(payload: bytes) -> AnyResponse:
    """A v3 ``Response`` if the payload parses as one, else a v2 response; else MalformedFrame."""
    try:
        return v3.decode_response(payload)
    except MalformedFrame as v3_error:
        try:
            return v2.decode_response(payload)
        except MalformedFrame as v2_error:
            raise MalformedFrame(f"neither v3 ({v3_error}) nor v2 ({v2_error})") from v2_error


def encode_request(request: AnyRequest) -> bytes:
    """The payload of a request (no length prefix)."""
    if isinstance(request, v3.Request):
        return v3.encode_message(request)
    return v2.encode_request(request)


def encode_response(response: AnyResponse) -> bytes:
    """The payload of a response (no length prefix)."""
    if isinstance(response, v3.Response):
        return v3.encode_message(response)
    return v2.encode_response(response)


class RequestDecoder:
    """Per-connection request decoding with the bookie's sticky fallback to v2."""

    def __init__(self) -> None:
        self.using_v3 = True

    def decode(self, payload: bytes) -> AnyRequest:
        if self.using_v3:
            try:
                return v3.decode_request(payload)
            except MalformedFrame:
                self.using_v3 = False
        return v2.decode_request(payload)
