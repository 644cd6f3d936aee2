"""Where bkconform keeps per-user state: ``$BKCONFORM_HOME``, default ``~/.bkconform``.

Under it: ``docker/`` (the podman API service, :mod:`adapters.cluster.container_engine`),
``bookkeeper/<version>/`` (installs, :mod:`adapters.installations.bookkeeper`) and
``cluster.json`` (a detached cluster, :mod:`adapters.cluster.detached`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def bkconform_home(environ: Mapping[str, str] | None = None) -> Path:
    """``$BKCONFORM_HOME`` from ``environ`` (default the process's), else ``~/.bkconform``."""
    env = os.environ if environ is None else environ
    configured = env.get("BKCONFORM_HOME")
    return (Path(configured) if configured else Path.home() / ".bkconform").expanduser()
