"""Connection faults at a proxy, against a reference bookie, with our v3 wire client: every
connection reset, new connections refused, and a stall (the proxy stops reading from clients,
whose send buffers then fill: backpressure)."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, package_entry
from adapters.bookkeeper.errors import CloseReason, ConnectionClosed
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    BookieProxy,
    FrameMatch,
    Hold,
    InvalidPolicy,
    Operation,
    ProxyGroup,
)
from adapters.refbookie.server import BookieServer
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.netproxy.harness import (
    KEY,
    LEDGER,
    PW,
    connect,
    entry,
    no_open_connections,
    socket_count,
)

ADD_REQUEST = FrameMatch.request(Operation.ADD_ENTRY)
ADD_RESPONSE = FrameMatch.response(Operation.ADD_ENTRY)
MIB = 1024 * 1024


def big_entry(entry_id: int) -> bytes:
    """A 1 MiB entry: a few of them fill the kernel's buffers between client and proxy."""
    return package_entry(
        DigestType.CRC32C, PW, LEDGER, entry_id, entry_id - 1, MIB * (entry_id + 1), b"b" * MIB
    )


async def wait_until_connectable(proxy: BookieProxy, deadline: float) -> BookieClient:
    while True:
        try:
            return await connect(proxy)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


# -- reset ------------------------------------------------------------------------------------


@async_test()
async def test_reset_fails_the_pending_requests_of_every_connection(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_RESPONSE, Hold())
    async with await connect(proxy) as first, await connect(proxy) as second:
        pending = [
            asyncio.ensure_future(first.add(LEDGER, 0, KEY, entry(0))),
            asyncio.ensure_future(second.add(LEDGER, 1, KEY, entry(1))),
        ]
        for entry_id in (0, 1):
            answer = FrameMatch.response(Operation.ADD_ENTRY, entry_id=entry_id)
            await asyncio.to_thread(proxy.wait_for_frame, answer, 5.0)
        assert await asyncio.to_thread(proxy.reset_connections) == 2
        for request in pending:
            with pytest.raises(ConnectionClosed) as closed:
                await request
            # An RST, not an orderly close: the client reads ECONNRESET.
            assert closed.value.reason is CloseReason.CONNECTION_BROKEN
    held = await asyncio.to_thread(proxy.held)
    assert [await asyncio.to_thread(proxy.release, f.frame_id) for f in held] == [False, False]
    records = await asyncio.to_thread(proxy.connections)
    assert [r.error for r in records] == ["reset by the harness (reset_connections)"] * 2
    assert all(r.closed_at is not None for r in records)
    assert await asyncio.to_thread(lambda: proxy.open_connections) == 0
    # The proxy serves new connections as before; the bookie stored both adds.
    await asyncio.to_thread(proxy.clear_rules)
    async with await connect(proxy) as client:
        for entry_id in (0, 1):
            assert (await client.read(LEDGER, entry_id)).status is StatusCode.EOK
    await no_open_connections(proxy)
    assert await asyncio.to_thread(proxy.reset_connections) == 0  # closed ones are not counted


# -- refuse -----------------------------------------------------------------------------------


@async_test()
async def test_refused_until_accepted_while_open_connections_go_on(proxy: BookieProxy) -> None:
    async with await connect(proxy) as before:
        assert (await before.add(LEDGER, 0, KEY, entry(0))).status is StatusCode.EOK
        await asyncio.to_thread(proxy.refuse_connections, None)
        assert await asyncio.to_thread(lambda: proxy.refusing)
        with pytest.raises(ConnectionRefusedError):
            await connect(proxy)
        # Nobody else can take the port meanwhile (a socket without SO_REUSEADDR).
        with socket.socket() as squatter, pytest.raises(OSError):
            squatter.bind((proxy.host, proxy.port))
        assert (await before.add(LEDGER, 1, KEY, entry(1))).status is StatusCode.EOK
        await asyncio.to_thread(proxy.refuse_connections, None)  # again: still refusing
        with pytest.raises(ConnectionRefusedError):
            await connect(proxy)
        await asyncio.to_thread(proxy.accept_connections)
        assert not await asyncio.to_thread(lambda: proxy.refusing)
        async with await connect(proxy) as after:  # on the same port
            assert (await after.read(LEDGER, 1)).status is StatusCode.EOK
        await asyncio.to_thread(proxy.accept_connections)  # idempotent
    # Refused connects never reached the proxy: only the two accepted ones are recorded.
    assert len(await asyncio.to_thread(proxy.connections)) == 2


@async_test()
async def test_a_timed_refusal_ends_by_itself(proxy: BookieProxy) -> None:
    started = time.monotonic()
    # Long enough that a loaded machine still tries to connect within the window.
    await asyncio.to_thread(proxy.refuse_connections, 1.0)
    with pytest.raises(ConnectionRefusedError):
        await connect(proxy)
    async with await wait_until_connectable(proxy, started + 10) as client:
        assert time.monotonic() - started >= 1.0
        assert (await client.add(LEDGER, 0, KEY, entry(0))).status is StatusCode.EOK
    assert not await asyncio.to_thread(lambda: proxy.refusing)


@async_test()
async def test_a_new_refusal_replaces_the_end_of_the_last(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.refuse_connections, 0.1)
    await asyncio.to_thread(proxy.refuse_connections, None)  # now until accepted
    await asyncio.sleep(0.3)
    with pytest.raises(ConnectionRefusedError):
        await connect(proxy)
    with pytest.raises(InvalidPolicy):
        await asyncio.to_thread(proxy.refuse_connections, -1)
    await asyncio.to_thread(proxy.accept_connections)
    async with await connect(proxy) as client:
        assert (await client.add(LEDGER, 0, KEY, entry(0))).status is StatusCode.EOK


# -- stall ------------------------------------------------------------------------------------


@async_test(timeout=60)
async def test_a_stall_fills_the_client_send_buffer_until_it_ends(proxy: BookieProxy) -> None:
    async with await connect(proxy, timeout=30) as client:
        assert (await client.add(LEDGER, 0, KEY, entry(0))).status is StatusCode.EOK
        # The client's asyncio transport is what netty's channel is to the Java client: its
        # buffer past the high-water mark is what "unwritable" means (docs/adapters/netproxy.md).
        transport = client._writer.transport
        _low, high = transport.get_write_buffer_limits()
        await asyncio.to_thread(proxy.stall, True)
        assert await asyncio.to_thread(lambda: proxy.stalled)
        mark = await asyncio.to_thread(proxy.group.mark)
        adds = []
        for entry_id in range(1, 41):  # 40 MiB at most; the kernel's buffers hold a few MiB
            adds.append(
                asyncio.ensure_future(client.add(LEDGER, entry_id, KEY, big_entry(entry_id)))
            )
            await asyncio.sleep(0.02)  # the client writes it; the kernel takes what it can
            if transport.get_write_buffer_size() > 2 * MIB:
                break
        assert transport.get_write_buffer_size() > max(high, 2 * MIB)
        await asyncio.sleep(0.3)
        assert not any(add.done() for add in adds)  # nothing got through
        assert await asyncio.to_thread(proxy.frames, ADD_REQUEST, since=mark) == []
        with pytest.raises(TimeoutError):  # a writer waiting for room waits
            async with asyncio.timeout(0.5):
                await client._writer.drain()

        # A connection opened during the stall is stalled too (even a small add waits).
        async with await connect(proxy) as late:
            small = asyncio.ensure_future(late.add(LEDGER + 1, 0, KEY, entry(0, LEDGER + 1)))
            await asyncio.sleep(0.3)
            assert not small.done()
            await asyncio.to_thread(proxy.stall, False)
            assert (await small).status is StatusCode.EOK

        results = await asyncio.gather(*adds)
        assert [r.status for r in results] == [StatusCode.EOK] * len(adds)
        async with asyncio.timeout(10):
            await client._writer.drain()
        assert transport.get_write_buffer_size() == 0
        last = await client.read(LEDGER, len(adds))
        assert (last.status, last.body) == (StatusCode.EOK, big_entry(len(adds)))


@async_test()
async def test_answers_still_reach_a_stalled_client(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_RESPONSE, Hold())
    async with await connect(proxy) as client:
        pending = asyncio.ensure_future(client.add(LEDGER, 0, KEY, entry(0)))
        held = await asyncio.to_thread(proxy.wait_for_frame, ADD_RESPONSE, 5.0)
        await asyncio.to_thread(proxy.stall, True)
        assert await asyncio.to_thread(proxy.release, held.frame_id) is True
        assert (await pending).status is StatusCode.EOK  # the bookie-to-client side flows
        await asyncio.to_thread(proxy.stall, False)


# -- teardown ---------------------------------------------------------------------------------


def test_closing_while_refusing_and_stalled_leaves_nothing(bookie: BookieServer) -> None:
    baseline = socket_count()
    group = ProxyGroup().start()
    proxy = group.add("b1", "127.0.0.1", bookie.port)

    async def use() -> None:
        client = await connect(proxy)
        assert (await client.add(LEDGER, 0, KEY, entry(0))).status is StatusCode.EOK
        await asyncio.to_thread(proxy.stall, True)
        pending = asyncio.ensure_future(client.add(LEDGER, 1, KEY, entry(1)))
        await asyncio.to_thread(proxy.refuse_connections, 30.0)  # its timer is pending
        await asyncio.to_thread(group.close)
        with pytest.raises(ConnectionClosed):
            await pending
        await client.close()

    asyncio.run(use())
    assert not group.running and group.leftover_tasks == []
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", proxy.port)):
        pass
    deadline = time.monotonic() + 5
    while socket_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert socket_count() == baseline  # the placeholder that kept the port is closed too


def test_a_timed_refusal_ending_during_close_leaves_no_task(bookie: BookieServer) -> None:
    with ProxyGroup() as group:
        proxy = group.add("b1", "127.0.0.1", bookie.port)
        proxy.refuse_connections(0.0)  # listening again is a task of the proxy's own
    assert group.leftover_tasks == []
