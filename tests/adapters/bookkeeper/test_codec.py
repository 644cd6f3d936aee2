"""Round trips of generated messages and fuzzing of the frame decoder."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.bookkeeper import codec, v2, v3
from adapters.bookkeeper.errors import FrameTooLarge, MalformedFrame
from adapters.bookkeeper.framing import FrameDecoder, encode_frame, split_frame
from tests.adapters.bookkeeper import strategies as bks


def _feed_in_chunks(data: bytes, cuts: list[int], decoder: FrameDecoder) -> list[bytes]:
    payloads: list[bytes] = []
    start = 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        payloads += decoder.feed(data[start:cut])
        start = cut
    return payloads


# Composite messages are slowish to draw; the check is about correctness, not speed.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(bks.v3_requests(), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 2000), max_size=4),
)
def test_v3_requests_round_trip_through_a_chunked_stream(
    messages: list[v3.Request], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(v3.encode_message(m)) for m in messages)
    payloads = _feed_in_chunks(stream, cuts, FrameDecoder())
    assert [codec.decode_request(p) for p in payloads] == messages


@given(message=bks.v3_responses())
def test_v3_responses_round_trip(message: v3.Response) -> None:
    payload = split_frame(encode_frame(v3.encode_message(message)))
    decoded = codec.decode_response(payload)
    assert decoded == message
    assert v3.encode_message(decoded) == payload  # type: ignore[arg-type]


@given(message=bks.v2_requests())
def test_v2_requests_round_trip(message: v2.V2AddRequest | v2.V2ReadRequest) -> None:
    payload = v2.encode_request(message)
    assert codec.decode_request(payload) == message
    assert payload[0] == v2.CURRENT_PROTOCOL_VERSION


@given(message=bks.v2_responses())
def test_v2_responses_round_trip(message: v2.V2Response) -> None:
    payload = v2.encode_response(message)
    assert codec.decode_response(payload) == message
    assert message.status.v2 == message.rc


def test_request_decoder_is_sticky_after_a_v3_failure() -> None:
    decoder = codec.RequestDecoder()
    v3_read = v3.encode_message(v3.read_request(1, 150, 0))
    assert isinstance(decoder.decode(v3_read), v3.Request)
    v2_read = v2.encode_request(v2.V2ReadRequest(150, 0))
    assert isinstance(decoder.decode(v2_read), v2.V2ReadRequest)
    assert not decoder.using_v3
    with pytest.raises(MalformedFrame):
        decoder.decode(v3_read)  # now read as v2: header 0x0a07 0803 is v2 opcode 7


def test_missing_required_field_is_malformed() -> None:
    partial = v3.Request()
    partial.header.txnId = 1  # version and operation missing
    with pytest.raises(MalformedFrame):
        v3.encode_message(partial)
    with pytest.raises(MalformedFrame):
        v3.decode_request(partial.SerializePartialToString())


def test_frame_length_limits() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    with pytest.raises(FrameTooLarge):
        decoder.feed(struct.pack(">i", 11))
    with pytest.raises(FrameTooLarge):
        FrameDecoder().feed(struct.pack(">i", -1))
    assert FrameDecoder(max_frame_size=10).feed(encode_frame(b"x" * 10)) == [b"x" * 10]
    with pytest.raises(MalformedFrame):
        split_frame(encode_frame(b"abc")[:-1])


@settings(max_examples=500)
@given(data=st.binary(max_size=400), cuts=st.lists(st.integers(0, 400), max_size=5))
def test_fuzzed_bytes_give_messages_or_typed_errors(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder(max_frame_size=256)
    try:
        payloads = _feed_in_chunks(data, cuts, decoder)
    except MalformedFrame:
        return
    for payload in payloads:
        for decode in (codec.decode_request, codec.decode_response):
            try:
                message = decode(payload)
            except MalformedFrame:
                continue
            assert isinstance(
                message,
                v3.Request
                | v3.Response
                | v2.V2AddRequest
                | v2.V2ReadRequest
                | v2.V2AuthRequest
                | v2.V2Response
                | v2.V2AuthResponse,
            )


@settings(max_examples=300)
@given(message=bks.v3_requests(), position=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_corrupted_v3_frames_give_messages_or_typed_errors(
    message: v3.Request, position: int, byte: int
) -> None:
    payload = bytearray(v3.encode_message(message))
    payload[position % len(payload)] = byte
    with contextlib.suppress(MalformedFrame):
        codec.decode_request(bytes(payload))
