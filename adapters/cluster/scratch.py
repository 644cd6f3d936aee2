"""Where a test cluster's data go when its caller names no directory.

Bookies and ZooKeeper sync their logs to disk before they answer (a bookie's journal before
each add's acknowledgement, ZooKeeper's transaction log before each write's), so a search that
waits for every answer spends much of its time in ``fsync``. A test cluster's data need not
outlive the machine: the faults the suite injects are process crashes and network faults,
after which a file on a memory-backed file system (tmpfs) holds exactly what one on a disk
would. The same code runs either way (the same writes, the same syncs, before the same
answers); only the device behind them is faster (issue 32: a quarter more target steps per
second on real 4.17.3 bookies).

So a cluster's temporary directory goes to tmpfs when the machine has one with room to
spare, else to the system's temporary directory. ``BKCONFORM_SCRATCH`` names the directory to
use instead (any file system: set it to a disk directory to measure on disk).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

#: The memory-backed file system most Linux machines mount.
SHARED_MEMORY = Path("/dev/shm")
#: Room a test cluster may need: three bookies' preallocated journals (16 MiB each), their
#: entry logs and indexes, ZooKeeper's preallocated log (64 MiB), with a wide margin, and
#: room left for others (a container's /dev/shm is often 64 MiB: never that one).
MIN_FREE_BYTES = 2 * 1024**3
ENVIRONMENT = "BKCONFORM_SCRATCH"


def scratch_parent(
    environ: dict[str, str] | os._Environ[str] = os.environ,
    shared_memory: Path = SHARED_MEMORY,
) -> Path | None:
    """The directory a cluster's temporary directory goes in (None: the system's default).

    ``BKCONFORM_SCRATCH`` if set (it must be a writable directory: ValueError says why not);
    else ``shared_memory`` when it is a tmpfs with ``MIN_FREE_BYTES`` free and writable.
    """
    named = environ.get(ENVIRONMENT)
    if named:
        chosen = Path(named)
        if not chosen.is_dir() or not os.access(chosen, os.W_OK):
            raise ValueError(f"{ENVIRONMENT}={named} is not a writable directory")
        return chosen
    if file_system_of(shared_memory) != "tmpfs" or not os.access(shared_memory, os.W_OK):
        return None
    try:
        free = shutil.disk_usage(shared_memory).free
    except OSError:
        return None
    return shared_memory if free >= MIN_FREE_BYTES else None


def make_scratch_dir(prefix: str) -> Path:
    """A fresh directory for one cluster's files (the caller deletes it)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=scratch_parent()))


def file_system_of(path: Path) -> str:
    """The type of the file system ``path`` is on ("tmpfs", "ext4", ...; "unknown" off Linux),
    for a run's description of what it ran on."""
    try:
        mounts = Path("/proc/mounts").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    resolved = str(path.resolve())
    best, kind = "", "unknown"
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind
