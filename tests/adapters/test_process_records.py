"""Process records: every started child is recorded until it is stopped or detached, and the
next run kills the groups whose owner died (a ``kill -9`` of the parent), never a process that
merely reuses a recorded pid, never the children of a live owner."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters import process_records
from adapters.process_records import (
    ChildRecord,
    ProcessIdentity,
    boot_id,
    decide,
    describe_self,
    group_members,
    liveness,
    pid_namespace,
    reap_orphans,
    records_dir,
    write_record,
)
from adapters.processes import ManagedProcess


def _wait_for(condition: object, timeout: float = 10.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


@pytest.fixture
def sleeper(work_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A live process of our own (its own session), the work dir on its command line."""
    work_dir.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(
        ["sh", "-c", "sleep 300", str(work_dir / "sleeper")], start_new_session=True
    )
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        _wait_for(lambda: not group_members(process.pid))  # sh's child, if it forked one


def _record(child: ProcessIdentity, owner: ProcessIdentity, **changes: object) -> ChildRecord:
    boot = boot_id()
    assert boot is not None
    record = ChildRecord("x", ("sleep",), child, owner, "host", boot, pid_namespace())
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


def _identity(pid: int) -> ProcessIdentity:
    found = ProcessIdentity.of(pid)
    assert found is not None
    return found


def test_a_process_is_itself_only_with_its_start_time(sleeper: subprocess.Popen[bytes]) -> None:
    me = _identity(os.getpid())
    assert me.alive() and ProcessIdentity.current() == me
    child = _identity(sleeper.pid)
    assert child.alive()
    assert not ProcessIdentity(sleeper.pid, child.start + 1).alive()  # a reused pid
    assert liveness(describe_self()) == "alive"
    assert liveness({**describe_self(), "host": "elsewhere"}) == "unknown"
    assert liveness({**describe_self(), "boot_id": "an-earlier-boot"}) == "dead"
    assert liveness({**describe_self(), "start": me.start + 1}) == "dead"


def test_what_the_reaper_decides(sleeper: subprocess.Popen[bytes]) -> None:
    boot, namespace = boot_id(), pid_namespace()
    me, child = _identity(os.getpid()), _identity(sleeper.pid)
    dead_owner = ProcessIdentity(os.getpid(), me.start + 1)
    gone_child = ProcessIdentity(sleeper.pid, child.start + 1)

    def judged(record: ChildRecord) -> str:
        return decide(record, boot=boot, namespace=namespace)

    assert judged(_record(child, me)) == "keep"  # its owner lives: its business
    assert judged(_record(child, dead_owner)) == "kill"
    assert judged(_record(gone_child, dead_owner)) == "forget"  # never a reused pid
    assert judged(_record(child, dead_owner, boot_id="an-earlier-boot")) == "forget"
    assert judged(_record(child, dead_owner, pid_namespace="pid:[1]")) == "keep"
    assert decide(_record(child, dead_owner), boot=None, namespace=namespace) == "keep"


def test_a_recorded_pid_reused_by_another_process_is_left_alone(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    home = tmp_path / "home"
    path = write_record("sleeper", sleeper.pid, ("sleep",), home=home)
    assert path is not None and path.parent == records_dir(home)
    data = json.loads(path.read_text())
    assert data["child"]["pid"] == sleeper.pid and data["owner"]["pid"] == os.getpid()
    # Pretend the owner died and the recorded child was another process with this pid.
    me = _identity(os.getpid())
    data["owner"]["start"] = me.start + 1
    data["child"]["start"] += 1
    path.write_text(json.dumps(data))
    assert reap_orphans(home=home) == []
    assert sleeper.poll() is None and not path.exists()


def test_a_live_owner_s_children_are_kept(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    home = tmp_path / "home"
    path = write_record("sleeper", sleeper.pid, ("sleep",), home=home)
    assert reap_orphans(home=home) == [] and path is not None and path.exists()
    assert sleeper.poll() is None


def test_an_unreadable_record_is_removed(tmp_path: Path) -> None:
    directory = records_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / "1-1.json").write_text("{not json")
    assert reap_orphans(home=tmp_path) == []
    assert list(directory.iterdir()) == []


def test_stop_and_detach_remove_the_record(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "home"))
    directory = records_dir()
    script = ["sh", "-c", "sleep 300", str(work_dir / "managed")]
    process = ManagedProcess("managed", script, log_path=work_dir / "managed.log")
    process.start()
    (path,) = directory.iterdir()
    record = ChildRecord.from_json(json.loads(path.read_text()))
    assert record.child.pid == process.pid and record.owner.pid == os.getpid()
    assert record.name == "managed" and record.argv == tuple(script)
    process.stop()
    assert list(directory.iterdir()) == []
    process.start()
    assert len(list(directory.iterdir())) == 1
    process.detach()  # it may outlive us now: the next run must not reap it
    assert list(directory.iterdir()) == []
    assert process.pid is not None
    os.killpg(process.pid, signal.SIGKILL)
    _wait_for(lambda: not group_members(process.pid or 0))


ORPHANING_PARENT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from adapters.processes import ManagedProcess

    work = Path(sys.argv[1])
    child = ManagedProcess("orphan", ["sh", "-c", "sleep 300 & sleep 300 & wait",
                                      str(work / "orphan")], log_path=work / "orphan.log")
    child.start()
    print(child.pid, flush=True)
    time.sleep(300)
    """
)


def test_the_children_of_a_killed_parent_are_reaped(
    work_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("BKCONFORM_HOME", str(home))
    work_dir.mkdir(parents=True)
    parent = subprocess.Popen(
        [sys.executable, "-c", ORPHANING_PARENT, str(work_dir)],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert parent.stdout is not None
    group = int(parent.stdout.readline())
    _wait_for(lambda: len(group_members(group)) == 3)  # sh and its two sleeps
    os.kill(parent.pid, signal.SIGKILL)  # the parent only: no exit hook runs
    parent.wait(timeout=10)
    time.sleep(0.2)
    assert len(group_members(group)) == 3  # orphaned, alive
    (reaped,) = reap_orphans(home=home)
    assert reaped.record.owner.pid == parent.pid and reaped.record.child.pid == group
    assert group in reaped.killed and len(reaped.killed) == 3
    assert reaped.survivors == [] and group_members(group) == []
    assert list(records_dir(home).iterdir()) == []
    assert reap_orphans(home=home) == []  # nothing left to do


def test_the_first_start_in_a_process_reaps_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def reap() -> list[process_records.Reaped]:
        calls.append(1)
        return []

    monkeypatch.setattr(process_records, "_reaped_once", False)
    monkeypatch.setattr(process_records, "reap_orphans", reap)
    assert process_records.reap_orphans_once() == []
    assert process_records.reap_orphans_once() == []
    assert calls == [1]
