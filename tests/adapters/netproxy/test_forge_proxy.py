"""Forged answers through the proxy, against a reference bookie, with our v3 and v2 clients.

A forged response: the bookie did the work and the client is told otherwise. A forged request:
the bookie never sees it and the proxy answers. The log tells the real frame (undelivered,
``forged <STATUS>``) from the forgery the client got (decision ``forged``, delivered).
"""

from __future__ import annotations

import asyncio

import pytest

from adapters.bookkeeper.client import BookieClient, V2BookieClient
from adapters.bookkeeper.status import StatusCode
from adapters.netproxy import (
    BookieProxy,
    Direction,
    Drop,
    FrameFlag,
    FrameMatch,
    FrameRecord,
    Hold,
    InvalidPolicy,
    NotHeld,
    Operation,
    Protocol,
)
from adapters.netproxy.policy import Forge
from tests.adapters.bookkeeper.aio import async_test
from tests.adapters.netproxy.harness import KEY, LEDGER, connect, entry, no_open_connections

STATUSES = [
    StatusCode.EIO,
    StatusCode.ETOOMANYREQUESTS,
    StatusCode.EUA,
    StatusCode.EFENCED,
    StatusCode.ENOLEDGER,
]
ADD_REQUEST = FrameMatch.request(Operation.ADD_ENTRY)
ADD_RESPONSE = FrameMatch.response(Operation.ADD_ENTRY)


async def v2_connect(proxy: BookieProxy) -> V2BookieClient:
    return await V2BookieClient.connect(proxy.host, proxy.port, request_timeout=5)


async def add(client: BookieClient | V2BookieClient, entry_id: int) -> StatusCode:
    if isinstance(client, V2BookieClient):
        return (await client.add(KEY, entry(entry_id))).status
    return (await client.add(LEDGER, entry_id, KEY, entry(entry_id))).status


async def the_forgery(proxy: BookieProxy, status: StatusCode) -> tuple[FrameRecord, FrameRecord]:
    """``(the frame forged, the forged answer)``, after checking how the log tells them apart."""
    frames = await asyncio.to_thread(proxy.frames)
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    [forged] = [f for f in frames if f.decision == "forged"]
    [original] = [f for f in frames if f.frame_id == forged.forged_from]
    assert original.decision == f"forge {status.name}" and original.rule_id is not None
    assert deliveries[original.frame_id].delivered is False
    assert deliveries[original.frame_id].reason == f"forged {status.name}"
    assert forged.frame_id > original.frame_id and forged.rule_id == original.rule_id
    assert forged.info.direction is Direction.RESPONSE and forged.info.status is status
    assert deliveries[forged.frame_id].delivered is True
    return original, forged


@pytest.mark.parametrize("protocol", [Protocol.V3, Protocol.V2], ids=lambda p: p.value)
@pytest.mark.parametrize("status", STATUSES, ids=lambda s: s.name)
@async_test()
async def test_a_forged_add_answer_hides_an_entry_the_bookie_stored(
    proxy: BookieProxy, status: StatusCode, protocol: Protocol
) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_RESPONSE, Forge(status), times=1)
    v2 = protocol is Protocol.V2
    async with await (v2_connect(proxy) if v2 else connect(proxy)) as client:
        assert await add(client, 0) is status  # what the client is told
        # ... while the bookie stored it (apache/bookkeeper#3005): it serves the entry.
        read = await client.read(LEDGER, 0)
        assert (read.status, read.body) == (StatusCode.EOK, entry(0))
    original, forged = await the_forgery(proxy, status)
    assert original.info.direction is Direction.RESPONSE and original.info.status is StatusCode.EOK
    assert (forged.info.operation, forged.info.ledger_id, forged.info.entry_id) == (
        Operation.ADD_ENTRY,
        LEDGER,
        0,
    )
    assert forged.info.protocol is protocol and forged.info.txn_id == original.info.txn_id


@pytest.mark.parametrize("protocol", [Protocol.V3, Protocol.V2], ids=lambda p: p.value)
@pytest.mark.parametrize("status", STATUSES, ids=lambda s: s.name)
@async_test()
async def test_a_forged_answer_to_a_request_means_the_bookie_never_saw_it(
    proxy: BookieProxy, status: StatusCode, protocol: Protocol
) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_REQUEST, Forge(status), times=1)
    v2 = protocol is Protocol.V2
    async with await (v2_connect(proxy) if v2 else connect(proxy)) as client:
        assert await add(client, 0) is status
        assert await add(client, 1) is StatusCode.EOK  # the rule was for one frame
        missing = await client.read(LEDGER, 0)  # the bookie has entry 1 only
        assert missing.status is StatusCode.ENOENTRY
    original, forged = await the_forgery(proxy, status)
    assert original.info.direction is Direction.REQUEST
    assert (forged.info.operation, forged.info.protocol) == (Operation.ADD_ENTRY, protocol)
    assert (forged.info.ledger_id, forged.info.entry_id) == (LEDGER, 0)
    assert forged.info.txn_id == original.info.txn_id  # None on v2, matched by ids
    requests = await asyncio.to_thread(proxy.frames, ADD_REQUEST)
    responses = await asyncio.to_thread(proxy.frames, ADD_RESPONSE)
    # Two adds sent; the bookie answered the second only; the client heard two answers.
    assert len(requests) == 2 and [f.decision for f in responses] == ["forged", "forward"]


@async_test()
async def test_a_forged_fence_read_answer_is_logged_as_the_answer_to_the_fence(
    proxy: BookieProxy,
) -> None:
    fence = FrameMatch.request(Operation.READ_ENTRY, flags={FrameFlag.FENCE_LEDGER})
    await asyncio.to_thread(proxy.add_rule, fence, Forge(StatusCode.EIO))
    async with await connect(proxy) as client:
        await add(client, 0)
        read = await client.read(LEDGER, -1, fence=True, master_key=KEY)
        assert (read.status, read.entry_id, read.body) == (StatusCode.EIO, -1, None)
        # The bookie never fenced: a normal add still succeeds.
        assert await add(client, 1) is StatusCode.EOK
    fence_answer = FrameMatch.response(Operation.READ_ENTRY, flags={FrameFlag.FENCE_LEDGER})
    [answer] = await asyncio.to_thread(proxy.frames, fence_answer)
    assert answer.decision == "forged" and answer.info.status is StatusCode.EIO


@async_test()
async def test_a_held_request_is_forged_on_demand(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_REQUEST, Hold())
    async with await connect(proxy) as client:
        mark = await asyncio.to_thread(proxy.group.mark)
        pending = asyncio.ensure_future(add(client, 0))
        held = await asyncio.to_thread(proxy.wait_for_frame, ADD_REQUEST, 5.0, since=mark)
        with pytest.raises(InvalidPolicy, match="EOK is not one"):
            await asyncio.to_thread(proxy.forge, held.frame_id, StatusCode.EOK)
        assert [f.frame_id for f in await asyncio.to_thread(proxy.held)] == [held.frame_id]
        assert await asyncio.to_thread(proxy.forge, held.frame_id, StatusCode.EFENCED) is True
        assert await pending is StatusCode.EFENCED
        assert await asyncio.to_thread(proxy.held) == []
        with pytest.raises(NotHeld):
            await asyncio.to_thread(proxy.forge, held.frame_id, StatusCode.EIO)
        await asyncio.to_thread(proxy.clear_rules)
        assert (await client.read(LEDGER, 0)).status is StatusCode.ENOLEDGER  # never stored
    frames = await asyncio.to_thread(proxy.frames)
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    [forged] = [f for f in frames if f.decision == "forged"]
    assert forged.forged_from == held.frame_id and forged.rule_id is None  # a call, not a rule
    assert deliveries[held.frame_id].reason == "forged EFENCED"
    assert forged.info.txn_id == held.info.txn_id and forged.info.status is StatusCode.EFENCED


@async_test()
async def test_a_held_response_is_forged_on_demand(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_RESPONSE, Hold())
    async with await connect(proxy) as client:
        pending = asyncio.ensure_future(add(client, 0))
        held = await asyncio.to_thread(proxy.wait_for_frame, ADD_RESPONSE, 5.0)
        assert held.info.status is StatusCode.EOK
        assert await asyncio.to_thread(proxy.forge, held.frame_id, StatusCode.ETOOMANYREQUESTS)
        assert await pending is StatusCode.ETOOMANYREQUESTS
        assert (await client.read(LEDGER, 0)).status is StatusCode.EOK  # stored all the same


@async_test()
async def test_forging_a_frame_whose_connection_closed_sends_nothing(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, ADD_RESPONSE, Hold())
    async with await connect(proxy) as client:
        pending = asyncio.ensure_future(add(client, 0))
        held = await asyncio.to_thread(proxy.wait_for_frame, ADD_RESPONSE, 5.0)
    pending.cancel()
    await asyncio.gather(pending, return_exceptions=True)
    await no_open_connections(proxy)
    assert await asyncio.to_thread(proxy.forge, held.frame_id, StatusCode.EIO) is False
    deliveries = await asyncio.to_thread(proxy.group.deliveries)
    assert deliveries[held.frame_id].reason == "connection closed"
    assert [f.decision for f in await asyncio.to_thread(proxy.frames)].count("forged") == 0


@async_test()
async def test_a_forge_rule_leaves_undecodable_frames_to_the_next_rule(proxy: BookieProxy) -> None:
    await asyncio.to_thread(proxy.add_rule, FrameMatch.request(), Forge(StatusCode.EIO))
    await asyncio.to_thread(proxy.add_rule, FrameMatch(decoded=False), Drop())
    async with await connect(proxy) as client:
        client.write_raw(b"\x00\x00\x00\x04junk")
        assert await add(client, 0) is StatusCode.EIO  # same connection: the bookie saw nothing
    decisions = [f.decision for f in await asyncio.to_thread(proxy.frames)]
    assert decisions == ["drop", "forge EIO", "forged"]
