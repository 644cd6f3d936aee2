"""Fixtures for the tests that start processes (the cluster providers, process supervision and
its records), and the check that no process outlives them.

Every process-starting test runs its cluster in a work dir under this session's base
temporary directory; every process the providers start names a file inside its work dir on
its command line. After each test ``/proc`` is scanned for live processes naming its
directory: any found are killed and the test errors, so a leak is reported where it happened
(``tests/conftest.py`` checks the whole session once more at its end).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.processes import processes_matching


def _reap_leftovers(directory: Path) -> list[str]:
    marker = f"{directory}{os.sep}"
    found = processes_matching(marker)
    described = []
    for pid in found:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            cmdline = "?"
        described.append(f"{pid}: {cmdline[:200]}")
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while processes_matching(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return described


@pytest.fixture
def work_dir(tmp_path: Path) -> Iterator[Path]:
    """A cluster work dir; the test errors if a process naming it survives the test."""
    directory = tmp_path / "cluster"
    yield directory
    leftovers = _reap_leftovers(directory)
    assert not leftovers, f"processes left behind by this test: {leftovers}"
