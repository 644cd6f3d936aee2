"""The gate agent: a Java agent, shipped as source, that stops a bookie's threads at named
methods until the harness releases them (``java_sources/bkconform/GateAgent.java``; the harness
side is :mod:`adapters.cluster.gates`, the protocol and what a hold may add are in
docs/adapters/gates.md).

It is built on first use and cached under ``$BKCONFORM_HOME/gate-agent/<key>/``: ByteBuddy is
installed from Maven Central (:mod:`adapters.installations.bytebuddy`), the source compiled
against it (:mod:`adapters.installations.java_programs`: the key covers the source, the
ByteBuddy jar's name and size, hence its version, and the compiler) and packaged as
``gate-agent.jar`` next to a copy of the ByteBuddy jar its manifest's ``Class-Path`` names, so
that the directory is the whole agent. A bookie loads it with :func:`java_option`
(``-javaagent:<jar>=port=P,hold-limit-ms=L``, through the launcher's ``BOOKIE_EXTRA_OPTS``).
The agent is compiled against ByteBuddy alone (it reads BookKeeper's objects by reflection),
so one build serves every BookKeeper release.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations import bytebuddy, java, java_programs
from adapters.installations.errors import JavaNotFound
from adapters.installations.java_programs import JavaCompileError, JavaProgram
from adapters.user_state import bkconform_home, exclusive_lock

MAIN_CLASS = "bkconform.GateAgent"
SOURCE = ("java_sources", "bkconform", "GateAgent.java")
JAR_NAME = "gate-agent.jar"
#: How long a thread stays held when the harness does not release it: then it goes on by itself
#: and the agent says so (a harness error). Long enough for any step of a run, short enough that
#: a forgotten gate costs one client timeout, not a stuck search.
DEFAULT_HOLD_LIMIT_MS = 30_000


class GateAgentUnavailable(ClusterError):
    """The gate agent could not be built: no ``javac``, ByteBuddy not installable, or the
    source does not compile (the message says which)."""

    retriable = False


def source_text() -> str:
    node = resources.files("adapters.cluster")
    for part in SOURCE:
        node = node / part
    return node.read_text(encoding="utf-8")


def program() -> JavaProgram:
    return JavaProgram(MAIN_CLASS, source_text())


def cache_key(bytebuddy_jar: Path, javac: str) -> str:
    """The key of a build: the source, the ByteBuddy jar (name and size) and the compiler."""
    return java_programs.cache_key(program(), [bytebuddy_jar], javac)


def agent_jar(
    *,
    root: Path | None = None,
    environ: Mapping[str, str] | None = None,
    bytebuddy_version: str = bytebuddy.DEFAULT_VERSION,
) -> Path:
    """The packaged agent (built now unless cached; concurrent callers wait for one build)."""
    try:
        javac = java.find_javac(environ)
    except JavaNotFound as exc:
        raise GateAgentUnavailable(
            "no javac (JAVA_HOME/bin/javac or on PATH): the gate agent is compiled on first "
            "use. Install a JDK (`apt-get install openjdk-17-jdk-headless`)"
        ) from exc
    try:
        library = bytebuddy.install(bytebuddy_version, environ=environ)
    except bytebuddy.ByteBuddyInstallError as exc:
        raise GateAgentUnavailable(f"the gate agent needs ByteBuddy: {exc}") from exc
    base = (bkconform_home(environ) / "gate-agent") if root is None else root
    try:
        classes = java_programs.compiled_classes(
            program(), lib=library.home, key_jars=[library.jar], javac=javac, base=base
        )
    except JavaCompileError as exc:
        raise GateAgentUnavailable(f"the gate agent does not compile: {exc}") from exc
    return _packaged(classes, library.jar, base)


def _packaged(classes: Path, library_jar: Path, base: Path) -> Path:
    """``classes/gate-agent.jar``, written once (last, by a rename: a jar that exists is
    complete), with the ByteBuddy jar copied beside it for its ``Class-Path``."""
    jar = classes / JAR_NAME
    if jar.is_file():
        return jar
    with exclusive_lock(base, "package"):
        if jar.is_file():
            return jar
        library_copy = classes / library_jar.name
        if not library_copy.is_file():
            _write_atomically(library_copy, lambda path: shutil.copyfile(library_jar, path))
        _write_atomically(jar, lambda path: _write_jar(path, classes, library_jar.name))
    return jar


def _write_atomically(target: Path, write: Callable[[Path], object]) -> None:
    handle, name = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    os.close(handle)
    staging = Path(name)
    try:
        write(staging)
        staging.rename(target)
    finally:
        staging.unlink(missing_ok=True)


def _write_jar(path: Path, classes: Path, library_name: str) -> None:
    manifest = (
        "Manifest-Version: 1.0\r\n"
        f"Premain-Class: {MAIN_CLASS}\r\n"
        # Relative to the agent jar: the copy beside it (the directory is the whole agent).
        f"Class-Path: {library_name}\r\n"
        "\r\n"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest)
        for class_file in sorted(classes.rglob("*.class")):
            jar.write(class_file, class_file.relative_to(classes).as_posix())


def java_option(jar: Path, port: int, *, hold_limit_ms: int = DEFAULT_HOLD_LIMIT_MS) -> str:
    """The JVM option that loads the agent, listening on 127.0.0.1:``port``. No white space
    (the launcher splits ``BOOKIE_EXTRA_OPTS`` at it): a jar path with a space is refused."""
    if any(c.isspace() for c in str(jar)):
        raise GateAgentUnavailable(
            f"the gate agent's path has white space, which the bookie launcher would split: "
            f"{jar} (set BKCONFORM_HOME to a path without)"
        )
    if hold_limit_ms < 1:
        raise GateAgentUnavailable(f"a hold limit must be positive, got {hold_limit_ms} ms")
    return f"-javaagent:{jar}=port={port},hold-limit-ms={hold_limit_ms}"


__all__ = [
    "DEFAULT_HOLD_LIMIT_MS",
    "JAR_NAME",
    "MAIN_CLASS",
    "GateAgentUnavailable",
    "agent_jar",
    "cache_key",
    "java_option",
    "program",
    "source_text",
]
