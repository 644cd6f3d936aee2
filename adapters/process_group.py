"""Run a command in its own process group, and never leave a process of that group behind.

A build (``mvn``, ``git``, a reproducer's ``mvn test``) starts processes of its own: Maven's
JVM, surefire's forked JVMs, a daemon a test leaves running. Killing the command's first
process on a timeout or an interrupt leaves those running, holding CPU, ports and files (and,
when they inherited its pipe, keeping a reader of its output waiting). So
:func:`run_in_process_group` starts the command as the leader of a new session and kills the
whole group (``SIGKILL`` to the process group, then waits for the leader):

* when ``timeout`` passes (``returncode`` None);
* on any exception while waiting, ``KeyboardInterrupt`` included (re-raised);
* after a normal exit of the leader, if a process of its group is still alive.

A process that left the group (``setsid``) is beyond its reach. This is for a command that
runs to its end; the long-lived children (a cluster's servers, an agent's process) are
:mod:`adapters.processes`'s: supervised, registered and reaped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, AnyStr, Generic, Literal, overload

#: Where an output stream goes: ``subprocess.PIPE`` (captured), ``subprocess.STDOUT`` (for
#: ``stderr``: merged into ``stdout``), ``subprocess.DEVNULL``, an open file, or None
#: (inherited).
Target = int | IO[Any] | None

#: How often a captured run checks whether its leader exited while its group holds the pipes.
_POLL_SECONDS = 0.1

#: How long to wait for the leader, and for the pipes' last output, after the group is killed.
_REAP_SECONDS = 30.0


@dataclass(frozen=True)
class GroupRun(Generic[AnyStr]):
    """How a run in a process group ended."""

    #: The leader's exit code; None: ``timeout`` passed and the group was killed.
    returncode: int | None
    #: What a ``subprocess.PIPE`` stream captured (None: not captured, or not readable to
    #: the end because a process outside the group held the pipe).
    stdout: AnyStr | None
    stderr: AnyStr | None

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


@overload
def run_in_process_group(
    command: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    stdout: Target,
    stderr: Target,
    env: Mapping[str, str] | None = None,
    text: Literal[False] = False,
) -> GroupRun[bytes]: ...


@overload
def run_in_process_group(
    command: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    stdout: Target,
    stderr: Target,
    env: Mapping[str, str] | None = None,
    text: Literal[True],
) -> GroupRun[str]: ...


def run_in_process_group(
    command: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    stdout: Target,
    stderr: Target,
    env: Mapping[str, str] | None = None,
    text: bool = False,
) -> GroupRun[bytes] | GroupRun[str]:
    """Run ``command`` in ``cwd`` as the leader of a new process group, its standard input
    empty, ``env`` its whole environment (None: this process's). The group is killed when
    ``timeout`` (seconds) passes, on any exception while waiting (re-raised), and after the
    leader exits if a process of the group is left: a build's JVMs must not outlive its run.

    With ``subprocess.PIPE`` the output is captured (``text``: decoded); the run then ends
    when the leader exits, even if a process it left holds the pipe (that process is killed
    and what it wrote is kept). An error starting ``command`` (``FileNotFoundError``) is
    raised as it is."""
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        stdout=stdout,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        env=None if env is None else dict(env),
        text=text,
        start_new_session=True,
    )
    try:
        try:
            returncode, out, err = _await(process, timeout)
        except BaseException:
            _kill_group(process)
            raise
        if returncode is None or group_alive(process.pid):
            _kill_group(process)
            if returncode is None and _captures(process):
                out, err = _drain(process)
        return GroupRun(returncode, out, err)
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _await(process: subprocess.Popen[Any], timeout: float) -> tuple[int | None, Any, Any]:
    """The leader's exit code and the captured output; None as the code once ``timeout``
    passed (the group still running)."""
    if not _captures(process):
        try:
            return process.wait(timeout=timeout), None, None
        except subprocess.TimeoutExpired:
            return None, None, None
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        try:
            # Retrying communicate() after its timeout loses no output.
            out, err = process.communicate(timeout=max(0.0, min(remaining, _POLL_SECONDS)))
        except subprocess.TimeoutExpired:
            if process.poll() is not None:
                # The leader is done; what is left of its group holds the pipes open.
                returncode = process.returncode
                _kill_group(process)
                out, err = _drain(process)
                return returncode, out, err
            if remaining <= 0:
                return None, None, None
        else:
            return process.returncode, out, err


def _drain(process: subprocess.Popen[Any]) -> tuple[Any, Any]:
    """What the pipes still hold, once the group is dead (None, None if a process outside
    the group keeps them open)."""
    try:
        return process.communicate(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        return None, None


def _captures(process: subprocess.Popen[Any]) -> bool:
    return process.stdout is not None or process.stderr is not None


def _kill_group(process: subprocess.Popen[Any]) -> None:
    """``SIGKILL`` to the process group led by ``process``, then wait for the leader."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=_REAP_SECONDS)


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is left (surefire's forked JVM, say)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


__all__ = ["GroupRun", "Target", "group_alive", "run_in_process_group"]
