"""A reference bookie on its own event loop thread, for driving the proxy from sync tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from adapters.refbookie.server import BookieServer
from tests.adapters.refbookie.harness import make_server

START_TIMEOUT = 10.0


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
