"""ByteBuddy from Maven Central in a per-user cache: the bytecode library the gate agent
(:mod:`adapters.cluster.gate_agent`) is built with and runs on inside the bookie's JVM.

One jar, ``net.bytebuddy:byte-buddy:<version>``, fetched through the machine's ``mvn`` as the
JaCoCo jars are (:mod:`adapters.installations.jacoco`): ``maven-dependency-plugin:copy``, no POM
needed, offline first when ``~/.m2`` already has it, built in a staging directory and renamed
into place under a lock (:func:`adapters.installations.maven.install_atomically`)::

    $BKCONFORM_HOME/bytebuddy/<version>/byte-buddy-<version>.jar
    $BKCONFORM_HOME/bytebuddy/<version>/bkconform-install.json    written last: complete

Nothing is downloaded at import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations.maven import (
    DEPENDENCY_PLUGIN,
    MavenRun,
    configured_repository,
    install_atomically,
    maven_error_detail,
    maven_tail,
    maven_unreachable,
    run_maven,
    run_offline_first,
    served_text,
)
from adapters.user_state import bkconform_home

#: The version the gate agent is written against (its ``Advice`` and ``AgentBuilder`` API).
DEFAULT_VERSION = "1.18.17"
GROUP_ID = "net.bytebuddy"
ARTIFACT = "byte-buddy"
MARKER = "bkconform-install.json"
#: Bumped whenever the layout changes: an older install counts as not installed.
LAYOUT_VERSION = 1
#: One jar of about 9 MB; a cold Maven (the plugin to fetch first) takes about 30 s.
DEFAULT_MAVEN_TIMEOUT = 300.0
_VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+$")


class ByteBuddyInstallError(ClusterError):
    """ByteBuddy could not be installed; the message names the artifact and why. Not
    retriable: Maven already retried as long as it should."""

    retriable = False


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/bytebuddy``."""
    return bkconform_home(environ) / "bytebuddy"


def check_version(version: str) -> str:
    text = version.strip()
    if not _VERSION_TEXT.match(text):
        raise ByteBuddyInstallError(
            f"not a ByteBuddy version: {version!r} (expected e.g. {DEFAULT_VERSION})"
        )
    return text


def coordinates(version: str) -> str:
    """``group:artifact:version:jar``, as ``-Dartifact`` takes it."""
    return f"{GROUP_ID}:{ARTIFACT}:{check_version(version)}:jar"


def jar_name(version: str) -> str:
    return f"{ARTIFACT}-{check_version(version)}.jar"


@dataclass(frozen=True)
class ByteBuddyInstallation:
    """A complete install (its marker file says so)."""

    version: str
    home: Path
    installed_at: str

    @property
    def jar(self) -> Path:
        return self.home / jar_name(self.version)

    @classmethod
    def read(cls, home: Path) -> ByteBuddyInstallation | None:
        """The install at ``home``, or None if it is not complete (or of an older layout)."""
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != LAYOUT_VERSION:
                return None
            found = cls(str(data["version"]), home, str(data["installed_at"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return found if found.jar.is_file() else None


def find_maven(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    found = shutil.which("mvn", path=env.get("PATH"))
    if found is None:
        raise ByteBuddyInstallError(
            f"installing ByteBuddy ({GROUP_ID}:{ARTIFACT}, for the gate agent) needs Maven and "
            "there is no mvn on PATH: install it (apt-get install maven)"
        )
    return found


def maven_command(
    mvn: str, version: str, output_dir: Path, *, offline: bool, maven_repo: Path | None = None
) -> list[str]:
    """The ``mvn`` call that copies the jar into ``output_dir`` (no POM needed)."""
    command = [mvn, "-B", "-Dstyle.color=never", "-o" if offline else "-U"]
    if maven_repo is not None:
        command.append(f"-Dmaven.repo.local={maven_repo}")
    return [
        *command,
        f"{DEPENDENCY_PLUGIN}:copy",
        f"-Dartifact={coordinates(version)}",
        f"-DoutputDirectory={output_dir}",
        "-Dmdep.stripVersion=false",
    ]


def explain_maven_failure(
    version: str, output: str, *, offline: bool, environ: Mapping[str, str] | None = None
) -> str:
    detail = maven_error_detail(output)
    what = coordinates(version)
    if offline and "offline mode" in output:
        return f"{what} is not in the local Maven repository and the install stays offline{detail}"
    if re.search(r"Could not find artifact|Failure to find|The POM for \S+ is missing", output):
        served = served_text(configured_repository(environ), GROUP_ID, ARTIFACT, version)
        return f"Maven's repository does not serve {what}. {served}{detail}"
    if maven_unreachable(output):
        repository = configured_repository(environ)
        return (
            f"Maven could not reach its repository to download {what}: is "
            f"{repository.describe()} reachable from here?{detail}"
        )
    return f"mvn failed to copy {what}:\n{maven_tail(output)}"


def find_installation(
    version: str = DEFAULT_VERSION, root: Path | None = None
) -> ByteBuddyInstallation | None:
    base = install_root() if root is None else root
    return ByteBuddyInstallation.read(base / check_version(version))


def install(
    version: str = DEFAULT_VERSION,
    *,
    root: Path | None = None,
    offline: bool | None = None,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    maven_repo: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ByteBuddyInstallation:
    """Install ByteBuddy ``version`` (idempotent). ``offline`` as for JaCoCo's install: None
    tries ``mvn -o`` first, online only if ``~/.m2`` lacks the jar.

    :raises ByteBuddyInstallError: no ``mvn``, no network, a version not served, a timeout.
    """
    version = check_version(version)

    def build(staging: Path) -> ByteBuddyInstallation:
        mvn = find_maven(environ)

        def copy(attempt: bool) -> MavenRun:
            command = maven_command(mvn, version, staging, offline=attempt, maven_repo=maven_repo)
            return run_maven(command, timeout, staging, error=ByteBuddyInstallError)

        run_offline_first(
            offline,
            copy,
            lambda run, attempt: ByteBuddyInstallError(
                explain_maven_failure(version, run.output, offline=attempt, environ=environ)
            ),
            resolving=coordinates(version),
        )
        if not (staging / jar_name(version)).is_file():
            raise ByteBuddyInstallError(
                f"mvn reported success copying {coordinates(version)} but "
                f"{jar_name(version)} is not in {staging}"
            )
        installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        marker = {
            "version": version,
            "layout": LAYOUT_VERSION,
            "artifact": coordinates(version),
            "installed_at": installed_at,
        }
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        return ByteBuddyInstallation(version, staging, installed_at)

    return install_atomically(
        install_root(environ) if root is None else root,
        version,
        ByteBuddyInstallation.read,
        build,
    )


__all__ = [
    "DEFAULT_VERSION",
    "ByteBuddyInstallError",
    "ByteBuddyInstallation",
    "coordinates",
    "explain_maven_failure",
    "find_installation",
    "install",
    "install_root",
    "jar_name",
    "maven_command",
]
