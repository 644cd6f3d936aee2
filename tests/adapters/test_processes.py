"""Process supervision: process groups, TERM-then-KILL, logs, and every exit path."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from adapters.errors import NodeStateError
from adapters.processes import (
    ManagedProcess,
    group_members,
    live_processes,
    processes_matching,
    stop_all,
    supervised,
)

pytestmark = pytest.mark.cluster


def shell(work_dir: Path, name: str, script: str) -> ManagedProcess:
    # The work dir appears on the command line, so the leftover check can find the process.
    return ManagedProcess(
        name,
        ["sh", "-c", script, str(work_dir / name)],
        log_path=work_dir / f"{name}.log",
    )


def wait_for(condition: object, timeout: float = 5.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_stop_kills_the_whole_process_group(work_dir: Path) -> None:
    process = shell(work_dir, "forker", "sleep 300 & sleep 300 & wait")
    process.start()
    assert process.pid is not None
    wait_for(lambda: len(group_members(process.pid or 0)) == 3)
    process.stop()
    assert group_members(process.pid) == []
    assert not process.is_running()
    assert process not in live_processes()


def test_a_child_ignoring_sigterm_is_killed_after_the_timeout(work_dir: Path) -> None:
    ignore_term = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(300)"
    )
    process = ManagedProcess(
        "stubborn",
        [sys.executable, "-c", ignore_term, str(work_dir / "stubborn")],
        log_path=work_dir / "stubborn.log",
    )
    process.start()
    wait_for(lambda: "ready" in process.log_tail().splitlines())
    # SIGTERM is ignored, so only SIGKILL ends it on any machine: 0.5 s only shortens the wait.
    process.stop(timeout=0.5)
    assert not process.is_running()
    # Killed, not waited out: SIGTERM was ignored and stop() escalated to SIGKILL.
    assert process.returncode == -signal.SIGKILL


def _quiet(path: Path, for_s: float = 0.2) -> bool:
    """Whether ``path`` stays the same size for ``for_s`` (four ticks of the loop below)."""
    before = path.stat().st_size
    time.sleep(for_s)
    return path.stat().st_size == before


def test_a_paused_process_can_be_resumed_and_stopped(work_dir: Path) -> None:
    process = shell(work_dir, "ticker", "while :; do echo tick; sleep 0.05; done")
    process.start()
    wait_for(lambda: "tick" in process.log_tail().splitlines())
    process.pause()
    assert process.paused
    # pause() returns once SIGSTOP is sent: wait until the log stops growing (a write may be
    # in flight). Not the group's states in /proc: a shell that vforked its `sleep` is never
    # shown stopped (T) while its child, stopped before its exec, holds it in the vfork
    # (two fresh-clone CI runs waited 5 s for it), yet nothing of the group runs.
    wait_for(lambda: _quiet(process.log_path))
    frozen = process.log_path.read_bytes()
    time.sleep(0.3)
    assert process.log_path.read_bytes() == frozen, "a SIGSTOPped process kept writing"
    process.resume()
    wait_for(lambda: len(process.log_path.read_bytes()) > len(frozen))
    process.pause()
    # SIGTERM stays pending on a stopped process unless continued; sh then exits on it at once,
    # well within the 2 s before stop() would SIGKILL it (and the returncode would differ).
    process.stop(timeout=2)
    assert process.returncode == -signal.SIGTERM


def test_stdout_and_stderr_go_to_the_log_and_restarts_append(work_dir: Path) -> None:
    process = shell(work_dir, "talker", "echo to-stdout; echo to-stderr >&2")
    process.start()
    wait_for(lambda: not process.is_running())
    process.start()
    wait_for(lambda: not process.is_running())
    lines = process.log_path.read_text().splitlines()
    assert lines.count("to-stdout") == 2 and lines.count("to-stderr") == 2
    assert sum(line.startswith("=== ") for line in lines) == 2  # one header per start
    process.stop()


def test_starting_a_running_process_twice_is_refused(work_dir: Path) -> None:
    with (
        shell(work_dir, "sleeper", "sleep 300") as process,
        pytest.raises(NodeStateError, match="already running"),
    ):
        process.start()
    assert not process.is_running()


def test_stop_all_and_supervised_stop_what_was_started(work_dir: Path) -> None:
    with supervised():
        inner = shell(work_dir, "inner", "sleep 300")
        inner.start()
    assert not inner.is_running()
    first = shell(work_dir, "first", "sleep 300")
    second = shell(work_dir, "second", "sleep 300")
    first.start()
    second.start()
    stop_all()
    assert not first.is_running() and not second.is_running()
    assert live_processes() == []


def test_detached_processes_are_not_stopped_by_stop_all(work_dir: Path) -> None:
    process = shell(work_dir, "detached", "sleep 300")
    process.start()
    process.detach()
    stop_all()
    assert process.is_running()
    process.kill()
    assert processes_matching(str(work_dir)) == []


def run_script(work_dir: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from pathlib import Path
        from adapters.processes import ManagedProcess
        work = Path({str(work_dir)!r})
        child = ManagedProcess("child", ["sleep", "300", str(work / "child")],
                               log_path=work / "child.log")
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )


def test_children_are_stopped_at_normal_interpreter_exit(work_dir: Path) -> None:
    result = run_script(work_dir, "child.start()\nprint(child.pid)\n")
    assert result.returncode == 0, result.stderr
    assert processes_matching(str(work_dir)) == []


def test_sigterm_stops_children_then_the_default_action_terminates(work_dir: Path) -> None:
    result = run_script(
        work_dir,
        """
        child.start()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        print("not reached")
        """,
    )
    assert result.returncode == -signal.SIGTERM
    assert "not reached" not in result.stdout
    assert processes_matching(str(work_dir)) == []


def test_signal_handlers_chain_to_the_previous_handler(work_dir: Path) -> None:
    result = run_script(
        work_dir,
        """
        def previous(signum, frame):
            print("previous handler ran", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, previous)
        child.start()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
        """,
    )
    assert result.returncode == 7, result.stderr
    assert "previous handler ran" in result.stdout
    assert processes_matching(str(work_dir)) == []


def test_sigint_stops_children_and_raises_keyboard_interrupt(work_dir: Path) -> None:
    result = run_script(
        work_dir,
        """
        child.start()
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(10)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "interrupted" in result.stdout
    assert processes_matching(str(work_dir)) == []


def test_the_leftover_check_finds_and_kills_a_leaked_process(tmp_path: Path) -> None:
    from tests.adapters.conftest import _reap_leftovers

    leak = tmp_path / "leak"
    process = shell(leak, "leaked", "sleep 300")
    process.start()
    process.detach()  # nothing will stop it: only the leftover check can
    # Right after fork the child still carries its parent's command line; wait (bounded) until
    # it has exec'd and names the leak directory, as a real leaked process would.
    deadline = time.monotonic() + 10
    while not processes_matching(str(leak)) and time.monotonic() < deadline:
        time.sleep(0.05)
    described = _reap_leftovers(leak)
    assert len(described) == 1 and str(process.pid) in described[0]
    assert processes_matching(str(leak)) == []
    process.kill()  # reap our zombie child


def test_commands_reach_the_child_on_its_standard_input(work_dir: Path) -> None:
    process = ManagedProcess(
        "reader",
        ["sh", "-c", 'while read line; do echo "got $line"; done; echo eof', str(work_dir)],
        log_path=work_dir / "reader.log",
        commands=True,
    )
    with process:
        process.send("restart-empty")
        wait_for(lambda: "got restart-empty" in process.log_path.read_text())
    # Stopped: its pipe is closed, and nothing more can be sent.
    with pytest.raises(NodeStateError, match="not running"):
        process.send("again")


def test_a_process_without_a_pipe_takes_no_commands(work_dir: Path) -> None:
    with (
        shell(work_dir, "deaf", "sleep 30") as process,
        pytest.raises(NodeStateError, match="takes no commands"),
    ):
        process.send("restart-empty")
