"""Sets of jars from Maven Central in a per-user cache, each set one install per version.

A :class:`JarSet` describes one set (JaCoCo's agent and CLI, :mod:`adapters.installations.
jacoco`; ByteBuddy's jar, :mod:`adapters.installations.bytebuddy`): its name, its Maven group,
its artifacts (with their classifiers), the versions it accepts and the error it raises. An
install of version ``v`` is ``$BKCONFORM_HOME/<directory>/<v>/`` (default ``~/.bkconform``)::

    <artifact>-<v>[-<classifier>].jar     each jar, as Maven names it
    bkconform-install.json                written last: the install is complete

Each jar is fetched by ``maven-dependency-plugin:copy -Dartifact=...`` (no POM needed), offline
first (``-o``) when ``~/.m2`` already has it, each ``mvn`` call bounded by a timeout. The install
is built in a temporary directory next to its destination and renamed into place under a lock
(:func:`adapters.installations.maven.install_atomically`): concurrent installers wait for one
another and an interrupted install never looks complete. Nothing is downloaded at import.

What an install is, is a subclass of :class:`JarsInstallation` naming its set
(``jar_set``) and adding what only it offers (``agent_jar``, ``jar``);
:func:`find_installation` and :func:`install` take that class.
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
from typing import ClassVar, Self, TypeVar

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

MARKER = "bkconform-install.json"
#: Bumped whenever the layout changes: an older install counts as not installed.
LAYOUT_VERSION = 1
#: A few small jars; a cold Maven (the plugin and its dependencies to fetch first) takes
#: about 30 s.
DEFAULT_MAVEN_TIMEOUT = 300.0


@dataclass(frozen=True)
class Jar:
    """One artifact of a set, without its version: ``classifier`` None is the main jar."""

    artifact: str
    classifier: str | None = None


@dataclass(frozen=True)
class Artifact:
    """One jar of an install: its Maven coordinates and its file name in the install."""

    group: str
    artifact: str
    version: str
    classifier: str | None = None

    @property
    def coordinates(self) -> str:
        """``group:artifact:version:jar[:classifier]``, as ``-Dartifact`` takes it."""
        tail = "" if self.classifier is None else f":{self.classifier}"
        return f"{self.group}:{self.artifact}:{self.version}:jar{tail}"

    @property
    def file_name(self) -> str:
        """The name Maven gives it (``org.jacoco.agent-0.8.15-runtime.jar``)."""
        tail = "" if self.classifier is None else f"-{self.classifier}"
        return f"{self.artifact}-{self.version}{tail}.jar"


@dataclass(frozen=True)
class JarSet:
    """A set of jars installed together, one install per version.

    ``name`` is said in messages (``JaCoCo``), ``directory`` is the install root's name under
    ``$BKCONFORM_HOME``, ``version_pattern`` what a version must match and ``expected`` what
    a message says it should look like; ``purpose`` (optional) says what the jars are for when
    ``mvn`` is missing. Every failure raises ``error`` (not retriable: Maven already retried as
    long as it should)."""

    name: str
    directory: str
    group: str
    jars: tuple[Jar, ...]
    version_pattern: re.Pattern[str]
    expected: str
    error: type[ClusterError]
    purpose: str = ""

    def install_root(self, environ: Mapping[str, str] | None = None) -> Path:
        """Where installs live: ``$BKCONFORM_HOME/<directory>``."""
        return bkconform_home(environ) / self.directory

    def check_version(self, version: str) -> str:
        """``version`` stripped; ``error`` unless it matches ``version_pattern``."""
        text = version.strip()
        if not self.version_pattern.match(text):
            raise self.error(f"not a {self.name} version: {version!r} (expected {self.expected})")
        return text

    def artifacts(self, version: str) -> tuple[Artifact, ...]:
        """The set's jars of ``version``, in ``jars``' order."""
        version = self.check_version(version)
        return tuple(Artifact(self.group, j.artifact, version, j.classifier) for j in self.jars)

    def find_maven(self, environ: Mapping[str, str] | None = None) -> str:
        """``mvn`` on ``PATH``; ``error`` saying how to get it if absent."""
        env = os.environ if environ is None else environ
        found = shutil.which("mvn", path=env.get("PATH"))
        if found is None:
            what = " and ".join(f"{self.group}:{jar.artifact}" for jar in self.jars)
            purpose = f", for {self.purpose}" if self.purpose else ""
            raise self.error(
                f"installing {self.name} ({what}{purpose}) needs Maven and there is no mvn on "
                "PATH: install it (apt-get install maven)"
            )
        return found

    def marker(self, version: str, installed_at: str) -> dict[str, object]:
        """The marker's content: the coordinates as ``artifact`` for a set of one jar, as the
        list ``artifacts`` for more (the layouts installs already have on disk)."""
        coordinates = [artifact.coordinates for artifact in self.artifacts(version)]
        listed: dict[str, object] = (
            {"artifact": coordinates[0]} if len(coordinates) == 1 else {"artifacts": coordinates}
        )
        return {
            "version": version,
            "layout": LAYOUT_VERSION,
            **listed,
            "installed_at": installed_at,
        }


@dataclass(frozen=True)
class JarsInstallation:
    """A complete install of a :class:`JarSet` (its marker file says so). A subclass names its
    set in ``jar_set``."""

    jar_set: ClassVar[JarSet]

    version: str
    home: Path
    installed_at: str

    def path(self, artifact: str) -> Path:
        """Where the install keeps the jar of ``artifact`` (one of ``jar_set.jars``)."""
        found = next(a for a in self.jar_set.artifacts(self.version) if a.artifact == artifact)
        return self.home / found.file_name

    @classmethod
    def read(cls, home: Path) -> Self | None:
        """The install at ``home``, or None if it is not complete (or of an older layout)."""
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != LAYOUT_VERSION:
                return None
            found = cls(str(data["version"]), home, str(data["installed_at"]))
            artifacts = cls.jar_set.artifacts(found.version)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ClusterError):
            return None
        # A marker whose jars were deleted since is no install.
        if not all((home / artifact.file_name).is_file() for artifact in artifacts):
            return None
        return found


InstallationT = TypeVar("InstallationT", bound=JarsInstallation)


def find_installation(
    installation: type[InstallationT], version: str, root: Path | None = None
) -> InstallationT | None:
    """The complete install of ``version`` under ``root`` (default the set's install root)."""
    jar_set = installation.jar_set
    base = jar_set.install_root() if root is None else root
    return installation.read(base / jar_set.check_version(version))


# Maven ----------------------------------------------------------------------------------------


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
            configured_repository(environ), artifact.group, artifact.artifact, artifact.version
        )
        return f"Maven's repository does not serve {what}. {served}{detail}"
    if maven_unreachable(output):
        repository = configured_repository(environ)
        return (
            f"Maven could not reach its repository to download {what}: is "
            f"{repository.describe()} reachable from here?{detail}"
        )
    return f"mvn failed to copy {what}:\n{maven_tail(output)}"


@dataclass(frozen=True)
class _Copying:
    """What every ``mvn`` call of one install shares."""

    jar_set: JarSet
    mvn: str
    staging: Path
    offline: bool | None
    timeout: float
    maven_repo: Path | None
    environ: Mapping[str, str] | None
    progress: bool

    def copy(self, artifact: Artifact) -> None:
        """``artifact``'s jar into the staging directory, offline first; the set's error if
        Maven fails or says it succeeded without the jar."""
        error = self.jar_set.error

        def run(attempt: bool) -> MavenRun:
            command = maven_command(
                self.mvn, artifact, self.staging, offline=attempt, maven_repo=self.maven_repo
            )
            # The staging directory holds no pom.xml: mvn runs the goal outside any project.
            return run_maven(command, self.timeout, self.staging, error=error)

        run_offline_first(
            self.offline,
            run,
            lambda done, attempt: error(
                explain_maven_failure(artifact, done.output, offline=attempt, environ=self.environ)
            ),
            resolving=artifact.coordinates,
            progress=self.progress,
        )
        if not (self.staging / artifact.file_name).is_file():
            raise error(
                f"mvn reported success copying {artifact.coordinates} but {artifact.file_name} "
                f"is not in {self.staging}"
            )


def install(
    installation: type[InstallationT],
    version: str,
    *,
    root: Path | None = None,
    offline: bool | None = None,
    force: bool = False,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    maven_repo: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> InstallationT:
    """Install ``version`` of ``installation``'s set (idempotent: a complete install is
    returned as it is).

    ``offline`` None tries ``mvn -o`` first and goes online only if the local Maven repository
    lacks a jar; True never goes online; False always does. ``force`` reinstalls. ``timeout``
    bounds each ``mvn`` call (the process group is killed after it). ``maven_repo`` overrides
    Maven's local repository (``-Dmaven.repo.local``). ``progress`` prints where each jar is
    resolved from.

    :raises ClusterError: the set's ``error``: no ``mvn``, no network, a version not served, a
        timeout.
    """
    jar_set = installation.jar_set
    version = jar_set.check_version(version)

    def build(staging: Path) -> InstallationT:
        mvn = jar_set.find_maven(environ)
        copying = _Copying(jar_set, mvn, staging, offline, timeout, maven_repo, environ, progress)
        for artifact in jar_set.artifacts(version):
            copying.copy(artifact)
        installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        marker = jar_set.marker(version, installed_at)
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        return installation(version, staging, installed_at)

    return install_atomically(
        jar_set.install_root(environ) if root is None else root,
        version,
        installation.read,
        build,
        force=force,
    )


__all__ = [
    "DEFAULT_MAVEN_TIMEOUT",
    "LAYOUT_VERSION",
    "MARKER",
    "Artifact",
    "Jar",
    "JarSet",
    "JarsInstallation",
    "explain_maven_failure",
    "find_installation",
    "install",
    "maven_command",
]
