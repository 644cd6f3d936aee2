"""Arbitrary bytes never break the reference bookie: it answers or resets, and keeps serving."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.bookkeeper import codec, framing, v2, v3
from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.status import StatusCode
from adapters.refbookie.server import BookieServer, _BookieConnection
from tests.adapters.bookkeeper import strategies as bks
from tests.adapters.refbookie.harness import make_server


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def abort(self) -> None:
        self.aborted = True


@pytest.fixture(scope="module")
def bookie() -> Iterator[tuple[asyncio.AbstractEventLoop, BookieServer]]:
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        server = make_server(Path(tmp))
        loop.run_until_complete(server.start())
        try:
            yield loop, server
        finally:
            loop.run_until_complete(server.stop())
            loop.close()


def _feed(
    bookie: tuple[asyncio.AbstractEventLoop, BookieServer], data: bytes, responses: int = 0
) -> FakeTransport:
    """Feed ``data`` to a fresh connection; wait (bounded) for ``responses`` frames or a reset."""
    loop, server = bookie
    transport = FakeTransport()

    async def run() -> None:
        connection = _BookieConnection(server)
        connection.connection_made(transport)
        connection.data_received(data)
        async with asyncio.timeout(5):
            while not transport.aborted:
                if len(framing.FrameDecoder().feed(bytes(transport.written))) >= responses:
                    break
                await asyncio.sleep(0.001)  # journal-backed replies complete in the writer
        connection.connection_lost(None)

    loop.run_until_complete(run())
    return transport


def _assert_valid_responses(transport: FakeTransport) -> None:
    decoder = framing.FrameDecoder()
    for payload in decoder.feed(bytes(transport.written)):
        codec.decode_response(payload)  # raises MalformedFrame if we wrote garbage
    decoder.check_at_eof()


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes(
    bookie: tuple[asyncio.AbstractEventLoop, BookieServer], data: bytes
) -> None:
    _assert_valid_responses(_feed(bookie, data))


# deadline=None: examples wait for journal fsyncs, whose latency depends on the machine's load.
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(requests=st.lists(bks.v3_requests() | bks.v2_requests(), min_size=1, max_size=4))
def test_generated_requests_get_one_valid_response_each(
    bookie: tuple[asyncio.AbstractEventLoop, BookieServer],
    requests: list[v3.Request | v2.V2AddRequest | v2.V2ReadRequest],
) -> None:
    # One protocol per connection, as real clients do (the first v2 frame flips it for good).
    v3_requests = [r for r in requests if isinstance(r, v3.Request)]
    v2_requests = [r for r in requests if not isinstance(r, v3.Request)]
    for batch in (v3_requests, v2_requests):
        if not batch:
            continue
        stream = b"".join(framing.encode_frame(codec.encode_request(r)) for r in batch)
        transport = _feed(bookie, stream, responses=len(batch))
        payloads = framing.FrameDecoder().feed(bytes(transport.written))
        if not transport.aborted:
            assert len(payloads) == len(batch)
        for payload in payloads:
            codec.decode_response(payload)


def test_server_still_serves_after_garbage(
    bookie: tuple[asyncio.AbstractEventLoop, BookieServer],
) -> None:
    loop, server = bookie

    async def probe() -> StatusCode:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"\x00\x00\x00\x05garbage-and-more")
        await reader.read()  # the bookie resets this connection
        writer.close()
        async with await BookieClient.connect("127.0.0.1", server.port) as client:
            return (await client.read(123456, 0)).status

    assert loop.run_until_complete(asyncio.wait_for(probe(), 10)) is StatusCode.ENOLEDGER
