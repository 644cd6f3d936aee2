"""Ending a search's forked workers (conformance/exploration/worker_processes.py)."""

from __future__ import annotations

import multiprocessing
import signal
import time

import pytest

from conformance.exploration import worker_processes
from conformance.exploration.worker_processes import end_worker


def _linger(seconds: float) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(seconds)


@pytest.mark.parametrize(("lingers", "killed"), [(0.0, False), (60.0, True)])
def test_a_worker_ends_or_is_killed(
    monkeypatch: pytest.MonkeyPatch, lingers: float, killed: bool
) -> None:
    monkeypatch.setattr(worker_processes, "STOP_TIMEOUT_S", 0.5)
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    process = context.Process(target=_linger, args=(lingers,), daemon=True)
    process.start()
    theirs.close()
    started = time.monotonic()
    end_worker(process, ours)
    assert not process.is_alive() and ours.closed
    assert (process.exitcode == -signal.SIGKILL) is killed
    assert time.monotonic() - started < 5.0
