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

Each jar is fetched by ``maven-dependency-plugin:copy -Dartifact=...`` (no POM needed), offline
first (``-o``) when ``~/.m2`` already has it. The install is built in a temporary directory next
to its destination and renamed into place under a lock (concurrent Spark executors wait for one
another), so an interrupted install never looks complete. Nothing is downloaded at import.
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

#: The version installed when none is named: the one whose agent *runtime* jar the coverage
#: was made with (0.8.16's was not served when it was chosen). Which versions the configured
#: repository serves is asked when one cannot be installed (:func:`explain_maven_failure`).
DEFAULT_VERSION = "0.8.15"

GROUP_ID = "org.jacoco"
AGENT = "org.jacoco.agent"
AGENT_CLASSIFIER = "runtime"
CLI = "org.jacoco.cli"
CLI_CLASSIFIER = "nodeps"
MARKER = "bkconform-install.json"
#: Bumped whenever the layout changes: an older install counts as not installed.
LAYOUT_VERSION = 1
#: Two small jars; a cold Maven (plugin and its dependencies to fetch first) takes about 30 s.
DEFAULT_MAVEN_TIMEOUT = 300.0
_VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?$")


class JacocoInstallError(ClusterError):
    """JaCoCo could not be installed; the message names the artifact and why. Not retriable:
    Maven already retried as long as it should."""

    retriable = False


def install_root(environ: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$BKCONFORM_HOME/jacoco``."""
    return bkconform_home(environ) / "jacoco"


def check_version(version: str) -> str:
    """``version`` stripped; :class:`JacocoInstallError` unless it looks like 0.8.15."""
    text = version.strip()
    if not _VERSION_TEXT.match(text):
        raise JacocoInstallError(
            f"not a JaCoCo version: {version!r} (expected major.minor.patch, e.g. "
            f"{DEFAULT_VERSION})"
        )
    return text


@dataclass(frozen=True)
class Artifact:
    """One jar of the install: its Maven coordinates and its file name in the install."""

    artifact: str
    classifier: str
    version: str

    @property
    def coordinates(self) -> str:
        """``group:artifact:version:jar:classifier``, as ``-Dartifact`` takes it."""
        return f"{GROUP_ID}:{self.artifact}:{self.version}:jar:{self.classifier}"

    @property
    def file_name(self) -> str:
        """The name Maven gives it (``org.jacoco.agent-0.8.15-runtime.jar``)."""
        return f"{self.artifact}-{self.version}-{self.classifier}.jar"


def artifacts(version: str) -> tuple[Artifact, Artifact]:
    """The agent's and the CLI's artifacts of ``version``."""
    version = check_version(version)
    return Artifact(AGENT, AGENT_CLASSIFIER, version), Artifact(CLI, CLI_CLASSIFIER, version)


@dataclass(frozen=True)
class JacocoInstallation:
    """A complete install (its marker file says so): where the two jars are."""

    version: str
    home: Path
    installed_at: str

    @property
    def agent_jar(self) -> Path:
        """The agent, for ``-javaagent:<agent_jar>=<options>``."""
        return self.home / artifacts(self.version)[0].file_name

    @property
    def cli_jar(self) -> Path:
        """The CLI, for ``java -jar <cli_jar> report ...``."""
        return self.home / artifacts(self.version)[1].file_name

    @classmethod
    def read(cls, home: Path) -> JacocoInstallation | None:
        """The install at ``home``, or None if it is not complete (or of an older layout)."""
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != LAYOUT_VERSION:
                return None
            found = cls(str(data["version"]), home, str(data["installed_at"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        # A marker whose jars were deleted since is no install.
        if not (found.agent_jar.is_file() and found.cli_jar.is_file()):
            return None
        return found


def find_installation(
    version: str = DEFAULT_VERSION, root: Path | None = None
) -> JacocoInstallation | None:
    """The complete install of ``version`` under ``root`` (default :func:`install_root`)."""
    base = install_root() if root is None else root
    return JacocoInstallation.read(base / check_version(version))


# Maven ----------------------------------------------------------------------------------------


def find_maven(environ: Mapping[str, str] | None = None) -> str:
    """``mvn`` on ``PATH``; :class:`JacocoInstallError` saying how to get it if absent."""
    env = os.environ if environ is None else environ
    found = shutil.which("mvn", path=env.get("PATH"))
    if found is None:
        raise JacocoInstallError(
            f"installing JaCoCo ({GROUP_ID}:{AGENT} and {GROUP_ID}:{CLI}) needs Maven and there "
            "is no mvn on PATH: install it (apt-get install maven)"
        )
    return found


def maven_command(
    mvn: str,
    artifact: Artifact,
    output_dir: Path,
    *,
    offline: bool,
    maven_repo: Path | None = None,
) -> list[str]:
    """The ``mvn`` call that copies ``artifact``'s jar into ``output_dir`` (no POM needed)."""
    command = [mvn, "-B", "-Dstyle.color=never"]
    command.append("-o" if offline else "-U")  # -U: retry an artifact a past miss was cached for
    if maven_repo is not None:
        command.append(f"-Dmaven.repo.local={maven_repo}")
    command += [
        f"{DEPENDENCY_PLUGIN}:copy",
        f"-Dartifact={artifact.coordinates}",
        f"-DoutputDirectory={output_dir}",
        "-Dmdep.stripVersion=false",
    ]
    return command


def explain_maven_failure(
    artifact: Artifact,
    output: str,
    *,
    offline: bool,
    environ: Mapping[str, str] | None = None,
) -> str:
    """One clear sentence (plus Maven's own ``[ERROR]`` line) for a failed copy: the causes a
    release's install tells apart (``releases.explain_maven_failure``), for single jars. A jar
    not served is told with what the configured repository lists, asked now."""
    detail = maven_error_detail(output)
    what = artifact.coordinates
    if offline and "offline mode" in output:
        return (
            f"{what} is not in the local Maven repository and the install was asked to stay "
            f"offline{detail}"
        )
    if re.search(r"Could not find artifact|Failure to find|The POM for \S+ is missing", output):
        served = served_text(
            configured_repository(environ), GROUP_ID, artifact.artifact, artifact.version
        )
        return f"Maven's repository does not serve {what}. {served}{detail}"
    if maven_unreachable(output):
        repository = configured_repository(environ)
        return (
            f"Maven could not reach its repository to download {what}: is "
            f"{repository.describe()} reachable from here?{detail}"
        )
    return f"mvn failed to copy {what}:\n{maven_tail(output)}"


def _copy(
    mvn: str,
    artifact: Artifact,
    staging: Path,
    offline: bool | None,
    timeout: float,
    maven_repo: Path | None,
    progress: bool,
    environ: Mapping[str, str] | None,
) -> None:
    def copy(attempt: bool) -> MavenRun:
        command = maven_command(mvn, artifact, staging, offline=attempt, maven_repo=maven_repo)
        # The staging directory holds no pom.xml: mvn runs the goal outside any project.
        return run_maven(command, timeout, staging, error=JacocoInstallError)

    run_offline_first(
        offline,
        copy,
        lambda run, attempt: JacocoInstallError(
            explain_maven_failure(artifact, run.output, offline=attempt, environ=environ)
        ),
        resolving=artifact.coordinates,
        progress=progress,
    )
    if not (staging / artifact.file_name).is_file():
        raise JacocoInstallError(
            f"mvn reported success copying {artifact.coordinates} but {artifact.file_name} is "
            f"not in {staging}"
        )


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
    """Install JaCoCo ``version`` (idempotent: a complete install is returned as it is).

    ``offline`` None tries ``mvn -o`` first and goes online only if the local Maven repository
    lacks a jar; True never goes online; False always does. ``force`` reinstalls. ``timeout``
    bounds each ``mvn`` call (the process group is killed after it). ``maven_repo`` overrides
    Maven's local repository (``-Dmaven.repo.local``).

    :raises JacocoInstallError: no ``mvn``, no network, a version not served, a timeout.
    """
    version = check_version(version)
    return install_atomically(
        install_root(environ) if root is None else root,
        version,
        JacocoInstallation.read,
        lambda staging: _build(staging, version, offline, timeout, maven_repo, environ, progress),
        force=force,
    )


def _build(
    staging: Path,
    version: str,
    offline: bool | None,
    timeout: float,
    maven_repo: Path | None,
    environ: Mapping[str, str] | None,
    progress: bool,
) -> JacocoInstallation:
    mvn = find_maven(environ)
    for artifact in artifacts(version):
        _copy(mvn, artifact, staging, offline, timeout, maven_repo, progress, environ)
    installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    marker = {
        "version": version,
        "layout": LAYOUT_VERSION,
        "artifacts": [artifact.coordinates for artifact in artifacts(version)],
        "installed_at": installed_at,
    }
    (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    return JacocoInstallation(version, staging, installed_at)


__all__ = [
    "DEFAULT_VERSION",
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
