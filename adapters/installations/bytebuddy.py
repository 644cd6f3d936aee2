"""ByteBuddy from Maven Central in a per-user cache: the bytecode library the gate agent
(:mod:`adapters.cluster.gate_agent`) is built with and runs on inside the bookie's JVM.

One jar, ``net.bytebuddy:byte-buddy:<version>``, a :class:`~adapters.installations.maven_jars.
JarSet` (:data:`BYTEBUDDY`) installed as the JaCoCo jars are (:mod:`adapters.installations.
jacoco`): ``maven-dependency-plugin:copy``, no POM needed, offline first when ``~/.m2`` already
has it, built in a staging directory and renamed into place under a lock::

    $BKCONFORM_HOME/bytebuddy/<version>/byte-buddy-<version>.jar
    $BKCONFORM_HOME/bytebuddy/<version>/bkconform-install.json    written last: complete

Nothing is downloaded at import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from adapters.errors import ClusterError
from adapters.installations import maven_jars
from adapters.installations.maven_jars import Artifact, JarSet

#: The version the gate agent is written against (its ``Advice`` and ``AgentBuilder`` API).
DEFAULT_VERSION = "1.18.17"
GROUP_ID = "net.bytebuddy"
ARTIFACT = "byte-buddy"
MARKER = maven_jars.MARKER
DEFAULT_MAVEN_TIMEOUT = maven_jars.DEFAULT_MAVEN_TIMEOUT


class ByteBuddyInstallError(ClusterError):
    """ByteBuddy could not be installed; the message names the artifact and why. Not
    retriable: Maven already retried as long as it should."""

    retriable = False


#: The one jar.
BYTEBUDDY = JarSet(
    name="ByteBuddy",
    directory="bytebuddy",
    group=GROUP_ID,
    jars=(maven_jars.Jar(ARTIFACT),),
    version_pattern=re.compile(r"^\d+\.\d+\.\d+$"),
    expected=f"e.g. {DEFAULT_VERSION}",
    error=ByteBuddyInstallError,
    purpose="the gate agent",
)


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/bytebuddy``."""
    return BYTEBUDDY.install_root(environ)


def _artifact(version: str) -> Artifact:
    (artifact,) = BYTEBUDDY.artifacts(version)
    return artifact


def coordinates(version: str) -> str:
    """``group:artifact:version:jar``, as ``-Dartifact`` takes it."""
    return _artifact(version).coordinates


def jar_name(version: str) -> str:
    return _artifact(version).file_name


class ByteBuddyInstallation(maven_jars.JarsInstallation):
    """A complete install (its marker file says so)."""

    jar_set: ClassVar[JarSet] = BYTEBUDDY

    @property
    def jar(self) -> Path:
        return self.path(ARTIFACT)


def maven_command(
    mvn: str, version: str, output_dir: Path, *, offline: bool, maven_repo: Path | None = None
) -> list[str]:
    """The ``mvn`` call that copies the jar into ``output_dir`` (no POM needed)."""
    return maven_jars.maven_command(
        mvn, _artifact(version), output_dir, offline=offline, maven_repo=maven_repo
    )


def explain_maven_failure(
    version: str, output: str, *, offline: bool, environ: Mapping[str, str] | None = None
) -> str:
    return maven_jars.explain_maven_failure(
        _artifact(version), output, offline=offline, environ=environ
    )


def find_installation(
    version: str = DEFAULT_VERSION, root: Path | None = None
) -> ByteBuddyInstallation | None:
    return maven_jars.find_installation(ByteBuddyInstallation, version, root)


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
    return maven_jars.install(
        ByteBuddyInstallation,
        version,
        root=root,
        offline=offline,
        timeout=timeout,
        maven_repo=maven_repo,
        environ=environ,
    )


__all__ = [
    "BYTEBUDDY",
    "DEFAULT_MAVEN_TIMEOUT",
    "DEFAULT_VERSION",
    "MARKER",
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
