"""``kill -9`` of ``bkconform zab run`` midway, started with the real command line: its run
directory keeps the history streamed up to the kill and reads undecided, and the ZooKeeper
servers it left (found by their process records) are stopped, none surviving."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from adapters.process_records import reap_orphans
from conformance.rundir import DIED, RESULTS, RUNNING, read_history, read_results
from conformance.verdict import Verdict
from tests.conformance import killing

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

#: Lines of history to wait for before the kill (with a fault among them): the ensemble serves,
#: clients are running and the fault schedule has begun (a server may be down or frozen).
LINES_BEFORE_THE_KILL = 40
START_TIMEOUT = 180.0
#: What the run streams while it goes (``txn`` lines come only after the servers stop).
STREAMED = {"invoke", "ok", "fail", "unknown", "leader", "fault"}


def _ready_to_kill(history: Path) -> bool:
    if killing.complete_lines(history) < LINES_BEFORE_THE_KILL:
        return False
    return any(line["type"] == "fault" for line in read_history(history.parent))


def test_a_killed_zab_run_keeps_its_history_and_reads_undecided(
    runs_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "zab.log"
    # Long enough (2000 ops at 50 ops/s: 40 s) that the kill comes midway, faults included.
    # The kill waits for lines, not time: the rate caps the run's speed, and a slower machine
    # only makes it longer.
    argv = [sys.executable, "-m", "conformance", "zab", "run", "--servers", "3"]
    argv += ["--faults", "kill,pause", "--ops", "2000", "--rate", "50", "--seed", "4"]
    argv += ["--runs-dir", str(runs_dir)]
    began = time.monotonic()
    # Every server names the run directory on its command line.
    marker = f"{runs_dir}{os.sep}"
    with killing.started_command(argv, log) as run:
        try:
            killed = killing.kill_when_ready(
                run,
                log=log,
                runs=runs_dir,
                run_glob="*-zab",
                ready=_ready_to_kill,
                marker=marker,
                start_timeout=START_TIMEOUT,
            )
            killed_after = time.monotonic() - began
        finally:
            killing.stop_if_running(run)
            # Whatever happens above, nothing the run started survives the test.
            reaped = reap_orphans(owner=run.pid)
    records, run_dir = killed.records, killed.run_dir
    print(f"killed after {killed_after:.1f}s; recorded: {sorted(r.name for r in records)}")
    print(f"reaped: {[r.describe() for r in reaped]}")

    # The servers it started were recorded, and outlived it until reaped.
    assert {r.name for r in records} <= {"zk1", "zk2", "zk3"} and len(records) >= 2
    assert {r.child.pid for r in records} <= killed.processes
    assert reaped and all(r.killed and not r.survivors for r in reaped)
    killing.assert_nothing_survives(killed)

    # The run directory: undecided, with the history streamed up to the kill.
    written = json.loads((run_dir / RESULTS).read_text())
    assert written["state"] == RUNNING and written["verdict"] == Verdict.UNDECIDED
    results = read_results(run_dir)
    assert results["state"] == DIED and results["verdict"] == Verdict.UNDECIDED
    assert results["exit_code"] == 2 and "died before it finished" in results["error"]
    assert results["config"]["ops"] == 2000 and results["seed"] == 4
    lines = read_history(run_dir)
    assert len(lines) >= LINES_BEFORE_THE_KILL
    assert {line["type"] for line in lines} <= STREAMED
    assert {"invoke", "leader", "fault"} <= {line["type"] for line in lines}
    completed = [line for line in lines if line["type"] in ("ok", "fail", "unknown")]
    assert completed, "no client operation completed before the kill"
    # Each operation's invocation is written before its completion.
    invoked_at = {line["index"]: n for n, line in enumerate(lines) if line["type"] == "invoke"}
    for n, line in enumerate(lines):
        if line["type"] in ("ok", "fail", "unknown"):
            assert invoked_at.get(line["index"], n) < n, line
    print(f"history: {len(lines)} complete lines ({len(completed)} completions), last {lines[-1]}")
