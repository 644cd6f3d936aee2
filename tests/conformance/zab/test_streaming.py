"""A Zab run directory is written as the run goes (no cluster): results.json reads running and
undecided from the start, each client invoke and completion, leader sample and fault event is
on disk as soon as it happens, and a run that dies before its final results reads undecided
to every reader (``conformance.rundir.read_results``, ``bkconform replay``)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import adapters.zookeeper.observe as observe
from conformance.cli import main
from conformance.live.faults import FaultEvent
from conformance.rundir import DIED, FINISHED, INTERRUPTED, RUNNING, read_history, read_results
from conformance.verdict import Verdict
from conformance.zab.clients import Recorder, run_client
from conformance.zab.faults import ScheduledFaults
from conformance.zab.program import FaultStep, PlannedOp
from conformance.zab.rundir import ZabRunWriter, write_run
from conformance.zab.runner import RunOutcome, StreamingSampler, run_verdict
from model.zab.checkers import check
from model.zab.history import (
    Change,
    ClientOp,
    History,
    LeaderSample,
    Outcome,
    ServerLog,
    Txn,
)

E1 = 1 << 32
CONFIG = {"seed": 7, "servers": 3, "ops": 2}


def op(index: int, outcome: Outcome = "ok", at: float = 1.0) -> ClientOp:
    """Client 0's create of ``/zab/k<index>`` (tag ``w<index>``), invoked ``at``."""
    tag = f"w{index}"
    return ClientOp(
        index=index,
        process=0,
        kind="create",
        path=f"/zab/k{index}",
        outcome=outcome,
        invoke_time=at,
        complete_time=at + 0.1,
        session=9,
        tag=tag,
        data=tag.encode(),
        zxid=E1 | (index + 1),
    )


def on_disk(run_dir: Path) -> list[dict[str, Any]]:
    return read_history(run_dir)


def test_results_read_running_and_undecided_from_the_start(tmp_path: Path) -> None:
    with ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        written = json.loads((tmp_path / "results.json").read_text())
        assert written["state"] == RUNNING
        assert written["verdict"] == Verdict.UNDECIDED and written["exit_code"] == 2
        assert written["valid"] == "unknown" and written["seed"] == 7
        assert written["config"] == CONFIG and written["started"]
        assert written["process"]["pid"] > 0
        results = read_results(tmp_path)  # this process still runs: still running
        assert results["state"] == RUNNING and results["verdict"] == Verdict.UNDECIDED
        assert on_disk(tmp_path) == []
        writer.fail("could not run the ensemble: no ZooKeeper")
    results = read_results(tmp_path)
    assert results["state"] == FINISHED and results["verdict"] == Verdict.UNDECIDED
    assert results["exit_code"] == 2 and "no ZooKeeper" in results["error"]


def test_each_part_of_the_history_is_on_disk_as_it_happens(tmp_path: Path) -> None:
    with ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        pending = op(0, "unknown")
        writer.invoked(pending)
        assert [line["type"] for line in on_disk(tmp_path)] == ["invoke"]
        assert on_disk(tmp_path)[0] == {
            "type": "invoke",
            "time": 1.0,
            "process": 0,
            "index": 0,
            "f": "create",
            "path": "/zab/k0",
            "value": "w0",
        }
        writer.leader(LeaderSample(1.05, "zk1", E1))
        writer.completed(op(0))
        writer.fault(FaultEvent(1.2, "kill follower", "kill", "zk2"))
        lines = on_disk(tmp_path)
        assert [line["type"] for line in lines] == ["invoke", "leader", "ok", "fault"]
        assert lines[2]["zxid"] == "0x100000001" and lines[3]["verb"] == "kill"
        assert read_results(tmp_path)["state"] == RUNNING  # nothing final yet
        txns = (Txn(E1 | 1, "d1", "create2", 9, (Change("create", "/zab/k0", b"w0", 0),)),)
        history = History(tuple(ServerLog(f"zk{i}", txns) for i in (1, 2, 3)), ops=(op(0),))
        report = check(history)
        writer.finish(RunOutcome(history, report, run_verdict(report, []), [], {}))
    lines = on_disk(tmp_path)
    assert [line["type"] for line in lines] == ["invoke", "leader", "ok", "fault", *["txn"] * 3]
    results = read_results(tmp_path)
    assert results["state"] == FINISHED and results["history"]["rows"] == 7
    assert results["verdict"] == Verdict.CLEAN and results["exit_code"] == 0
    with pytest.raises(RuntimeError, match="no lines after finish"):
        writer.completed(op(1))


def test_an_exception_leaves_the_run_interrupted_and_undecided(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        writer.invoked(op(0, "unknown"))
        raise KeyboardInterrupt
    results = read_results(tmp_path)
    assert results["state"] == INTERRUPTED and results["verdict"] == Verdict.UNDECIDED
    assert "KeyboardInterrupt" in results["error"]
    assert len(on_disk(tmp_path)) == 1


KILLED_MIDWAY = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from conformance.zab.rundir import ZabRunWriter
    from model.zab.history import LeaderSample
    writer = ZabRunWriter(Path(sys.argv[1]), {"seed": 1}).start()
    for i in range(3):
        writer.leader(LeaderSample(float(i), "zk1", 1 << 32))
    writer._history.write('{"type": "leader", "ti')  # a line cut by the kill
    writer._history.flush()
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_a_run_killed_before_its_final_results_reads_undecided(tmp_path: Path) -> None:
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MIDWAY, str(tmp_path)], timeout=60, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    assert json.loads((tmp_path / "results.json").read_text())["state"] == RUNNING  # as written
    results = read_results(tmp_path)
    assert results["state"] == DIED and results["verdict"] == Verdict.UNDECIDED
    assert results["exit_code"] == 2 and "died before it finished" in results["error"]
    assert [line["time"] for line in on_disk(tmp_path)] == [0.0, 1.0, 2.0]  # cut line skipped


def test_replay_reads_a_zab_run_directory_without_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    subprocess.run([sys.executable, "-c", KILLED_MIDWAY, str(tmp_path)], timeout=60, check=False)
    assert main(["replay", str(tmp_path), "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "died before it finished" in capsys.readouterr().err
    done = tmp_path / "done"
    done.mkdir()
    history = History((ServerLog("zk1", ()),))
    report = check(history)
    write_run(done, RunOutcome(history, report, run_verdict(report, []), [], {}), CONFIG)
    assert main(["replay", str(done), "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "holds no finding to replay (verdict undecided)" in capsys.readouterr().err


# The runner's parts hand their events on as they happen -------------------------------------


class StandInClient:
    """Runs each op at once, telling ``on_invoke`` first, as :class:`Client` does."""

    process = 0

    def __init__(self) -> None:
        self.release = threading.Event()

    def execute(self, planned: PlannedOp, on_invoke: Any = None) -> ClientOp:
        pending = op(planned.index, "unknown", at=time.monotonic())
        on_invoke(pending)
        self.release.wait(10)
        return op(planned.index, at=pending.invoke_time)


def test_client_invokes_and_completions_stream_before_the_workload_ends(tmp_path: Path) -> None:
    with ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        recorder = Recorder(on_invoke=writer.invoked, on_complete=writer.completed)
        client = StandInClient()
        ops = [PlannedOp(i, 0, "create", i) for i in range(2)]
        thread = threading.Thread(
            target=run_client, args=(client, ops, recorder, threading.Event(), print)
        )
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not on_disk(tmp_path):
                assert time.monotonic() < deadline, "the invocation never reached the disk"
                time.sleep(0.01)
            # The first op is in flight: its invocation is on disk, its completion is not.
            assert [line["type"] for line in on_disk(tmp_path)] == ["invoke"]
        finally:
            client.release.set()
            thread.join(10)
        assert not thread.is_alive()
        types = [line["type"] for line in on_disk(tmp_path)]
        assert types == ["invoke", "ok", "invoke", "ok"]
        assert recorder.completed == 2


class RecordingEnsemble:
    def __init__(self) -> None:
        self.servers = {"zk1": None, "zk2": None, "zk3": None}

    def leader(self) -> str:
        return "zk1"

    def crash(self, name: str) -> None:
        pass

    def restart(self, name: str, **_kw: object) -> None:
        pass


def test_fault_events_stream_as_they_are_recorded(tmp_path: Path) -> None:
    with ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        step = FaultStep(0, (("kill", "follower"), ("sleep", "0"), ("restart", "@0")), "k")
        injector = ScheduledFaults(
            RecordingEnsemble(),  # type: ignore[arg-type]
            (step,),
            lambda: 10**9,
            on_event=writer.fault,
        )
        injector.start()
        deadline = time.monotonic() + 10
        while len(on_disk(tmp_path)) < 2:
            assert time.monotonic() < deadline, injector.errors
            time.sleep(0.01)
        injector.finish()
        lines = on_disk(tmp_path)
        assert [(line["verb"], line["server"]) for line in lines] == [
            ("kill", "zk2"),
            ("restart", "zk2"),
        ]
        assert [e.to_json() for e in injector.events] == lines


def test_leader_samples_stream_as_they_are_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {"zk1": "leader", "zk2": "follower"}
    monkeypatch.setattr(
        observe,
        "server_status",
        lambda name, _host, _port, _timeout: observe.ServerStatus(1.5, name, answers[name], E1),
    )
    with ZabRunWriter(tmp_path, CONFIG) as writer:
        writer.start()
        sampler = StreamingSampler({"zk1": ("h", 1), "zk2": ("h", 2)}, writer.leader)
        sampler.sample_once()
        sampler.sample_once()
        assert (
            on_disk(tmp_path)
            == [{"type": "leader", "time": 1.5, "server": "zk1", "zxid": "0x100000000"}] * 2
        )
        assert len(sampler.leader_samples()) == 2
