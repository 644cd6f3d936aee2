"""Releases installed from Maven Central with their runtime dependencies: BookKeeper's server
(:mod:`adapters.installations.bookkeeper`) and ZooKeeper's (:mod:`adapters.installations.zookeeper`)
are two values of :class:`Product`, installed, listed and removed by the same code.

An install is ``$BKCONFORM_HOME/<product>/<version>/`` (default ``~/.bkconform``)::

    lib/<group>-<artifact>-<version>[-<classifier>].jar   every runtime jar, named as in the
                                    binary distributions
    maven/pom.xml                   the POM the jars were resolved from
    ...                             what the product adds (launcher, logging configuration)
    bkconform-install.json          written last: the install is complete (with every jar's
                                    size, for the check on each later use)

The jars come from the machine's ``mvn``: ``dependency:list`` (runtime scope, absolute file
names) on the product's rendered POM resolves them into the Maven repository (offline first,
``-o``, when the repository already has them); they are then copied under the distribution's
names. The install is built next to its destination and renamed into place under a lock
(:func:`~adapters.installations.maven.install_atomically`). Nothing is downloaded at import.

An install is accepted only when complete: a resolution during which Maven could not read a
POM is a failure (retried online after an offline one), the jars must hold the classes the
product's programs start from (:attr:`Product.required_classes`), and every class of the
release's own jars must link against the jars resolved (:attr:`Product.own_groups`,
:mod:`adapters.installations.linkage`): what they need is the release's to say. An
install found broken later (:func:`verify`) is an error naming the command that reinstalls it.
Which versions exist is asked of the repository Maven is configured with (:func:`available`),
never assumed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations import linkage, maven
from adapters.installations.maven import (
    DEPENDENCY_PLUGIN,
    METADATA_TIMEOUT,
    MavenRepository,
    MavenRun,
    MetadataUnavailable,
    configured_repository,
    diagnose_local_pom,
    discard_install,
    fetch_versions,
    install_atomically,
    maven_error_detail,
    maven_tail,
    maven_unreachable,
    pom_problems,
    run_maven,
    run_offline_first,
    version_key,
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
class RequiredClass:
    """A class an install must hold (any one of ``names``: releases moved some, e.g. commons
    configuration 1 to 2), and who needs it, for the message when none is there."""

    names: tuple[str, ...]
    needed_by: str

    @property
    def entries(self) -> tuple[str, ...]:
        """Its jar entries, ``org/apache/zookeeper/ZooKeeper.class``."""
        return tuple(name.replace(".", "/") + ".class" for name in self.names)

    def describe(self) -> str:
        return f"{' or '.join(self.names)} ({self.needed_by})"


@dataclass(frozen=True)
class Product:
    """What is installed: ``group:artifact:<version>`` resolved through the POM template
    ``pom_resource`` (in this package; ``placeholder`` replaced by the version), into
    ``$BKCONFORM_HOME/<directory>/<version>``, with ``add_files(staging, version)`` writing
    what the product needs beyond ``lib/``. An install whose marker names another
    ``layout`` counts as not installed (the next use reinstalls it, from ~/.m2). An install
    is complete when its jars hold ``required_classes``; one found broken later raises
    ``broken`` (default ``error``)."""

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
    #: What to use instead when there is no ``mvn``.
    without_maven: str = ""
    #: The classes its programs load: an install whose jars lack one is incomplete.
    required_classes: tuple[RequiredClass, ...] = ()
    #: The groups of the release's own artifacts: every class of their jars at the release's
    #: version must link against the jars Maven resolved (:mod:`.linkage`), so what the
    #: programs need is decided from the release, not from ``required_classes`` alone.
    own_groups: tuple[str, ...] = ()
    #: Raised for an install that was complete and is not any more (None: ``error``).
    broken: type[ClusterError] | None = None
    #: Placeholders of the POM template besides the version, with the values of a first
    #: resolution; ``pom_values(version, listed)`` says, from what that resolution listed (the
    #: release's own POMs are then in the local repository), the values the release itself
    #: asks for: where they differ, the POM is rendered with them and resolved again.
    pom_defaults: Mapping[str, str] = field(default_factory=dict)
    pom_values: Callable[[str, Sequence[ListedArtifact]], Mapping[str, str]] | None = None

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

    def reinstall_command(self, version: str) -> str:
        return f"bkconform {self.directory} install {version} --force"

    def render_pom(self, version: str, values: Mapping[str, str] | None = None) -> str:
        template = (
            resources.files("adapters.installations")
            .joinpath(self.pom_resource)
            .read_text(encoding="utf-8")
        )
        text = template.replace(self.placeholder, self.check_version(version))
        for placeholder, value in {**self.pom_defaults, **(values or {})}.items():
            text = text.replace(placeholder, value)
        return text


@dataclass(frozen=True)
class Installation:
    """A complete install of the current layout (its marker file says so)."""

    version: str
    home: Path
    jars: int
    installed_at: str
    #: Every jar as installed, ``(lib/<name>, size)``; None for an install made before the
    #: marker recorded them (checked by its classes instead, :func:`problems`).
    files: tuple[tuple[str, int], ...] | None = None

    @classmethod
    def read(cls, home: Path, layout: int) -> Installation | None:
        try:
            data = json.loads((home / MARKER).read_text())
            if data.get("layout") != layout:
                return None
            recorded = data.get("files")
            files = (
                None
                if recorded is None
                else tuple(sorted((str(name), int(size)) for name, size in recorded.items()))
            )
            return cls(
                str(data["version"]), home, int(data["jars"]), str(data["installed_at"]), files
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None


# Complete or not ------------------------------------------------------------------------------


def missing_classes(required: Iterable[RequiredClass], jars: Iterable[Path]) -> list[RequiredClass]:
    """The ``required`` classes none of ``jars`` holds (a jar that cannot be read holds none).

    The jars' entries are read, no JVM is started: what goes missing from an install is
    whole jars (a resolution that lost its transitive dependencies, a deleted file), which the
    entries show, in 0.1 s for 68 jars where starting a JVM to load them takes a second or
    more on this machine, and it runs before every use of an install. A present class that
    fails to link (a wrong version of a dependency) is not what this guards against: the
    versions are the release's own, as its POM names them."""
    remaining = list(required)
    wanted = {entry for item in remaining for entry in item.entries}
    found: set[str] = set()
    for jar in jars:
        if not remaining:
            break
        try:
            with zipfile.ZipFile(jar) as archive:
                found.update(name for name in archive.namelist() if name in wanted)
        except (OSError, zipfile.BadZipFile):
            continue
        remaining = [item for item in remaining if not found.intersection(item.entries)]
    return remaining


def describe_classes(classes: Sequence[RequiredClass], shown: int = 4) -> str:
    """The first ``shown`` of ``classes`` with who needs them, and how many more."""
    text = ", ".join(item.describe() for item in classes[:shown])
    return text + (f" and {len(classes) - shown} more" if len(classes) > shown else "")


def problems(product: Product, installation: Installation) -> list[str]:
    """What is wrong with an install that was complete: the jars its marker records that are
    gone or changed size (a cheap stat each; they held every required class when installed),
    or, for an install whose marker records none (made before it did), the required classes
    its ``lib/`` lacks. Empty: it is still complete."""
    home = installation.home
    if installation.files is not None:
        found = []
        for name, size in installation.files:
            try:
                actual = (home / name).stat().st_size
            except OSError:
                found.append(f"{name} is missing")
                continue
            if actual != size:
                found.append(f"{name} has {actual} bytes, {size} when installed")
        return found
    jars = sorted((home / "lib").glob("*.jar"))
    return [
        f"no jar holds {item.describe()}"
        for item in missing_classes(product.required_classes, jars)
    ]


def describe_problems(found: Sequence[str], shown: int = 5) -> str:
    """The first ``shown`` of :func:`problems`' findings, and how many more."""
    return "; ".join(found[:shown]) + (
        f"; and {len(found) - shown} more" if len(found) > shown else ""
    )


#: The marker of an install built from a source checkout (:mod:`.source_builds`).
SOURCE_MARKER = "bkconform-source.json"


def broken_message(product: Product, installation: Installation, found: Sequence[str]) -> str:
    shown = describe_problems(found)
    remedy = f"reinstall with `{product.reinstall_command(installation.version)}`"
    try:  # built from a checkout: building it again is the remedy, not the release
        checkout = json.loads((installation.home / SOURCE_MARKER).read_text())["checkout"]
        remedy = f"build it again with --{product.directory} {checkout}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return (
        f"the {product.name} {installation.version} install at {installation.home} is broken "
        f"({shown}): {remedy}"
    )


def verify(product: Product, installation: Installation) -> Installation:
    """``installation`` if it is still complete (:func:`problems`), else the product's
    ``broken`` error with the command that reinstalls it."""
    found = problems(product, installation)
    if found:
        raise (product.broken or product.error)(broken_message(product, installation, found))
    return installation


def verify_home(product: Product, home: Path) -> None:
    """If ``home`` is an install of ``product`` (its marker, of the current layout), check it
    as :func:`verify` does; any other directory is left to the caller's own checks."""
    installation = Installation.read(home, product.layout)
    if installation is not None:
        verify(product, installation)


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


# What the repository serves -------------------------------------------------------------------


@dataclass(frozen=True)
class Available:
    """The versions of a product the repository Maven is configured with lists, oldest first."""

    repository: MavenRepository
    versions: tuple[str, ...]


def available(
    product: Product,
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = METADATA_TIMEOUT,
) -> Available:
    """Ask the repository Maven is configured with
    (:func:`~adapters.installations.maven.configured_repository`) which versions of
    ``product`` it serves: its ``maven-metadata.xml``, read now, within ``timeout``.

    :raises ClusterError: the product's error, naming the repository and why it could not
        be read.
    """
    repository = configured_repository(environ)
    try:
        versions = fetch_versions(repository.url, product.group, product.artifact, timeout=timeout)
    except MetadataUnavailable as exc:
        raise product.error(
            f"could not ask Maven's repository, {repository.describe()}, which versions of "
            f"{product.coordinates} it serves: {exc}"
        ) from exc
    return Available(repository, tuple(sorted(versions, key=version_key)))


def served_text(
    product: Product,
    version: str,
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = METADATA_TIMEOUT,
) -> str:
    """What the configured repository serves of ``product``, asked now, as a sentence for a
    message about ``version`` (:func:`adapters.installations.maven.served_text`)."""
    return maven.served_text(
        configured_repository(environ),
        product.group,
        product.artifact,
        version,
        timeout=timeout,
        listing=f"`bkconform {product.directory} list --available`",
    )


def explain_maven_failure(
    product: Product,
    version: str,
    output: str,
    *,
    offline: bool,
    incomplete: str | None = None,
    environ: Mapping[str, str] | None = None,
    maven_repo: Path | None = None,
) -> str:
    """One clear sentence (plus Maven's own ``[ERROR]`` line) for a failed resolution;
    ``incomplete``: why a run that exited 0 is not a complete one."""
    artifact = f"{product.coordinates}:{version}"
    if incomplete is not None:
        return explain_incomplete(
            product,
            version,
            incomplete,
            offline=offline,
            environ=environ,
            maven_repo=maven_repo,
            poms=bool(pom_problems(output)),
        )
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
            served = served_text(product, version, environ=environ)
            return (
                f"Maven's repository does not serve {artifact} (mvn could not find {what}). "
                f"{served}{detail}"
            )
        return f"{artifact} needs {what}, which Maven could not find{detail}"
    if maven_unreachable(output):
        repository = configured_repository(environ, maven_repo=maven_repo)
        return (
            f"Maven could not reach its repository to download {artifact}: is "
            f"{repository.describe()} reachable from here?{detail}"
        )
    found = pom_problems(output)
    if found:
        return (
            explain_incomplete(
                product,
                version,
                "; ".join(found),
                offline=offline,
                environ=environ,
                maven_repo=maven_repo,
                poms=True,
            )
            + detail
        )
    return f"mvn failed to resolve {artifact}:\n{maven_tail(output)}"


def explain_incomplete(
    product: Product,
    version: str,
    reason: str,
    *,
    offline: bool,
    environ: Mapping[str, str] | None = None,
    maven_repo: Path | None = None,
    poms: bool = False,
) -> str:
    """The message for a resolution that did not get every dependency: ``reason`` (Maven's
    unreadable POMs, the classes no jar holds), what to do, and with ``poms`` (Maven said it
    could not read a POM) which POM of the local repository explains it."""
    repository = configured_repository(environ, maven_repo=maven_repo)
    local = (
        diagnose_local_pom(repository.local, product.group, product.artifact, version)
        if poms
        else None
    )
    where = f" Local repository {repository.local}: {local.text}." if local else ""
    if local is not None and local.unreadable:
        todo = ""  # deleting the file is what helps, and the sentence above says so
    elif offline:
        todo = (
            f" The install was asked to stay offline: install without --offline to let Maven "
            f"download what is missing from {repository.describe()}."
        )
    else:
        todo = f" Going online ({repository.describe()}) did not complete it."
    return (
        f"{product.name} {version} was not installed: the resolution of "
        f"{product.coordinates}:{version} is incomplete ({reason}).{where}{todo}"
    )


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

    :raises ClusterError: the product's error when it cannot be installed completely (nothing
        is left installed), ``product.broken`` for an existing install that is broken.
    """
    checked = product.check_version(version or product.default_version)

    def read(home: Path) -> Installation | None:
        found = Installation.read(home, product.layout)
        # An existing install is returned only if still complete; with force it is replaced.
        return found if found is None or force else verify(product, found)

    return install_atomically(
        product.install_root(environ) if root is None else root,
        checked,
        read,
        lambda staging: _build(
            product, staging, checked, offline, timeout, maven_repo, environ, progress
        ),
        force=force,
    )


def assemble(
    product: Product,
    staging: Path,
    version: str,
    *,
    maven_repo: Path | None,
    offline: bool | None = None,
    timeout: float = DEFAULT_MAVEN_TIMEOUT,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> Installation:
    """Fill the empty ``staging`` directory with an install of ``version`` of ``product``
    resolved from ``maven_repo`` (Maven's default local repository when None), as
    :func:`install` builds one (resolved, checked complete, ``lib/``, the product's files, the
    marker), and return it: for installers that choose the name and place themselves (an
    install built from a source checkout, :mod:`adapters.installations.source_builds`)."""
    return _build(product, staging, version, offline, timeout, maven_repo, environ, progress)


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
    link_counts: list[int] = []  # the classes of the release's own jars linked, per check

    def resolve(attempt: bool) -> MavenRun:
        command[:] = maven_command(mvn, pom, listing, offline=attempt, maven_repo=maven_repo)
        return run_maven(command, timeout, maven_dir, error=product.error)

    def incomplete(run: MavenRun) -> str | None:
        found = pom_problems(run.output)
        if found:
            return "; ".join(found)
        try:
            listed = parse_listing(listing.read_text())
        except OSError:
            return None  # reported below, as a run that wrote no list
        if not any(
            (a.group, a.artifact, a.version) == (product.group, product.artifact, version)
            for a in listed
        ):
            return f"it listed no {product.coordinates}:{version} itself"
        jars = [artifact.path for artifact in listed if artifact.type == "jar"]
        lacking = missing_classes(product.required_classes, jars)
        if lacking:
            return f"none of the {len(jars)} jars it resolved holds {describe_classes(lacking)}"
        own = [
            a.path
            for a in listed
            if a.type == "jar" and a.group in product.own_groups and a.version == version
        ]
        if own:
            try:
                linked = linkage.check(own, jars, environ=environ)
            except linkage.LinkCheckError as exc:
                raise product.error(f"{product.name} {version}: {exc}") from exc
            if not linked.complete:
                return (
                    f"{len(linked.missing)} types the classes of its own {len(own)} jars need "
                    f"are in none of the {len(jars)} jars it resolved: {linked.describe()}"
                )
            link_counts.append(linked.classes)
        return None

    def resolve_all(resolving: str) -> list[ListedArtifact]:
        """Resolve the POM as written (offline first), checked complete: what it listed."""
        run_offline_first(
            offline,
            resolve,
            lambda run, attempt: product.error(
                explain_maven_failure(
                    product,
                    version,
                    run.output,
                    offline=attempt,
                    incomplete=run.incomplete,
                    environ=environ,
                    maven_repo=maven_repo,
                )
            ),
            resolving=resolving,
            progress=progress,
            incomplete=incomplete,
        )
        try:
            return parse_listing(listing.read_text())
        except OSError as exc:
            raise product.error(
                f"mvn succeeded but wrote no dependency list ({listing}): {exc}"
            ) from exc

    artifacts = resolve_all(f"{product.coordinates}:{version}")
    # A release may ask for other versions of what the install adds (ZooKeeper's logback, from
    # its parent POM): then a second resolution with those, checked the same way.
    asked = dict(product.pom_values(version, artifacts)) if product.pom_values else {}
    if asked and asked != {k: product.pom_defaults.get(k) for k in asked}:
        pom.write_text(product.render_pom(version, asked))
        artifacts = resolve_all(f"{product.coordinates}:{version} ({', '.join(asked.values())})")
    # Byte copies of the jars ``incomplete`` found holding every required class: lib/ does.
    files = _copy_jars(product, staging, version, artifacts)
    product.add_files(staging, version)
    installed_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (staging / MARKER).write_text(
        json.dumps(
            {
                "version": version,
                "layout": product.layout,
                "artifact": f"{product.coordinates}:{version}",
                "jars": len(files),
                **({"linked_classes": link_counts[-1]} if link_counts else {}),
                "installed_at": installed_at,
                "mvn": command,
                "files": files,
            },
            indent=2,
        )
        + "\n"
    )
    return Installation(version, staging, len(files), installed_at, tuple(sorted(files.items())))


def _copy_jars(
    product: Product, staging: Path, version: str, artifacts: Sequence[ListedArtifact]
) -> dict[str, int]:
    """Copy the listed jars into ``lib/``; their paths under ``staging`` and sizes."""
    lib = staging / "lib"
    lib.mkdir()
    copied: dict[str, int] = {}
    for artifact in artifacts:
        if artifact.type != "jar":
            continue
        if not artifact.path.is_file():
            raise product.error(
                f"mvn listed {artifact.path} for {artifact.group}:{artifact.artifact} but the "
                "file is missing"
            )
        target = lib / artifact.distribution_name
        shutil.copyfile(artifact.path, target)
        copied[f"lib/{target.name}"] = target.stat().st_size
    expected = f"{product.group}-{product.artifact}-{version}.jar"
    if not (lib / expected).is_file():
        raise product.error(
            f"mvn resolved {len(copied)} jars but not {product.coordinates}:{version} itself "
            f"(no lib/{expected})"
        )
    return copied


__all__ = [
    "DEFAULT_MAVEN_TIMEOUT",
    "MARKER",
    "VERSION_TEXT",
    "Available",
    "Installation",
    "ListedArtifact",
    "Product",
    "RequiredClass",
    "assemble",
    "available",
    "broken_message",
    "describe_classes",
    "describe_problems",
    "explain_incomplete",
    "explain_maven_failure",
    "find_installation",
    "find_maven",
    "install",
    "installed",
    "maven_command",
    "missing_classes",
    "parse_listing",
    "problems",
    "remove",
    "served_text",
    "verify",
    "verify_home",
    "version_key",
]
