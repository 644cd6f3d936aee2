"""The real-BookKeeper image (``docker/bookkeeper``) without an engine: its tag, how its build
context is staged, when it is (not) rebuilt and pruned, and how its bookies are configured."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from adapters.cluster.bookies import TEST_BOOKIE_JVM_FLAGS, BookieSettings, LedgerStorage
from adapters.cluster.container_engine import ContainerEngine, ContainerEngineError
from adapters.cluster.container_images import (
    BOOKKEEPER_REPOSITORY,
    ZOOKEEPER_REPOSITORY,
    ImageBuilder,
    ImageSet,
    LocalImages,
    bookkeeper_image_tag,
    docker_dir,
    install_version,
    zookeeper_image_tag,
    zookeeper_install_version,
)
from adapters.cluster.containers import ContainerCluster, ContainerClusterOptions, _ContainerNode
from adapters.cluster.provider import NodeKind
from adapters.installations import bookkeeper as installs

BASE = "localhost/bkconform/debian:0123456789ab"


def _install(root: Path, version: str = "4.17.3") -> Path:
    """A fake install with the layout of adapters/installations/bookkeeper.py."""
    home = root / version
    (home / "bin").mkdir(parents=True)
    (home / "conf").mkdir()
    (home / "lib").mkdir()
    (home / "maven").mkdir()
    launcher = home / "bin" / "bookkeeper"
    launcher.write_text('#!/bin/sh\nexec java "$@"\n')
    launcher.chmod(0o755)
    (home / "conf" / "log4j2.xml").write_text("<Configuration/>\n")
    (home / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"jar")
    (home / "lib" / "io.netty-netty-common-4.1.0.jar").write_bytes(b"netty")
    (home / "maven" / "pom.xml").write_text("<project/>\n")
    (home / installs.MARKER).write_text('{"installed_at": "then"}\n')
    return home


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(docker_dir(), root / "docker")
    return root


def test_the_tag_names_the_version_and_follows_what_goes_into_the_image(tmp_path: Path) -> None:
    root = _project(tmp_path)
    home = _install(tmp_path / "installs")
    first = bookkeeper_image_tag(home, BASE, root)
    assert first.startswith(f"{BOOKKEEPER_REPOSITORY}:4.17.3-")
    assert first == bookkeeper_image_tag(home, BASE, root)  # stable

    # Build records and logs are not in the image: they do not change it.
    (home / installs.MARKER).write_text('{"installed_at": "now"}\n')
    (home / "maven" / "pom.xml").write_text("<project>changed</project>\n")
    (home / "logs").mkdir()
    (home / "logs" / "bookie.log").write_text("started\n")
    assert bookkeeper_image_tag(home, BASE, root) == first

    seen = {first}
    changes = [
        lambda: (home / "conf" / "log4j2.xml").write_text("<Configuration status='x'/>\n"),
        lambda: (home / "bin" / "bookkeeper").write_text('#!/bin/sh\nexec java -server "$@"\n'),
        lambda: (home / "lib" / "io.netty-netty-common-4.1.0.jar").write_bytes(b"netty, longer"),
        lambda: (home / "lib" / "extra-1.0.jar").write_bytes(b"x"),
        lambda: (root / "docker" / "bookkeeper" / "Containerfile").write_text("FROM scratch\n"),
    ]
    for change in changes:
        change()
        tag = bookkeeper_image_tag(home, BASE, root)
        assert tag not in seen
        seen.add(tag)
    # A new base rebuilds it.
    assert bookkeeper_image_tag(home, BASE + "x", root) not in seen


def test_each_version_has_its_own_tag(tmp_path: Path) -> None:
    root = _project(tmp_path)
    old = bookkeeper_image_tag(_install(tmp_path / "a", "4.16.6"), BASE, root)
    new = bookkeeper_image_tag(_install(tmp_path / "b", "4.17.3"), BASE, root)
    assert old.startswith(f"{BOOKKEEPER_REPOSITORY}:4.16.6-")
    assert new.startswith(f"{BOOKKEEPER_REPOSITORY}:4.17.3-")


def test_a_directory_without_an_install_is_refused(tmp_path: Path) -> None:
    home = _install(tmp_path)
    for jar in (home / "lib").glob("*bookkeeper-server*"):
        jar.unlink()
    with pytest.raises(ContainerEngineError, match="no bookkeeper-server jar"):
        install_version(home)
    shutil.rmtree(home / "conf")
    (home / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.17.3.jar").write_bytes(b"jar")
    with pytest.raises(ContainerEngineError, match="has no conf/"):
        bookkeeper_image_tag(home, BASE, _project(tmp_path))


def test_the_containerfile_runs_the_launcher_under_tini_with_a_mounted_conf() -> None:
    directory = docker_dir() / "bookkeeper"
    text = (directory / "Containerfile").read_text()
    assert "ARG BASE=" in text and "FROM ${BASE}" in text
    assert "default-jre-headless" in text
    assert "COPY bookkeeper/ /opt/bookkeeper/" in text
    assert "BOOKIE_CONF=/conf/bk_server.conf" in text
    for variable in (
        "BOOKIE_MIN_HEAP_MEMORY",
        "BOOKIE_MAX_HEAP_MEMORY",
        "BOOKIE_MAX_DIRECT_MEMORY",
    ):
        assert variable in text
    assert '"/usr/bin/tini", "--"' in text
    assert 'CMD ["/opt/bookkeeper/bin/bookkeeper", "bookie"]' in text
    assert os.access(directory / "docker-entrypoint.sh", os.X_OK)


class _Image:
    def __init__(self, tags: list[str]) -> None:
        self.tags = tags


class _Images:
    def __init__(self, tags: list[str]) -> None:
        self.images = [_Image([tag]) for tag in tags]
        self.removed: list[str] = []

    def list(self, name: str) -> list[_Image]:
        return [i for i in self.images if any(t.startswith(name + ":") for t in i.tags)]

    def remove(self, tag: str) -> None:
        self.removed.append(tag)


class _Client:
    def __init__(self, images: _Images) -> None:
        self.images = images

    def close(self) -> None:
        pass


class _FakeBuilder(ImageBuilder):
    """Records builds instead of running the engine; the base images count as present."""

    def __init__(self, tmp_path: Path, root: Path, existing: set[str]) -> None:
        super().__init__(
            ContainerEngine(docker_host="unix:///nonexistent.sock", cli="podman"),
            project_root=root,
            cache=tmp_path / "cache",
        )
        self.existing = existing
        self.builds: list[tuple[str, dict[str, str], list[str]]] = []
        self.pruned: list[tuple[str, str | None]] = []

    def _ensure_common(self) -> LocalImages:
        return LocalImages(base=BASE, zookeeper="localhost/bkconform/zookeeper:z", refbookie="r")

    def _build(self, tag: str, context: Path, build_args: Mapping[str, str]) -> None:
        staged = sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file())
        self.builds.append((tag, dict(build_args), staged))
        self.existing.add(tag)

    def _prune_other_tags(self, keep: str, *, series: str | None = None) -> None:
        self.pruned.append((keep, series))


def test_the_image_is_built_once_from_a_staged_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    home = _install(tmp_path / "installs")
    existing: set[str] = set()
    monkeypatch.setattr(
        "adapters.cluster.container_images.image_exists", lambda _engine, tag: tag in existing
    )
    builder = _FakeBuilder(tmp_path, root, existing)
    images = builder.ensure_bookkeeper(home)
    tag = bookkeeper_image_tag(home, BASE, root)
    assert images == ImageSet(
        zookeeper="localhost/bkconform/zookeeper:z", bookie=tag, bookie_kind="local-bookkeeper"
    )
    ((built, args, staged),) = builder.builds
    assert (built, args) == (tag, {"BASE": BASE})
    assert staged == [
        "Containerfile",
        "bookkeeper/bin/bookkeeper",
        "bookkeeper/conf/log4j2.xml",
        "bookkeeper/lib/io.netty-netty-common-4.1.0.jar",
        "bookkeeper/lib/org.apache.bookkeeper-bookkeeper-server-4.17.3.jar",
        "docker-entrypoint.sh",
    ]
    # Older builds of this version only: other versions' images stay.
    assert builder.pruned == [(tag, f"{BOOKKEEPER_REPOSITORY}:4.17.3")]
    assert not list((tmp_path / "cache").glob("bookkeeper-context-*"))  # context removed

    assert builder.ensure_bookkeeper(home) == images  # idempotent: nothing more is built
    assert len(builder.builds) == 1


def test_a_version_is_installed_first_and_a_missing_one_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    installed = _install(tmp_path / "installs", "4.16.6")
    asked: list[str] = []

    def install(version: str, **_kwargs: Any) -> installs.Installation:
        asked.append(version)
        if version != "4.16.6":
            raise installs.BookKeeperInstallError(f"Maven Central does not serve {version}")
        return installs.Installation(version, installed, 2, "now")

    monkeypatch.setattr(installs, "install", install)
    monkeypatch.setattr("adapters.cluster.container_images.image_exists", lambda *_: False)
    builder = _FakeBuilder(tmp_path, root, set())
    assert builder.ensure_bookkeeper("4.16.6").bookie.startswith(f"{BOOKKEEPER_REPOSITORY}:4.16.6-")
    with pytest.raises(
        installs.BookKeeperInstallError,
        match=r"no BookKeeper 4\.17\.4 to build an image from: Maven Central does not serve",
    ):
        builder.ensure_bookkeeper("4.17.4")
    assert asked == ["4.16.6", "4.17.4"]
    assert len(builder.builds) == 1


class _Engine:
    def __init__(self, images: _Images) -> None:
        self.images = images

    def client(self) -> _Client:
        return _Client(self.images)


def test_pruning_keeps_other_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    images = _Images(
        [
            f"{BOOKKEEPER_REPOSITORY}:4.17.3-new",
            f"{BOOKKEEPER_REPOSITORY}:4.17.3-old",
            f"{BOOKKEEPER_REPOSITORY}:4.16.6-any",
            f"{BOOKKEEPER_REPOSITORY}:4.17.3-rc1-other",
        ]
    )
    engine = ContainerEngine(docker_host="unix:///nonexistent.sock", cli="podman")
    builder = ImageBuilder(engine, cache=tmp_path)
    monkeypatch.setattr(builder, "engine", _Engine(images))
    builder._prune_other_tags(
        f"{BOOKKEEPER_REPOSITORY}:4.17.3-new", series=f"{BOOKKEEPER_REPOSITORY}:4.17.3"
    )
    assert images.removed == [f"{BOOKKEEPER_REPOSITORY}:4.17.3-old"]


def _cluster(images: ImageSet, settings: BookieSettings, work: Path) -> ContainerCluster:
    cluster = ContainerCluster(ContainerClusterOptions(zookeepers=1, bookie_settings=settings))
    cluster.images = images
    cluster._zookeepers["zk1"] = _ContainerNode("zk1", NodeKind.ZOOKEEPER, "zk1", 1, work)
    return cluster


SETTINGS = BookieSettings(
    ledger_storage=LedgerStorage.DB,
    journal_write_data=False,
    data_integrity_checking=True,
    stamp_missing_cookies=True,
)


@pytest.mark.parametrize(
    ("kind", "advertised", "mounted"),
    [
        ("local-bookkeeper", "127.0.0.1", True),
        ("reference", "0.0.0.0", True),
        ("bookkeeper", "127.0.0.1", False),
    ],
)
def test_bookie_entries_and_container_per_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, advertised: str, mounted: bool
) -> None:
    images = ImageSet(zookeeper="z", bookie="b", bookie_kind=kind)
    assert images.mounts_conf is mounted
    assert images.runs_bookkeeper is (kind != "reference")
    cluster = _cluster(images, SETTINGS, tmp_path)
    node = _ContainerNode("bookie1", NodeKind.BOOKIE, "127.0.0.1:40001", 40001, tmp_path / "b1")
    entries = cluster._bookie_entries(node)
    # The id is what the host-side client dials; the port is published as itself.
    assert (entries["bookieId"], entries["bookiePort"]) == ("127.0.0.1:40001", "40001")
    assert entries["advertisedAddress"] == advertised
    assert "listeningInterface" not in entries  # BookKeeper then binds every interface
    assert entries["ledgerStorageClass"] == LedgerStorage.DB.value
    assert entries["journalWriteData"] == "false"
    assert entries["dataIntegrityChecking"] == "true"
    assert (entries["journalDirectories"], entries["ledgerDirectories"]) == (
        "/data/journal",
        "/data/ledgers",
    )

    runs: list[dict[str, Any]] = []
    monkeypatch.setattr(
        cluster, "_run_container", lambda _node, image, **kwargs: runs.append(kwargs)
    )
    cluster._run_bookie(node)
    ((run,),) = [runs]
    assert run["ports"] == {"40001/tcp": ("127.0.0.1", 40001)}
    conf = node.directory / "conf" / "bk_server.conf"
    if mounted:
        assert run["volumes"] == {node.directory / "conf": "/conf", node.data_dir: "/data"}
        # The image's own entrypoint; a real bookie gets the test bookie's JVM flags.
        assert "entrypoint" not in run
        expected = (
            {"BOOKIE_GC_OPTS": " ".join(TEST_BOOKIE_JVM_FLAGS)} if kind != "reference" else {}
        )
        assert run["env"] == expected
        assert f"advertisedAddress={advertised}\n" in conf.read_text()
        assert "dataIntegrityChecking=true\n" in conf.read_text()
    else:
        assert run["volumes"] == {node.data_dir: "/data"}
        assert run["env"]["BK_advertisedAddress"] == advertised
        assert run["env"]["BOOKIE_GC_OPTS"] == " ".join(TEST_BOOKIE_JVM_FLAGS)
        assert not conf.exists()


def _zookeeper_install(root: Path, version: str = "3.8.4") -> Path:
    """A fake install with the layout of adapters/installations/zookeeper.py."""
    home = root / version
    (home / "conf").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "maven").mkdir()
    (home / "conf" / "logback.xml").write_text("<configuration/>\n")
    (home / "lib" / f"org.apache.zookeeper-zookeeper-{version}.jar").write_bytes(b"zk")
    (home / "lib" / f"org.apache.zookeeper-zookeeper-jute-{version}.jar").write_bytes(b"jute")
    (home / "maven" / "pom.xml").write_text("<project/>\n")
    return home


def test_a_zookeeper_release_image_is_tagged_by_version_and_content(tmp_path: Path) -> None:
    root = _project(tmp_path)
    home = _zookeeper_install(tmp_path / "installs")
    first = zookeeper_image_tag(home, BASE, root)
    assert first.startswith(f"{ZOOKEEPER_REPOSITORY}:3.8.4-")
    (home / "maven" / "pom.xml").write_text("<project>changed</project>\n")  # not in the image
    assert zookeeper_image_tag(home, BASE, root) == first
    seen = {first}
    for change in (
        lambda: (home / "conf" / "logback.xml").write_text("<configuration debug='true'/>\n"),
        lambda: (home / "lib" / "extra-1.0.jar").write_bytes(b"x"),
        lambda: (root / "docker" / "zookeeper" / "docker-entrypoint.sh").write_text("#!/bin/sh\n"),
        lambda: (root / "docker" / "zookeeper-release" / "Containerfile").write_text("FROM x\n"),
    ):
        change()
        tag = zookeeper_image_tag(home, BASE, root)
        assert tag not in seen
        seen.add(tag)
    assert zookeeper_image_tag(_zookeeper_install(tmp_path / "b", "3.9.3"), BASE, root).startswith(
        f"{ZOOKEEPER_REPOSITORY}:3.9.3-"
    )


def test_a_directory_without_a_zookeeper_install_is_refused(tmp_path: Path) -> None:
    home = _zookeeper_install(tmp_path)
    (home / "lib" / "org.apache.zookeeper-zookeeper-3.8.4.jar").unlink()
    with pytest.raises(ContainerEngineError, match=r"no zookeeper-3\.x\.y jar"):
        zookeeper_install_version(home)
    shutil.rmtree(home / "conf")
    with pytest.raises(ContainerEngineError, match="has no conf/"):
        zookeeper_install_version(home)


def test_the_zookeeper_image_is_built_once_with_the_shared_entrypoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _project(tmp_path)
    home = _zookeeper_install(tmp_path / "installs")
    existing: set[str] = set()
    monkeypatch.setattr(
        "adapters.cluster.container_images.image_exists", lambda _engine, tag: tag in existing
    )
    builder = _FakeBuilder(tmp_path, root, existing)
    tag = builder.ensure_zookeeper(home)
    assert tag == zookeeper_image_tag(home, BASE, root)
    ((built, args, staged),) = builder.builds
    assert (built, args) == (tag, {"BASE": BASE})
    assert staged == [
        "Containerfile",
        "docker-entrypoint.sh",
        "zookeeper/conf/logback.xml",
        "zookeeper/lib/org.apache.zookeeper-zookeeper-3.8.4.jar",
        "zookeeper/lib/org.apache.zookeeper-zookeeper-jute-3.8.4.jar",
    ]
    assert builder.pruned == [(tag, f"{ZOOKEEPER_REPOSITORY}:3.8.4")]
    assert builder.ensure_zookeeper(home) == tag and len(builder.builds) == 1


def test_the_entrypoint_runs_a_release_from_its_own_jars() -> None:
    script = (docker_dir() / "zookeeper" / "docker-entrypoint.sh").read_text()
    assert 'CLASSPATH="/opt/zookeeper/conf:/opt/zookeeper/lib/*"' in script
    containerfile = (docker_dir() / "zookeeper-release" / "Containerfile").read_text()
    assert "COPY zookeeper/ /opt/zookeeper/" in containerfile
