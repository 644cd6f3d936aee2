"""The one process an agent controls: start, kill, pause, restart (journal on or off), wipe.

Built on :class:`adapters.processes.ManagedProcess`, so the process runs in its own
session, signals reach its whole process group, its output goes to one log file, and it is
stopped when the agent exits (atexit and SIGTERM/SIGINT hooks). Calls are serialised: two
concurrent requests never interleave a stop and a start.
"""

from __future__ import annotations

import enum
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.agent.config import AgentConfig, check_data_dir
from adapters.agent.errors import AgentCallFailed, AgentPreconditionFailed, InvalidAgentConfig
from adapters.errors import ClusterError
from adapters.processes import ManagedProcess


class ProcessState(enum.Enum):
    NEVER_STARTED = "never-started"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


@dataclass(frozen=True)
class ProcessSnapshot:
    state: ProcessState
    pid: int | None
    exit_code: int | None
    uptime_seconds: float
    journal_off: bool
    starts: int
    command: tuple[str, ...]


@dataclass(frozen=True)
class WipeResult:
    wiped_dirs: tuple[Path, ...]
    removed_entries: int


class Supervisor:
    """Controls the configured command; every method is safe to call from any thread."""

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._lock = threading.RLock()
        self._process: ManagedProcess | None = None
        self._journal_off = False
        self._starts = 0
        self._started_at = 0.0

    # Queries -----------------------------------------------------------------------------

    def snapshot(self) -> ProcessSnapshot:
        with self._lock:
            process = self._process
            if process is None:
                return ProcessSnapshot(
                    ProcessState.NEVER_STARTED, None, None, 0.0, False, 0, self._config.command
                )
            if process.paused:
                state = ProcessState.PAUSED
            elif process.is_running():
                state = ProcessState.RUNNING
            else:
                state = ProcessState.STOPPED
            alive = state in (ProcessState.RUNNING, ProcessState.PAUSED)
            return ProcessSnapshot(
                state=state,
                pid=process.pid,
                exit_code=None if alive else process.returncode,
                uptime_seconds=time.monotonic() - self._started_at if alive else 0.0,
                journal_off=self._journal_off,
                starts=self._starts,
                command=process.argv,
            )

    def log_tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines of the process's output log (at most its last 64 KiB)."""
        with self._lock:
            process = self._process
        if process is None:
            return []
        text = process.log_tail(lines)
        return text.splitlines() if text else []

    # Lifecycle ---------------------------------------------------------------------------

    def start(self, *, journal_off: bool = False) -> ProcessSnapshot:
        """Start the process (journal-off mode uses the journal-off command / environment)."""
        with self._lock:
            if self._process is not None and self._process.is_running():
                raise AgentPreconditionFailed(
                    f"the process is already running (pid {self._process.pid}); "
                    "use Restart to restart it"
                )
            argv, env = self._launch_spec(journal_off)
            process = ManagedProcess(
                "managed",
                argv,
                log_path=self._config.log_file,
                env=env,
                cwd=self._config.workdir,
                stop_timeout=self._config.stop_timeout,
            )
            try:
                process.start()
            except ClusterError as exc:
                raise AgentCallFailed(str(exc)) from exc
            self._process = process
            self._journal_off = journal_off
            self._starts += 1
            self._started_at = time.monotonic()
            return self.snapshot()

    def kill(self) -> ProcessSnapshot:
        """SIGKILL the process group and wait until it is gone."""
        with self._lock:
            process = self._require_started("kill")
            if not process.is_running():
                raise AgentPreconditionFailed(
                    f"the process is not running (exit code {process.returncode})"
                )
            self._guard(process.kill)
            return self.snapshot()

    def pause(self) -> ProcessSnapshot:
        with self._lock:
            process = self._require_started("pause")
            if not process.is_running():
                raise AgentPreconditionFailed("cannot pause: the process is not running")
            self._guard(process.pause)
            return self.snapshot()

    def resume(self) -> ProcessSnapshot:
        with self._lock:
            process = self._require_started("resume")
            if not process.is_running():
                raise AgentPreconditionFailed("cannot resume: the process is not running")
            self._guard(process.resume)
            return self.snapshot()

    def restart(self, *, journal_off: bool = False) -> ProcessSnapshot:
        """Stop (SIGTERM, then SIGKILL after the stop timeout) if running, then start."""
        with self._lock:
            self._launch_spec(journal_off)  # refuse before stopping: no half-done restart
            self.stop()
            return self.start(journal_off=journal_off)

    def stop(self) -> None:
        """Stop the process if it runs (the agent's shutdown path; also used by restart)."""
        with self._lock:
            if self._process is not None:
                self._guard(self._process.stop)

    def wipe(self, *, kill_first: bool) -> WipeResult:
        """Delete the contents of every data dir (the dirs themselves stay).

        The process must not be running: a running process would keep writing into (or hold
        open) files being deleted. ``kill_first`` kills it first; without it, a running process
        makes the call fail and nothing is deleted.
        """
        with self._lock:
            if not self._config.data_dirs:
                raise AgentPreconditionFailed(
                    "no data dirs configured: start the agent with --data-dir DIR to wipe"
                )
            if self._process is not None and self._process.is_running():
                if not kill_first:
                    raise AgentPreconditionFailed(
                        f"the process is running (pid {self._process.pid}): Kill it first or "
                        "call Wipe with kill_first"
                    )
                self._guard(self._process.kill)
            removed = 0
            for directory in self._config.data_dirs:
                removed += _empty_directory(directory, self._config.protected_files)
            return WipeResult(self._config.data_dirs, removed)

    # Helpers -----------------------------------------------------------------------------

    def _launch_spec(self, journal_off: bool) -> tuple[Sequence[str], dict[str, str]]:
        config = self._config
        env = {**os.environ, **config.env}
        if not journal_off:
            return config.command, env
        if not config.journal_off_configured:
            raise AgentPreconditionFailed(
                "no journal-off mode: start the agent with --journal-off-command or "
                "--journal-off-env (e.g. BOOKIE_CONF pointing at a config with "
                "journalWriteData=false)"
            )
        env.update(config.journal_off_env)
        return config.journal_off_command or config.command, env

    def _require_started(self, action: str) -> ManagedProcess:
        if self._process is None:
            raise AgentPreconditionFailed(f"cannot {action}: the process was never started")
        return self._process

    @staticmethod
    def _guard(operation: Callable[[], object]) -> None:
        try:
            operation()
        except ClusterError as exc:
            raise AgentCallFailed(str(exc)) from exc


def _empty_directory(directory: Path, protected_files: Sequence[Path]) -> int:
    """Remove everything below ``directory``, never following a symlink out of it."""
    # Checked again at wipe time: the config was validated at start, the disk may have changed.
    if directory.is_symlink():
        raise AgentCallFailed(f"data dir {directory} has become a symlink; refusing to wipe it")
    try:
        check_data_dir(directory, protected_files)
    except InvalidAgentConfig as exc:
        raise AgentCallFailed(f"refusing to wipe: {exc}") from exc
    if not directory.exists():
        return 0
    if not directory.is_dir():
        raise AgentCallFailed(f"data dir {directory} is not a directory; refusing to wipe it")
    removed = 0
    for entry in list(directory.iterdir()):
        try:
            if entry.is_dir() and not entry.is_symlink():
                removed += sum(1 for _ in entry.rglob("*")) + 1
                shutil.rmtree(entry)  # rmtree removes symlinks inside, never their targets
            else:
                entry.unlink()
                removed += 1
        except OSError as exc:
            raise AgentCallFailed(f"cannot wipe {entry}: {exc}") from exc
    return removed
