"""The bookie host: a small Java program, shipped as source, that runs one real bookie and can
restart it inside its JVM (``adapters/cluster/java_sources/bkconform/BookieHost.java``).

A crash that loses a bookie's disks costs a process restart about 2 s, three quarters of it
the JVM's boot; the host pays that once and restarts the bookie in about 0.5 s, built by
BookKeeper's own ``Main.buildBookieServer`` from the same configuration file. It is compiled
here on first use, against the BookKeeper jars it will run with, into
``$BKCONFORM_HOME/bookie-host/<key>/`` (the key covers the source, the BookKeeper server jar and
the compiler), and run through the distribution's own launcher (``bin/bookkeeper
bkconform.BookieHost``, with ``BOOKIE_EXTRA_CLASSPATH``), so it gets the JVM options and logging
every bookie of that distribution gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from adapters.cluster.errors import BookieHostUnavailable
from adapters.installations import java, java_programs
from adapters.installations.errors import JavaNotFound
from adapters.installations.java_programs import JavaCompileError, JavaProgram
from adapters.user_state import bkconform_home

MAIN_CLASS = "bkconform.BookieHost"
SOURCE = ("java_sources", "bkconform", "BookieHost.java")
#: The host's command on standard input: close the bookie, wipe its disks, start a new one
#: from the same configuration.
RESTART_EMPTY = "restart-empty"
#: The host started with :data:`STANDBY_FLAG` boots and waits: this command builds and
#: starts its bookie (``BookieSettings.standby_jvms``).
START = "start"
STANDBY_FLAG = "--standby"
COMPILE_TIMEOUT = java_programs.COMPILE_TIMEOUT
#: The host's own key in the bookie's configuration file (BookKeeper ignores it). Unset or
#: "true", the default: before closing a bookie the host closes the data-integrity service and
#: waits for its running check, which would otherwise call into the closed RocksDB and kill
#: the JVM (SIGSEGV; 4.16.6, 4.17.3). "false" exists only to reproduce that crash
#: (benchmarks/shutdown_crash.py, docs/findings/bookie-shutdown-sigsegv-4.17.3.md).
INTEGRITY_QUIESCE_KEY = "bkconform.host.integrityQuiesce"


def host_entries(*, integrity_quiesce: bool = True) -> dict[str, str]:
    """Configuration entries for the host (``BookieSettings.extra``): none by default; with
    ``integrity_quiesce=False`` the host closes a bookie in BookKeeper's own order, without the
    workaround of the shutdown crash (the crash's reproducer only)."""
    return {} if integrity_quiesce else {INTEGRITY_QUIESCE_KEY: "false"}


def source_text() -> str:
    node = resources.files("adapters.cluster")
    for part in SOURCE:
        node = node / part
    return node.read_text(encoding="utf-8")


def find_javac(environ: Mapping[str, str] | None = None) -> str:
    """The compiler of the bookie host (:func:`adapters.installations.java.find_javac`).

    Without one the host is unavailable, which has a remedy of its own (plain processes), so
    the error is :class:`BookieHostUnavailable` rather than the locator's ``JavaNotFound``.
    """
    try:
        return java.find_javac(environ)
    except JavaNotFound as exc:
        raise BookieHostUnavailable(
            "no javac (JAVA_HOME/bin/javac or on PATH): the bookie host that restarts real "
            "bookies inside their JVM is compiled on first use. Install a JDK (`apt-get install "
            "openjdk-17-jdk-headless`), or run bookies as plain processes (in_jvm_restarts off)"
        ) from exc


def _server_jars(home: Path) -> list[Path]:
    return sorted(p for p in (home / "lib").glob("*.jar") if "bookkeeper-server" in p.name)


def program() -> JavaProgram:
    return JavaProgram(MAIN_CLASS, source_text())


def cache_key(home: Path, javac: str) -> str:
    return java_programs.cache_key(program(), _server_jars(home), javac)


def host_classes(
    home: Path, *, root: Path | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """The directory holding the compiled host for the distribution at ``home`` (compiled now
    if it is not cached yet; concurrent callers wait for one compilation)."""
    javac = find_javac(environ)
    jars = _server_jars(home)
    if not jars:
        raise BookieHostUnavailable(f"{home}/lib has no bookkeeper-server jar to compile against")
    base = (bkconform_home(environ) / "bookie-host") if root is None else root
    try:
        return java_programs.compiled_classes(
            program(), lib=home / "lib", key_jars=jars, javac=javac, base=base
        )
    except JavaCompileError as exc:
        raise BookieHostUnavailable(
            f"the bookie host cannot be built (the BookKeeper jars lack "
            f"Main.buildBookieServer?): {exc}"
        ) from exc
