"""BookieClient / V2BookieClient against in-process fake bookies written per test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from adapters.bookkeeper import v2, v3
from adapters.bookkeeper.client import LAST_ADD_CONFIRMED, BookieClient, V2BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.bookkeeper.errors import (
    CloseReason,
    ConnectionClosed,
    ConnectTimeout,
    MalformedFrame,
    RequestTimeout,
)
from adapters.bookkeeper.framing import FrameDecoder, encode_frame
from adapters.bookkeeper.proto import BookkeeperProtocol_pb2 as pb
from adapters.bookkeeper.status import StatusCode
from tests.adapters.bookkeeper.aio import async_test

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
KEY = master_key(b"pw")


@contextlib.asynccontextmanager
async def fake_bookie(handler: Handler) -> AsyncIterator[int]:
    """Serve ``handler`` on 127.0.0.1 (an ephemeral port) for the duration of the block."""
    tasks: set[asyncio.Task[None]] = set()
    writers: list[asyncio.StreamWriter] = []

    async def tracked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        await handler(reader, writer)

    server = await asyncio.start_server(tracked, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield port
    finally:
        server.close()
        for writer in writers:
            writer.close()
        # Closing a handler's transport ends its pending reads; cancel only stragglers.
        _, stragglers = await asyncio.wait(tasks, timeout=2) if tasks else (set(), set())
        for task in stragglers:
            task.cancel()
        await server.wait_closed()


async def read_requests(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    decoder = FrameDecoder()
    payloads: list[bytes] = []
    while len(payloads) < count:
        data = await reader.read(65536)
        if not data:
            break
        payloads += decoder.feed(data)
    return payloads


def add_response(request: v3.Request, status: int = pb.EOK) -> bytes:
    response = pb.Response(header=v3.header(request.header.operation, request.header.txnId))
    response.status = status  # type: ignore[assignment]
    add = response.addResponse
    add.status = status  # type: ignore[assignment]
    add.ledgerId, add.entryId = request.addRequest.ledgerId, request.addRequest.entryId
    return encode_frame(v3.encode_message(response))


def body(entry_id: int) -> bytes:
    return package_entry(DigestType.CRC32, b"pw", 7, entry_id, entry_id - 1, entry_id + 1, b"x")


@async_test()
async def test_out_of_order_responses_match_by_txn_id() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests = [v3.decode_request(p) for p in await read_requests(reader, 3)]
        statuses = {0: pb.EOK, 1: pb.EFENCED, 2: pb.EUA}
        for request in reversed(requests):
            writer.write(add_response(request, statuses[request.addRequest.entryId]))
        await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port, await BookieClient.connect("127.0.0.1", port) as c:
        results = await asyncio.gather(*(c.add(7, e, KEY, body(e)) for e in range(3)))
        assert [r.status for r in results] == [StatusCode.EOK, StatusCode.EFENCED, StatusCode.EUA]
        assert [r.entry_id for r in results] == [0, 1, 2]
        assert c.pending_count == 0


@async_test()
async def test_client_sends_exactly_the_requested_frames() -> None:
    received: list[v3.Request] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(2):
            request = v3.decode_request((await read_requests(reader, 1))[0])
            received.append(request)
            response = pb.Response(header=v3.header(request.header.operation, request.header.txnId))
            response.status = pb.ENOENTRY
            read = response.readResponse
            read.status, read.ledgerId, read.entryId = pb.ENOENTRY, 7, -1
            writer.write(encode_frame(v3.encode_message(response)))
            await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port, await BookieClient.connect("127.0.0.1", port) as c:
        fenced = await c.read(7, LAST_ADD_CONFIRMED, fence=True, master_key=KEY)
        recovery = await c.read(7, 3, fence=True, master_key=KEY, priority=100)
    assert fenced.status is StatusCode.ENOENTRY
    assert recovery.status is StatusCode.ENOENTRY
    fence, recovery_read = received
    assert fence.readRequest.flag == pb.ReadRequest.FENCE_LEDGER
    assert fence.readRequest.entryId == -1 and fence.readRequest.masterKey == KEY
    assert not fence.header.HasField("priority")
    assert recovery_read.header.priority == 100
    assert recovery_read.header.txnId == fence.header.txnId + 1


@async_test()
async def test_timeout_is_typed_and_late_response_is_ignored() -> None:
    release = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests = [v3.decode_request(p) for p in await read_requests(reader, 1)]
        await release.wait()
        writer.write(add_response(requests[0]))
        second = [v3.decode_request(p) for p in await read_requests(reader, 1)]
        writer.write(add_response(second[0]))
        await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port, await BookieClient.connect("127.0.0.1", port) as c:
        with pytest.raises(RequestTimeout):
            await c.add(7, 0, KEY, body(0), timeout=0.05)
        assert c.pending_count == 0
        release.set()
        result = await c.add(7, 1, KEY, body(1), timeout=5)
        assert (result.status, result.entry_id) == (StatusCode.EOK, 1)


@async_test()
async def test_peer_close_fails_all_pending_with_connection_closed() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_requests(reader, 2)
        writer.close()

    async with fake_bookie(handler) as port, await BookieClient.connect("127.0.0.1", port) as c:
        outcomes = await asyncio.gather(
            c.add(7, 0, KEY, body(0)), c.read(7, 0), return_exceptions=True
        )
        assert all(isinstance(o, ConnectionClosed) for o in outcomes)
        assert all(o.reason is CloseReason.PEER_CLOSED for o in outcomes)  # type: ignore[union-attr]
        with pytest.raises(ConnectionClosed):
            await c.read(7, 0)


@async_test()
async def test_malformed_response_closes_the_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_requests(reader, 1)
        writer.write(encode_frame(b"\x02\x01garbage"))
        await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port, await BookieClient.connect("127.0.0.1", port) as c:
        with pytest.raises(ConnectionClosed) as info:
            await c.read(7, 0)
        assert info.value.reason is CloseReason.MALFORMED_FRAME
        assert isinstance(info.value.__cause__, MalformedFrame)


@async_test()
async def test_oversized_frame_closes_the_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_requests(reader, 1)
        writer.write(b"\x7f\xff\xff\xff")
        await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port:
        client = await BookieClient.connect("127.0.0.1", port, max_frame_size=1024)
        async with client:
            with pytest.raises(ConnectionClosed) as info:
                await client.read(7, 0)
            assert info.value.reason is CloseReason.MALFORMED_FRAME


@async_test()
async def test_user_close_fails_pending() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async with fake_bookie(handler) as port:
        client = await BookieClient.connect("127.0.0.1", port)
        pending = asyncio.ensure_future(client.read(7, 0))
        await asyncio.sleep(0.01)
        await client.close()
        with pytest.raises(ConnectionClosed) as info:
            await pending
        assert info.value.reason is CloseReason.USER
        assert client.closed is not None


@async_test()
async def test_connect_timeout_and_refused() -> None:
    # A non-routable address would leave loopback; an unbound loopback port refuses at once.
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async with fake_bookie(handler) as port:
        pass
    with pytest.raises(OSError):
        await BookieClient.connect("127.0.0.1", port, connect_timeout=1)
    with pytest.raises(ConnectTimeout):
        await BookieClient.connect("127.0.0.1", port, connect_timeout=0)


@async_test()
async def test_v2_client_matches_by_op_and_ids() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests = [v2.decode_request(p) for p in await read_requests(reader, 3)]
        for request in reversed(requests):
            assert isinstance(request, v2.V2AddRequest | v2.V2ReadRequest)
            status = StatusCode.EOK if isinstance(request, v2.V2AddRequest) else StatusCode.ENOENTRY
            writer.write(encode_frame(v2.encode_response(v2.v2_response_for(request, status))))
        await writer.drain()
        await reader.read()

    async with fake_bookie(handler) as port, await V2BookieClient.connect("127.0.0.1", port) as c:
        add0, add1, read = await asyncio.gather(
            c.add(KEY, body(0)), c.add(KEY, body(1), recovery=True, high_priority=True),
            c.read(7, 5, fence=True, master_key=KEY),
        )  # fmt: skip
    assert (add0.status, add0.entry_id, add1.entry_id) == (StatusCode.EOK, 0, 1)
    assert (read.status, read.entry_id, read.body) == (StatusCode.ENOENTRY, 5, None)
