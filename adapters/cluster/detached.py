"""Clusters that outlive the command that started them (``bkconform cluster up`` / ``down``).

``cluster up`` starts a :class:`~adapters.cluster.local.LocalCluster`, detaches its processes
and records them in ``<work dir>/cluster.json``, with a pointer to that work dir in
``$BKCONFORM_HOME/cluster.json`` (default ``~/.bkconform``). ``cluster down`` reads the record
and stops every process by process group: SIGTERM, then SIGKILL after a grace period. Before
signalling a recorded pid it checks that the process still carries the work dir in its
command line, so a recycled pid is never signalled; afterwards it scans ``/proc`` for any
process still naming the work dir and fails if one survives.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.cluster.errors import ClusterError, ClusterStateFileError
from adapters.cluster.provider import Endpoints, NodeKind
from adapters.processes import group_members, processes_matching
from adapters.user_state import bkconform_home

STATE_FILE_NAME = "cluster.json"
STATE_VERSION = 1


@dataclass(frozen=True)
class ProcessRecord:
    """One detached process: enough to find it again and stop its process group."""

    name: str
    kind: NodeKind
    node_id: str
    pid: int
    log_path: Path

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind.value,
            "node_id": self.node_id,
            "pid": self.pid,
            "log_path": str(self.log_path),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        return cls(
            name=str(data["name"]),
            kind=NodeKind(data["kind"]),
            node_id=str(data["node_id"]),
            pid=int(data["pid"]),
            log_path=Path(data["log_path"]),
        )


@dataclass(frozen=True)
class DetachedCluster:
    """The record ``cluster up`` writes and ``cluster down`` reads."""

    work_dir: Path
    owns_work_dir: bool
    implementation: str
    endpoints: Endpoints
    processes: tuple[ProcessRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "work_dir": str(self.work_dir),
            "owns_work_dir": self.owns_work_dir,
            "implementation": self.implementation,
            "endpoints": self.endpoints.to_json(),
            "processes": [p.to_json() for p in self.processes],
        }

    @classmethod
    def from_json(cls, data: Any, source: Path) -> DetachedCluster:
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise ClusterStateFileError(
                f"{source} is not a version-{STATE_VERSION} cluster record; "
                "was it written by another bkconform version?"
            )
        try:
            return cls(
                work_dir=Path(data["work_dir"]),
                owns_work_dir=bool(data["owns_work_dir"]),
                implementation=str(data["implementation"]),
                endpoints=Endpoints.from_json(data["endpoints"]),
                processes=tuple(ProcessRecord.from_json(p) for p in data["processes"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ClusterStateFileError(f"{source} is malformed: {exc!r}") from exc


def state_path(work_dir: Path) -> Path:
    return work_dir / STATE_FILE_NAME


def pointer_path() -> Path:
    return bkconform_home() / STATE_FILE_NAME


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=2) + "\n")
    temporary.replace(path)


def write_state(cluster: DetachedCluster) -> Path:
    """Write ``<work dir>/cluster.json`` and point ``$BKCONFORM_HOME/cluster.json`` at it."""
    path = state_path(cluster.work_dir)
    _write_json(path, cluster.to_json())
    _write_json(pointer_path(), {"work_dir": str(cluster.work_dir)})
    return path


def resolve_work_dir(work_dir: Path | None) -> Path:
    """``work_dir`` if given, else the one the pointer file names."""
    if work_dir is not None:
        return work_dir.resolve()
    pointer = pointer_path()
    try:
        data = json.loads(pointer.read_text())
        return Path(data["work_dir"])
    except FileNotFoundError:
        raise ClusterStateFileError(
            f"no running cluster recorded ({pointer} is absent); pass --work-dir"
        ) from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClusterStateFileError(f"{pointer} is unreadable: {exc!r}; pass --work-dir") from exc


def read_state(work_dir: Path) -> DetachedCluster:
    path = state_path(work_dir)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ClusterStateFileError(
            f"{path} does not exist: no cluster was started with this work dir"
        ) from None
    except (OSError, ValueError) as exc:
        raise ClusterStateFileError(f"{path} is unreadable: {exc!r}") from exc
    return DetachedCluster.from_json(data, path)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def stop_detached(cluster: DetachedCluster, grace: float = 10.0) -> list[str]:
    """Stop every process of a detached cluster; returns the names of those that ran.

    :raises ClusterError: a process naming the work dir is still alive afterwards.
    """
    # Every recorded process names a file inside the work dir on its command line.
    marker = f"{cluster.work_dir}{os.sep}"
    running = [p for p in cluster.processes if marker in _cmdline(p.pid)]
    for record in running:
        _signal_group(record.pid, signal.SIGTERM)
        _signal_group(record.pid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while any(group_members(r.pid) for r in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    for record in running:
        _signal_group(record.pid, signal.SIGKILL)
    # Anything else that names the work dir (a child the record does not know about).
    for pid in processes_matching(marker):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while (survivors := processes_matching(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if survivors:
        raise ClusterError(
            f"processes {survivors} of the cluster in {marker} survived SIGKILL; "
            "check them with `ps -o pid,stat,cmd -p " + ",".join(map(str, survivors)) + "`"
        )
    return [r.name for r in running]


def forget(cluster: DetachedCluster) -> None:
    """Remove the record (and the work dir if ``cluster up`` created it)."""
    pointer = pointer_path()
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if Path(json.loads(pointer.read_text())["work_dir"]) == cluster.work_dir:
            pointer.unlink()
    if cluster.owns_work_dir:
        shutil.rmtree(cluster.work_dir, ignore_errors=True)
    else:
        state_path(cluster.work_dir).unlink(missing_ok=True)
