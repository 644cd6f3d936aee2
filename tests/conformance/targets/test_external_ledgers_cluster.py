"""On a cluster from ``bkconform cluster up`` (real BookKeeper, the default version), BookKeeper's
own shell counts the same ledgers before and after ``bkconform run --target external``, after a
``kill -9`` of such a run followed by ``bkconform cluster clean``, and after a killed run
followed by another run; a ledger the suite did not create (BookKeeper's ``shell simpletest``
made it) is never touched; the shell reads the suite's mark on the ledgers it keeps."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.installations.bookkeeper import DEFAULT_VERSION, install
from adapters.installations.zookeeper import locate_zookeeper
from adapters.processes import processes_matching
from tests.conformance import killing

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

COMMAND = [sys.executable, "-m", "conformance"]
#: The examples a killed run has judged before the kill: it has created ledgers by then.
LINES_BEFORE_THE_KILL = 40
#: ``shell simpletest``'s options: every bookie, and entries enough to outlast the shell.
SIMPLETEST = ["-e", "3", "-w", "3", "-a", "2", "-n", "100000000"]


class Cluster:
    """A ``bkconform cluster up`` cluster and BookKeeper's own shell on it."""

    def __init__(self, work_dir: Path, env: dict[str, str], bookkeeper_home: Path) -> None:
        self.work_dir = work_dir
        self.env = env
        self.bookkeeper = bookkeeper_home / "bin" / "bookkeeper"
        state = json.loads((work_dir / "cluster.json").read_text())
        self.zk = state["endpoints"]["zookeeper_connect"]
        conf = work_dir / "bookies" / "bookie1" / "bk_server.conf"  # names the cluster's ZK
        self.shell_env = {
            **env,
            "BOOKIE_CONF": str(conf),
            "BOOKIE_MIN_HEAP_MEMORY": "64m",
            "BOOKIE_MAX_HEAP_MEMORY": "256m",
            "BOOKIE_MAX_DIRECT_MEMORY": "256m",
        }

    def shell(self, *args: str) -> str:
        done = subprocess.run(
            [str(self.bookkeeper), "shell", *args],
            env=self.shell_env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        return output

    def listledgers(self) -> list[int]:
        """``bookkeeper shell listledgers``: every ledger id BookKeeper lists."""
        # "ledgerID: 7" up to 4.17; from 4.18.0 an slog attribute of ListLedgersCommand's
        # "log entry" (release-4.18.0 printLedgerMetadata): "log entry {ledgerId=7}".
        listed = self.shell("listledgers")
        found = re.findall(r"(?:ledgerID: |log entry \{ledgerId=)(\d+)", listed)
        return sorted(int(i) for i in found)

    def simpletest_ledger(self, log: Path) -> int:
        """A ledger BookKeeper's own client creates, unmarked: ``shell simpletest`` creates a
        ledger (custom metadata ``Bookie=simpletest``) and writes it; 4.17 deletes it at the
        end, so the shell is killed once the ledger exists, and the ledger is left open."""
        with log.open("wb") as out:
            shell = subprocess.Popen(
                [str(self.bookkeeper), "shell", "simpletest", *SIMPLETEST],
                env=self.shell_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                # "Ledger ID: 7" up to 4.17; 4.18.0: "Ledger ID {ledgerId=7}" (an slog attribute).
                text = log.read_text(errors="replace")
                found = re.search(r"Ledger ID(?:: |\s+\{ledgerId=)(\d+)", text)
                if found:
                    # A few entries written; nothing below depends on them (only the ledger's
                    # existence is checked), so the fixed wait is no margin to hold.
                    time.sleep(1.0)
                    return int(found.group(1))
                assert shell.poll() is None, log.read_text(errors="replace")[-3000:]
                time.sleep(0.2)
            raise AssertionError(f"simpletest created no ledger: {log.read_text()[-3000:]}")
        finally:
            with_group_killed(shell)

    def bkconform(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*COMMAND, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )


def with_group_killed(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """``bkconform cluster up`` (real BookKeeper, the default version), down afterwards, on
    every path; in a private BKCONFORM_HOME (its pointer file is the test's)."""
    home = install(DEFAULT_VERSION).home
    zookeeper = locate_zookeeper(progress=True)
    assert zookeeper.home is not None
    # The installs of the user's home, run from the test's (`cluster up --zookeeper DIR` is
    # refused: its options are read as a model target's).
    env = {**os.environ, "BKCONFORM_HOME": str(tmp_path / "bkconform-home")}
    env["ZOOKEEPER_HOME"] = str(zookeeper.home)
    env.pop("BOOKKEEPER_HOME", None)
    work_dir = tmp_path / "cluster"
    options = ["--work-dir", str(work_dir), "--bookkeeper-home", str(home)]
    options += ["--start-timeout", "120"]
    up = subprocess.run(
        [*COMMAND, "cluster", "up", *options],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"BookKeeper {DEFAULT_VERSION}" in up.stdout
        yield Cluster(work_dir, env, home)
    finally:
        down = subprocess.run(
            [*COMMAND, "cluster", "down", "--work-dir", str(work_dir)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        leftovers = processes_matching(f"{work_dir}{os.sep}")
        for pid in leftovers:
            os.kill(pid, signal.SIGKILL)
        assert not leftovers, f"cluster down left {leftovers}: {down.stdout}{down.stderr}"


def test_runs_on_a_live_cluster_leave_bookkeepers_ledger_list_as_they_found_it(
    cluster: Cluster, tmp_path: Path
) -> None:
    foreign = cluster.simpletest_ledger(tmp_path / "simpletest.log")
    before = cluster.listledgers()
    assert foreign in before
    print(f"listledgers before: {len(before)} {before}")
    runs = tmp_path / "runs"
    common = ["--target", "external", "--zk", cluster.zk, "--quiet"]

    # A whole run: its ledgers deleted at the end, counted and recorded.
    # A count within a duration: more than 10 ledgers (one per example) must be made in 10 s,
    # however fast the machine runs examples.
    run = cluster.bkconform("run", *common, "--runs-dir", str(runs), "--seconds", "10")
    assert run.returncode == 0, run.stdout + run.stderr
    (run_dir,) = runs.glob("*-external-run")
    ledgers = json.loads((run_dir / "results.json").read_text())["ledgers"]
    assert ledgers["created"] > 10 and ledgers["deleted"] == ledgers["created"], ledgers
    assert f"created {ledgers['created']} on the cluster and deleted" in run.stdout
    after = cluster.listledgers()
    print(f"listledgers after a run of {ledgers['created']} ledgers: {len(after)}")
    assert after == before

    # Kept ones carry the mark BookKeeper's shell reads; cluster clean deletes them on demand.
    kept = cluster.bkconform(
        "run", *common, "--runs-dir", str(runs), "--keep-ledgers", "--max-examples", "2"
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr
    (kept_dir,) = sorted(set(runs.glob("*-external-run")) - {run_dir})
    record = json.loads((kept_dir / "results.json").read_text())["ledgers"]
    assert record["kept_because"] == "--keep-ledgers" and record["kept"]
    assert cluster.listledgers() == sorted([*before, *record["kept"]])
    shown = cluster.shell("ledgermetadata", "-ledgerid", str(record["kept"][0]))
    mark = base64.b64encode(record["run_id"].encode()).decode()
    assert f"bkconform-run=base64:{mark}" in shown, shown[-2000:]
    clean = cluster.bkconform("cluster", "clean", "--zk", cluster.zk)
    assert f"left {len(record['kept'])} ledger" in clean.stdout, clean.stdout
    assert "kept on purpose" in clean.stdout
    clean = cluster.bkconform("cluster", "clean", "--zk", cluster.zk, "--include-kept")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert cluster.listledgers() == before

    # kill -9 midway, then cluster clean: at once (the dead run's session still lives, but its
    # process, on this machine, says it is dead).
    leftover = kill_a_run_midway(cluster, common, tmp_path / "killed")
    print(f"listledgers after the kill: {len(leftover)}")
    assert len(leftover) > len(before)
    clean = cluster.bkconform("cluster", "clean", "--zk", cluster.zk)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    deleted = len(leftover) - len(before)
    assert f"deleted {deleted} ledger" in clean.stdout, clean.stdout
    after = cluster.listledgers()
    print(f"listledgers after cluster clean: {len(after)}")
    assert after == before

    # kill -9 midway, then the next run deletes what the dead one left.
    leftover = kill_a_run_midway(cluster, common, tmp_path / "killed-again")
    assert len(leftover) > len(before)
    again = cluster.bkconform(
        "run", *common, "--runs-dir", str(runs), "--max-examples", "2", "--no-explore"
    )
    assert again.returncode == 0, again.stdout + again.stderr
    deleted = len(leftover) - len(before)
    assert f"Ledgers of earlier runs: deleted {deleted} ledger" in again.stdout, again.stdout
    assert cluster.listledgers() == before
    assert foreign in before


def kill_a_run_midway(cluster: Cluster, common: list[str], runs: Path) -> list[int]:
    """``bkconform run`` killed (SIGKILL) once it has judged some steps; what
    ``listledgers`` says then."""
    # The kill waits for LINES_BEFORE_THE_KILL judged steps; they must come within the run's
    # 60 s budget (counted once it reaches the cluster), or the run ends first.
    argv = [*COMMAND, "run", *common, "--seconds", "60", "--runs-dir", str(runs)]
    log = runs.with_suffix(".log")
    with killing.started_command(argv, log, env=cluster.env) as run:
        killing.kill_when_ready(
            run,
            log=log,
            runs=runs,
            run_glob="*-external-run",
            ready=lambda h: killing.complete_lines(h) >= LINES_BEFORE_THE_KILL,
            marker="no process of its own",
            start_timeout=120,
        )
    assert "Ledgers: this run" not in log.read_text(), "the kill came after the run's end"
    return cluster.listledgers()
