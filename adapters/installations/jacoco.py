"""JaCoCo installations: the agent and command-line jars from Maven Central in a per-user cache.

The coverage of the real BookKeeper client (``conformance/javaclient/coverage.py``) runs the
client's JVM with JaCoCo's agent (``adapters/javaclient/jacoco_agent.py``) and reads its
execution data with JaCoCo's CLI (``adapters/javaclient/jacoco_cli.py``). Both jars come
from Maven Central through the machine's ``mvn``, like a BookKeeper release
(:mod:`adapters.installations.bookkeeper`), into ``$BKCONFORM_HOME/jacoco/<version>/``
(default ``~/.bkconform``)::

    org.jacoco.agent-<version>-runtime.jar     the agent (-javaagent:...): org.jacoco:
                                               org.jacoco.agent:<version>:jar:runtime
    org.jacoco.cli-<version>-nodeps.jar        the CLI (java -jar ... report): org.jacoco:
                                               org.jacoco.cli:<version>:jar:nodeps
    bkconform-install.json                     written last: the install is complete

The jars are a :class:`~adapters.installations.maven_jars.JarSet` (:data:`JACOCO`): fetched
by ``maven-dependency-plugin:copy`` (no POM needed), offline first when ``~/.m2`` already has
them, built in a temporary directory and renamed into place under a lock (concurrent Spark
executors wait for one another), so an interrupted install never looks complete. Nothing is
downloaded at import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from adapters.errors import ClusterError
from adapters.installations import maven_jars
from adapters.installations.maven_jars import (
    DEFAULT_MAVEN_TIMEOUT,
    MARKER,
    Artifact,
    Jar,
    JarSet,
    JarsInstallation,
    explain_maven_failure,
    maven_command,
)

#: The version installed when none is named: the one whose agent *runtime* jar the coverage
#: was made with (0.8.16's was not served when it was chosen). Which versions the configured
#: repository serves is asked when one cannot be installed (:func:`explain_maven_failure`).
DEFAULT_VERSION = "0.8.15"

GROUP_ID = "org.jacoco"
AGENT = "org.jacoco.agent"
AGENT_CLASSIFIER = "runtime"
CLI = "org.jacoco.cli"
CLI_CLASSIFIER = "nodeps"


class JacocoInstallError(ClusterError):
    """JaCoCo could not be installed; the message names the artifact and why. Not retriable:
    Maven already retried as long as it should."""

    retriable = False


#: The agent's and the CLI's jars.
JACOCO = JarSet(
    name="JaCoCo",
    directory="jacoco",
    group=GROUP_ID,
    jars=(Jar(AGENT, AGENT_CLASSIFIER), Jar(CLI, CLI_CLASSIFIER)),
    version_pattern=re.compile(r"^\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?$"),
    expected=f"major.minor.patch, e.g. {DEFAULT_VERSION}",
    error=JacocoInstallError,
)


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/jacoco``."""
    return JACOCO.install_root(environ)


def check_version(version: str) -> str:
    """``version`` stripped; :class:`JacocoInstallError` unless it looks like 0.8.15."""
    return JACOCO.check_version(version)


def artifacts(version: str) -> tuple[Artifact, Artifact]:
    """The agent's and the CLI's artifacts of ``version``."""
    agent, cli = JACOCO.artifacts(version)
    return agent, cli


class JacocoInstallation(JarsInstallation):
    """A complete install (its marker file says so): where the two jars are."""

    jar_set: ClassVar[JarSet] = JACOCO

    @property
    def agent_jar(self) -> Path:
        """The agent, for ``-javaagent:<agent_jar>=<options>``."""
        return self.path(AGENT)

    @property
    def cli_jar(self) -> Path:
        """The CLI, for ``java -jar <cli_jar> report ...``."""
        return self.path(CLI)


def find_installation(
    version: str = DEFAULT_VERSION, root: Path | None = None
) -> JacocoInstallation | None:
    """The complete install of ``version`` under ``root`` (default :func:`install_root`)."""
    return maven_jars.find_installation(JacocoInstallation, version, root)


def find_maven(environ: Mapping[str, str] | None = None) -> str:
    """``mvn`` on ``PATH``; :class:`JacocoInstallError` saying how to get it if absent."""
    return JACOCO.find_maven(environ)


def install(
    version: str = DEFAULT_VERSION,
    *,
    root: Path | None = None,
    offline: bool | None = None,
    force: bool = False,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    maven_repo: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> JacocoInstallation:
    """Install JaCoCo ``version`` (idempotent: a complete install is returned as it is), as
    :func:`adapters.installations.maven_jars.install` does.

    :raises JacocoInstallError: no ``mvn``, no network, a version not served, a timeout.
    """
    return maven_jars.install(
        JacocoInstallation,
        version,
        root=root,
        offline=offline,
        force=force,
        timeout=timeout,
        maven_repo=maven_repo,
        environ=environ,
        progress=progress,
    )


__all__ = [
    "DEFAULT_MAVEN_TIMEOUT",
    "DEFAULT_VERSION",
    "JACOCO",
    "MARKER",
    "Artifact",
    "JacocoInstallError",
    "JacocoInstallation",
    "artifacts",
    "check_version",
    "explain_maven_failure",
    "find_installation",
    "find_maven",
    "install",
    "install_root",
    "maven_command",
]
