"""Running a command in a container's network namespace, preferably without an exec session.

``docker exec`` works everywhere, but podman keeps a ``conmon`` process alive for five minutes
after each exec session ends (to report its exit code), so a test run that partitions nodes
would leave dozens of them behind. When the engine runs on this machine and we are root,
``nsenter --net`` with the host's own binary does the same job with nothing left over; the
exec session is the fallback (remote engines, no root, binary missing on the host).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from adapters.cluster.errors import ClusterError

DEFAULT_TIMEOUT = 15.0


def container_pid(container: Any) -> int:
    """The host pid of the container's init process (0 when it does not run)."""
    container.reload()
    return int(container.attrs.get("State", {}).get("Pid") or 0)


def can_enter_directly(docker_host: str, binary: str) -> bool:
    """True when ``nsenter`` can run the host's ``binary`` in a local container's namespace."""
    return (
        docker_host.startswith("unix://")
        and os.geteuid() == 0
        and shutil.which("nsenter") is not None
        and shutil.which(binary) is not None
    )


def run_in_network_namespace(
    container: Any,
    command: Sequence[str],
    *,
    docker_host: str,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[int, str]:
    """Run ``command`` in the network namespace of ``container``; returns (exit code, output)."""
    if can_enter_directly(docker_host, command[0]):
        pid = container_pid(container)
        if pid <= 0:
            raise ClusterError(f"container {container.name} does not run: no namespace to enter")
        try:
            completed = subprocess.run(
                ["nsenter", "-t", str(pid), "--net", *command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ClusterError(
                f"{' '.join(command)} in {container.name} did not finish in {timeout:.0f} s"
            ) from exc
        return completed.returncode, completed.stdout.decode("utf-8", errors="replace")
    code, output = container.exec_run(list(command))
    return int(code), bytes(output).decode("utf-8", errors="replace")
