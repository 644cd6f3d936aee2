"""Finding the ``java`` executable the local provider runs ZooKeeper with."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from adapters.cluster.errors import JavaNotFound


def find_java(environ: Mapping[str, str] | None = None) -> str:
    """``$JAVA_HOME/bin/java`` if ``JAVA_HOME`` is set, else ``java`` on ``PATH``."""
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
        raise JavaNotFound(
            f"JAVA_HOME={java_home} has no executable bin/java; point JAVA_HOME at a JDK "
            "(17 or newer) or unset it to use the java on PATH"
        )
    found = shutil.which("java", path=env.get("PATH"))
    if found is None:
        raise JavaNotFound(
            "no java on PATH and JAVA_HOME is unset; install a JDK 17 "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME"
        )
    return found
