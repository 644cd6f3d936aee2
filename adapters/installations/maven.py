"""Installs built from Maven into a per-user cache, put in place atomically under a lock, and
the ``mvn`` calls that build them (offline first, each bounded by a timeout).

An install of ``name`` is ``<root>/<name>/``. It is built in a temporary ``.staging-<name>-*``
directory next to it and renamed into place while holding the lock on ``name``, so concurrent
installers wait for one another and an interrupted install never looks complete (what one left
behind, ``.staging-*`` and ``.removing-*``, is cleared by the next install). Used by
:mod:`adapters.installations.bookkeeper` and :mod:`adapters.installations.jacoco`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from adapters.user_state import exclusive_lock

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: The plugin every install's ``mvn`` call runs a goal of.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"

#: An install's description: a dataclass with a ``home`` field (where the install is).
InstallT = TypeVar("InstallT", bound="DataclassInstance")


def install_atomically(
    root: Path,
    name: str,
    read: Callable[[Path], InstallT | None],
    build: Callable[[Path], InstallT],
    *,
    force: bool = False,
) -> InstallT:
    """The complete install at ``root/name`` as ``read`` finds it, or else (or with ``force``)
    a new one: ``build(staging)`` fills an empty staging directory and returns the install as
    built there; it is renamed to ``root/name`` (replacing what was there) and returned with
    its ``home`` there. If ``build`` raises, nothing changes but the staging directory's
    removal."""
    target = root / name
    existing = read(target)
    if existing is not None and not force:
        return existing
    with exclusive_lock(root, name):
        existing = read(target)
        if existing is not None and not force:
            return existing  # installed by a concurrent call while we waited
        # What an interrupted install or removal left behind (never a valid layout).
        for stale in [*root.glob(f".staging-{name}-*"), *root.glob(f".removing-{name}-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=root))
        try:
            built = build(staging)
            if target.exists():  # force, or a layout an older bkconform left
                discard_install(root, target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return dataclasses.replace(built, home=target)


def discard_install(root: Path, target: Path) -> None:
    """Delete an install, renamed away first: a reader never sees a half-deleted install with
    its marker (an interrupted deletion leaves a ``.removing-*`` that the next install clears).
    The caller holds the install's lock."""
    doomed = root / f".removing-{target.name}-{os.getpid()}"
    target.rename(doomed)
    shutil.rmtree(doomed, ignore_errors=True)


@dataclass(frozen=True)
class MavenRun:
    returncode: int
    output: str


def run_maven(
    command: Sequence[str], timeout: float, cwd: Path, *, error: type[Exception]
) -> MavenRun:
    """Run ``command`` in its own process group; kill the group and raise ``error`` when
    ``timeout`` passes."""
    with subprocess.Popen(
        list(command),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise error(
                f"mvn did not finish within {timeout:.0f}s (killed): {' '.join(command)}"
            ) from None
        return MavenRun(process.returncode, output)


def run_offline_first(
    offline: bool | None,
    run: Callable[[bool], MavenRun],
    failure: Callable[[MavenRun, bool], Exception],
    *,
    resolving: str,
    progress: bool = False,
) -> MavenRun:
    """``run(offline)`` until one succeeds: ``offline`` None runs offline (``mvn -o``) first
    and again online only if the local Maven repository lacks something; True or False runs
    just that. A failure that going online cannot help raises ``failure(run, offline)``.
    ``progress`` prints where ``resolving`` (what is resolved) comes from before each run."""
    attempts = [True, False] if offline is None else [offline]
    for index, attempt in enumerate(attempts):
        if progress:
            where = "the local Maven repository" if attempt else "Maven Central"
            print(f"resolving {resolving} from {where}", flush=True)
        done = run(attempt)
        if done.returncode == 0:
            return done
        if index + 1 < len(attempts) and "offline mode" in done.output:
            continue  # not all in ~/.m2 yet: go online
        raise failure(done, attempt)
    raise AssertionError("unreachable: the last attempt returns or raises")


# What Maven's output says -----------------------------------------------------------------

_UNREACHABLE = re.compile(
    r"Could not transfer|Unknown host|UnknownHostException|Connection refused|"
    r"timed out|Network is unreachable|Connect to \S+ failed"
)


def maven_error_detail(output: str) -> str:
    """Maven's first ``[ERROR]`` line, as ``\nmvn said: ...`` (empty when it gave none)."""
    errors = [line for line in output.splitlines() if line.startswith("[ERROR]")]
    first = next((line for line in errors if line.strip() != "[ERROR]"), "")
    return f"\nmvn said: {first.removeprefix('[ERROR] ').strip()}" if first else ""


def maven_unreachable(output: str) -> bool:
    """Did Maven fail because it could not reach its repository?"""
    return _UNREACHABLE.search(output) is not None


def maven_tail(output: str, lines: int = 15) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


__all__ = [
    "DEPENDENCY_PLUGIN",
    "MavenRun",
    "discard_install",
    "install_atomically",
    "maven_error_detail",
    "maven_tail",
    "maven_unreachable",
    "run_maven",
    "run_offline_first",
]
