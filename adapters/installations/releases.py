"""Releases installed from Maven Central with their runtime dependencies: BookKeeper's server
(:mod:`adapters.installations.bookkeeper`) and ZooKeeper's (:mod:`adapters.installations.zookeeper`)
are two values of :class:`Product`, installed, listed and removed by the same code.

An install is ``$BKCONFORM_HOME/<product>/<version>/`` (default ``~/.bkconform``)::

    lib/<group>-<artifact>-<version>[-<classifier>].jar   every runtime jar, named as in the
                                    binary distributions
    maven/pom.xml                   the POM the jars were resolved from
    ...                             what the product adds (launcher, logging configuration)
    bkconform-install.json          written last: the install is complete

The jars come from the machine's ``mvn``: ``dependency:list`` (runtime scope, absolute file
names) on the product's rendered POM resolves them into the Maven repository (offline first,
``-o``, when the repository already has them); they are then copied under the distribution's
names. The install is built next to its destination and renamed into place under a lock
(:func:`~adapters.installations.maven.install_atomically`). Nothing is downloaded at import.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations.maven import (
    DEPENDENCY_PLUGIN,
    MavenRun,
    discard_install,
    install_atomically,
    maven_error_detail,
    maven_tail,
    maven_unreachable,
    run_maven,
    run_offline_first,
)
from adapters.user_state import bkconform_home, exclusive_lock

MARKER = "bkconform-install.json"
DEFAULT_MAVEN_TIMEOUT = 900.0
VERSION_TEXT = re.compile(r"^\d+\.\d+\.\d+(?:[-.][0-9A-Za-z.-]+)?$")
# `mvn dependency:list -DoutputAbsoluteArtifactFilename=true` lines:
#   group:artifact:type[:classifier]:version:scope:/abs/path.jar[ -- module name (auto)]
_LISTED = re.compile(
    r"^\s*(?P<group>[^:\s]+):(?P<artifact>[^:\s]+):(?P<type>[^:\s]+):"
    r"(?:(?P<classifier>[^:\s]+):)?(?P<version>[^:\s]+):"
    r"(?P<scope>compile|runtime|provided|system|test):(?P<path>/\S.*?)"
    r"(?:\s+--\s+module\s.*)?\s*$"
)


@dataclass(frozen=True)
class Product:
    """What is installed: ``group:artifact:<version>`` resolved through the POM template
    ``pom_resource`` (in this package; ``placeholder`` replaced by the version), into
    ``$BKCONFORM_HOME/<directory>/<version>``, with ``add_files(staging, version)`` writing
    what the product needs beyond ``lib/``. An install whose marker names another
    ``layout`` counts as not installed (the next use reinstalls it, from ~/.m2)."""

    name: str
    directory: str
    group: str
    artifact: str
    pom_resource: str
    placeholder: str
    layout: int
    default_version: str
    error: type[ClusterError]
    add_files: Callable[[Path, str], None]
    #: What to say when Maven Central does not serve a version (empty: nothing more).
    unserved_hint: str = ""
    #: What to use instead when there is no ``mvn``.
    without_maven: str = ""

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}"

    def check_version(self, version: str) -> str:
        """``version`` stripped; the product's error unless it looks like 3.9.3."""
        text = version.strip()
        if not VERSION_TEXT.match(text):
            raise self.error(
                f"not a {self.name} version: {version!r} (expected major.minor.patch, e.g. "
                f"{self.default_version})"
            )
        return text

    def install_root(self, environ: Mapping[str, str] | None = None) -> Path:
        """Where installs live: ``$BKCONFORM_HOME/<directory>``."""
        return bkconform_home(environ) / self.directory

    def render_pom(self, version: str) -> str:
        template = (
            resources.files("adapters.installations")
            .joinpath(self.pom_resource)
            .read_text(encoding="utf-8")
        )
        return template.replace(self.placeholder, self.check_version(version))


@dataclass(frozen=True)
class Installation:
    """A complete install of the current layout (its marker file says so)."""

    version: str
    home: Path
    jars: int
    installed_at: str

    @classmethod
    def read(cls, home: Path, layout: int) -> Installation | None:
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != layout:
                return None
            return cls(str(data["version"]), home, int(data["jars"]), str(data["installed_at"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def installed(product: Product, root: Path | None = None) -> list[Installation]:
    """Every complete install of ``product`` under ``root`` (default its install root), by
    version."""
    base = product.install_root() if root is None else root
    found = []
    if base.is_dir():
        for entry in base.iterdir():
            if entry.is_dir() and not entry.name.startswith("."):
                install = Installation.read(entry, product.layout)
                if install is not None:
                    found.append(install)
    return sorted(found, key=lambda i: version_key(i.version))


def find_installation(
    product: Product, version: str, root: Path | None = None
) -> Installation | None:
    base = product.install_root() if root is None else root
    return Installation.read(base / product.check_version(version), product.layout)


def remove(product: Product, version: str, root: Path | None = None) -> bool:
    """Delete the install of ``version``; False if there was none."""
    base = product.install_root() if root is None else root
    target = base / product.check_version(version)
    if not target.exists():
        return False
    with exclusive_lock(base, target.name):
        discard_install(base, target)
    return True


# Maven ----------------------------------------------------------------------------------------


def find_maven(product: Product, environ: Mapping[str, str] | None = None) -> str:
    """``mvn`` on ``PATH``; the product's error saying how to get it if absent."""
    env = os.environ if environ is None else environ
    found = shutil.which("mvn", path=env.get("PATH"))
    if found is None:
        instead = f", or {product.without_maven}" if product.without_maven else ""
        raise product.error(
            f"installing {product.coordinates} needs Maven and there is no mvn on PATH: "
            f"install it (apt-get install maven){instead}"
        )
    return found


def maven_command(
    mvn: str,
    pom: Path,
    listing: Path,
    *,
    offline: bool,
    maven_repo: Path | None = None,
) -> list[str]:
    """The ``mvn`` call that resolves the POM's runtime dependencies and lists their files."""
    command = [mvn, "-B", "-Dstyle.color=never", "-f", str(pom)]
    command.append("-o" if offline else "-U")  # -U: retry artifacts a past miss was cached for
    if maven_repo is not None:
        command.append(f"-Dmaven.repo.local={maven_repo}")
    command += [
        f"{DEPENDENCY_PLUGIN}:list",
        "-DincludeScope=runtime",
        "-DoutputAbsoluteArtifactFilename=true",
        f"-DoutputFile={listing}",
        "-DappendOutput=false",
    ]
    return command


@dataclass(frozen=True)
class ListedArtifact:
    group: str
    artifact: str
    type: str
    classifier: str | None
    version: str
    scope: str
    path: Path

    @property
    def distribution_name(self) -> str:
        """Its file name in a binary distribution's ``lib/``: ``group-artifact-version[-classifier]
        .type``."""
        classifier = f"-{self.classifier}" if self.classifier else ""
        return f"{self.group}-{self.artifact}-{self.version}{classifier}.{self.type}"


def parse_listing(text: str) -> list[ListedArtifact]:
    """The artifacts of a ``dependency:list`` output file (other lines are ignored)."""
    found = []
    for line in text.splitlines():
        match = _LISTED.match(line)
        if match is not None:
            found.append(
                ListedArtifact(
                    match["group"],
                    match["artifact"],
                    match["type"],
                    match["classifier"],
                    match["version"],
                    match["scope"],
                    Path(match["path"]),
                )
            )
    return found


def explain_maven_failure(product: Product, version: str, output: str, *, offline: bool) -> str:
    """One clear sentence (plus Maven's own ``[ERROR]`` line) for a failed resolution."""
    artifact = f"{product.coordinates}:{version}"
    detail = maven_error_detail(output)
    missing = re.search(r"(?:Could not find artifact|Failure to find) (\S+)", output) or re.search(
        r"The POM for (\S+) is missing", output
    )
    if offline and "offline mode" in output:
        return (
            f"{artifact} (or one of its dependencies) is not in the local Maven repository and "
            f"the install was asked to stay offline{detail}"
        )
    if missing is not None:
        what = missing.group(1)
        if what.startswith(f"{product.coordinates}:"):
            hint = f". {product.unserved_hint}" if product.unserved_hint else ""
            return (
                f"Maven Central does not serve {artifact} to this machine (mvn could not find "
                f"{what}){hint}{detail}"
            )
        return f"{artifact} needs {what}, which Maven could not find{detail}"
    if maven_unreachable(output):
        return (
            f"Maven could not reach its repository to download {artifact}: is Maven Central "
            f"reachable from here?{detail}"
        )
    return f"mvn failed to resolve {artifact}:\n{maven_tail(output)}"


# Installing -----------------------------------------------------------------------------------


def install(
    product: Product,
    version: str | None = None,
    *,
    root: Path | None = None,
    offline: bool | None = None,
    force: bool = False,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    maven_repo: Path | None = None,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> Installation:
    """Install ``version`` of ``product`` (default its default version; idempotent: an
    existing complete install is returned as it is).

    ``offline`` None tries ``mvn -o`` first and goes online only if the local Maven
    repository lacks something; True never goes online; False always does. ``force``
    reinstalls. ``timeout`` bounds each ``mvn`` call. ``maven_repo`` overrides Maven's local
    repository (``-Dmaven.repo.local``).
    """
    checked = product.check_version(version or product.default_version)
    return install_atomically(
        product.install_root(environ) if root is None else root,
        checked,
        lambda home: Installation.read(home, product.layout),
        lambda staging: _build(
            product, staging, checked, offline, timeout, maven_repo, environ, progress
        ),
        force=force,
    )


def _build(
    product: Product,
    staging: Path,
    version: str,
    offline: bool | None,
    timeout: float,
    maven_repo: Path | None,
    environ: Mapping[str, str] | None,
    progress: bool,
) -> Installation:
    mvn = find_maven(product, environ)
    maven_dir = staging / "maven"
    maven_dir.mkdir()
    pom = maven_dir / "pom.xml"
    pom.write_text(product.render_pom(version))
    listing = maven_dir / "dependencies.txt"
    command: list[str] = []  # the last call's, the one that succeeded: the marker records it

    def resolve(attempt: bool) -> MavenRun:
        command[:] = maven_command(mvn, pom, listing, offline=attempt, maven_repo=maven_repo)
        return run_maven(command, timeout, maven_dir, error=product.error)

    run_offline_first(
        offline,
        resolve,
        lambda run, attempt: product.error(
            explain_maven_failure(product, version, run.output, offline=attempt)
        ),
        resolving=f"{product.coordinates}:{version}",
        progress=progress,
    )
    try:
        artifacts = parse_listing(listing.read_text())
    except OSError as exc:
        raise product.error(
            f"mvn succeeded but wrote no dependency list ({listing}): {exc}"
        ) from exc
    jars = _copy_jars(product, staging, version, artifacts)
    product.add_files(staging, version)
    installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (staging / MARKER).write_text(
        json.dumps(
            {
                "version": version,
                "layout": product.layout,
                "artifact": f"{product.coordinates}:{version}",
                "jars": jars,
                "installed_at": installed_at,
                "mvn": command,
            },
            indent=2,
        )
        + "\n"
    )
    return Installation(version, staging, jars, installed_at)


def _copy_jars(
    product: Product, staging: Path, version: str, artifacts: Sequence[ListedArtifact]
) -> int:
    lib = staging / "lib"
    lib.mkdir()
    copied = 0
    for artifact in artifacts:
        if artifact.type != "jar":
            continue
        if not artifact.path.is_file():
            raise product.error(
                f"mvn listed {artifact.path} for {artifact.group}:{artifact.artifact} but the "
                "file is missing"
            )
        shutil.copyfile(artifact.path, lib / artifact.distribution_name)
        copied += 1
    expected = f"{product.group}-{product.artifact}-{version}.jar"
    if not (lib / expected).is_file():
        raise product.error(
            f"mvn resolved {copied} jars but not {product.coordinates}:{version} itself "
            f"(no lib/{expected})"
        )
    return copied


__all__ = [
    "DEFAULT_MAVEN_TIMEOUT",
    "MARKER",
    "VERSION_TEXT",
    "Installation",
    "ListedArtifact",
    "Product",
    "explain_maven_failure",
    "find_installation",
    "find_maven",
    "install",
    "installed",
    "maven_command",
    "parse_listing",
    "remove",
    "version_key",
]
