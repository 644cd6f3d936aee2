"""The images a :class:`~adapters.cluster.containers.ContainerCluster` runs, and building ours.

Two sets, chosen by configuration (:class:`ImageSet`):

- the official ones, ``apache/bookkeeper:<version>`` and ``zookeeper:<version>``, pulled from
  a registry by the engine (impossible on machines without one);
- the local ones, built here from ``docker/`` without any registry: a Debian bookworm tree
  made by ``debootstrap`` and imported as an image, then ``docker/base`` (tools for
  partitions), ``docker/zookeeper`` (Debian's ``zookeeper`` package) and ``docker/refbookie``
  (python3 and this project: the reference bookie test double, not BookKeeper).

Builds are idempotent and cached: every local image is tagged with a digest of what it is
built from (its ``docker/`` directory, its base's tag and, for the reference bookie, the
project's Python sources), so an unchanged image is never rebuilt and a changed source is
never run stale. The debootstrap tree is kept as a tarball under
``$XDG_CACHE_HOME/bkconform/images`` (default ``~/.cache/bkconform/images``), so even a wiped
image store does not debootstrap again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from adapters.cluster.container_engine import ContainerEngine, ContainerEngineError

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = PROJECT_ROOT / "docker"
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
IMAGE_PREFIX = "localhost/bkconform"
ROOTFS_IMAGE = f"{IMAGE_PREFIX}/debian-rootfs:{DEBIAN_SUITE}"
#: What the reference bookie needs at run time (the project's own dependencies include Spark).
REFBOOKIE_REQUIREMENTS = ("kazoo", "protobuf", "crc32c")
#: The project's packages whose sources go into the reference-bookie image.
PROJECT_PACKAGES = ("model", "adapters", "conformance")
BUILD_TIMEOUT = 1800.0


@dataclass(frozen=True)
class ImageSet:
    """Which images a container cluster runs. Image names are configuration."""

    zookeeper: str
    bookie: str
    #: ``reference``: the bookie image runs ``adapters.refbookie`` and reads a mounted
    #: ``/conf/bk_server.conf``. ``bookkeeper``: the ``apache/bookkeeper`` image layout.
    bookie_kind: str = "reference"

    def __post_init__(self) -> None:
        if self.bookie_kind not in ("reference", "bookkeeper"):
            raise ValueError(
                f"bookie_kind={self.bookie_kind!r}: expected 'reference' or 'bookkeeper'"
            )


def official_images(bookkeeper: str = "4.17.2", zookeeper: str = "3.9.3") -> ImageSet:
    """The Docker Hub images (``apache/bookkeeper`` and ``zookeeper``) at given versions."""
    return ImageSet(
        zookeeper=f"docker.io/library/zookeeper:{zookeeper}",
        bookie=f"docker.io/apache/bookkeeper:{bookkeeper}",
        bookie_kind="bookkeeper",
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


def local_image_tags(project_root: Path = PROJECT_ROOT) -> LocalImages:
    """Tags that name the images built from the current ``docker/`` and project sources."""
    docker_dir = project_root / "docker"
    base_digest = _digest_files(_directory_files(docker_dir / "base"), docker_dir, [ROOTFS_IMAGE])
    base = f"{IMAGE_PREFIX}/debian:{base_digest}"
    zookeeper = (
        f"{IMAGE_PREFIX}/zookeeper:"
        f"{_digest_files(_directory_files(docker_dir / 'zookeeper'), docker_dir, [base])}"
    )
    sources = [*_directory_files(docker_dir / "refbookie")]
    for package in PROJECT_PACKAGES:
        sources += _directory_files(project_root / package, (".py", ".proto", ".pyi", ".typed"))
    sources.append(project_root / "pyproject.toml")
    versions = [f"{name}=={_installed_version(name)}" for name in REFBOOKIE_REQUIREMENTS]
    refbookie = (
        f"{IMAGE_PREFIX}/refbookie:{_digest_files(sources, project_root, [base, *versions])}"
    )
    return LocalImages(base=base, zookeeper=zookeeper, refbookie=refbookie)


def _installed_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        raise ContainerEngineError(
            f"{name} is not installed in this Python: the reference-bookie image installs the "
            "versions this environment runs"
        ) from None


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
        project_root: Path = PROJECT_ROOT,
        cache: Path | None = None,
        log: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.engine = engine
        self.project_root = project_root
        self.cache = cache or cache_dir()
        self.log = log

    def ensure_all(self) -> LocalImages:
        """Build whatever of the local images is missing; returns their tags."""
        if not (self.project_root / "docker" / "refbookie").is_dir():
            raise ContainerEngineError(
                f"no docker/ Containerfiles under {self.project_root}: the local images are "
                "built from a source checkout of bkconform (pip install -e .), not from an "
                "installed wheel"
            )
        tags = local_image_tags(self.project_root)
        self.ensure_rootfs()
        self._ensure_built(
            tags.base, self.project_root / "docker" / "base", {"ROOTFS": ROOTFS_IMAGE}
        )
        self._ensure_built(
            tags.zookeeper, self.project_root / "docker" / "zookeeper", {"BASE": tags.base}
        )
        if not image_exists(self.engine, tags.refbookie):
            self._build_refbookie(tags)
            self._prune_other_tags(tags.refbookie)
        else:
            self.log(f"{tags.refbookie} is up to date")
        return tags

    def _prune_other_tags(self, keep: str) -> None:
        """Remove the repository's images built from older sources (unless still in use)."""
        from docker.errors import APIError

        repository = keep.rsplit(":", 1)[0]
        client = self.engine.client()
        try:
            for image in client.images.list(name=repository):
                if keep in image.tags:
                    continue
                for tag in image.tags:
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
            shutil.copytree(self.project_root / "docker" / "refbookie", context, dirs_exist_ok=True)
            wheels = context / "wheels"
            wheels.mkdir()
            self._stage_wheels(wheels)
            self._build(tags.refbookie, context, {"BASE": tags.base})

    def _stage_wheels(self, wheels: Path) -> None:
        """This project (no dependencies) and the bookie's runtime dependencies, as wheels."""
        pip = [sys.executable, "-m", "pip"]
        self.log("staging wheels for the reference-bookie image")
        with tempfile.TemporaryDirectory(prefix="bkconform-wheel-build-") as build_dir:
            # A copy of the sources: building in the tree would write build/ into it.
            source = Path(build_dir) / "src"
            source.mkdir()
            for name in (*PROJECT_PACKAGES, "pyproject.toml", "README.md"):
                origin = self.project_root / name
                if origin.is_dir():
                    shutil.copytree(
                        origin, source / name, ignore=shutil.ignore_patterns("__pycache__")
                    )
                elif origin.exists():
                    shutil.copy2(origin, source / name)
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
        try:
            completed = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ContainerEngineError(f"{command[0]} did not finish in {timeout:.0f} s") from exc
        if completed.returncode != 0:
            tail = "\n".join(completed.stdout.decode(errors="replace").splitlines()[-20:])
            raise ContainerEngineError(f"{' '.join(command)} failed:\n{tail}")
