"""Small Java programs shipped as source, compiled on first use against a BookKeeper
distribution's jars and cached.

Two programs use this: the bookie host (``adapters.cluster``: restarts a real bookie inside
its JVM) and the Java client's add recorder (``adapters.javaclient``: timestamps each
``addEntry`` callback). Each is compiled into ``<base>/<key>/`` where the key covers the
source, the jars compiled against (names and sizes) and the compiler, so a new BookKeeper
build or an edited source gets a fresh compilation and nothing stale is ever run. Concurrent
callers wait for one compilation; a failed one leaves nothing that looks compiled.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.errors import AdapterError
from adapters.user_state import exclusive_lock

COMPILE_TIMEOUT = 120.0


@dataclass(frozen=True)
class JavaProgram:
    """One source file: ``class_name`` (``bkconform.BookieHost``) and its text."""

    class_name: str
    source: str

    @property
    def file_name(self) -> str:
        return self.class_name.rsplit(".", 1)[-1] + ".java"

    @property
    def class_file(self) -> Path:
        return Path(*self.class_name.split(".")).with_suffix(".class")


class JavaCompileError(AdapterError):
    """The program could not be compiled (the message says why); callers re-raise it as their
    own error, whose remedy they know (the bookie host's is a cluster error, the add
    recorder's a Java-client error)."""


def cache_key(program: JavaProgram, jars: Sequence[Path], javac: str) -> str:
    digest = hashlib.sha256(program.source.encode())
    for jar in sorted(jars):
        digest.update(jar.name.encode())
        digest.update(str(jar.stat().st_size).encode())
    digest.update(str(Path(javac).resolve()).encode())
    return digest.hexdigest()[:16]


def compiled_classes(
    program: JavaProgram, *, lib: Path, key_jars: Sequence[Path], javac: str, base: Path
) -> Path:
    """The class directory of ``program`` compiled against ``lib/*`` (compiled now unless
    cached under ``base``); ``key_jars`` are the jars whose change means recompiling."""
    target = base / cache_key(program, key_jars, javac)
    compiled = target / program.class_file
    if compiled.is_file():
        return target
    base.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(base, "compile"):
        if compiled.is_file():  # compiled by a concurrent caller while we waited
            return target
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=base))
        try:
            source = staging / program.file_name
            source.write_text(program.source, encoding="utf-8")
            _compile(javac, lib, source, staging)
            source.unlink()
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def run_tool(
    command: Sequence[str], *, timeout: float, error: type[AdapterError], what: str
) -> subprocess.CompletedProcess[str]:
    """Run a JDK tool (``javac``, ``java``) to its end, its output captured; ``error`` (with
    ``what`` it was doing) if it does not end within ``timeout`` or cannot start. Its exit
    code is the caller's to read."""
    try:
        return subprocess.run(
            list(command), capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise error(f"{what} took over {timeout:.0f}s ({command[0]})") from exc
    except OSError as exc:
        raise error(f"cannot run {command[0]}: {exc}") from exc


def _compile(javac: str, lib: Path, source: Path, out: Path) -> None:
    command = [javac, "--release", "11", "-nowarn", "-cp", f"{lib}/*", "-d", str(out)]
    done = run_tool(
        [*command, str(source)],
        timeout=COMPILE_TIMEOUT,
        error=JavaCompileError,
        what=f"compiling {source.name}",
    )
    if done.returncode != 0:
        raise JavaCompileError(
            f"{source.name} does not compile against {lib}:\n"
            f"{(done.stdout + done.stderr).strip()[-2000:]}"
        )


__all__ = [
    "COMPILE_TIMEOUT",
    "JavaCompileError",
    "JavaProgram",
    "cache_key",
    "compiled_classes",
    "run_tool",
]
