"""Where bkconform keeps per-user state: ``$BKCONFORM_HOME``, default ``~/.bkconform``.

Under it: ``docker/`` (the podman API service, :mod:`adapters.cluster.container_engine`),
``bookkeeper/<version>/`` and ``zookeeper/<version>/`` (installs,
:mod:`adapters.installations.releases`) and
``cluster.json`` (a detached cluster, :mod:`adapters.cluster.detached`), ``bookie-host/``
(the compiled bookie host, :mod:`adapters.cluster.bookie_host`) and ``processes/<host>/``
(a record per running child process, for the next run to reap if its owner dies,
:mod:`adapters.process_records`).

It sits at the bottom of ``adapters``, importing nothing of ours, because both the
installations and the cluster providers keep their state here.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Mapping
from pathlib import Path


def bkconform_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$BKCONFORM_HOME`` from ``environ`` (default the process's), else ``~/.bkconform``."""
    env = os.environ if environ is None else environ
    configured = env.get("BKCONFORM_HOME")
    return (Path(configured) if configured else Path.home() / ".bkconform").expanduser()


def home_text(path: Path) -> str:
    """``path`` with the user's home directory as ``~`` (for messages and reports)."""
    try:
        return "~/" + str(path.resolve().relative_to(Path.home().resolve()))
    except (ValueError, RuntimeError):
        return str(path)


@contextlib.contextmanager
def exclusive_lock(root: Path, name: str) -> Iterator[None]:
    """Hold ``root/.lock-<name>`` exclusively: concurrent installs or compilations into the
    same per-user cache (Spark executors start together) wait for one another."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".lock-{name}", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
