"""``kill -9`` of ``bkconform run --target local`` midway: the run directory reads undecided
with every step judged up to the kill, and the next run stops the ZooKeeper and bookie JVMs the
dead run left behind (found by their process records, and by the run's temporary directory on
their command lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.rundir import DIED, RESULTS, read_history, read_results
from tests.conformance import killing

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

#: Lines of history to wait for before the kill: the cluster is up and examples are running.
LINES_BEFORE_THE_KILL = 5
START_TIMEOUT = 240.0


@pytest.mark.parametrize(
    ("options", "orphaned"),
    [
        # Bookies in the bookie host exit when their stdin (a pipe from the run) closes;
        # ZooKeeper lives on.
        ([], {"zk1"}),
        # Bookies as plain processes live on too.
        (["--process-restarts"], {"zk1", "bookie1", "bookie2"}),
    ],
    ids=["in-jvm-restarts", "process-restarts"],
)
def test_a_killed_local_run_reads_undecided_and_the_next_run_reaps_its_cluster(
    tmp_path: Path, options: list[str], orphaned: set[str]
) -> None:
    runs, temporary, log = tmp_path / "runs", tmp_path / "tmp", tmp_path / "run.log"
    temporary.mkdir()
    # The cluster's work dir is made here (BKCONFORM_SCRATCH: adapters/cluster/scratch.py, else
    # it may go to tmpfs): every JVM names it on its command line.
    env = {**os.environ, "TMPDIR": str(temporary), "BKCONFORM_SCRATCH": str(temporary)}
    argv = [sys.executable, "-m", "conformance", "run", "--target", "local", "--fresh"]
    argv += ["--bookies", "2", "--wq", "2", "--aq", "1", "--no-explore"]
    # The kill comes at 5 judged steps: the budget (120 s, 1000 examples, counted once the
    # cluster is up) is far beyond that, so the run is still going however slow the machine.
    argv += ["--seconds", "120", "--max-examples", "1000", "--runs-dir", str(runs), *options]
    marker = f"{temporary}{os.sep}"
    with killing.started_command(argv, log, env=env) as run:
        killed = killing.kill_when_ready(
            run,
            log=log,
            runs=runs,
            run_glob="*-local-run",
            ready=lambda history: killing.complete_lines(history) >= LINES_BEFORE_THE_KILL,
            marker=marker,
            start_timeout=START_TIMEOUT,
        )
    # Only the run's Python process was killed: its children are orphaned, no exit hook ran.
    records, run_dir = killed.records, killed.run_dir
    names = sorted(r.name for r in records)
    print(f"recorded by the run: {names}; processes naming {marker}: {sorted(killed.processes)}")
    assert names == ["bookie1", "bookie2", "zk1"]
    assert {r.child.pid for r in records} <= killed.processes
    # What dies of the parent's death (a bookie host, its stdin closed) may take a while: a
    # poll, ending as soon as only the expected orphans live; 20 s caps a JVM's exit.
    deadline = time.monotonic() + 20
    orphans = [r for r in records if r.child.alive()]
    while {r.name for r in orphans} != orphaned and time.monotonic() < deadline:
        time.sleep(0.2)
        orphans = [r for r in records if r.child.alive()]
    print(f"alive after the kill: {sorted(r.describe() for r in orphans)}")
    assert {r.name for r in orphans} == orphaned

    # The run directory: undecided, every judged step kept.
    assert json.loads((run_dir / RESULTS).read_text())["state"] == "running"  # as written
    results = read_results(run_dir)
    assert results["state"] == DIED and results["verdict"] == "undecided"
    assert results["exit_code"] == 2 and "died before it finished" in results["error"]
    # What it ran against, as written when it started (the bookies' settings among them).
    assert results["target"]["target"] == "local" and results["config"]["bookies"] == 2
    lines = read_history(run_dir)
    assert len(lines) == killing.complete_lines(killed.history) >= LINES_BEFORE_THE_KILL
    assert lines[0]["example"] == 1 and lines[0]["index"] == 1
    assert all(isinstance(line["example"], int) and line["action"] for line in lines)
    print(f"history: {len(lines)} complete lines, last {lines[-1]}")

    # The next run (any target) reaps what the dead one left.
    next_run = [sys.executable, "-m", "conformance", "run", "--max-examples", "1"]
    next_run += ["--seconds", "1", "--runs-dir", str(tmp_path / "next"), "--quiet", "--fresh"]
    after = subprocess.run(
        next_run,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert after.returncode == 0, after.stdout + after.stderr
    print(after.stderr.strip())
    assert "a run that died left" in after.stderr
    killing.assert_nothing_survives(killed)
