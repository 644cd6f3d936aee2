"""The proxy in front of a reference bookie, driven by our Python wire client.

Each test runs the client on its own event loop (``async_test``) while the proxy and the bookie
run on background loops; blocking proxy calls go through ``asyncio.to_thread``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time

import pytest

from adapters.bookkeeper.client import BookieClient, V2BookieClient
from adapters.bookkeeper.errors import ConnectionClosed, RequestTimeout
from adapters.bookkeeper.framing import encode_frame
from adapters.bookkeeper.status import StatusCode
from adapters.bookkeeper.v3 import decode_request, decode_response
from adapters.netproxy import (
    BookieProxy,
    Delay,
    Direction,
    Disconnect,
    Drop,
    FrameFlag,
    FrameMatch,
    Hold,
    NotHeld,
    Operation,
    ProxyClosed,
    ProxyGroup,
    ProxyTimeout,
    Reorder,
)
from adapters.refbookie.server import BookieServer
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.netproxy.harness import KEY, LEDGER, connect, entry, socket_count

READ_RESPONSE = FrameMatch.response(Operation.READ_ENTRY)


async def write_entries(client: BookieClient, count: int) -> None:
    for e in range(count):
        assert (await client.add(LEDGER, e, KEY, entry(e))).status is StatusCode.EOK


@async_test()
async def test_forwards_and_logs_both_directions(proxy: BookieProxy) -> None:
    async with await connect(proxy) as client:
        await write_entries(client, 1)
        fenced = await client.read(LEDGER, -1, fence=True, master_key=KEY)
        assert (fenced.status, fenced.body) == (StatusCode.EOK, entry(0))
    frames = await asyncio.to_thread(proxy.frames)
    described = [(f.info.direction, f.info.operation, f.info.entry_id) for f in frames]
    assert described == [
        (Direction.REQUEST, Operation.ADD_ENTRY, 0),
        (Direction.RESPONSE, Operation.ADD_ENTRY, 0),
        (Direction.REQUEST, Operation.READ_ENTRY, -1),
        (Direction.RESPONSE, Operation.READ_ENTRY, -1),
    ]
    assert all(f.decision == "forward" and f.proxy == "b1" for f in frames)
    assert len({f.connection_id for f in frames}) == 1
    assert [f.info.txn_id for f in frames] == [1, 1, 2, 2]
    assert frames[1].info.status is StatusCode.EOK and frames[0].info.status is None
    assert frames[2].info.flags == {FrameFlag.FENCE_LEDGER} == frames[3].info.flags
    assert [f.frame_id for f in frames] == sorted(f.frame_id for f in frames)
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    assert all(deliveries[f.frame_id].delivered for f in frames)


@async_test()
async def test_kept_payloads_are_the_frames_bytes(proxy: BookieProxy) -> None:
    """Off by default; once on, every frame's payload is kept, byte for byte as it crossed."""
    group = proxy.group
    async with await connect(proxy) as client:
        await write_entries(client, 1)
        await asyncio.to_thread(group.keep_payloads)
        await client.read(LEDGER, 0)
    frames = await asyncio.to_thread(proxy.frames)
    kept = await asyncio.to_thread(group.payloads)
    assert sorted(kept) == [f.frame_id for f in frames[2:]]  # the add's were not kept
    request, response = (kept[f.frame_id] for f in frames[2:])
    assert decode_request(request).readRequest.entryId == 0
    assert decode_response(response).readResponse.body == entry(0)
    assert [len(kept[f.frame_id]) for f in frames[2:]] == [f.size for f in frames[2:]]
    only = await asyncio.to_thread(group.payloads, [frames[3].frame_id])
    assert list(only) == [frames[3].frame_id]


@async_test()
async def test_v2_client_through_the_proxy(proxy: BookieProxy) -> None:
    async with await V2BookieClient.connect(proxy.host, proxy.port, request_timeout=5) as client:
        assert (await client.add(KEY, entry(0))).status is StatusCode.EOK
        read = await client.read(LEDGER, 0, fence=True, master_key=KEY)
        assert read.status is StatusCode.EOK
    frames = await asyncio.to_thread(proxy.frames)
    assert [f.info.protocol.value if f.info.protocol else None for f in frames] == ["v2"] * 4
    assert frames[3].info.flags == {FrameFlag.FENCE_LEDGER}
    assert frames[3].info.status is StatusCode.EOK


@async_test()
async def test_drop_loses_the_frame_and_the_client_times_out(proxy: BookieProxy) -> None:
    fence_read = FrameMatch.request(Operation.READ_ENTRY, flags={FrameFlag.FENCE_LEDGER})
    await asyncio.to_thread(proxy.add_rule, fence_read, Drop(), times=1)
    async with await connect(proxy) as client:
        await write_entries(client, 1)
        # The frame is gone: only the client's own timeout ends the read.
        with pytest.raises(RequestTimeout):
            await client.read(LEDGER, -1, fence=True, master_key=KEY, timeout=0.5)
        # The rule was for one frame: the next fence read goes through; the ledger was never
        # fenced, so a normal add still succeeds before it.
        assert (await client.add(LEDGER, 1, KEY, entry(1))).status is StatusCode.EOK
        again = await client.read(LEDGER, -1, fence=True, master_key=KEY)
        assert again.status is StatusCode.EOK
    dropped = await asyncio.to_thread(proxy.frames, fence_read)
    assert [f.decision for f in dropped] == ["drop", "forward"]
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    assert deliveries[dropped[0].frame_id].delivered is False
    assert await asyncio.to_thread(proxy.rules) == []


@async_test()
async def test_delay_is_measurable_and_later_frames_overtake(proxy: BookieProxy) -> None:
    delayed = FrameMatch.response(Operation.READ_ENTRY, entry_id=0)
    await asyncio.to_thread(proxy.add_rule, delayed, Delay(0.4))
    async with await connect(proxy) as client:
        await write_entries(client, 2)
        done: list[int] = []

        async def read(entry_id: int) -> float:
            started = time.monotonic()
            result = await client.read(LEDGER, entry_id)
            assert result.status is StatusCode.EOK
            done.append(entry_id)
            return time.monotonic() - started

        slow, _fast = await asyncio.gather(read(0), read(1))
    assert slow >= 0.4  # a lower bound: the delay was applied
    assert done == [1, 0]  # the later frame overtook the delayed one
    frames = await asyncio.to_thread(proxy.frames, delayed)
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    assert frames[0].decision == "delay 0.4s"
    assert deliveries[frames[0].frame_id].at - frames[0].at >= 0.4


@async_test()
async def test_hold_until_released(proxy: BookieProxy) -> None:
    add_answer = FrameMatch.response(Operation.ADD_ENTRY, entry_id=0)
    await asyncio.to_thread(proxy.add_rule, add_answer, Hold())
    async with await connect(proxy) as client:
        mark = await asyncio.to_thread(proxy.group.mark)
        pending = asyncio.ensure_future(client.add(LEDGER, 0, KEY, entry(0)))
        held = await asyncio.to_thread(proxy.wait_for_frame, add_answer, 5.0, since=mark)
        assert held.decision == "hold" and held.info.status is StatusCode.EOK
        assert [f.frame_id for f in await asyncio.to_thread(proxy.held)] == [held.frame_id]
        await asyncio.sleep(0.2)
        assert not pending.done()  # the bookie answered; the client has not heard
        assert await asyncio.to_thread(proxy.release, held.frame_id) is True
        assert (await pending).status is StatusCode.EOK
        assert await asyncio.to_thread(proxy.held) == []
        with pytest.raises(NotHeld):
            await asyncio.to_thread(proxy.release, held.frame_id)


@async_test()
async def test_release_by_match_discard_and_release_after(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, FrameMatch.response(entry_id=0), Hold(), times=1)
    await asyncio.to_thread(proxy.add_rule, FrameMatch.response(entry_id=1), Hold(), times=1)
    await asyncio.to_thread(
        proxy.add_rule, FrameMatch.response(entry_id=2), Hold(release_after=0.3), times=1
    )
    async with await connect(proxy, timeout=3) as client:
        adds = [asyncio.ensure_future(client.add(LEDGER, e, KEY, entry(e))) for e in range(3)]
        for e in range(3):
            await asyncio.to_thread(proxy.wait_for_frame, FrameMatch.response(entry_id=e), 5.0)
        # Released by its own timeout, while nobody released the other two.
        assert (await asyncio.wait_for(adds[2], 30)).status is StatusCode.EOK
        assert not adds[0].done() and not adds[1].done()
        released = await asyncio.to_thread(proxy.release_matching, FrameMatch(entry_id=1))
        assert len(released) == 1 and (await adds[1]).status is StatusCode.EOK
        [zero] = await asyncio.to_thread(proxy.held)
        await asyncio.to_thread(proxy.discard, zero.frame_id)
        with pytest.raises(RequestTimeout):
            await adds[0]


@async_test()
async def test_reorder_sends_held_frames_in_the_given_order(proxy: BookieProxy) -> None:
    async with await connect(proxy) as client:
        await write_entries(client, 3)
        await asyncio.to_thread(proxy.add_rule, READ_RESPONSE, Reorder(3, [2, 0, 1]))
        done: list[int] = []

        async def read(entry_id: int) -> None:
            assert (await client.read(LEDGER, entry_id)).status is StatusCode.EOK
            done.append(entry_id)

        # Send one at a time so that the bookie's answers reach the proxy in order 0, 1, 2.
        tasks = []
        for e in range(3):
            tasks.append(asyncio.ensure_future(read(e)))
            await asyncio.to_thread(proxy.wait_for_frame, FrameMatch.response(entry_id=e), 5.0)
        await asyncio.gather(*tasks)
        assert done == [2, 0, 1]
        # The rule is spent: the next read is forwarded.
        assert (await client.read(LEDGER, 0)).status is StatusCode.EOK
    decisions = [f.decision for f in await asyncio.to_thread(proxy.frames, READ_RESPONSE)]
    assert decisions == ["reorder"] * 3 + ["forward"]


@async_test()
async def test_undecodable_frames_are_forwarded_and_logged_unless_refused(
    proxy: BookieProxy,
) -> None:
    garbage = encode_frame(b"\xff\xfenot a bookie request")
    async with await connect(proxy) as client:
        client.write_raw(garbage)
        record = await asyncio.to_thread(proxy.wait_for_frame, FrameMatch(decoded=False), 5.0)
        assert record.info.operation is Operation.UNDECODABLE and record.decision == "forward"
        assert record.size == len(garbage) - 4
        # The bookie got the bytes and refused them by closing the connection.
        with pytest.raises(ConnectionClosed):
            await client.add(LEDGER, 0, KEY, entry(0), timeout=3)
    await asyncio.to_thread(proxy.add_rule, FrameMatch(decoded=False), Drop())
    async with await connect(proxy) as client:
        client.write_raw(garbage)
        await write_entries(client, 1)  # the bookie never saw the garbage


@async_test()
async def test_malformed_length_closes_only_that_connection(proxy: BookieProxy) -> None:
    async with await connect(proxy) as client:
        client.write_raw(struct.pack(">i", -5) + b"junk")
        with pytest.raises(ConnectionClosed):
            await client.add(LEDGER, 0, KEY, entry(0), timeout=3)
    [closed] = await asyncio.to_thread(proxy.connections)
    assert closed.error is not None and "malformed frame length" in closed.error
    assert closed.closed_at is not None
    async with await connect(proxy) as client:
        await write_entries(client, 1)


@async_test()
async def test_disconnect_rule_closes_the_connection(proxy: BookieProxy) -> None:
    await asyncio.to_thread(
        proxy.add_rule, FrameMatch.request(Operation.ADD_ENTRY), Disconnect(), times=1
    )
    async with await connect(proxy) as client:
        with pytest.raises(ConnectionClosed):
            await client.add(LEDGER, 0, KEY, entry(0))
    async with await connect(proxy) as client:
        await write_entries(client, 1)


@async_test()
async def test_unreachable_bookie_closes_the_client_connection(group: ProxyGroup) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    proxy = await asyncio.to_thread(group.add, "nowhere", "127.0.0.1", free_port)
    async with await connect(proxy) as client:
        with pytest.raises(ConnectionClosed):
            await client.read(LEDGER, 0, timeout=3)
    [record] = await asyncio.to_thread(proxy.connections)
    assert record.error is not None and "cannot reach bookie" in record.error


def test_wait_for_frame_is_bounded(proxy: BookieProxy) -> None:
    with pytest.raises(ProxyTimeout, match=r"no frame matching .* within 0\.3"):
        proxy.wait_for_frame(FrameMatch.request(Operation.WRITE_LAC), timeout=0.3)


def test_teardown_closes_every_socket_task_and_the_thread(bookie: BookieServer) -> None:
    baseline = socket_count()
    group = ProxyGroup().start()
    proxy = group.add("b1", "127.0.0.1", bookie.port)
    proxy.add_rule(FrameMatch.response(), Hold())

    async def use() -> None:
        client = await connect(proxy)
        pending = asyncio.ensure_future(client.add(LEDGER, 0, KEY, entry(0)))
        await asyncio.to_thread(proxy.wait_for_frame, FrameMatch.response(), 5.0)
        await asyncio.to_thread(group.close)  # with a connection open and a frame held
        with pytest.raises(ConnectionClosed):
            await pending
        await client.close()

    asyncio.run(use())
    assert not group.running and group.leftover_tasks == []
    with pytest.raises(ProxyClosed):
        proxy.held()
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", proxy.port)):
        pass
    deadline = time.monotonic() + 5
    while socket_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    assert socket_count() == baseline
    group.close()  # idempotent


def test_group_is_usable_only_while_running() -> None:
    group = ProxyGroup()
    with pytest.raises(ProxyClosed):
        group.add("b1", "127.0.0.1", 1)
    with group:
        assert group.running
    with pytest.raises(ProxyClosed):
        group.frames()


@async_test()
async def test_short_reorder_batch_goes_out_in_arrival_order_after_its_timeout(
    proxy: BookieProxy,
) -> None:
    async with await connect(proxy) as client:
        await write_entries(client, 2)
        rule = Reorder(3, [2, 1, 0], release_after=0.3)
        await asyncio.to_thread(proxy.add_rule, READ_RESPONSE, rule)
        done: list[int] = []

        async def read(entry_id: int) -> None:
            assert (await client.read(LEDGER, entry_id)).status is StatusCode.EOK
            done.append(entry_id)

        tasks = []
        for e in range(2):
            tasks.append(asyncio.ensure_future(read(e)))
            await asyncio.to_thread(proxy.wait_for_frame, FrameMatch.response(entry_id=e), 5.0)
        # The batch never fills (two of three): only its timeout lets it out, in arrival order.
        await asyncio.wait_for(asyncio.gather(*tasks), 30)
        assert done == [0, 1]
        assert await asyncio.to_thread(proxy.rules) == []


def test_rules_can_be_listed_and_removed(proxy: BookieProxy) -> None:
    first = proxy.add_rule(FrameMatch.request(Operation.ADD_ENTRY), Drop(), times=2)
    second = proxy.add_rule(FrameMatch.response(), Delay(0.1))
    assert [(rule_id, remaining) for rule_id, _rule, remaining in proxy.rules()] == [
        (first, 2),
        (second, None),
    ]
    assert proxy.remove_rule(first) is True
    assert proxy.remove_rule(first) is False
    proxy.clear_rules()
    assert proxy.rules() == []
