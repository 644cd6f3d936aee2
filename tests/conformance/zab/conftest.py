"""Zab runs start real ensembles under ``tmp_path``; after each test no process naming that
directory may survive (the session-wide guard in ``tests/conftest.py`` backs this up)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.processes import processes_matching


@pytest.fixture
def runs_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "runs"
    yield directory
    marker = f"{directory}{os.sep}"
    leftovers = processes_matching(marker)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while processes_matching(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not leftovers, f"processes left behind by this test: {leftovers}"
