"""Finding the JDK's tools: ``java`` (ZooKeeper, bookies, the Java client's JVM) and ``javac``
(the bookie host, compiled on first use).

Both come from ``$JAVA_HOME/bin`` when ``JAVA_HOME`` is set, else from ``PATH``. They differ in
what a ``JAVA_HOME`` without the tool means: without ``java`` it is a setting that does not
work, reported as such rather than quietly running another JVM; without ``javac`` it is most
likely a JRE, and a JDK on ``PATH`` may still have the compiler.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from adapters.installations.errors import JavaNotFound

#: The Debian package that brings each tool, named in the error that says it is missing.
_PACKAGES = {"java": "openjdk-17-jre-headless", "javac": "openjdk-17-jdk-headless"}


def find_jdk_tool(
    tool: str, environ: Mapping[str, str] | None = None, *, java_home_only: bool = True
) -> str:
    """``$JAVA_HOME/bin/<tool>`` if ``JAVA_HOME`` is set, else ``<tool>`` on ``PATH``.

    ``java_home_only``: a set ``JAVA_HOME`` without an executable ``bin/<tool>`` is an error;
    otherwise ``PATH`` is searched next.

    :raises JavaNotFound: the tool is in neither place (the message says how to get it).
    """
    env = os.environ if environ is None else environ
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / tool
        if os.access(candidate, os.X_OK):
            return str(candidate)
        if java_home_only:
            raise JavaNotFound(
                f"JAVA_HOME={java_home} has no executable bin/{tool}; point JAVA_HOME at a JDK "
                f"(17 or newer) or unset it to use the {tool} on PATH"
            )
    found = shutil.which(tool, path=env.get("PATH"))
    if found is None:
        where = f"JAVA_HOME={java_home} has no bin/{tool}" if java_home else "JAVA_HOME is unset"
        package = _PACKAGES.get(tool, "openjdk-17-jdk-headless")
        raise JavaNotFound(
            f"no {tool} on PATH and {where}; install a JDK 17 "
            f"(e.g. `apt-get install {package}`) or set JAVA_HOME"
        )
    return found


def find_java(environ: Mapping[str, str] | None = None) -> str:
    """``$JAVA_HOME/bin/java`` if ``JAVA_HOME`` is set (an error if it has none), else ``java``
    on ``PATH``."""
    return find_jdk_tool("java", environ)


def find_javac(environ: Mapping[str, str] | None = None) -> str:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on ``PATH``: a ``JAVA_HOME`` that is a JRE has
    no compiler, and one on ``PATH`` will do."""
    return find_jdk_tool("javac", environ, java_home_only=False)


__all__ = ["find_java", "find_javac", "find_jdk_tool"]
