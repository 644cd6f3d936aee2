"""Killing a real ``bkconform`` command line midway (``kill -9``), for the tests of what a dead
run leaves behind: its run directory and the processes it started::

    with killing.started_command(argv, log) as run:
        killed = killing.kill_when_ready(run, log=log, runs=runs, run_glob="*-zab", ...)
    ...  (reap the run's children)
    killing.assert_nothing_survives(killed)

:func:`started_command` starts the command in its own session with its output in a log, and
never lets it outlive the ``with`` block; :func:`kill_when_ready` waits (bounded) until the
run's ``history.jsonl`` is far enough along, notes what the run started, and SIGKILLs the
run's Python process only, so that its children are orphaned and no exit hook runs;
:func:`assert_nothing_survives` checks, once they are reaped, that none of them lives on.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.process_records import ChildRecord, records_dir
from adapters.processes import processes_matching
from conformance.rundir import HISTORY

#: How long the killed process may take to be reaped.
REAP_TIMEOUT = 30.0


def records_of(owner: int) -> list[ChildRecord]:
    """This host's process records of the children that process ``owner`` started."""
    found = []
    for path in records_dir().glob("*.json"):
        try:
            record = ChildRecord.from_json(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
        if record.owner.pid == owner:
            found.append(record)
    return found


def complete_lines(history: Path) -> int:
    """How many whole lines (newline included) ``history`` holds; 0 before it exists."""
    return history.read_bytes().count(b"\n") if history.exists() else 0


def log_tail(log: Path) -> str:
    """The end of a command's output, for an assertion's message."""
    return log.read_text(errors="replace")[-3000:] if log.exists() else ""


def sigkill(run: subprocess.Popen[bytes]) -> None:
    """``kill -9`` the process and reap it."""
    os.kill(run.pid, signal.SIGKILL)
    run.wait(timeout=REAP_TIMEOUT)


def stop_if_running(run: subprocess.Popen[bytes]) -> None:
    """:func:`sigkill` the process unless it has already ended."""
    if run.poll() is None:
        sigkill(run)


@contextlib.contextmanager
def started_command(
    argv: list[str], log: Path, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` started in a session of its own, stdout and stderr to ``log``; SIGKILLed and
    reaped on leaving the ``with`` block if it still runs."""
    with log.open("wb") as out:
        run = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        yield run
    finally:
        stop_if_running(run)


@dataclass(frozen=True)
class KilledRun:
    """What :func:`kill_when_ready` saw just before the kill."""

    #: The killed run's pid (its children's records name it as their owner).
    pid: int
    #: What every process the run started names on its command line.
    marker: str
    #: The run's ``history.jsonl``.
    history: Path
    #: The process records of the children the run had started.
    records: list[ChildRecord]
    #: The live processes whose command line named the marker.
    processes: set[int]

    @property
    def run_dir(self) -> Path:
        return self.history.parent


def kill_when_ready(
    run: subprocess.Popen[bytes],
    *,
    log: Path,
    runs: Path,
    run_glob: str,
    ready: Callable[[Path], bool],
    marker: str,
    start_timeout: float,
) -> KilledRun:
    """Wait until the history of the first run directory under ``runs`` matching ``run_glob``
    is ``ready``, then note the run's process records and the processes naming ``marker`` and
    :func:`sigkill` the run. Fails (with the end of ``log``) if the run ends first or its
    history is not ready within ``start_timeout`` seconds."""
    deadline = time.monotonic() + start_timeout
    history = None
    while history is None or not ready(history):
        assert run.poll() is None, f"the run ended early:\n{log_tail(log)}"
        assert time.monotonic() < deadline, f"no history after {start_timeout}s:\n{log_tail(log)}"
        found = sorted(runs.glob(run_glob)) if runs.exists() else []
        history = found[0] / HISTORY if found else None
        time.sleep(0.2)
    records = records_of(run.pid)
    processes = set(processes_matching(marker))
    sigkill(run)
    return KilledRun(
        pid=run.pid, marker=marker, history=history, records=records, processes=processes
    )


def assert_nothing_survives(killed: KilledRun, *, timeout: float = 10.0) -> None:
    """Once the dead run's children have been reaped: none of its recorded children is alive,
    no record of them is left, and within ``timeout`` seconds no process names its marker."""
    assert not [r for r in killed.records if r.child.alive()]
    assert records_of(killed.pid) == []
    deadline = time.monotonic() + timeout
    while processes_matching(killed.marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_matching(killed.marker) == [], "a process of the killed run is still alive"
