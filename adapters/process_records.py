"""Records of the processes bkconform starts, so that the next run stops what a dead one left.

A parent killed with SIGKILL (``kill -9``, the OOM killer, a CI job's timeout) runs no exit
hook: the ZooKeeper servers and bookies it started, each in a session of its own
(:mod:`adapters.processes`), live on, re-parented to init. So every
:class:`~adapters.processes.ManagedProcess` writes a record when it starts::

    $BKCONFORM_HOME/processes/<host>/<pid>-<start>.json
    {"version": 1, "name": "bookie1", "argv": [...],
     "child": {"pid": 4242, "start": 1234567},    # the group leader: its pid is the group id
     "owner": {"pid": 4100, "start": 1234000},    # the Python process that started it
     "host": "...", "boot_id": "...", "pid_namespace": "pid:[4026531836]"}

and removes it when the process is stopped, killed, or detached (``bkconform cluster up``'s
processes are meant to outlive the command). ``start`` is the process's start time in clock
ticks after boot (``/proc/<pid>/stat``, field 22): a pid with another start time is another
process that reused the number.

:func:`reap_orphans` (run once by every process that starts a ManagedProcess, and by
``bkconform run``/``replay``/``scenario`` at their start) reads the records of this host and
boot: a record whose owner is still the same live process is left alone; otherwise the group
is killed (SIGKILL) when its leader is still the recorded process, and the record is removed.
A leader that has gone is never signalled by number; a group whose leader exited but whose
other members live on is reported, not killed (nothing records which processes those are).
Records of another host (a shared home), another pid namespace (a container) or an earlier boot
(removed: their processes are gone) are never acted on.

PR_SET_PDEATHSIG was considered instead: the kernel signals a child when the *thread* that
forked it exits, not the process, so a cluster started from a worker thread (the fault agent's
gRPC handlers, capability checks) would die with that thread; and setting it needs
``preexec_fn``, unsafe with the threads kazoo runs. The bookie host (``commands=True``) needs
neither: it exits when its standard input, a pipe from the parent, closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.user_state import bkconform_home

RECORD_VERSION = 1
RECORDS_DIR = "processes"
PROC = Path("/proc")
_POLL_INTERVAL = 0.05


@dataclass(frozen=True)
class ProcessIdentity:
    """A process as the kernel names it for one boot: its pid and its start time (clock ticks
    after boot). Two identities are the same process only when both agree."""

    pid: int
    start: int

    @classmethod
    def of(cls, pid: int) -> ProcessIdentity | None:
        """The live (non-zombie) process ``pid`` now, or None (no such process, or no /proc)."""
        stat = _stat(pid)
        if stat is None or stat[0] == "Z":
            return None
        return cls(pid, stat[2])

    @classmethod
    def current(cls) -> ProcessIdentity | None:
        return cls.of(os.getpid())

    def alive(self) -> bool:
        """This very process is still running (not merely some process with its pid)."""
        return ProcessIdentity.of(self.pid) == self

    def to_json(self) -> dict[str, int]:
        return {"pid": self.pid, "start": self.start}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProcessIdentity:
        return cls(int(data["pid"]), int(data["start"]))


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, process group, start time)`` of ``pid`` from ``/proc/<pid>/stat``."""
    try:
        raw = (PROC / str(pid) / "stat").read_text()
    except (OSError, ValueError):
        return None
    # The command name may hold spaces and parentheses: fields follow the last ")".
    fields = raw[raw.rfind(")") + 2 :].split()
    try:
        return fields[0], int(fields[2]), int(fields[19])
    except (IndexError, ValueError):
        return None


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``."""
    found = []
    with contextlib.suppress(OSError):
        for entry in PROC.iterdir():
            if entry.name.isdigit():
                stat = _stat(int(entry.name))
                if stat is not None and stat[1] == pgid and stat[0] != "Z":
                    found.append(int(entry.name))
    return found


def boot_id() -> str | None:
    try:
        return (PROC / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None


def pid_namespace() -> str | None:
    try:
        return os.readlink(PROC / "self" / "ns" / "pid")
    except OSError:
        return None


def host_name() -> str:
    return socket.gethostname()


def describe_self() -> dict[str, Any]:
    """This process as a record names it: what :func:`liveness` needs to tell, later and from
    another process, whether it still runs (``results.json``'s ``process``)."""
    me = ProcessIdentity.current()
    return {
        "pid": os.getpid(),
        "start": None if me is None else me.start,
        "host": host_name(),
        "boot_id": boot_id(),
        "pid_namespace": pid_namespace(),
    }


def liveness(described: Mapping[str, Any]) -> str:
    """``"alive"``, ``"dead"`` or ``"unknown"`` for a process :func:`describe_self` described:
    unknown when it ran on another host or in another pid namespace, or when this machine has
    no ``/proc`` to tell by; dead when this machine has rebooted since."""
    try:
        pid, start = int(described["pid"]), described.get("start")
        host = described.get("host")
    except (KeyError, TypeError, ValueError):
        return "unknown"
    if host != host_name() or start is None or boot_id() is None:
        return "unknown"
    if described.get("boot_id") != boot_id():
        return "dead"
    if described.get("pid_namespace") != pid_namespace():
        return "unknown"
    return "alive" if ProcessIdentity(pid, int(start)).alive() else "dead"


# Records ---------------------------------------------------------------------------------


def records_dir(home: Path | None = None) -> Path:
    """This host's records: ``$BKCONFORM_HOME/processes/<host>/``."""
    host = re.sub(r"[^A-Za-z0-9._-]", "_", host_name()) or "host"
    return (bkconform_home() if home is None else home) / RECORDS_DIR / host


@dataclass(frozen=True)
class ChildRecord:
    """One started process group, as recorded on disk."""

    name: str
    argv: tuple[str, ...]
    child: ProcessIdentity
    owner: ProcessIdentity
    host: str
    boot_id: str
    pid_namespace: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": RECORD_VERSION,
            "name": self.name,
            "argv": list(self.argv),
            "child": self.child.to_json(),
            "owner": self.owner.to_json(),
            "host": self.host,
            "boot_id": self.boot_id,
            "pid_namespace": self.pid_namespace,
        }

    @classmethod
    def from_json(cls, data: Any) -> ChildRecord:
        if not isinstance(data, dict) or data.get("version") != RECORD_VERSION:
            raise ValueError(f"not a version-{RECORD_VERSION} process record")
        try:
            return cls(
                name=str(data["name"]),
                argv=tuple(str(a) for a in data["argv"]),
                child=ProcessIdentity.from_json(data["child"]),
                owner=ProcessIdentity.from_json(data["owner"]),
                host=str(data["host"]),
                boot_id=str(data["boot_id"]),
                pid_namespace=None if data["pid_namespace"] is None else str(data["pid_namespace"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed process record: {exc!r}") from exc

    def describe(self) -> str:
        return f"{self.name} (pid {self.child.pid}: {' '.join(self.argv)[:160]})"


def write_record(
    name: str, pid: int, argv: tuple[str, ...], *, home: Path | None = None
) -> Path | None:
    """Record the process group ``pid`` just started by this process; returns the record's
    path, or None when there is nothing to record by (no ``/proc``, the child already gone)
    or it cannot be written (a read-only home must not stop a cluster from starting)."""
    child, owner, boot = ProcessIdentity.of(pid), ProcessIdentity.current(), boot_id()
    if child is None or owner is None or boot is None:
        return None
    record = ChildRecord(name, argv, child, owner, host_name(), boot, pid_namespace())
    directory = records_dir(home)
    path = directory / f"{child.pid}-{child.start}.json"
    temporary = directory / f".{child.pid}-{child.start}.tmp"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps(record.to_json(), indent=1) + "\n")
        temporary.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return None
    return path


def remove_record(path: Path | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()


@dataclass(frozen=True)
class Reaped:
    """What :func:`reap_orphans` did with one record of a dead owner."""

    record: ChildRecord
    killed: list[int]  # the group's members that were signalled
    survivors: list[int]  # members still alive afterwards (or, leader gone, left alone)

    def describe(self) -> str:
        text = f"{self.record.describe()}: killed {self.killed or 'nothing'}"
        return text + (f", still alive: {self.survivors}" if self.survivors else "")


def decide(record: ChildRecord, *, boot: str | None, namespace: str | None) -> str:
    """What to do with a record of this host: ``"keep"`` (its owner lives, or it cannot be
    judged from here), ``"forget"`` (nothing of it can be running) or ``"kill"`` (the owner
    died and the group's leader is still the recorded process)."""
    if boot is None:
        return "keep"
    if record.boot_id != boot:
        return "forget"  # an earlier boot: every process it names is gone
    if record.pid_namespace != namespace:
        return "keep"  # pids of another namespace (a container) mean other processes
    if record.owner.alive():
        return "keep"
    return "kill" if record.child.alive() else "forget"


def reap_orphans(
    *, home: Path | None = None, timeout: float = 5.0, owner: int | None = None
) -> list[Reaped]:
    """Kill the process groups whose owner died without stopping them, and forget their
    records; returns what was done for each record acted on. ``owner``: only records of that
    owner pid (tests). Never raises for a record it cannot read or a process it cannot signal.
    """
    boot, namespace = boot_id(), pid_namespace()
    directory = records_dir(home)
    try:
        paths = sorted(directory.glob("*.json"))
    except OSError:
        return []
    reaped = []
    for path in paths:
        try:
            record = ChildRecord.from_json(json.loads(path.read_text()))
        except FileNotFoundError:
            continue  # stopped meanwhile
        except (OSError, ValueError):
            remove_record(path)  # written atomically: unreadable means damaged, not partial
            continue
        if owner is not None and record.owner.pid != owner:
            continue
        action = decide(record, boot=boot, namespace=namespace)
        if action == "keep":
            continue
        if action == "forget":
            # The leader is gone; members of its group may live on (a pgid is not reused
            # while the group has members), but which processes they are, nothing recorded:
            # report them, signal none. A live process with the leader's pid is another one.
            pgid = record.child.pid
            if record.boot_id == boot and ProcessIdentity.of(pgid) is None:
                leftover = group_members(pgid)
                if leftover:
                    reaped.append(Reaped(record, [], leftover))
            remove_record(path)
            continue
        reaped.append(_kill_group(record, timeout))
        remove_record(path)
    return reaped


def _kill_group(record: ChildRecord, timeout: float) -> Reaped:
    pgid = record.child.pid
    members = group_members(pgid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while (survivors := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(_POLL_INTERVAL)
    return Reaped(record, members, survivors)


_reaped_once = False
_once_lock = threading.Lock()


def reap_orphans_once() -> list[Reaped]:
    """:func:`reap_orphans`, the first time this process calls it; nothing afterwards."""
    global _reaped_once
    with _once_lock:
        if _reaped_once:
            return []
        _reaped_once = True
    return reap_orphans()
