"""Every golden frame decodes and re-encodes to the same bytes; every body verifies its digest."""

from __future__ import annotations

import pytest

from adapters.bookkeeper import codec, framing, v2, v3
from adapters.bookkeeper.entry import DigestType, verify_entry, verify_lac
from adapters.bookkeeper.errors import MalformedFrame
from tests.adapters.bookkeeper.golden import (
    GOLDEN_PASSWORD,
    GoldenFrame,
    all_frames,
    exchanges,
    golden_files,
)

FRAMES = list(all_frames())


def _unanswered_requests() -> set[str]:
    """Requests real bookies answered by resetting the connection (no b2c frame), i.e. frames a
    bookie could not decode (README: "connection resets instead of error responses").

    Our proto is 4.17's. 4.11.1 reset on ``unknown-op-batch-read`` only because op 12 was not in
    its enum yet; 4.17.4 decodes that frame (and answers EBADREQ), so a scenario counts as
    undecodable only if the 4.17.4 bookie reset it too.
    """
    unanswered: dict[str, set[str]] = {}
    for path in golden_files():
        if path.name.startswith(("errors_", "limbo_")):
            for request, response in exchanges(path):
                if response is None:
                    unanswered.setdefault(request.version, set()).add(request.scenario)
    undecodable = unanswered.get("4.17.4", set())
    return {
        request.label
        for path in golden_files()
        if path.name.startswith(("errors_", "limbo_"))
        for request, response in exchanges(path)
        if response is None and request.scenario in undecodable
    }


UNANSWERED = _unanswered_requests()


def test_golden_corpus_is_complete() -> None:
    names = {path.name for path in golden_files()}
    assert {"v3_session_4.17.4.jsonl", "v2_session_4.17.4.jsonl", "limbo_4.17.4.jsonl"} <= names
    # README table: 3 sessions x 64 frames + errors 32 + 31 + limbo 20.
    assert len(FRAMES) == 3 * 64 + 32 + 31 + 20
    # Both unanswered probes of each errors file: the undefined enum and the v2 unknown op.
    assert len(UNANSWERED) == 4


@pytest.mark.parametrize("frame", FRAMES, ids=lambda f: f.label)
def test_frame_round_trips(frame: GoldenFrame) -> None:
    payload = framing.split_frame(frame.frame)
    if frame.label in UNANSWERED:
        with pytest.raises(MalformedFrame):
            codec.decode_request(payload)
        return
    if frame.is_request:
        message: codec.AnyRequest | codec.AnyResponse = codec.decode_request(payload)
        encoded = codec.encode_request(message)  # type: ignore[arg-type]
    else:
        message = codec.decode_response(payload)
        encoded = codec.encode_response(message)
    assert framing.encode_frame(encoded) == frame.frame
    expected_protocol = "v3" if frame.summary.startswith("v3") else "v2"
    is_v3 = isinstance(message, v3.Request | v3.Response)
    assert ("v3" if is_v3 else "v2") == expected_protocol


def _bodies(message: codec.AnyRequest | codec.AnyResponse) -> list[tuple[str, bytes]]:
    if isinstance(message, v3.Request):
        bodies = []
        if message.HasField("addRequest"):
            bodies.append(("entry", message.addRequest.body))
        if message.HasField("writeLacRequest"):
            bodies.append(("lac", message.writeLacRequest.body))
        return bodies
    if isinstance(message, v3.Response):
        bodies = []
        if message.HasField("readResponse") and message.readResponse.HasField("body"):
            bodies.append(("entry", message.readResponse.body))
        if message.HasField("readLacResponse"):
            sub = message.readLacResponse
            if sub.HasField("lacBody"):
                bodies.append(("lac", sub.lacBody))
            if sub.HasField("lastEntryBody"):
                bodies.append(("entry", sub.lastEntryBody))
        return bodies
    if isinstance(message, v2.V2AddRequest):
        return [("entry", message.body)]
    if isinstance(message, v2.V2Response) and message.payload:
        return [("entry", message.payload)]
    return []


def test_every_golden_body_verifies() -> None:
    verified = 0
    for frame in FRAMES:
        if frame.label in UNANSWERED:
            continue
        payload = framing.split_frame(frame.frame)
        decode = codec.decode_request if frame.is_request else codec.decode_response
        for kind, body in _bodies(decode(payload)):
            if kind == "entry":
                entry = verify_entry(body, DigestType.CRC32, GOLDEN_PASSWORD)
                assert entry.payload.startswith(b"entry-"), frame.label
                assert entry.length >= len(entry.payload)
            else:
                verify_lac(body, DigestType.CRC32, GOLDEN_PASSWORD)
            verified += 1
    # Each session alone carries dozens of bodies (adds, reads, recovery).
    assert verified > 100


def test_readme_hand_decode_of_v3_add() -> None:
    frame = next(f for f in FRAMES if f.file == "v3_session_4.17.4.jsonl" and f.line == 2)
    request = codec.decode_request(framing.split_frame(frame.frame))
    assert isinstance(request, v3.Request)
    assert (request.header.version, request.header.operation, request.header.txnId) == (3, 2, 1)
    add = request.addRequest
    assert (add.ledgerId, add.entryId) == (150, 0)
    assert add.masterKey.hex() == "615ed0089f3a2db1c1f7182910edc04428396d09"
    entry = verify_entry(add.body, DigestType.CRC32, GOLDEN_PASSWORD)
    assert (entry.last_add_confirmed, entry.length, entry.payload) == (-1, 7, b"entry-0")
    assert entry.digest.hex() == "00000000e7850460"


def test_readme_hand_decode_of_v2_fencing_read() -> None:
    frame = next(f for f in FRAMES if f.file == "v2_session_4.17.4.jsonl" and f.line == 47)
    request = codec.decode_request(framing.split_frame(frame.frame))
    assert request == v2.V2ReadRequest(
        151, 4, flags=0x5, master_key=bytes.fromhex("615ed0089f3a2db1c1f7182910edc04428396d09")
    )
