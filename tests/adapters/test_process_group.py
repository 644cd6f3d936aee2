"""adapters.process_group: with real processes, no process of the group outlives the run."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from adapters import process_group
from adapters.process_group import run_in_process_group

#: Starts two sleeps in the background, prints their pids, and waits for them.
TWO_SLEEPS = "sleep 30 & echo $!; sleep 30 & echo $!; wait"


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no reaper collected counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def pids_in(text: str) -> list[int]:
    return [int(line) for line in text.split()]


def test_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run_in_process_group(
        ["sh", "-c", TWO_SLEEPS],
        cwd=tmp_path,
        timeout=0.5,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert done.returncode is None
    assert done.timed_out
    assert time.monotonic() - started < 10
    assert done.stdout is not None
    pids = pids_in(done.stdout)
    assert len(pids) == 2
    assert gone(pids)


def test_a_timeout_with_output_to_a_file_kills_the_whole_group(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with log.open("wb") as out:
        done = run_in_process_group(
            ["sh", "-c", TWO_SLEEPS],
            cwd=tmp_path,
            timeout=0.5,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    assert done.returncode is None
    assert (done.stdout, done.stderr) == (None, None)
    pids = pids_in(log.read_text())
    assert len(pids) == 2
    assert gone(pids)


def test_a_child_left_behind_after_a_normal_exit_is_killed(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with log.open("wb") as out:
        done = run_in_process_group(
            ["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!; exit 3"],
            cwd=tmp_path,
            timeout=20,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    assert done.returncode == 3
    assert gone(pids_in(log.read_text()))


def test_a_child_holding_the_pipe_does_not_hold_the_run(tmp_path: Path) -> None:
    started = time.monotonic()
    done = run_in_process_group(
        ["sh", "-c", "sleep 30 & echo $!; echo bye >&2"],
        cwd=tmp_path,
        timeout=20,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert time.monotonic() - started < 10
    assert done.returncode == 0
    assert done.stderr == b"bye\n"
    assert done.stdout is not None
    assert gone(pids_in(done.stdout.decode()))


def test_output_is_captured_to_pipes_separately_or_merged(tmp_path: Path) -> None:
    script = "echo out; echo err >&2; exit 5"
    apart = run_in_process_group(
        ["sh", "-c", script],
        cwd=tmp_path,
        timeout=20,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert (apart.returncode, apart.stdout, apart.stderr) == (5, b"out\n", b"err\n")
    merged = run_in_process_group(
        ["sh", "-c", script],
        cwd=tmp_path,
        timeout=20,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert (merged.returncode, merged.stdout, merged.stderr) == (5, "out\nerr\n", None)


def test_output_goes_to_a_file_in_cwd_with_the_environment_given(tmp_path: Path) -> None:
    log = tmp_path / "log"
    with log.open("ab") as out:
        out.write(b"before\n")
        out.flush()
        done = run_in_process_group(
            ["sh", "-c", 'echo "$GREETING"; pwd; echo err >&2'],
            cwd=tmp_path,
            timeout=20,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={"GREETING": "hello", "PATH": "/usr/bin:/bin"},
        )
    assert done.returncode == 0
    assert log.read_text() == f"before\nhello\n{tmp_path}\nerr\n"


def test_a_missing_command_raises_as_popen_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        run_in_process_group(
            ["no-such-command-for-bkconform"],
            cwd=tmp_path,
            timeout=5,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )


@pytest.mark.parametrize("captured", [True, False], ids=["pipe", "file"])
def test_an_interrupt_while_waiting_kills_the_group_and_is_reraised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, captured: bool
) -> None:
    pid_file = tmp_path / "pids"

    def interrupted(process: subprocess.Popen[Any], timeout: float) -> Any:
        deadline = time.monotonic() + 10
        while len(pid_file.read_text().split()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        raise KeyboardInterrupt

    monkeypatch.setattr(process_group, "_await", interrupted)
    pid_file.write_text("")
    log = tmp_path / "log"
    with log.open("wb") as out, pytest.raises(KeyboardInterrupt):
        run_in_process_group(
            [
                "sh",
                "-c",
                'sleep 30 & echo $! >> "$1"; sleep 30 & echo $! >> "$1"; wait',
                "sh",
                str(pid_file),
            ],
            cwd=tmp_path,
            timeout=20,
            stdout=subprocess.PIPE if captured else out,
            stderr=subprocess.STDOUT,
        )
    pids = pids_in(pid_file.read_text())
    assert len(pids) == 2
    assert gone(pids)
