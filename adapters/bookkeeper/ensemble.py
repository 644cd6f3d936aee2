"""Convenience operations over several :class:`BookieClient` s (one per ensemble member).

Each function sends one request per bookie concurrently and returns every bookie's outcome in
ensemble order, either a typed result or the :class:`WireError` that stopped it. They make no
quorum decisions: deciding what the answers mean is the caller's (the model's) job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from adapters.bookkeeper.client import LAST_ADD_CONFIRMED, AddResult, BookieClient, ReadResult
from adapters.bookkeeper.errors import WireError
from adapters.bookkeeper.v3 import HIGH_PRIORITY

T = TypeVar("T")


async def _settle(call: Awaitable[T]) -> T | WireError:
    try:
        return await call
    except WireError as exc:
        return exc


async def fence_ledger(
    bookies: Sequence[BookieClient],
    ledger_id: int,
    master_key: bytes,
    *,
    timeout: float | None = None,
) -> list[ReadResult | WireError]:
    """The Java client's fence: READ_ENTRY(-1, FENCE_LEDGER, masterKey), priority 0, to all."""
    calls = [
        _settle(
            b.read(
                ledger_id, LAST_ADD_CONFIRMED, fence=True, master_key=master_key, timeout=timeout
            )
        )
        for b in bookies
    ]
    return list(await asyncio.gather(*calls))


async def recovery_read(
    bookies: Sequence[BookieClient],
    ledger_id: int,
    entry_id: int,
    master_key: bytes,
    *,
    fence: bool = True,
    timeout: float | None = None,
) -> list[ReadResult | WireError]:
    """A recovery read of ``entry_id`` to each of ``bookies`` (its write set), priority 100.

    ``fence=False`` reproduces pre-4.14 clients, whose recovery reads did not fence.
    """
    calls = [
        _settle(
            b.read(
                ledger_id,
                entry_id,
                fence=fence,
                master_key=master_key if fence else None,
                priority=HIGH_PRIORITY,
                timeout=timeout,
            )
        )
        for b in bookies
    ]
    return list(await asyncio.gather(*calls))


async def write_entry_to_ensemble(
    bookies: Sequence[BookieClient],
    ledger_id: int,
    entry_id: int,
    master_key: bytes,
    body: bytes,
    *,
    recovery: bool = False,
    timeout: float | None = None,
) -> list[AddResult | WireError]:
    """ADD_ENTRY of one body to each of ``bookies``; ``recovery`` adds use priority 100."""
    calls = [
        _settle(
            b.add(
                ledger_id,
                entry_id,
                master_key,
                body,
                recovery=recovery,
                priority=HIGH_PRIORITY if recovery else None,
                timeout=timeout,
            )
        )
        for b in bookies
    ]
    return list(await asyncio.gather(*calls))
