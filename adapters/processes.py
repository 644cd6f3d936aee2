"""Supervision of the child processes bkconform runs: a local cluster's ZooKeeper servers and
bookies, and the process a fault agent (:mod:`adapters.agent`) manages.

Every child runs in its own session, so its process group holds it and anything it forks;
signals go to the whole group. Every child is registered until it is stopped, and the
registry is emptied on every way out of the parent: :meth:`ManagedProcess.stop` (also via the
context manager), :func:`stop_all`, ``atexit``, and SIGTERM / SIGINT handlers that stop the
children and then hand the signal to whatever handler was installed before.

The one way out that cannot be covered is SIGKILL of the parent itself; the children then
live on. So every start is recorded under ``$BKCONFORM_HOME/processes/`` until the process is
stopped or detached (:mod:`adapters.process_records`), and the first start in any
process first kills the groups that recorded owners left behind when they died (as do
``bkconform run``/``replay``/``scenario``). ``bkconform cluster down`` and the test suite's
leftover check also find children by the work directory in their command line.

A child's stdout and stderr go, interleaved, to one log file (appended across restarts, with
a header per start) so that :meth:`ManagedProcess.log_tail` can explain a failure. A command
that runs to its end (a Maven build, ``git``) is :mod:`adapters.process_group`'s.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Self

from adapters import process_records
from adapters.errors import ClusterError, InvalidClusterOptions, NodeStateError

DEFAULT_STOP_TIMEOUT = 10.0
_POLL_INTERVAL = 0.05

_registry_lock = threading.RLock()
_registry: set[ManagedProcess] = set()
_hooks_installed = False
_previous_handlers: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}


class ManagedProcess:
    """One supervised child process (and its process group).

    ``start`` may be called again after the process has exited (restart); the log file is
    appended to. ``stop`` and ``kill`` are safe to call at any time, any number of times.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stop_timeout: float = DEFAULT_STOP_TIMEOUT,
        commands: bool = False,
    ) -> None:
        if not argv:
            raise InvalidClusterOptions(f"process {name!r}: empty command line")
        self.name = name
        self.argv = tuple(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        #: The child reads commands from a pipe on its standard input (:meth:`send`); it
        #: sees end of input when this process goes away. Otherwise stdin is /dev/null.
        self.commands = commands
        self._popen: subprocess.Popen[bytes] | None = None
        self._paused = False
        # Once the group is known empty its id may be recycled: never signal it again.
        self._group_gone = False
        # Where this start is recorded for the next run to reap if we die (None: not recorded).
        self._record: Path | None = None

    def __repr__(self) -> str:
        return f"ManagedProcess({self.name!r}, pid={self.pid}, running={self.is_running()})"

    # Lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Launch the command in a new session; raises if it is already running."""
        if self.is_running():
            raise NodeStateError(f"{self.name} is already running (pid {self.pid})")
        install_exit_hooks()
        process_records.reap_orphans_once()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            log.write(f"\n=== {stamp} start {self.name}: {' '.join(self.argv)}\n".encode())
            log.flush()
            try:
                self._popen = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.PIPE if self.commands else subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    cwd=self.cwd,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise ClusterError(
                    f"cannot run {self.name} ({self.argv[0]}): {exc}. "
                    "Check that the program exists and is executable."
                ) from exc
        self._paused = False
        self._group_gone = False
        process_records.remove_record(self._record)  # an earlier start's, exited by itself
        self._record = process_records.write_record(self.name, self._popen.pid, self.argv)
        _register(self)

    def stop(self, timeout: float | None = None) -> None:
        """SIGTERM the group, wait up to ``timeout`` seconds, then SIGKILL it."""
        if self._popen is None:
            return
        grace = self.stop_timeout if timeout is None else timeout
        if self._popen.poll() is None:
            self.signal(signal.SIGTERM)
            # A stopped process keeps SIGTERM pending until it is continued.
            self.signal(signal.SIGCONT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(grace)
        self.kill()

    def kill(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """SIGKILL the whole group and wait until every member is gone."""
        if self._popen is None:
            return
        self.signal(signal.SIGKILL)
        try:
            self._popen.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(
                f"{self.name} (pid {self.pid}) survived SIGKILL for {timeout}s; "
                "it may be stuck in the kernel (D state): check `ps -o stat,pid,cmd`"
            ) from exc
        self._wait_group_gone(timeout)
        if self._popen.stdin is not None:
            with contextlib.suppress(OSError):
                self._popen.stdin.close()
        self._paused = False
        _unregister(self)
        process_records.remove_record(self._record)
        self._record = None

    def detach(self) -> None:
        """Let the process outlive this Python process (no stop on exit, and no reaping by
        the next run: its record goes)."""
        _unregister(self)
        process_records.remove_record(self._record)
        self._record = None

    def send(self, command: str) -> None:
        """Write one command line to the child's standard input (``commands=True``)."""
        if not self.commands:
            raise NodeStateError(f"{self.name} takes no commands (started without a pipe)")
        if not self.is_running():
            raise NodeStateError(f"cannot send {command!r} to {self.name}: it is not running")
        assert self._popen is not None and self._popen.stdin is not None
        try:
            self._popen.stdin.write(command.encode() + b"\n")
            self._popen.stdin.flush()
        except OSError as exc:  # BrokenPipeError: it exited meanwhile
            raise ClusterError(f"{self.name} did not take {command!r}: {exc}") from exc

    # Signals -----------------------------------------------------------------------------

    def signal(self, signum: int) -> None:
        """Send ``signum`` to the process group (a no-op once the group is gone)."""
        if self._popen is None or self._group_gone:
            return
        if self._popen.poll() is not None and not group_members(self._popen.pid):
            self._group_gone = True
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, signum)

    def pause(self) -> None:
        if not self.is_running():
            raise NodeStateError(f"cannot pause {self.name}: it is not running")
        self.signal(signal.SIGSTOP)
        self._paused = True

    def resume(self) -> None:
        if not self.is_running():
            raise NodeStateError(f"cannot resume {self.name}: it is not running")
        self.signal(signal.SIGCONT)
        self._paused = False

    # State -------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self._popen is None else self._popen.pid

    @property
    def returncode(self) -> int | None:
        return None if self._popen is None else self._popen.poll()

    @property
    def paused(self) -> bool:
        return self._paused and self.is_running()

    def is_running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the log file (empty if there is none yet)."""
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return ""
        text = data[-64 * 1024 :].decode("utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def _wait_group_gone(self, timeout: float) -> None:
        assert self._popen is not None
        deadline = time.monotonic() + timeout
        while group_members(self._popen.pid):
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"process group {self._popen.pid} of {self.name} still has members "
                    f"{group_members(self._popen.pid)} after SIGKILL"
                )
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._popen.pid, signal.SIGKILL)
            time.sleep(_POLL_INTERVAL)
        self._group_gone = True

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in process group ``pgid``, read from /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _read_stat(entry)
        if stat is not None and stat[1] == pgid and stat[0] != "Z":
            members.append(int(entry.name))
    return members


def _read_stat(entry: Path) -> tuple[str, int] | None:
    try:
        raw = (entry / "stat").read_text()
    except OSError:
        return None
    # Fields after the parenthesised command name: state ppid pgrp ...
    fields = raw[raw.rfind(")") + 2 :].split()
    return fields[0], int(fields[2])


def processes_matching(needle: str) -> list[int]:
    """Live (non-zombie) pids whose command line contains ``needle``, excluding ourselves."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        stat = _read_stat(entry)
        if needle.encode() in cmdline and stat is not None and stat[0] != "Z":
            found.append(int(entry.name))
    return found


# Registry and exit hooks ---------------------------------------------------------------


def _register(process: ManagedProcess) -> None:
    with _registry_lock:
        _registry.add(process)


def _unregister(process: ManagedProcess) -> None:
    with _registry_lock:
        _registry.discard(process)


def live_processes() -> list[ManagedProcess]:
    """Every registered process that has not been stopped or detached."""
    with _registry_lock:
        return sorted(_registry, key=lambda p: p.name)


def stop_all(timeout: float = 5.0) -> None:
    """Stop every registered process; errors are collected so one stuck child stops no other."""
    errors = []
    for process in live_processes():
        try:
            process.stop(timeout)
        except ClusterError as exc:
            errors.append(exc)
    if errors:
        raise ClusterError("; ".join(str(e) for e in errors))


@contextlib.contextmanager
def supervised() -> Iterator[None]:
    """Stop every process started inside the block when it ends, however it ends."""
    before = set(live_processes())
    try:
        yield
    finally:
        for process in live_processes():
            if process not in before:
                process.stop()


def install_exit_hooks() -> None:
    """Register the ``atexit`` and signal hooks once; later calls do nothing."""
    global _hooks_installed
    with _registry_lock:
        if _hooks_installed:
            return
        _hooks_installed = True
    atexit.register(_stop_all_quietly)
    # Signal handlers can only be installed from the main thread; elsewhere atexit must do.
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            _previous_handlers[signum] = signal.getsignal(signum)
            signal.signal(signum, _on_signal)


def _stop_all_quietly() -> None:
    with contextlib.suppress(ClusterError):
        stop_all()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _stop_all_quietly()
    previous = _previous_handlers.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:
        # The default action (terminate): restore it and re-deliver the signal to ourselves.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
