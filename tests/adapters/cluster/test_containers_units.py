"""The container provider's parts that need no engine: configuration, tags, options, CLI."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from adapters.cluster.bookies import TEST_BOOKIE_JVM_FLAGS, BookieSettings, LedgerStorage
from adapters.cluster.container_engine import (
    CONTAINERS_CONF,
    ContainerEngine,
    ContainerEngineError,
    EnginePaths,
    service_pid,
    state_dir,
    write_containers_conf,
)
from adapters.cluster.container_images import (
    ImageBuilder,
    ImageSet,
    docker_dir,
    local_image_tags,
    official_images,
    stage_sources,
)
from adapters.cluster.containers import (
    OFFICIAL_BOOKIE_COMMAND,
    ContainerCluster,
    ContainerClusterOptions,
    _ContainerNode,
)
from adapters.cluster.errors import InvalidClusterOptions
from adapters.cluster.provider import NodeKind
from conformance.cli import build_parser


def test_containers_conf_is_the_projects_own_and_written_once(tmp_path: Path) -> None:
    paths = EnginePaths(tmp_path / "state")
    assert write_containers_conf(paths) is True
    text = paths.containers_conf.read_text()
    assert "default_ulimits = []" in text and 'runtime = "runc"' in text
    assert text == CONTAINERS_CONF
    assert write_containers_conf(paths) is False  # idempotent
    paths.containers_conf.write_text("[engine]\n")
    assert write_containers_conf(paths) is True  # a changed file is restored


def test_state_dir_follows_bkconform_home(tmp_path: Path) -> None:
    assert state_dir({"BKCONFORM_HOME": str(tmp_path)}) == tmp_path / "docker"
    assert state_dir({}).name == "docker"


def test_a_recorded_pid_counts_only_if_it_serves_our_socket(tmp_path: Path) -> None:
    paths = EnginePaths(tmp_path)
    assert service_pid(paths) is None  # no pid file
    paths.pid_file.write_text(f"{os.getpid()}\n")  # alive, but not a podman service
    assert service_pid(paths) is None
    paths.pid_file.write_text("not a pid\n")
    assert service_pid(paths) is None


def _copy_project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(docker_dir(), root / "docker")
    for package in ("model", "adapters", "conformance"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("[project]\nname='x'\n")
    return root


def test_image_tags_follow_their_sources(tmp_path: Path) -> None:
    root = _copy_project(tmp_path)
    first = local_image_tags(root)
    assert first == local_image_tags(root)  # stable
    assert first.zookeeper.startswith("localhost/bkconform/zookeeper:")

    (root / "adapters" / "__init__.py").write_text("# changed\n")
    second = local_image_tags(root)
    assert second.refbookie != first.refbookie
    assert (second.base, second.zookeeper) == (first.base, first.zookeeper)

    (root / "docker" / "base" / "Containerfile").write_text("FROM scratch\n")
    third = local_image_tags(root)
    # A new base rebuilds everything built on it.
    assert third.base != second.base
    assert third.zookeeper != second.zookeeper and third.refbookie != second.refbookie


def test_image_sets_name_their_bookie_kind() -> None:
    official = official_images("4.16.4", "3.8.4")
    assert official.bookie == "docker.io/apache/bookkeeper:4.16.4"
    assert official.zookeeper == "docker.io/library/zookeeper:3.8.4"
    assert official.bookie_kind == "bookkeeper"
    with pytest.raises(ValueError, match="bookie_kind"):
        ImageSet(zookeeper="z", bookie="b", bookie_kind="java")


def test_bad_options_are_refused() -> None:
    with pytest.raises(InvalidClusterOptions):
        ContainerCluster(ContainerClusterOptions(zookeepers=0))
    with pytest.raises(InvalidClusterOptions):
        ContainerCluster(ContainerClusterOptions(bookies=-1))
    with pytest.raises(InvalidClusterOptions, match="cluster_id"):
        ContainerCluster(cluster_id="../etc")


def test_start_without_an_engine_says_how_to_get_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("adapters.cluster.containers.find_engine", lambda: None)
    cluster = ContainerCluster(ContainerClusterOptions())
    with pytest.raises(ContainerEngineError, match="bkconform docker setup"):
        cluster.start()
    cluster.stop()  # nothing was created; stop stays quiet


def _entries(images: ImageSet, settings: BookieSettings) -> dict[str, str]:
    cluster = ContainerCluster(ContainerClusterOptions(zookeepers=3, bookie_settings=settings))
    cluster.images = images
    for name in ("zk1", "zk2", "zk3"):
        cluster._zookeepers[name] = _ContainerNode(name, NodeKind.ZOOKEEPER, name, 1, Path("/"))
    node = _ContainerNode("bookie1", NodeKind.BOOKIE, "127.0.0.1:40001", 40001, Path("/"))
    return cluster._bookie_entries(node)


def test_bookie_configuration_for_either_image_set() -> None:
    settings = BookieSettings(
        ledger_storage=LedgerStorage.DB,
        journal_write_data=False,
        data_integrity_checking=True,
        stamp_missing_cookies=True,
        extra={"flushInterval": "3600000"},
    )
    reference = _entries(ImageSet(zookeeper="z", bookie="b"), settings)
    assert reference["bookieId"] == "127.0.0.1:40001"
    assert reference["bookiePort"] == "40001"
    # The reference bookie binds its advertised address: every interface of its container.
    assert reference["advertisedAddress"] == "0.0.0.0"
    assert reference["metadataServiceUri"] == (
        "zk+hierarchical://zk1:2181;zk2:2181;zk3:2181/ledgers"
    )
    assert reference["ledgerStorageClass"] == LedgerStorage.DB.value
    assert reference["journalWriteData"] == "false"
    assert reference["dataIntegrityChecking"] == "true"
    assert reference["flushInterval"] == "3600000"

    official = _entries(official_images(), settings)
    assert official["advertisedAddress"] == "127.0.0.1"
    assert official["bookieId"] == "127.0.0.1:40001"
    assert "dataIntegrityChecking=%s" in OFFICIAL_BOOKIE_COMMAND
    assert OFFICIAL_BOOKIE_COMMAND.endswith("exec /opt/bookkeeper/scripts/entrypoint.sh bookie")


def test_real_bookies_in_containers_run_the_test_bookie_jvm_flags() -> None:
    def environment(images: ImageSet, settings: BookieSettings) -> dict[str, str]:
        cluster = ContainerCluster(ContainerClusterOptions(bookie_settings=settings))
        cluster.images = images
        return cluster._bookie_environment({"bookiePort": "40001"})

    flags = " ".join(TEST_BOOKIE_JVM_FLAGS)
    local = ImageSet(zookeeper="z", bookie="b", bookie_kind="local-bookkeeper")
    assert environment(local, BookieSettings()) == {"BOOKIE_GC_OPTS": flags}
    assert environment(official_images(), BookieSettings()) == {
        "BK_bookiePort": "40001",
        "BOOKIE_GC_OPTS": flags,
    }
    # No flags: the launcher's own; the reference bookie is no JVM.
    assert environment(local, BookieSettings(jvm_flags=())) == {}
    assert environment(ImageSet(zookeeper="z", bookie="b"), BookieSettings()) == {}


def test_cli_registers_the_docker_commands(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    for command in ("setup", "teardown", "up", "down", "status"):
        assert parser.parse_args(["docker", command]).func is not None
    args = parser.parse_args(["docker", "up", "--zk", "3", "--bookies", "2", "--limbo"])
    assert (args.zk, args.bookies, args.limbo) == (3, 2, True)
    with pytest.raises(SystemExit):
        parser.parse_args(["docker", "up", "--zk", "0"])
    assert "at least 1" in capsys.readouterr().err


def test_building_without_the_container_files_names_where_it_looked(tmp_path: Path) -> None:
    engine = ContainerEngine(docker_host="unix:///nonexistent.sock", cli="podman")
    with pytest.raises(ContainerEngineError, match=f"no Containerfiles .* in {tmp_path}/docker"):
        ImageBuilder(engine, project_root=tmp_path, cache=tmp_path).ensure_all()


def test_this_installation_finds_its_container_files() -> None:
    # From the checkout (or an editable install) that is docker/; from a wheel, its copy.
    found = docker_dir()
    for name in ("base", "zookeeper", "refbookie"):
        assert (found / name / "Containerfile").is_file()
    assert (found / "official" / "compose.yaml").is_file()
    assert os.access(found / "refbookie" / "docker-entrypoint.sh", os.X_OK)


def test_sources_staged_from_an_installed_wheel_get_a_build_definition(tmp_path: Path) -> None:
    site = _copy_project(tmp_path)  # an installed wheel: packages, no pyproject.toml
    (site / "pyproject.toml").unlink()
    shutil.copytree(site / "docker", site / "adapters" / "cluster" / "container_files")
    stage_sources(site, tmp_path / "src")
    staged = tmp_path / "src"
    assert sorted(p.name for p in staged.iterdir()) == [
        "adapters",
        "conformance",
        "model",
        "pyproject.toml",
    ]
    assert not (staged / "adapters" / "cluster" / "container_files").exists()
    assert 'name = "bkconform"' in (staged / "pyproject.toml").read_text()
