"""Run a reference bookie as a child process (``python -m adapters.refbookie``).

::

    with RefBookieProcess(conf_path, log_path) as bookie:
        ... BookieClient.connect("127.0.0.1", bookie.port) ...
        bookie.kill()      # SIGKILL: a crash
    # leaving the block stops the process (SIGTERM, then SIGKILL) on every path

The child runs in its own process group, and an ``atexit`` hook kills any child still alive
when the parent exits, so no bookie outlives its test.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from types import TracebackType

from adapters.refbookie.errors import StartupError

_READY = re.compile(rb"refbookie ready (\S+) port=(\d+)")
_LIVE: weakref.WeakSet[RefBookieProcess] = weakref.WeakSet()


def write_conf(path: Path, properties: dict[str, str]) -> Path:
    """Write a ``bk_server.conf``-style file."""
    path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    return path


class RefBookieProcess:
    """One reference bookie child process; :meth:`start` waits until it serves."""

    def __init__(
        self, conf: Path, log: Path, *, start_timeout: float = 30.0, log_level: str = "INFO"
    ) -> None:
        self.conf = conf
        self.log = log
        self.start_timeout = start_timeout
        self.log_level = log_level
        self.port: int | None = None
        self.bookie_id: str | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    def start(self) -> RefBookieProcess:
        """Spawn the bookie and wait (bounded) for its ready line; raise StartupError if not."""
        offset = self.log.stat().st_size if self.log.exists() else 0
        command = [sys.executable, "-m", "adapters.refbookie", "--conf", str(self.conf),
                   "--log-level", self.log_level]  # fmt: skip
        with self.log.open("ab") as log_file:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file,
                start_new_session=True, cwd=Path(__file__).resolve().parents[2],
            )  # fmt: skip
        _LIVE.add(self)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            match = _READY.search(self.log.read_bytes()[offset:])
            if match:
                self.bookie_id = match.group(1).decode()
                self.port = int(match.group(2))
                return self
            code = self._process.poll()
            if code is not None:
                raise StartupError(f"reference bookie exited with {code}; see {self.log}")
            time.sleep(0.02)
        self.kill()
        raise StartupError(
            f"reference bookie not ready after {self.start_timeout}s; see {self.log}"
        )

    def terminate(self, timeout: float = 10.0) -> int:
        """Clean stop (SIGTERM); SIGKILL if it does not exit in ``timeout``. Returns the code."""
        return self._signal_and_wait(signal.SIGTERM, timeout)

    def kill(self) -> int:
        """Crash the bookie (SIGKILL to its process group)."""
        return self._signal_and_wait(signal.SIGKILL, 10.0)

    def _signal_and_wait(self, signum: int, timeout: float) -> int:
        process = self._process
        if process is None:
            raise RuntimeError("not started")
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10.0)
        _LIVE.discard(self)
        return int(process.returncode)

    def __enter__(self) -> RefBookieProcess:
        return self.start() if self._process is None else self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._process is not None and self._process.poll() is None:
            self.terminate()


@atexit.register
def _kill_leftovers() -> None:
    for bookie in list(_LIVE):
        with contextlib.suppress(Exception):
            bookie.kill()
