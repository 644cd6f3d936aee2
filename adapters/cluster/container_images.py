"""The images a :class:`~adapters.cluster.containers.ContainerCluster` runs, and building ours.

Two sets, chosen by configuration (:class:`ImageSet`):

- the official ones, ``apache/bookkeeper:<version>`` and ``zookeeper:<version>``, pulled from
  a registry by the engine (impossible on machines without one);
- the local ones, built here from ``docker/`` without any registry: a Debian bookworm tree
  made by ``debootstrap`` and imported as an image, then ``docker/base`` (tools for
  partitions), ``docker/zookeeper`` (Debian's ``zookeeper`` package), ``docker/bookkeeper``
  (real BookKeeper: Debian's Java 17 and a BookKeeper install resolved from Maven Central by
  :mod:`adapters.installations.bookkeeper`, one image per version) and ``docker/refbookie``
  (python3 and this project: the reference bookie test double, not BookKeeper).

Builds are idempotent and cached: every local image is tagged with a digest of what it is
built from (its ``docker/`` directory, its base's tag and, for the reference bookie, the
project's Python sources; for BookKeeper, the version and the staged install's launcher,
configuration and jars), so an unchanged image is never rebuilt and a changed source is
never run stale. The debootstrap tree is kept as a tarball under
``$XDG_CACHE_HOME/bkconform/images`` (default ``~/.cache/bkconform/images``), so even a wiped
image store does not debootstrap again.

``docker/`` is at the top of a source checkout; the wheel carries a copy as
``adapters/cluster/container_files/`` (``setup.py``). :func:`docker_dir` finds either, and is
the one way the code reaches these files.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.cluster.container_engine import (
    ContainerEngine,
    ContainerEngineError,
    run_command,
)
from adapters.cluster.errors import ClusterError

#: The directory holding the project's packages: the checkout, or site-packages once installed.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: ``docker/`` as an installed wheel carries it (copied there by ``setup.py``).
PACKAGED_DOCKER_DIR = Path(__file__).resolve().parent / "container_files"
#: A file every complete copy of ``docker/`` has.
_DOCKER_MARKER = Path("refbookie", "Containerfile")
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
IMAGE_PREFIX = "localhost/bkconform"
ROOTFS_IMAGE = f"{IMAGE_PREFIX}/debian-rootfs:{DEBIAN_SUITE}"
#: What the reference bookie needs at run time (the project's own dependencies include Spark).
REFBOOKIE_REQUIREMENTS = ("kazoo", "protobuf", "crc32c")
#: The project's packages whose sources go into the reference-bookie image.
PROJECT_PACKAGES = ("model", "adapters", "conformance")
BUILD_TIMEOUT = 1800.0
#: The repository of the real-BookKeeper images; tags are ``<version>-<digest>``.
BOOKKEEPER_REPOSITORY = f"{IMAGE_PREFIX}/bookkeeper"
#: What of an install goes into the image (``maven/`` and the marker are build records).
STAGED_INSTALL_DIRS = ("bin", "conf", "lib")
ZOOKEEPER_REPOSITORY = f"{IMAGE_PREFIX}/zookeeper-release"
#: What of a ZooKeeper install the release image holds.
ZOOKEEPER_STAGED_DIRS = ("conf", "lib")
#: The entrypoint both ZooKeeper images run (docker/zookeeper's, copied into the release's
#: build context).
ZOOKEEPER_ENTRYPOINT = "zookeeper/docker-entrypoint.sh"
#: How the bookie image is configured:
#: ``reference``: ``adapters.refbookie``, reading a mounted ``/conf/bk_server.conf``;
#: ``local-bookkeeper``: real BookKeeper built here (``docker/bookkeeper``), the same mount;
#: ``bookkeeper``: the official ``apache/bookkeeper`` layout, configured by ``BK_*`` variables.
BOOKIE_IMAGE_KINDS = ("reference", "local-bookkeeper", "bookkeeper")


@dataclass(frozen=True)
class ImageSet:
    """Which images a container cluster runs. Image names are configuration."""

    zookeeper: str
    bookie: str
    #: One of :data:`BOOKIE_IMAGE_KINDS`.
    bookie_kind: str = "reference"

    def __post_init__(self) -> None:
        if self.bookie_kind not in BOOKIE_IMAGE_KINDS:
            raise ValueError(
                f"bookie_kind={self.bookie_kind!r}: expected one of "
                + ", ".join(repr(kind) for kind in BOOKIE_IMAGE_KINDS)
            )

    @property
    def mounts_conf(self) -> bool:
        """Whether the bookie reads a mounted ``/conf/bk_server.conf`` (else ``BK_*``)."""
        return self.bookie_kind != "bookkeeper"

    @property
    def runs_bookkeeper(self) -> bool:
        """Whether the bookies are real BookKeeper (not the reference test double)."""
        return self.bookie_kind != "reference"


def official_images(bookkeeper: str = "4.17.2", zookeeper: str = "3.9.3") -> ImageSet:
    """The Docker Hub images (``apache/bookkeeper`` and ``zookeeper``) at given versions."""
    return ImageSet(
        zookeeper=f"docker.io/library/zookeeper:{zookeeper}",
        bookie=f"docker.io/apache/bookkeeper:{bookkeeper}",
        bookie_kind="bookkeeper",
    )


def docker_dir(project_root: Path | None = None) -> Path:
    """The container files: the checkout's ``docker/``, or the copy in the installed wheel.

    ``project_root`` given: only ``project_root/docker``. Raises :class:`ContainerEngineError`
    naming every place looked at when none holds them.
    """
    if project_root is not None:
        candidates = [project_root / "docker"]
    else:
        # Installed: the copy beside this module. Editable or run from the checkout: docker/
        # next to the packages (and only there if it is ours: an installed wheel's
        # site-packages/docker is the docker SDK).
        candidates = [PACKAGED_DOCKER_DIR, PROJECT_ROOT / "docker"]
    for candidate in candidates:
        if (candidate / _DOCKER_MARKER).is_file():
            return candidate
    raise ContainerEngineError(
        "no Containerfiles for the local images in "
        + " or ".join(str(candidate) for candidate in candidates)
        + ": they come with a source checkout of bkconform (docker/) and with its wheel "
        "(adapters/cluster/container_files/); reinstall bkconform"
    )


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "bkconform" / "images"


def _digest_files(files: Iterable[Path], root: Path, extra: Iterable[str] = ()) -> str:
    sha = hashlib.sha256()
    for item in extra:
        sha.update(item.encode())
        sha.update(b"\0")
    for path in sorted(files):
        sha.update(str(path.relative_to(root)).encode())
        sha.update(b"\0")
        sha.update(path.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()[:12]


def _directory_files(directory: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    return [
        path
        for path in directory.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and (suffixes is None or path.suffix in suffixes)
    ]


@dataclass(frozen=True)
class LocalImages:
    """The tags of the locally built images for the current sources."""

    base: str
    zookeeper: str
    refbookie: str

    def image_set(self) -> ImageSet:
        return ImageSet(zookeeper=self.zookeeper, bookie=self.refbookie)

    def bookkeeper_image_set(self, bookie: str) -> ImageSet:
        """This ZooKeeper with ``bookie``, a tag from :func:`bookkeeper_image_tag`."""
        return ImageSet(zookeeper=self.zookeeper, bookie=bookie, bookie_kind="local-bookkeeper")


def local_image_tags(project_root: Path | None = None) -> LocalImages:
    """Tags that name the images built from the current ``docker/`` and project sources.

    ``project_root`` None: this installation (see :func:`docker_dir`).
    """
    containers = docker_dir(project_root)
    root = PROJECT_ROOT if project_root is None else project_root
    base_digest = _digest_files(_directory_files(containers / "base"), containers, [ROOTFS_IMAGE])
    base = f"{IMAGE_PREFIX}/debian:{base_digest}"
    zookeeper = (
        f"{IMAGE_PREFIX}/zookeeper:"
        f"{_digest_files(_directory_files(containers / 'zookeeper'), containers, [base])}"
    )
    refbookie_digest = _digest_files(
        _directory_files(containers / "refbookie"),
        containers,
        [base, *(f"{name}=={_installed_version(name)}" for name in REFBOOKIE_REQUIREMENTS)],
    )
    sources = [
        path
        for package in PROJECT_PACKAGES
        for path in _directory_files(root / package, (".py", ".proto", ".pyi", ".typed"))
    ]
    if (root / "pyproject.toml").is_file():  # a checkout (an installed wheel has none)
        sources.append(root / "pyproject.toml")
    sources_digest = _digest_files(sources, root, [refbookie_digest])
    return LocalImages(
        base=base, zookeeper=zookeeper, refbookie=f"{IMAGE_PREFIX}/refbookie:{sources_digest}"
    )


def install_version(home: Path) -> str:
    """The BookKeeper version of the install at ``home`` (from its server jar)."""
    from adapters.installations.system import bookkeeper_version

    version = bookkeeper_version(home)
    if version is None:
        raise ContainerEngineError(
            f"{home} holds no bookkeeper-server jar in lib/: not a BookKeeper install to put "
            "in an image"
        )
    return version


def install_fingerprint(home: Path) -> list[str]:
    """What of the install at ``home`` the image holds, as digest input: the launcher and
    configuration by content, the jars by name and size (their names carry their versions;
    hashing ~100 MB of jars on every run would cost more than it could catch)."""
    items: list[str] = []
    for name in STAGED_INSTALL_DIRS:
        directory = home / name
        if not directory.is_dir():
            raise ContainerEngineError(
                f"{home} has no {name}/: not a BookKeeper install to put in an image"
            )
        for path in sorted(_directory_files(directory)):
            relative = path.relative_to(home)
            if name == "lib":
                items.append(f"{relative}:{path.stat().st_size}")
            else:
                items.append(f"{relative}:{hashlib.sha256(path.read_bytes()).hexdigest()}")
    return items


def bookkeeper_image_tag(home: Path, base: str, project_root: Path | None = None) -> str:
    """``localhost/bkconform/bookkeeper:<version>-<digest>``: the image of the install at
    ``home`` on ``base``, digested over ``docker/bookkeeper``, the base's tag, the version
    and :func:`install_fingerprint`."""
    containers = docker_dir(project_root)
    version = install_version(home)
    digest = _digest_files(
        _directory_files(containers / "bookkeeper"),
        containers,
        [base, version, *install_fingerprint(home)],
    )
    return f"{BOOKKEEPER_REPOSITORY}:{version}-{digest}"


def zookeeper_image_tag(home: Path, base: str, project_root: Path | None = None) -> str:
    """``localhost/bkconform/zookeeper-release:<version>-<digest>``: the image of the
    ZooKeeper install at ``home`` on ``base``, digested over ``docker/zookeeper-release``, the
    entrypoint it shares with ``docker/zookeeper``, the base's tag, the version and the
    install's jars (by name and size) and configuration (by content)."""
    containers = docker_dir(project_root)
    version = zookeeper_install_version(home)
    items: list[str] = []
    for name in ZOOKEEPER_STAGED_DIRS:
        for path in sorted(_directory_files(home / name)):
            relative = path.relative_to(home)
            if name == "lib":
                items.append(f"{relative}:{path.stat().st_size}")
            else:
                items.append(f"{relative}:{hashlib.sha256(path.read_bytes()).hexdigest()}")
    digest = _digest_files(
        [*_directory_files(containers / "zookeeper-release"), containers / ZOOKEEPER_ENTRYPOINT],
        containers,
        [base, version, *items],
    )
    return f"{ZOOKEEPER_REPOSITORY}:{version}-{digest}"


def zookeeper_install_version(home: Path) -> str:
    """The ZooKeeper version of the install at ``home`` (from its jar's name)."""
    for name in ZOOKEEPER_STAGED_DIRS:
        if not (home / name).is_dir():
            raise ContainerEngineError(
                f"{home} has no {name}/: not a ZooKeeper install to put in an image "
                "(bkconform zookeeper install VERSION makes one)"
            )
    for jar in sorted((home / "lib").glob("*zookeeper-3*.jar")):
        match = re.search(r"zookeeper-(3\.\d+\.\d+)\.jar$", jar.name)
        if match:
            return match.group(1)
    raise ContainerEngineError(f"{home}/lib holds no zookeeper-3.x.y jar: not a ZooKeeper install")


def _tag_series(tag: str) -> str:
    """``repository:4.17.3`` of ``repository:4.17.3-<digest>``: the version's images (a
    version may hold dashes itself, the digest never does)."""
    return tag.rsplit("-", 1)[0]


def _resolve_install(bookkeeper: str | Path, progress: bool) -> Path:
    """An install's home: ``bookkeeper`` is one, or a version installed now if missing."""
    from adapters.installations import bookkeeper as installs

    if isinstance(bookkeeper, Path):
        home = installs.find_bookkeeper_home(bookkeeper, {})
        assert home is not None  # find_bookkeeper_home raises for a non-install
        return home
    try:
        return installs.install(bookkeeper, progress=progress).home
    except ClusterError as exc:
        raise type(exc)(f"no BookKeeper {bookkeeper} to build an image from: {exc}") from exc


def _stage_tree(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target``, hard-linking files where the filesystem allows: the jars
    are ~100 MB, and the engine reads the context without writing to it."""

    def link_or_copy(src: str, dst: str) -> object:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(source, target, copy_function=link_or_copy)


def _installed_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        raise ContainerEngineError(
            f"{name} is not installed in this Python: the reference-bookie image installs the "
            "versions this environment runs"
        ) from None


#: The build definition of the sources staged from an installed wheel (which has no
#: pyproject.toml): the packages and their data, no dependencies (the image installs its own).
_STAGED_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "bkconform"
version = "{version}"
requires-python = ">=3.11"

[tool.setuptools.packages.find]
include = ["model*", "adapters*", "conformance*"]

[tool.setuptools.package-data]
"*" = ["*.proto", "*.pyi", "py.typed"]
"""


def stage_sources(root: Path, source: Path) -> None:
    """Copy the project's packages under ``root`` into ``source``, buildable as a wheel.

    ``root`` is a checkout (its pyproject.toml and README.md come along) or, for an installed
    bkconform, site-packages (a minimal pyproject.toml is written for the installed version).
    """
    source.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", PACKAGED_DOCKER_DIR.name)
    for package in PROJECT_PACKAGES:
        shutil.copytree(root / package, source / package, ignore=ignore)
    if (root / "pyproject.toml").is_file():
        for name in ("pyproject.toml", "README.md"):
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
    else:
        version = _installed_version("bkconform")
        (source / "pyproject.toml").write_text(_STAGED_PYPROJECT.format(version=version))


def image_exists(engine: ContainerEngine, image: str) -> bool:
    client = engine.client()
    try:
        from docker.errors import ImageNotFound

        try:
            client.images.get(image)
        except ImageNotFound:
            return False
        return True
    finally:
        client.close()


class ImageBuilder:
    """Builds the local images through the engine's command-line tool; idempotent."""

    def __init__(
        self,
        engine: ContainerEngine,
        *,
        project_root: Path | None = None,
        cache: Path | None = None,
        log: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.engine = engine
        #: None: this installation (a checkout, or the installed wheel); see :func:`docker_dir`.
        self.project_root = project_root
        self.cache = cache or cache_dir()
        self.log = log

    def ensure_all(self) -> LocalImages:
        """Build whatever of the local images is missing; returns their tags."""
        tags = self._ensure_common()
        if not image_exists(self.engine, tags.refbookie):
            self._build_refbookie(tags)
            self._prune_other_tags(tags.refbookie)
        else:
            self.log(f"{tags.refbookie} is up to date")
        return tags

    def ensure_bookkeeper(self, bookkeeper: str | Path, *, progress: bool = False) -> ImageSet:
        """ZooKeeper and a real-BookKeeper bookie image, built if missing.

        ``bookkeeper`` is a version (installed from Maven Central first if it is not yet:
        :class:`~adapters.installations.bookkeeper.BookKeeperInstallError` names why when
        Maven does not serve it) or an install's home directory.
        """
        home = _resolve_install(bookkeeper, progress)
        tags = self._ensure_common()
        tag = bookkeeper_image_tag(home, tags.base, self.project_root)
        if image_exists(self.engine, tag):
            self.log(f"{tag} is up to date")
        else:
            self._build_bookkeeper(tag, home, tags.base)
            # Only this version's older builds: images of other versions stay usable.
            self._prune_other_tags(tag, series=_tag_series(tag))
        return tags.bookkeeper_image_set(tag)

    def ensure_zookeeper(self, home: Path) -> str:
        """The image of the ZooKeeper install at ``home`` (a release from Maven Central:
        :func:`adapters.installations.zookeeper.locate_zookeeper`), built if missing; its tag."""
        base = self._ensure_common().base
        tag = zookeeper_image_tag(home, base, self.project_root)
        if image_exists(self.engine, tag):
            self.log(f"{tag} is up to date")
            return tag
        self.cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="zookeeper-context-", dir=self.cache) as directory:
            context = Path(directory) / "context"
            containers = docker_dir(self.project_root)
            shutil.copytree(containers / "zookeeper-release", context)
            shutil.copy2(containers / ZOOKEEPER_ENTRYPOINT, context / "docker-entrypoint.sh")
            self.log(f"staging {home} for {tag}")
            for name in ZOOKEEPER_STAGED_DIRS:
                _stage_tree(home / name, context / "zookeeper" / name)
            self._build(tag, context, {"BASE": base})
        self._prune_other_tags(tag, series=_tag_series(tag))
        return tag

    def _ensure_common(self) -> LocalImages:
        """The rootfs, base and ZooKeeper images every local image set uses."""
        containers = docker_dir(self.project_root)
        tags = local_image_tags(self.project_root)
        self.ensure_rootfs()
        self._ensure_built(tags.base, containers / "base", {"ROOTFS": ROOTFS_IMAGE})
        self._ensure_built(tags.zookeeper, containers / "zookeeper", {"BASE": tags.base})
        return tags

    def _prune_other_tags(self, keep: str, *, series: str | None = None) -> None:
        """Remove the repository's images built from older sources (unless still in use);
        ``series`` given, only the tags of that series (see :func:`_tag_series`)."""
        from docker.errors import APIError

        repository = keep.rsplit(":", 1)[0]
        client = self.engine.client()
        try:
            for image in client.images.list(name=repository):
                if keep in image.tags:
                    continue
                for tag in image.tags:
                    if series is not None and _tag_series(tag) != series:
                        continue
                    # A container still running it keeps it; the next build prunes it.
                    with contextlib.suppress(APIError):
                        client.images.remove(tag)
        finally:
            client.close()

    @property
    def rootfs_tarball(self) -> Path:
        return self.cache / f"debian-{DEBIAN_SUITE}-minbase.tar"

    def ensure_rootfs(self) -> None:
        """Import the debootstrap tree as :data:`ROOTFS_IMAGE` (debootstrap once, cached)."""
        if image_exists(self.engine, ROOTFS_IMAGE):
            self.log(f"{ROOTFS_IMAGE} is present")
            return
        if not self.rootfs_tarball.exists():
            self._debootstrap()
        self.log(f"importing {self.rootfs_tarball} as {ROOTFS_IMAGE}")
        self.engine.run_cli(
            ["import", "-", ROOTFS_IMAGE], timeout=600, input_file=self.rootfs_tarball
        )

    def _debootstrap(self) -> None:
        debootstrap = shutil.which("debootstrap")
        if debootstrap is None:
            raise ContainerEngineError(
                "debootstrap is not installed (bkconform docker setup installs it)"
            )
        if os.geteuid() != 0:
            raise ContainerEngineError("debootstrap needs root to build the Debian base image")
        self.cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="rootfs-", dir=self.cache) as tree:
            command = [debootstrap, "--variant=minbase", DEBIAN_SUITE, tree, DEBIAN_MIRROR]
            self.log(" ".join(command))
            self._run(command, timeout=BUILD_TIMEOUT)
            partial = self.rootfs_tarball.with_suffix(".tar.partial")
            self._run(["tar", "-C", tree, "-cf", str(partial), "."], timeout=600)
            partial.rename(self.rootfs_tarball)

    def _ensure_built(self, tag: str, context: Path, build_args: Mapping[str, str]) -> None:
        if image_exists(self.engine, tag):
            self.log(f"{tag} is up to date")
            return
        self._build(tag, context, build_args)

    def _build(self, tag: str, context: Path, build_args: Mapping[str, str]) -> None:
        self.log(f"building {tag} from {context}")
        args = ["build", "-t", tag, "-f", str(context / "Containerfile")]
        for key, value in build_args.items():
            args += ["--build-arg", f"{key}={value}"]
        self.engine.run_cli([*args, str(context)], timeout=BUILD_TIMEOUT)

    def _build_refbookie(self, tags: LocalImages) -> None:
        with tempfile.TemporaryDirectory(prefix="refbookie-context-") as directory:
            context = Path(directory)
            shutil.copytree(
                docker_dir(self.project_root) / "refbookie", context, dirs_exist_ok=True
            )
            wheels = context / "wheels"
            wheels.mkdir()
            self._stage_wheels(wheels)
            self._build(tags.refbookie, context, {"BASE": tags.base})

    def _build_bookkeeper(self, tag: str, home: Path, base: str) -> None:
        # The context is staged next to the cache, where hard links to the install usually
        # work (same filesystem as ~/.bkconform); elsewhere the jars are copied.
        self.cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bookkeeper-context-", dir=self.cache) as directory:
            context = Path(directory) / "context"
            shutil.copytree(docker_dir(self.project_root) / "bookkeeper", context)
            self.log(f"staging {home} for {tag}")
            for name in STAGED_INSTALL_DIRS:
                _stage_tree(home / name, context / "bookkeeper" / name)
            self._build(tag, context, {"BASE": base})

    def _stage_wheels(self, wheels: Path) -> None:
        """This project (no dependencies) and the bookie's runtime dependencies, as wheels."""
        pip = [sys.executable, "-m", "pip"]
        self.log("staging wheels for the reference-bookie image")
        with tempfile.TemporaryDirectory(prefix="bkconform-wheel-build-") as build_dir:
            # A copy of the sources: building in the tree would write build/ into it.
            source = Path(build_dir) / "src"
            stage_sources(PROJECT_ROOT if self.project_root is None else self.project_root, source)
            wheel = [*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)]
            try:
                # Offline and fast when this environment has setuptools (venvs made by tox do).
                self._run([*wheel, "--no-build-isolation"], timeout=600)
            except ContainerEngineError:
                self._run(wheel, timeout=600)
        pins = [f"{name}=={_installed_version(name)}" for name in REFBOOKIE_REQUIREMENTS]
        self._run(
            [*pip, "download", "-q", "--only-binary=:all:", "-d", str(wheels), *pins],
            timeout=600,
        )

    def _run(self, command: list[str], *, timeout: float) -> None:
        run_command(command, timeout=timeout)
