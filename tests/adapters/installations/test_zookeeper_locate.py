"""Locating ZooKeeper: search order, validation of candidates, and error messages."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from adapters.installations.errors import ZooKeeperNotFound
from adapters.installations.zookeeper import (
    MAIN_CLASS,
    contains_quorum_peer_main,
    locate_zookeeper,
    pyspark_jars_dir,
)

MAIN_ENTRY = MAIN_CLASS.replace(".", "/") + ".class"


def make_jar(path: Path, *entries: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for entry in entries:
            archive.writestr(entry, b"\xca\xfe\xba\xbe")
    return path


def zookeeper_jar(directory: Path, name: str = "zookeeper-3.9.5.jar") -> Path:
    return make_jar(directory / name, MAIN_ENTRY)


@pytest.fixture
def nowhere(tmp_path: Path) -> dict[str, Path]:
    """Debian and pyspark locations that hold nothing."""
    return {
        "debian_home": tmp_path / "no-debian",
        "debian_java_dir": tmp_path / "no-java",
        "pyspark_jars": tmp_path / "no-pyspark",
    }


def test_jar_with_quorum_peer_main_is_recognised(tmp_path: Path) -> None:
    assert contains_quorum_peer_main(zookeeper_jar(tmp_path))
    assert not contains_quorum_peer_main(make_jar(tmp_path / "other.jar", "a/B.class"))
    (tmp_path / "broken.jar").write_bytes(b"not a zip")
    assert not contains_quorum_peer_main(tmp_path / "broken.jar")


def test_zookeeper_home_comes_first(tmp_path: Path, nowhere: dict[str, Path]) -> None:
    home = tmp_path / "zk-home"
    jar = zookeeper_jar(home / "lib")
    dependency = make_jar(home / "lib" / "slf4j-api-2.0.jar", "org/slf4j/Logger.class")
    (home / "conf").mkdir()
    zookeeper_jar(nowhere["pyspark_jars"])  # present, but must lose to ZOOKEEPER_HOME
    found = locate_zookeeper({"ZOOKEEPER_HOME": str(home)}, **nowhere)
    assert found.classpath[0] == str(home / "conf")
    assert set(found.classpath[1:]) == {str(jar), str(dependency)}
    assert "ZOOKEEPER_HOME" in found.source


def test_broken_zookeeper_home_is_an_error_not_a_fallthrough(
    tmp_path: Path, nowhere: dict[str, Path]
) -> None:
    home = tmp_path / "zk-home"
    make_jar(home / "lib" / "zookeeper-3.9.5.jar", "org/apache/zookeeper/Other.class")
    zookeeper_jar(nowhere["pyspark_jars"])
    with pytest.raises(ZooKeeperNotFound, match=r"ZOOKEEPER_HOME=.*QuorumPeerMain"):
        locate_zookeeper({"ZOOKEEPER_HOME": str(home)}, **nowhere)


def test_debian_package_before_pyspark(tmp_path: Path, nowhere: dict[str, Path]) -> None:
    debian_home = tmp_path / "usr-share-zookeeper"
    debian_home.mkdir()
    java_dir = tmp_path / "usr-share-java"
    jar = zookeeper_jar(java_dir, "zookeeper.jar")
    netty = make_jar(java_dir / "netty.jar", "io/netty/Channel.class")
    zookeeper_jar(nowhere["pyspark_jars"])
    found = locate_zookeeper(
        {}, debian_home=debian_home, debian_java_dir=java_dir, pyspark_jars=nowhere["pyspark_jars"]
    )
    assert set(found.classpath) == {str(jar), str(netty)}
    assert "Debian" in found.source


def test_pyspark_jars_are_the_fallback(nowhere: dict[str, Path]) -> None:
    zookeeper_jar(nowhere["pyspark_jars"])
    found = locate_zookeeper({}, **nowhere)
    assert found.classpath == (str(nowhere["pyspark_jars"] / "*"),)
    assert "pyspark" in found.source


def test_nothing_found_names_every_place_tried(nowhere: dict[str, Path]) -> None:
    with pytest.raises(ZooKeeperNotFound) as error:
        locate_zookeeper({}, **nowhere)
    message = str(error.value)
    for place in ("ZOOKEEPER_HOME", "Debian", "pyspark", "apt-get install zookeeper"):
        assert place in message


def test_installed_pyspark_ships_a_zookeeper() -> None:
    # The project depends on pyspark precisely for this jar; if a pyspark upgrade drops it,
    # the default local provider breaks, and this test says why.
    jars = pyspark_jars_dir()
    assert jars is not None and jars.is_dir(), "pyspark is a dependency and must be installed"
    found = locate_zookeeper({}, debian_home=Path("/nonexistent"), pyspark_jars=jars)
    assert found.classpath == (str(jars / "*"),)
