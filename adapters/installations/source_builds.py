"""Installs built from a source checkout: ``--bookkeeper PATH`` / ``--zookeeper PATH`` where
PATH is a BookKeeper or ZooKeeper source tree, built with its own Maven build, as a
contributor runs the suite in their CI against the code under review.

A checkout is recognised by its root ``pom.xml`` (:func:`bookkeeper_source`:
``org.apache.bookkeeper:bookkeeper`` with ``bookkeeper-server/``; :func:`zookeeper_source`:
``org.apache.zookeeper:parent`` with ``zookeeper-server/``); its version is that POM's. Which
commit it is:

* a git work tree (PATH is its top level): ``git rev-parse HEAD``; it is *dirty* when ``git
  status --porcelain`` lists anything (untracked files included);
* any other tree (``git archive``, a release's source tarball): the commit written in its
  :data:`COMMIT_FILE` (``git rev-parse HEAD > .bkconform-source-commit``), trusted as it is;
  without one, :data:`UNKNOWN_COMMIT`.

The build is the checkout's own: ``mvn install -DskipTests -pl <server module> -am`` with
its lint plugins skipped (:data:`BUILD_OPTIONS`; plus what the checkout needs here,
:func:`checkout_options`), run in the checkout, into a local Maven
repository of its own, ``$BKCONFORM_HOME/m2-source-builds`` (:data:`MAVEN_REPOSITORY`): a
build of 4.18.0 never replaces the released 4.18.0 in ``~/.m2``, which the release installs
use. Maven's whole output goes to ``<install root>/source/logs/<name>.log``. The install is
then assembled exactly as a release's is (:func:`adapters.installations.releases.assemble`:
the same POM, ``dependency:list`` against that repository, the completeness and linkage
checks, ``lib/``, ``bin/``, ``conf/``), into::

    $BKCONFORM_HOME/<product>/source/<version>-<commit12>[-dirty]/    (or <version>-unknown-commit)
        ...                         a release install's layout (bkconform-install.json)
        bkconform-source.json       the checkout, the commit, dirty or not, the build command,
                                    its log and how long it took

so it is a ``BOOKKEEPER_HOME`` / a ZooKeeper install like any other, and ``bkconform
bookkeeper list`` shows it. ``source/`` keeps source builds apart from the releases (a
release install is named by its version alone).

Reuse: an existing complete build of the same name is used again without Maven when the
commit is known and the checkout is clean; a dirty checkout's build is reused only while its
changes are the same (:attr:`Checkout.state`, a digest of ``git status`` and ``git diff``
and the untracked files), so the shards of one run share one build; a tree of unknown commit
is built every time. Every ``git`` and ``mvn`` runs in its own process group with a timeout;
the group is killed on the timeout or an interrupt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.errors import ClusterError
from adapters.installations import releases
from adapters.installations.maven import install_atomically, maven_tail
from adapters.installations.releases import Installation, Product
from adapters.process_group import run_in_process_group
from adapters.user_state import bkconform_home, exclusive_lock, home_text

#: Written into an install built from source, next to the release marker.
SOURCE_MARKER = releases.SOURCE_MARKER
#: In a checkout that is no git work tree: the commit it is (its first word).
COMMIT_FILE = ".bkconform-source-commit"
#: The commit of a tree that is no git work tree and has no :data:`COMMIT_FILE`.
UNKNOWN_COMMIT = "unknown-commit"
#: Under each product's install root: where its source builds go.
SOURCE_DIRECTORY = "source"
#: Under ``$BKCONFORM_HOME``: the local Maven repository every source build installs into.
MAVEN_REPOSITORY = "m2-source-builds"
#: The checkout's Maven build: 3.5 min for BookKeeper 4.18.0 into a cold repository on 2 busy
#: cores (its plugins and dependencies downloaded first), 1.5 to 3.5 min again; an hour is for
#: slower machines and networks.
DEFAULT_BUILD_TIMEOUT = 3600.0
GIT_TIMEOUT = 120.0
#: The lint and report plugins the build skips (checkstyle, spotbugs, RAT, license, spotless,
#: javadoc, sources, SBOM): they judge the code, not build it. Tests are compiled (other
#: modules' test jars are dependencies) and not run.
BUILD_OPTIONS = (
    "-DskipTests",
    "-Dcheckstyle.skip",
    "-Dspotbugs.skip",
    "-Drat.skip",
    "-Dlicense.skip",
    "-Dspotless.check.skip",
    "-Dspotless.skip",
    "-Dmaven.javadoc.skip",
    "-Dmaven.source.skip",
    "-Dcyclonedx.skip",
    "-Ddependency-check.skip",
)
_COMMIT = re.compile(r"^[0-9a-fA-F]{7,64}$")


class SourceBuildError(ClusterError):
    """A source checkout could not be built into an install (not a checkout of the product,
    no version in its POM, git or Maven failed); the message says why and, for a failed
    build, Maven's last lines and its log. Not retriable: the same tree fails again."""

    retriable = False


@dataclass(frozen=True)
class SourceKind:
    """A product's source checkout: its root POM's ``group:artifact`` and the module that
    builds the server (``-pl``), whose artifact the product installs."""

    product: Product
    group: str
    artifact: str
    module: str
    #: The option that takes such a checkout.
    option: str

    @property
    def name(self) -> str:
        return self.product.name


def _kinds() -> tuple[SourceKind, ...]:
    from adapters.installations.bookkeeper import BOOKKEEPER
    from adapters.installations.zookeeper import ZOOKEEPER

    return (
        SourceKind(
            BOOKKEEPER, "org.apache.bookkeeper", "bookkeeper", "bookkeeper-server", "--bookkeeper"
        ),
        SourceKind(ZOOKEEPER, "org.apache.zookeeper", "parent", "zookeeper-server", "--zookeeper"),
    )


def source_kind(directory: str) -> SourceKind:
    """The kind of checkout of the product installed under ``directory`` (``bookkeeper``,
    ``zookeeper``)."""
    return next(kind for kind in _kinds() if kind.product.directory == directory)


def bookkeeper_source() -> SourceKind:
    return source_kind("bookkeeper")


def zookeeper_source() -> SourceKind:
    return source_kind("zookeeper")


# Recognising a checkout -----------------------------------------------------------------------


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _child_text(element: ET.Element, name: str) -> str | None:
    for child in element:
        if _local(child.tag) == name and child.text and child.text.strip():
            return child.text.strip()
    return None


def read_root_pom(path: Path) -> tuple[str | None, str | None, str | None] | None:
    """``(group, artifact, version)`` of ``path/pom.xml`` (group and version inherited from
    its ``<parent>`` when it names none); None when there is no readable POM."""
    try:
        root = ET.parse(path / "pom.xml").getroot()
    except (OSError, ET.ParseError):
        return None
    parent = next((c for c in root if _local(c.tag) == "parent"), None)
    group = _child_text(root, "groupId") or (
        None if parent is None else _child_text(parent, "groupId")
    )
    version = _child_text(root, "version") or (
        None if parent is None else _child_text(parent, "version")
    )
    return group, _child_text(root, "artifactId"), version


def detect(path: Path) -> SourceKind | None:
    """The kind of source checkout ``path`` is the root of (None: none). Reads one POM."""
    coordinates = read_root_pom(path)
    if coordinates is None:
        return None
    group, artifact, _ = coordinates
    for kind in _kinds():
        if (group, artifact) == (kind.group, kind.artifact) and (path / kind.module).is_dir():
            return kind
    return None


@dataclass(frozen=True)
class Checkout:
    """A source checkout: where, of what, which version and commit."""

    kind: SourceKind
    root: Path
    version: str
    #: The full commit, or :data:`UNKNOWN_COMMIT`.
    commit: str
    #: A git work tree with changes (the build is not of ``commit`` alone).
    dirty: bool
    #: Where the commit was read: ``git``, :data:`COMMIT_FILE` or ``none``.
    commit_from: str
    #: A digest of the changes of a dirty tree (empty when clean).
    state: str = ""

    @property
    def known(self) -> bool:
        return self.commit != UNKNOWN_COMMIT

    @property
    def short_commit(self) -> str:
        return self.commit[:12] if self.known else UNKNOWN_COMMIT

    @property
    def name(self) -> str:
        """The install's name: ``4.18.0-cd06340851d6``, ``...-dirty``, ``4.18.0-unknown-commit``."""
        return f"{self.version}-{self.short_commit}" + ("-dirty" if self.dirty else "")

    def describe(self) -> str:
        """``source build of /tmp/bk-checkout at cd06340851d6`` (``, with uncommitted
        changes``)."""
        at = f"at {self.short_commit}" if self.known else "of unknown commit"
        changes = ", with uncommitted changes" if self.dirty else ""
        return f"source build of {self.root} {at}{changes}"


def _run(
    command: Sequence[str], cwd: Path, timeout: float, *, environ: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``command`` in its own process group; the group is killed on the timeout (then
    :class:`SourceBuildError`) and on any interrupt (re-raised)."""
    done = run_in_process_group(
        command,
        cwd=cwd,
        timeout=timeout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
    )
    if done.returncode is None:
        raise SourceBuildError(
            f"{' '.join(command)} did not finish within {timeout:.0f}s (killed), in {cwd}"
        )
    return subprocess.CompletedProcess(
        list(command), done.returncode, done.stdout or b"", done.stderr or b""
    )


def _git(root: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[bytes] | None:
    """``git -C root ARGS`` (None: no git on this machine)."""
    environ = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        return _run(["git", "-C", str(root), *args], root, timeout, environ=environ)
    except FileNotFoundError:
        return None


def _git_text(root: Path, *args: str, timeout: float) -> str:
    done = _git(root, *args, timeout=timeout)
    if done is None or done.returncode != 0:
        said = "" if done is None else done.stderr.decode(errors="replace").strip()
        raise SourceBuildError(
            f"{root} is a git work tree but `git {' '.join(args)}` failed"
            + (f": {said}" if said else "")
            + f" (or write the commit into {root / COMMIT_FILE})"
        )
    return done.stdout.decode(errors="replace")


def _is_work_tree_root(root: Path, timeout: float) -> bool:
    """Whether ``root`` is the top level of a git work tree whose commit git can read. A tree
    inside another repository's work tree is not that repository; without ``git`` on PATH,
    or when git refuses the repository and a :data:`COMMIT_FILE` says the commit, the tree
    counts as a plain one."""
    if not (root / ".git").exists():
        return False
    done = _git(root, "rev-parse", "--show-toplevel", timeout=timeout)
    if done is None:
        return False
    if done.returncode != 0:
        if (root / COMMIT_FILE).is_file():
            return False
        said = done.stderr.decode(errors="replace").strip()
        raise SourceBuildError(
            f"{root} has a .git but git cannot read it"
            + (f": {said}" if said else "")
            + f" (or write the commit into {root / COMMIT_FILE})"
        )
    top = Path(done.stdout.decode(errors="replace").strip())
    return top.resolve() == root.resolve()


def _changes_digest(root: Path, status: str, timeout: float) -> str:
    """A digest of a dirty tree's changes: the status, the diff against HEAD, and the content
    of each untracked file."""
    digest = hashlib.sha256(status.encode())
    digest.update(_git_text(root, "diff", "HEAD", "--binary", timeout=timeout).encode())
    for line in status.splitlines():
        if line.startswith("?? "):
            untracked = root / line[3:].strip().strip('"')
            with contextlib.suppress(OSError):
                if untracked.is_file():
                    digest.update(untracked.read_bytes())
    return digest.hexdigest()[:16]


def read_checkout(
    path: Path, kind: SourceKind | None = None, *, timeout: float = GIT_TIMEOUT
) -> Checkout:
    """The checkout at ``path`` (of ``kind`` when given).

    :raises SourceBuildError: not a checkout (of ``kind``), no version in its POM, git failed
        in a git work tree, a :data:`COMMIT_FILE` that holds no commit.
    """
    root = path.expanduser().resolve()
    found = detect(root)
    expected = kind or found
    if found is None or expected is None:
        wanted = (
            f"a {kind.name} source checkout (a root pom.xml of {kind.group}:{kind.artifact} with "
            f"{kind.module}/)"
            if kind is not None
            else "a BookKeeper or ZooKeeper source checkout"
        )
        raise SourceBuildError(f"{path} is not {wanted}")
    if found.product.directory != expected.product.directory:
        raise SourceBuildError(
            f"{path} is a {found.name} source checkout, not {expected.name}'s: give it to "
            f"{found.option}"
        )
    coordinates = read_root_pom(root)
    version = None if coordinates is None else coordinates[2]
    if not version or not releases.VERSION_TEXT.match(version):
        raise SourceBuildError(
            f"{root / 'pom.xml'} names no version this suite can read ({version!r}; expected "
            "a literal such as 4.18.0 or 4.19.0-SNAPSHOT)"
        )
    if _is_work_tree_root(root, timeout):
        commit = _git_text(root, "rev-parse", "HEAD", timeout=timeout).strip()
        status = _git_text(root, "status", "--porcelain", "--untracked-files=all", timeout=timeout)
        dirty = bool(status.strip())
        state = _changes_digest(root, status, timeout) if dirty else ""
        return Checkout(found, root, version, commit, dirty, "git", state)
    marker = root / COMMIT_FILE
    if marker.is_file():
        words = marker.read_text(errors="replace").split()
        if not words or not _COMMIT.match(words[0]):
            raise SourceBuildError(
                f"{marker} holds no commit (expected the hex of one, as `git rev-parse HEAD` "
                "prints it)"
            )
        return Checkout(found, root, version, words[0].lower(), False, COMMIT_FILE)
    return Checkout(found, root, version, UNKNOWN_COMMIT, False, "none")


# Installs built from source -------------------------------------------------------------------


def source_root(kind: SourceKind, environ: Mapping[str, str] | None = None) -> Path:
    """Where ``kind``'s source builds live: ``$BKCONFORM_HOME/<product>/source``."""
    return kind.product.install_root(environ) / SOURCE_DIRECTORY


def maven_repository(environ: Mapping[str, str] | None = None) -> Path:
    """The local Maven repository source builds install into."""
    return bkconform_home(environ) / MAVEN_REPOSITORY


@dataclass(frozen=True)
class SourceBuild:
    """An install built from a checkout: the release-like install and how it was built."""

    installation: Installation
    name: str
    checkout: Path
    commit: str
    dirty: bool
    commit_from: str
    state: str
    built_at: str
    build_seconds: float
    build_log: str
    #: Reused as it was (no Maven ran in this call).
    reused: bool = False

    @property
    def home(self) -> Path:
        return self.installation.home

    @property
    def version(self) -> str:
        return self.installation.version

    @property
    def short_commit(self) -> str:
        return self.commit[:12] if self.commit != UNKNOWN_COMMIT else UNKNOWN_COMMIT

    def describe(self) -> str:
        """``source build of /tmp/bk-checkout at cd06340851d6, ~/.bkconform/...``."""
        at = f"at {self.short_commit}" if self.commit != UNKNOWN_COMMIT else "of unknown commit"
        changes = ", with uncommitted changes" if self.dirty else ""
        return f"source build of {self.checkout} {at}{changes}, {home_text(self.home)}"

    def marker(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "checkout": str(self.checkout),
            "commit": self.commit,
            "dirty": self.dirty,
            "commit_from": self.commit_from,
            "state": self.state,
            "built_at": self.built_at,
            "build_seconds": round(self.build_seconds, 1),
            "build_log": self.build_log,
        }


def read_source_build(home: Path) -> SourceBuild | None:
    """The source build at ``home``: its release marker and :data:`SOURCE_MARKER` (None:
    ``home`` is no complete source build)."""
    try:
        data = json.loads((home / SOURCE_MARKER).read_text())
        release = json.loads((home / releases.MARKER).read_text())
        layout = int(release["layout"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    installation = Installation.read(home, layout)
    if installation is None or not isinstance(data, dict):
        return None
    try:
        return SourceBuild(
            installation,
            str(data["name"]),
            Path(str(data["checkout"])),
            str(data["commit"]),
            bool(data["dirty"]),
            str(data.get("commit_from", "")),
            str(data.get("state", "")),
            str(data["built_at"]),
            float(data.get("build_seconds", 0.0)),
            str(data.get("build_log", "")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def installed(kind: SourceKind, root: Path | None = None) -> list[SourceBuild]:
    """Every complete source build of ``kind`` under ``root`` (default :func:`source_root`),
    by name."""
    base = source_root(kind) if root is None else root
    found = []
    if base.is_dir():
        for entry in sorted(base.iterdir()):
            if entry.is_dir() and not entry.name.startswith("."):
                build = read_source_build(entry)
                if build is not None and Installation.read(entry, kind.product.layout):
                    found.append(build)
    return found


#: BookKeeper 4.18's native-io is Rust, cross-compiled by default with cargo-zigbuild (and
#: zig); its POM's documented alternative builds for this host with plain cargo.
PURE_RUST_PROPERTY = "native.io.pure.rust"


def checkout_options(checkout: Checkout, environ: Mapping[str, str] | None = None) -> list[str]:
    """What the checkout's own build needs here beyond :data:`BUILD_OPTIONS`, read from its
    POMs: ``-Dnative.io.pure.rust=true`` for a native-io that offers it when there is no
    ``cargo-zigbuild`` on PATH (its default build needs one)."""
    env = os.environ if environ is None else environ
    options = []
    try:
        native_io = (checkout.root / "native-io" / "pom.xml").read_text(errors="replace")
    except OSError:
        native_io = ""
    if PURE_RUST_PROPERTY in native_io and not shutil.which("cargo-zigbuild", path=env.get("PATH")):
        options.append(f"-D{PURE_RUST_PROPERTY}=true")
    return options


def build_command(
    mvn: str, kind: SourceKind, maven_repo: Path, options: Sequence[str] = ()
) -> list[str]:
    """The checkout's own build of its server module and what it depends on, installed into
    ``maven_repo`` (``options``: :func:`checkout_options`)."""
    return [
        mvn,
        "-B",
        "-ntp",
        "-Dstyle.color=never",
        f"-Dmaven.repo.local={maven_repo}",
        "install",
        *BUILD_OPTIONS,
        *options,
        "-pl",
        kind.module,
        "-am",
    ]


def run_build(command: Sequence[str], checkout: Checkout, log: Path, timeout: float) -> None:
    """Run the build in the checkout, its output into ``log``; the process group is killed on
    the timeout or an interrupt. :class:`SourceBuildError` with Maven's last lines when it
    fails."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as output:
        output.write(f"# {' '.join(command)}\n# in {checkout.root}\n".encode())
        output.flush()
        done = run_in_process_group(
            command,
            cwd=checkout.root,
            timeout=timeout,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    returncode = done.returncode
    if returncode is None:
        raise SourceBuildError(
            f"building {checkout.kind.name} {checkout.version} from {checkout.root} did "
            f"not finish within {timeout:.0f}s (mvn killed); its output: {log}"
        )
    if returncode != 0:
        tail = maven_tail(log.read_text(errors="replace"), 20)
        raise SourceBuildError(
            f"building {checkout.kind.name} {checkout.version} from {checkout.root} failed "
            f"(mvn exit {returncode}); the last lines of its output:\n{tail}\nfull log: {log}"
        )


def install_from_source(
    path: Path,
    kind: SourceKind,
    *,
    root: Path | None = None,
    maven_repo: Path | None = None,
    timeout: float = DEFAULT_BUILD_TIMEOUT,
    force: bool = False,
    environ: Mapping[str, str] | None = None,
    progress: bool = False,
) -> SourceBuild:
    """The install built from the checkout at ``path``: an existing one when it may be reused
    (see the module docstring), else built now (``force``: always).

    :raises SourceBuildError: not a checkout of ``kind``, git failed, the build failed or
        timed out.
    :raises ClusterError: the product's install error when what was built does not assemble
        into a complete install (as for a release).
    """
    checkout = read_checkout(path, kind)
    base = source_root(kind, environ) if root is None else root
    repository = maven_repository(environ) if maven_repo is None else maven_repo
    product = kind.product
    rebuild = force or not checkout.known

    def read(home: Path) -> Installation | None:
        found = read_source_build(home)
        installation = Installation.read(home, product.layout)
        if found is None or installation is None:
            return None
        if (found.commit, found.dirty, found.state) != (
            checkout.commit,
            checkout.dirty,
            checkout.state,
        ):
            return None
        if releases.problems(product, installation):
            return None  # broken since: built again
        return installation

    built: list[str] = []

    def build(staging: Path) -> Installation:
        mvn = releases.find_maven(product, environ)
        log = base / "logs" / f"{checkout.name}.log"
        command = build_command(mvn, kind, repository, checkout_options(checkout, environ))
        if progress:
            print(
                f"building {kind.name} {checkout.version} ({checkout.describe()}) with its "
                f"own Maven build; log: {log}",
                flush=True,
            )
        # One build at a time installs into the shared repository.
        with exclusive_lock(repository.parent, MAVEN_REPOSITORY):
            started = time.monotonic()
            run_build(command, checkout, log, timeout)
            seconds = time.monotonic() - started
            if progress:
                print(f"built in {seconds:.0f}s; assembling the install", flush=True)
            installation = releases.assemble(
                product,
                staging,
                checkout.version,
                maven_repo=repository,
                environ=environ,
                progress=progress,
            )
        marker = SourceBuild(
            installation,
            checkout.name,
            checkout.root,
            checkout.commit,
            checkout.dirty,
            checkout.commit_from,
            checkout.state,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            seconds,
            str(log),
        ).marker()
        marker["build_command"] = command
        (staging / SOURCE_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
        built.append(checkout.name)
        return installation

    done = install_atomically(base, checkout.name, read, build, force=rebuild)
    found = read_source_build(done.home)
    if found is None:
        raise SourceBuildError(f"the source build at {done.home} has no readable {SOURCE_MARKER}")
    return dataclasses.replace(found, reused=not built)


def describe_home(home: Path) -> str | None:
    """How a person reads where the install at ``home`` came from, if it is a source build
    (``source build of /tmp/bk-checkout at cd06340851d6, ~/.bkconform/...``); else None."""
    found = read_source_build(home)
    return None if found is None else found.describe()


__all__ = [
    "BUILD_OPTIONS",
    "COMMIT_FILE",
    "DEFAULT_BUILD_TIMEOUT",
    "MAVEN_REPOSITORY",
    "SOURCE_DIRECTORY",
    "SOURCE_MARKER",
    "UNKNOWN_COMMIT",
    "Checkout",
    "SourceBuild",
    "SourceBuildError",
    "SourceKind",
    "bookkeeper_source",
    "build_command",
    "checkout_options",
    "describe_home",
    "detect",
    "install_from_source",
    "installed",
    "maven_repository",
    "read_checkout",
    "read_root_pom",
    "read_source_build",
    "run_build",
    "source_kind",
    "source_root",
    "zookeeper_source",
]
