"""A stand-in for the recovering client's frames, sent by our Python wire client.

Not the Java client and not BookKeeper: it sends the frames issue 8 measured a Java recovery
sending (fence reads to all three bookies, then sequential recovery reads of e0 with a
speculative read to b3 after 300 ms), so that proxy schedules and their judgement can be
tested on real frames against reference bookies without a BookKeeper distribution.
"""

from __future__ import annotations

import asyncio

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.errors import RequestTimeout
from adapters.bookkeeper.status import StatusCode
from conformance.targets.cluster_target import KEY

LEDGER = 11


async def recover_like_java(addresses: list[tuple[str, int]], fence_reads: bool) -> None:
    """A recovery's frames, as the Java client sends them: fence reads to all three, then
    sequential recovery reads of e0 with a speculative read to b3 after 300 ms."""
    # Longer than the recipe's hold of b2's answer (speculative timeout + HOLD_MARGIN_S).
    clients = [await BookieClient.connect(h, p, request_timeout=1.5) for h, p in addresses]
    try:
        fences = await asyncio.gather(
            *(c.read(LEDGER, -1, fence=True, master_key=KEY) for c in clients),
            return_exceptions=True,
        )
        assert isinstance(fences[2], RequestTimeout)  # the dropped fence read
        key = KEY if fence_reads else None
        first = await clients[0].read(LEDGER, 0, fence=fence_reads, master_key=key)
        assert first.status is StatusCode.ENOENTRY
        held = asyncio.ensure_future(clients[1].read(LEDGER, 0, fence=fence_reads, master_key=key))
        # The hold's clock starts when b2's answer reaches its proxy, after this read was sent,
        # so the 0.3 s sleep ends 0.5 s (HOLD_MARGIN_S) before the release on any machine.
        await asyncio.sleep(0.3)
        assert not held.done()  # b2's read (or its answer) is held past the speculative timeout
        speculative = await clients[2].read(LEDGER, 0, fence=fence_reads, master_key=key)
        assert speculative.status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER)
        assert (await held).status is StatusCode.EOK
    finally:
        for client in clients:
            await client.close()
