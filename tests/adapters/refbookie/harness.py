"""In-process reference bookies for tests (no ZooKeeper, port chosen by the OS)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from adapters.refbookie.config import config_from_properties
from adapters.refbookie.integrity import MetadataSource
from adapters.refbookie.server import BookieServer


def conf_properties(data_dir: Path, **overrides: str) -> dict[str, str]:
    """Properties of a loopback bookie with its data under ``data_dir``."""
    properties = {
        "bookiePort": "0",
        "advertisedAddress": "127.0.0.1",
        "journalDirectories": str(data_dir / "journal"),
        "ledgerDirectories": str(data_dir / "ledgers"),
        # Tests flush explicitly (clean stop); a long interval keeps journal-off loss visible.
        "flushInterval": "3600000",
    }
    properties.update(overrides)
    return properties


def make_server(
    data_dir: Path, *, metadata: MetadataSource | None = None, **overrides: str
) -> BookieServer:
    return BookieServer(
        config_from_properties(conf_properties(data_dir, **overrides)), metadata=metadata
    )


@contextlib.asynccontextmanager
async def running_bookie(
    data_dir: Path, *, metadata: MetadataSource | None = None, **overrides: str
) -> AsyncIterator[BookieServer]:
    """A started in-process bookie; stopped cleanly on exit unless the test stopped it."""
    server = make_server(data_dir, metadata=metadata, **overrides)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()
