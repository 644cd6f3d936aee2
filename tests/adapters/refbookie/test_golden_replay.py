"""Replay every golden request against the reference bookie and compare with the real answers.

Sessions are replayed per bookie, from an empty bookie, in capture order, one connection per
golden connection; the errors probes then run against the bookie that holds the session's end
state (README: "ledger 150 is CLOSED and fenced"), and the limbo probes against a bookie whose
pre-boot check put ledger 150 in limbo.

Responses must be **byte-identical** to the golden ones, with these documented exceptions:

* requests that real bookies answered by resetting the connection (no golden response) must
  make the reference bookie close the connection as well;
* ``limbo-bookie-self-recovery-fence-read`` was sent by the real bookie's own integrity check on
  a connection opened before the capture; we replay it like any other request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from adapters.bookkeeper import codec, framing, v2, v3
from adapters.bookkeeper.framing import FrameDecoder
from adapters.refbookie.integrity import LedgerSummary, StaticMetadata
from adapters.refbookie.server import BookieServer
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.bookkeeper.golden import GoldenFrame, golden_dir, load_frames
from tests.adapters.refbookie.harness import running_bookie

REPLY_TIMEOUT = 5.0


@dataclass
class _Stream:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    decoder: FrameDecoder


class Replayer:
    """Sends golden request frames to a bookie over per-golden-connection streams."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.streams: dict[tuple[str, int], _Stream] = {}

    async def stream(self, frame: GoldenFrame) -> _Stream:
        key = (frame.file, frame.conn)
        if key not in self.streams:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.streams[key] = _Stream(reader, writer, FrameDecoder())
        return self.streams[key]

    async def exchange(self, request: GoldenFrame) -> bytes | None:
        """Send one request frame; the response frame, or ``None`` if the bookie closed."""
        stream = await self.stream(request)
        stream.writer.write(request.frame)
        async with asyncio.timeout(REPLY_TIMEOUT):
            while True:
                try:
                    data = await stream.reader.read(65536)
                except ConnectionResetError:
                    return None
                if not data:
                    return None
                payloads = stream.decoder.feed(data)
                if payloads:
                    assert len(payloads) == 1, f"{request.label}: more than one response"
                    return framing.encode_frame(payloads[0])

    async def close(self) -> None:
        for stream in self.streams.values():
            stream.writer.close()


def _matches(request: GoldenFrame, response: GoldenFrame) -> bool:
    """Does the golden ``response`` answer ``request`` (txnId for v3, op+ids for v2)?"""
    req = codec.decode_request(framing.split_frame(request.frame))
    resp = codec.decode_response(framing.split_frame(response.frame))
    if isinstance(req, v3.Request) and isinstance(resp, v3.Response):
        return req.header.txnId == resp.header.txnId
    if isinstance(req, v2.V2AddRequest | v2.V2ReadRequest) and isinstance(resp, v2.V2Response):
        opcode = v2.OpCode.ADDENTRY if isinstance(req, v2.V2AddRequest) else v2.OpCode.READENTRY
        return (resp.opcode, resp.ledger_id, resp.entry_id) == (opcode, req.ledger_id, req.entry_id)
    return False


def golden_exchanges(frames: list[GoldenFrame]) -> list[tuple[GoldenFrame, GoldenFrame | None]]:
    """Requests in capture order, each with its golden response (same connection) or None."""
    unused = [f for f in frames if not f.is_request]
    pairs: list[tuple[GoldenFrame, GoldenFrame | None]] = []
    for request in (f for f in frames if f.is_request):
        match = next((r for r in unused if r.conn == request.conn and _matches(request, r)), None)
        if match is not None:
            unused.remove(match)
        pairs.append((request, match))
    assert not unused, f"golden responses without a request: {[r.label for r in unused]}"
    return pairs


async def replay(server: BookieServer, frames: list[GoldenFrame]) -> list[str]:
    """Replay and return a description of every difference (empty = identical)."""
    replayer = Replayer(server.port)
    differences = []
    try:
        for request, golden in golden_exchanges(frames):
            ours = await replayer.exchange(request)
            if golden is None:
                if ours is not None:
                    differences.append(f"{request.label}: real bookie reset, we answered")
            elif ours != golden.frame:
                differences.append(
                    f"{request.label}: expected {golden.summary}\n  got {_describe(ours)}"
                )
    finally:
        await replayer.close()
    return differences


def _describe(frame: bytes | None) -> str:
    if frame is None:
        return "connection closed"
    return repr(codec.decode_response(framing.split_frame(frame)))


SESSIONS = {
    "4.17.4": ("v3_session_4.17.4.jsonl", "v2_session_4.17.4.jsonl"),
    "4.11.1": ("v3_session_4.11.1.jsonl",),
}
BOOKIES = ("127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183")


def _frames(name: str) -> list[GoldenFrame]:
    return load_frames(golden_dir() / name)


@pytest.mark.parametrize("bookie", BOOKIES)
@pytest.mark.parametrize(
    "session", ["v3_session_4.17.4.jsonl", "v3_session_4.11.1.jsonl", "v2_session_4.17.4.jsonl"]
)
@async_test()
async def test_session_replay_matches_real_bookie(
    tmp_path: Path, session: str, bookie: str
) -> None:
    frames = [f for f in _frames(session) if f.bookie == bookie]
    assert frames, f"no frames for {bookie} in {session}"
    async with running_bookie(tmp_path) as server:
        assert await replay(server, frames) == []


@pytest.mark.parametrize("version", ["4.17.4", "4.11.1"])
@async_test()
async def test_error_probes_match_real_bookie(tmp_path: Path, version: str) -> None:
    session = [f for f in _frames(f"v3_session_{version}.jsonl") if f.bookie == "127.0.0.1:3181"]
    probes = _frames(f"errors_{version}.jsonl")
    assert {f.bookie for f in probes} == {"127.0.0.1:3181"}
    async with running_bookie(tmp_path) as server:
        assert await replay(server, session) == []
        differences = await replay(server, probes)
    if version == "4.11.1":
        # 4.11.1 reset on op 12 (BATCH_READ_ENTRY was not yet in its enum); the reference
        # bookie speaks 4.17's protocol and answers EBADREQ, as 4.17.4 does.
        expected = [d for d in differences if "unknown-op-batch-read" in d]
        assert len(expected) == 1 and "real bookie reset, we answered" in expected[0]
        differences = [d for d in differences if d not in expected]
    assert differences == []


@async_test()
async def test_limbo_probes_match_real_bookie(tmp_path: Path) -> None:
    # README: ledger 150 OPEN, ensemble [3183, 3182, 3181]; bookie 3183's disks wiped and
    # restarted with dataIntegrityChecking and dataIntegrityStampMissingCookies.
    metadata = StaticMetadata(
        (
            LedgerSummary(
                150,
                closed=False,
                last_ensemble=("127.0.0.1:3183", "127.0.0.1:3182", "127.0.0.1:3181"),
            ),
        )
    )
    overrides = {
        "bookieId": "127.0.0.1:3183",
        "dataIntegrityChecking": "true",
        "dataIntegrityStampMissingCookies": "true",
    }
    async with running_bookie(tmp_path, metadata=metadata, **overrides) as server:
        assert server.limbo_marked == [150]
        assert await replay(server, _frames("limbo_4.17.4.jsonl")) == []
