"""The agent as a real gRPC server in a subprocess, controlling a real process."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import grpc
import pytest

from adapters.agent.client import ProcessState
from adapters.agent.errors import (
    AgentPreconditionFailed,
    AgentRefused,
    AgentUnauthenticated,
)
from adapters.agent.proto import agent_pb2 as pb
from adapters.agent.proto import agent_pb2_grpc as pb_grpc
from tests.adapters.agent.conftest import (
    INSTANCE_ID,
    REPO_ROOT,
    AgentUnderTest,
    managed_command,
    running_agent,
)

pytestmark = pytest.mark.cluster


def base_args(directory: Path, *, destructive: bool = True) -> list[str]:
    args = [
        "--listen",
        "127.0.0.1:0",
        "--log-file",
        str(directory / "managed.log"),
        "--data-dir",
        str(directory / "data"),
    ]
    if destructive:
        args += ["--allow-destructive", "--instance-id", INSTANCE_ID]
    return args


def default_agent(directory: Path) -> AbstractContextManager[AgentUnderTest]:
    """An agent allowing fault calls, managing the ticking loop."""
    return running_agent(directory, *base_args(directory), "--", *managed_command(directory))


def fill_data_dir(directory: Path) -> list[Path]:
    data = directory / "data"
    (data / "ledgers" / "current").mkdir(parents=True)
    files = [data / "journal.txn", data / "ledgers" / "current" / "0.log"]
    for path in files:
        path.write_text("entries")
    return files


def process_state_letter(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


def wait_for_stopped_state(pid: int, stopped: bool, timeout: float = 5.0) -> None:
    """Signals are delivered asynchronously: wait until /proc shows the state ("T": stopped)."""
    deadline = time.monotonic() + timeout
    while (process_state_letter(pid) == "T") != stopped:
        assert time.monotonic() < deadline, f"pid {pid} stopped != {stopped}"
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    try:
        return process_state_letter(pid) != "Z"
    except FileNotFoundError:
        return False


def test_calls_without_a_token_or_with_a_wrong_one_are_refused(agent_dir: Path) -> None:
    files = fill_data_dir(agent_dir)
    command = managed_command(agent_dir)
    audit = agent_dir / "audit.log"
    args = [*base_args(agent_dir), "--audit-log", str(audit)]
    with running_agent(agent_dir, *args, "--", *command) as agent:
        before = agent.client().status()
        assert before.state is ProcessState.RUNNING

        # No authorization metadata at all, through the raw generated stub.
        with grpc.insecure_channel(f"{agent.host}:{agent.port}") as channel:
            stub = pb_grpc.AgentStub(channel)  # type: ignore[no-untyped-call]
            with pytest.raises(grpc.RpcError) as raw:
                stub.Status(pb.StatusRequest(), timeout=10)
            assert raw.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as raw_kill:
                stub.Kill(pb.FaultRequest(instance_id=INSTANCE_ID), timeout=10)
            assert raw_kill.value.code() == grpc.StatusCode.UNAUTHENTICATED

        with agent.client(token="not-the-token-at-all") as wrong:
            with pytest.raises(AgentUnauthenticated, match="missing or wrong token"):
                wrong.status()
            with pytest.raises(AgentUnauthenticated):
                wrong.kill(INSTANCE_ID)
            with pytest.raises(AgentUnauthenticated):
                wrong.wipe(INSTANCE_ID, kill_first=True)
            with pytest.raises(AgentUnauthenticated):
                wrong.log_tail(5)
        with agent.client(token=agent.token + "x") as longer, pytest.raises(AgentUnauthenticated):
            longer.status()

        after = agent.client().status()
        assert (after.state, after.pid, after.starts) == (ProcessState.RUNNING, before.pid, 1)
        assert all(path.exists() for path in files)
        for log in (agent.stderr(), audit.read_text()):
            assert "refused Status() by ipv4:127.0.0.1:" in log
            assert "refused Kill() by ipv4:127.0.0.1:" in log
            assert "UNAUTHENTICATED" in log
            assert "allowed Status() by ipv4:127.0.0.1:" in log
            assert agent.token not in log


def test_fault_calls_are_refused_without_allow_destructive(agent_dir: Path) -> None:
    files = fill_data_dir(agent_dir)
    args = base_args(agent_dir, destructive=False)
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        before = client.status()
        faults: dict[str, Callable[[], object]] = {
            "Kill": client.kill,
            "Pause": client.pause,
            "Restart": client.restart,
            "RestartWithJournalOff": client.restart_with_journal_off,
            "Wipe": lambda: client.wipe(kill_first=True),
            "Partition": lambda: client.partition(["127.0.0.2"]),
        }
        for name, call in faults.items():
            with pytest.raises(AgentRefused, match="--allow-destructive") as refused:
                call()
            assert not isinstance(refused.value, AgentUnauthenticated), name
        after = client.status()
        assert (after.state, after.pid, after.starts) == (ProcessState.RUNNING, before.pid, 1)
        assert process_state_letter(before.pid or 0) != "T"
        assert after.partitioned_peers == ()
        assert all(path.exists() for path in files)
        # Read-only and recovery calls still work.
        assert client.log_tail(10).lines
        assert client.heal().peers == ()
        log = agent.stderr()
        for name in faults:
            assert f"refused {name}(" in log


def test_a_wrong_or_missing_instance_id_is_refused(agent_dir: Path) -> None:
    files = fill_data_dir(agent_dir)
    with default_agent(agent_dir) as agent:
        client = agent.client()
        before = client.status()
        other = "00000000-0000-0000-0000-000000000000"
        with pytest.raises(AgentRefused, match="not this cluster's INSTANCEID"):
            client.kill(other)
        with pytest.raises(AgentRefused, match="not this cluster's INSTANCEID"):
            client.wipe(other, kill_first=True)
        with pytest.raises(AgentRefused, match="must name the cluster"):
            client.restart("")
        with pytest.raises(AgentRefused, match="must name the cluster"):
            client.pause()
        after = client.status()
        assert (after.state, after.pid, after.starts) == (ProcessState.RUNNING, before.pid, 1)
        assert all(path.exists() for path in files)
        assert f"instance_id {other!r} is not this cluster's INSTANCEID" in agent.stderr()


def test_kill_wipe_start_restart_round_trip(agent_dir: Path, tmp_path: Path) -> None:
    files = fill_data_dir(agent_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the process's data")
    (agent_dir / "data" / "link-out").symlink_to(outside)
    with default_agent(agent_dir) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        first = client.status()
        assert first.state is ProcessState.RUNNING and first.pid is not None

        with pytest.raises(AgentPreconditionFailed, match="Kill it first"):
            client.wipe()
        assert all(path.exists() for path in files)

        killed = client.kill()
        assert killed.state is ProcessState.STOPPED
        assert killed.exit_code == -9
        assert not pid_alive(first.pid)

        wiped = client.wipe()
        assert wiped.wiped_dirs == (str(agent_dir / "data"),)
        assert wiped.removed_entries == 5  # journal.txn, ledgers/, current/, 0.log, link-out
        assert (agent_dir / "data").is_dir()
        assert list((agent_dir / "data").iterdir()) == []
        assert (outside / "keep.txt").read_text() == "not the process's data"

        started = client.start()
        assert started.state is ProcessState.RUNNING
        assert started.pid not in (None, first.pid)
        with pytest.raises(AgentPreconditionFailed, match="already running"):
            client.start()

        restarted = client.restart()
        assert restarted.state is ProcessState.RUNNING
        assert restarted.pid not in (None, started.pid)
        assert restarted.starts == 3
        assert not pid_alive(started.pid or 0)
        lines = wait_for_log_tail(agent, f"managed started pid {restarted.pid}")
        assert len(lines) <= 50

        (agent_dir / "data" / "new").write_text("written after restart")
        wiped_running = client.wipe(kill_first=True)
        assert wiped_running.status.state is ProcessState.STOPPED
        assert wiped_running.removed_entries == 1
        assert not pid_alive(restarted.pid or 0)


def wait_for_log_tail(agent: object, needle: str, timeout: float = 10.0) -> list[str]:
    client = agent.client()  # type: ignore[attr-defined]
    deadline = time.monotonic() + timeout
    lines: tuple[str, ...] = ()
    while time.monotonic() < deadline:
        lines = client.log_tail(50).lines
        if any(needle in line for line in lines):
            return list(lines)
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not in the log tail {lines}")


def test_pause_resume_and_log_tail(agent_dir: Path) -> None:
    with default_agent(agent_dir) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        pid = client.status().pid
        assert pid is not None
        wait_for_log_tail(agent, "tick 3")

        paused = client.pause()
        assert paused.state is ProcessState.PAUSED
        wait_for_stopped_state(pid, True)
        tail = client.log_tail(3)
        assert tail.path == str(agent_dir / "managed.log")
        assert len(tail.lines) == 3 and tail.lines[-1].startswith("tick ")
        # Three ticks' worth (one per 0.2 s): none may appear while stopped. The process is
        # seen stopped ("T") first, so a slower machine cannot fail this, only tick less.
        time.sleep(0.6)
        assert client.log_tail(3).lines == tail.lines

        resumed = client.resume()
        assert resumed.state is ProcessState.RUNNING and resumed.pid == pid
        wait_for_stopped_state(pid, False)
        last = int(tail.lines[-1].split()[1])
        wait_for_log_tail(agent, f"tick {last + 2}")

        # SIGTERM to the agent stops a paused process too (SIGCONT follows SIGTERM).
        client.pause()
    assert agent.process.returncode == 0
    assert not pid_alive(pid)


def test_restart_with_journal_off_uses_the_journal_off_environment(agent_dir: Path) -> None:
    script = (
        "import os, time\n"
        "print('journal', os.environ.get('JOURNAL_MODE', 'on'), 'pid', os.getpid(), flush=True)\n"
        "time.sleep(600)\n"
    )
    args = [*base_args(agent_dir), "--journal-off-env", "JOURNAL_MODE=off"]
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir, script)) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        first = client.status()
        assert not first.journal_off
        wait_for_log_tail(agent, f"journal on pid {first.pid}")

        off = client.restart_with_journal_off()
        assert off.journal_off and off.pid != first.pid
        wait_for_log_tail(agent, f"journal off pid {off.pid}")

        on = client.restart()
        assert not on.journal_off
        wait_for_log_tail(agent, f"journal on pid {on.pid}")


def test_restart_with_journal_off_unconfigured_leaves_the_process_running(
    agent_dir: Path,
) -> None:
    with default_agent(agent_dir) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        before = client.status()
        with pytest.raises(AgentPreconditionFailed, match="--journal-off-command"):
            client.restart_with_journal_off()
        after = client.status()
        assert (after.state, after.pid) == (ProcessState.RUNNING, before.pid)


def test_a_crashed_process_reports_its_exit_code(agent_dir: Path) -> None:
    script = "import sys; print('crashing', flush=True); sys.exit(3)"
    args = base_args(agent_dir)
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir, script)) as agent:
        client = agent.client()
        deadline = time.monotonic() + 10
        while (status := client.status()).state is not ProcessState.STOPPED:
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
        assert status.exit_code == 3 and status.uptime_seconds == 0.0
        assert "crashing" in client.log_tail(5).lines


def test_sigterm_stops_the_managed_process(agent_dir: Path) -> None:
    with default_agent(agent_dir) as agent:
        pid = agent.client().status().pid
        assert pid is not None and pid_alive(pid)
    assert agent.process.returncode == 0
    assert not pid_alive(pid)
    assert "stopped" in agent.stderr()


def test_no_autostart_waits_for_start(agent_dir: Path) -> None:
    args = [*base_args(agent_dir), "--no-autostart"]
    with running_agent(agent_dir, *args, "--", *managed_command(agent_dir)) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        never = client.status()
        assert (never.state, never.pid, never.starts) == (ProcessState.NEVER_STARTED, None, 0)
        with pytest.raises(AgentPreconditionFailed, match="never started"):
            client.kill()
        assert client.start().state is ProcessState.RUNNING


def test_partition_without_nft_or_iptables_fails_with_the_reason(agent_dir: Path) -> None:
    empty = agent_dir / "empty-path"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    command = managed_command(agent_dir)
    assert Path(command[0]).is_absolute() and Path(sys.executable).is_absolute()
    with running_agent(agent_dir, *base_args(agent_dir), "--", *command, env=env) as agent:
        client = agent.client(instance_id=INSTANCE_ID)
        with pytest.raises(AgentPreconditionFailed, match="nft or iptables is not on the agent"):
            client.partition(["10.1.2.3"])
        healed = client.heal()
        assert (healed.peers, healed.backend) == ((), "")
        assert client.status().partitioned_peers == ()


def test_an_unrunnable_command_stops_the_agent_with_the_reason(agent_dir: Path) -> None:
    token = agent_dir / "token"
    token.write_text("a-token-long-enough-for-the-agent")
    result = subprocess.run(
        [
            sys.executable, "-m", "adapters.agent", "serve", "--token-file", str(token),
            "--listen", "127.0.0.1:0", "--log-file", str(agent_dir / "managed.log"),
            "--", str(agent_dir / "no-such-program"),
        ],
        capture_output=True, text=True, timeout=60, cwd=agent_dir,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert result.returncode == 1
    assert "cannot run managed" in result.stderr and "no-such-program" in result.stderr
    assert "agent ready" not in result.stdout
