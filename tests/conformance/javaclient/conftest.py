"""Three in-process reference bookies (test doubles, not BookKeeper) for the proxy tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.refbookie.server import BookieServer
from tests.adapters.netproxy.harness import background_bookie


@pytest.fixture
def bookies(tmp_path: Path) -> Iterator[list[BookieServer]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(background_bookie(tmp_path / f"b{i}")) for i in (1, 2, 3)]
