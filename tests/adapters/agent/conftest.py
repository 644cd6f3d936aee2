"""An agent under test: ``python -m adapters.agent serve`` in a subprocess, stopped after use.

The managed process is a small Python loop whose command line names the test's directory, so
the leftover checks (``tests/conftest.py``, and the one after each test here) find it if the
agent ever fails to stop it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from adapters.agent.client import AgentClient, ClientTls
from adapters.processes import processes_matching

REPO_ROOT = Path(__file__).resolve().parents[3]
READY_TIMEOUT = 30.0
INSTANCE_ID = "5b0d7a53-8f0e-4c39-9a0b-6cc7ea1d1f2e"

# Prints a line at start and then every 0.2 s; argv[1] names the test directory (leftover check).
LOOP = (
    "import itertools, os, sys, time\n"
    "print('managed started pid', os.getpid(), flush=True)\n"
    "for n in itertools.count():\n"
    "    print('tick', n, flush=True)\n"
    "    time.sleep(0.2)\n"
)


def managed_command(directory: Path, script: str = LOOP) -> list[str]:
    return [sys.executable, "-c", script, str(directory / "managed-marker")]


class AgentUnderTest:
    """One agent subprocess; :meth:`stop` sends SIGTERM like an operator would."""

    def __init__(
        self,
        directory: Path,
        args: Sequence[str],
        env: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        self.directory = directory
        self.token = secrets.token_urlsafe(24)
        self.token_file = directory / "token"
        self.token_file.write_text(self.token + "\n")
        self.token_file.chmod(0o600)
        self.stderr_path = directory / "agent.stderr"
        self.argv = [
            *prefix,
            sys.executable,
            "-m",
            "adapters.agent",
            "serve",
            "--token-file",
            str(self.token_file),
            *args,
        ]
        run_env = dict(os.environ if env is None else env)
        run_env["PYTHONPATH"] = str(REPO_ROOT)
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                self.argv,
                stdout=subprocess.PIPE,
                stderr=stderr,
                stdin=subprocess.DEVNULL,
                cwd=directory,
                env=run_env,
            )
        self.host, self.port = self._wait_ready()

    def _wait_ready(self) -> tuple[str, int]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                line = self.process.stdout.readline()
                if line.startswith(b"agent ready on "):
                    address = line.decode().removeprefix("agent ready on ").strip()
                    host, _, port = address.rpartition(":")
                    return host.strip("[]"), int(port)
                if not line:  # EOF: the agent exited
                    break
        # Not ready: make sure it is gone (its managed process, if any, is reaped by agent_dir).
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        raise AssertionError(
            f"agent not ready (exit {self.process.returncode}); stderr:\n{self.stderr()}"
        )

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def client(self, token: str | None = None, **kwargs: object) -> AgentClient:
        return AgentClient(
            self.host,
            self.port,
            self.token if token is None else token,
            **kwargs,  # type: ignore[arg-type]
        )

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM the agent and wait for it; SIGKILL only if it hangs (then the test fails)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
                raise AssertionError(f"agent ignored SIGTERM for {timeout}s") from None
        if self.process.stdout is not None:
            self.process.stdout.close()
        return self.process.returncode


@pytest.fixture
def agent_dir(tmp_path: Path) -> Iterator[Path]:
    """The test's directory; the test errors if a process naming it survives the test."""
    directory = tmp_path / "agent"
    directory.mkdir()
    yield directory
    marker = f"{directory}{os.sep}"
    leftovers = processes_matching(marker)
    for pid in leftovers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leftovers, f"processes left behind by this test: {leftovers}"


@contextlib.contextmanager
def running_agent(
    directory: Path, *args: str, env: dict[str, str] | None = None, prefix: Sequence[str] = ()
) -> Iterator[AgentUnderTest]:
    agent = AgentUnderTest(directory, args, env=env, prefix=prefix)
    try:
        yield agent
    finally:
        agent.stop()


def client_tls(ca: Path, cert: Path | None = None, key: Path | None = None) -> ClientTls:
    return ClientTls(ca=ca, cert=cert, key=key)
