"""A reference bookie on its own event loop thread, for driving the proxy from sync tests, and
what the proxy tests share: a ledger, its entries, a client connection through a proxy."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from adapters.bookkeeper.client import BookieClient
from adapters.bookkeeper.entry import DigestType, master_key, package_entry
from adapters.netproxy import BookieProxy
from adapters.refbookie.server import BookieServer
from tests.adapters.refbookie.harness import make_server

START_TIMEOUT = 10.0
PW = b"proxy"
KEY = master_key(PW)
LEDGER = 7


def entry(entry_id: int, ledger_id: int = LEDGER) -> bytes:
    return package_entry(
        DigestType.CRC32C, PW, ledger_id, entry_id, entry_id - 1, 5 * (entry_id + 1), b"x" * 5
    )


async def connect(proxy: BookieProxy, timeout: float = 5.0) -> BookieClient:
    return await BookieClient.connect(proxy.host, proxy.port, request_timeout=timeout)


async def no_open_connections(proxy: BookieProxy, timeout: float = 5.0) -> None:
    """Wait until the proxy has seen its clients close (it reads their EOF a turn or two after
    they close); fails after ``timeout`` seconds."""
    async with asyncio.timeout(timeout):
        while await asyncio.to_thread(lambda: proxy.open_connections):
            await asyncio.sleep(0.02)


def socket_count() -> int:
    """This process's open sockets (a teardown test compares it with its baseline)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
        except OSError:
            continue
    return count


@contextmanager
def background_bookie(data_dir: Path) -> Iterator[BookieServer]:
    """An in-process reference bookie (no ZooKeeper) served by a background loop thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-refbookie", daemon=True)
    thread.start()
    server = make_server(data_dir)
    try:
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(START_TIMEOUT)
        yield server
    finally:
        try:
            asyncio.run_coroutine_threadsafe(server.stop(), loop).result(START_TIMEOUT)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(START_TIMEOUT)
            loop.close()
