"""Fixtures: a reference bookie and a proxy group with one proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.netproxy import BookieProxy, ProxyGroup
from adapters.processes import processes_matching
from adapters.refbookie.server import BookieServer
from tests.adapters.netproxy.harness import background_bookie


@pytest.fixture
def work_dir(tmp_path: Path) -> Iterator[Path]:
    """A local cluster's work dir; the test fails if a process naming it outlives the test."""
    directory = tmp_path / "cluster"
    yield directory
    assert processes_matching(f"{directory}/") == [], "the cluster left processes behind"


@pytest.fixture
def bookie(tmp_path: Path) -> Iterator[BookieServer]:
    with background_bookie(tmp_path / "bookie") as server:
        yield server


@pytest.fixture
def group() -> Iterator[ProxyGroup]:
    with ProxyGroup(call_timeout=5.0) as proxies:
        yield proxies
    assert proxies.leftover_tasks == []


@pytest.fixture
def proxy(group: ProxyGroup, bookie: BookieServer) -> BookieProxy:
    return group.add("b1", "127.0.0.1", bookie.port)
