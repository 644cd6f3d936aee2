"""The bookie choice (options -> real BookKeeper or the reference bookie) and
:class:`SystemUnderTest`: how a run names what it ran against. Nothing here installs, starts a
process or a JVM."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from adapters.cluster.errors import ClusterError
from adapters.installations import bookkeeper as installs
from adapters.installations.system import (
    MODEL_SYSTEM,
    BookieChoice,
    SystemUnderTest,
    bookkeeper_version,
    choose_bookies,
    describe_bookkeeper,
    describe_reference_bookie,
    describe_zookeeper,
    zookeeper_version,
)


def distribution(root: Path, version: str = "4.17.3", *, maven: bool = False) -> Path:
    """A directory shaped like a distribution: an executable bin/bookkeeper and a server jar."""
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    launcher = root / "bin" / "bookkeeper"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    (root / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    if maven:
        marker = {
            "layout": installs.LAYOUT_VERSION,
            "version": version,
            "jars": 1,
            "installed_at": "2026-11-24T00:00:00Z",
        }
        (root / installs.MARKER).write_text(json.dumps(marker))
    return root


@pytest.fixture
def no_install(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the versions the choice would install, and installs nothing."""
    asked: list[str] = []

    def fake_install(version: str, **kwargs: object) -> installs.Installation:
        asked.append(version)
        return installs.Installation(version, Path(f"/cache/{version}"), 1, "now")

    def fake_resolve(spec: str, **kwargs: object) -> Path:
        asked.append(spec)
        return Path(f"/cache/{spec}")

    monkeypatch.setattr(installs, "install", fake_install)
    monkeypatch.setattr(installs, "resolve_bookkeeper", fake_resolve)
    return asked


def test_the_default_is_real_bookkeeper_of_the_default_version(no_install: list[str]) -> None:
    choice = choose_bookies(environ={})
    assert choice == BookieChoice.bookkeeper(Path(f"/cache/{installs.DEFAULT_VERSION}"))
    assert no_install == [installs.DEFAULT_VERSION]


def test_bookkeeper_home_from_the_environment_comes_before_the_default(
    tmp_path: Path, no_install: list[str]
) -> None:
    home = distribution(tmp_path / "bk")
    assert choose_bookies(environ={"BOOKKEEPER_HOME": str(home)}).home == home
    assert no_install == []


def test_a_version_or_a_directory_picks_another(tmp_path: Path, no_install: list[str]) -> None:
    assert choose_bookies(bookkeeper="4.11.1", environ={}).home == Path("/cache/4.11.1")
    home = distribution(tmp_path / "bk")
    assert choose_bookies(bookkeeper_home=home, environ={}).home == home
    with pytest.raises(ClusterError, match="no executable bin/bookkeeper"):
        choose_bookies(bookkeeper_home=tmp_path, environ={})


def test_the_reference_bookie_is_asked_for_by_name(no_install: list[str]) -> None:
    assert choose_bookies("reference") == BookieChoice.reference()
    assert BookieChoice.reference().home is None
    assert no_install == []


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("reference", {"bookkeeper": "4.17.3"}, "takes no --bookkeeper"),
        ("reference", {"bookkeeper_home": Path("/x")}, "takes no --bookkeeper"),
        ("bookkeeper", {"bookkeeper": "4.17.3", "bookkeeper_home": Path("/x")}, "not both"),
        ("python", {}, "expected one of bookkeeper, reference"),
    ],
)
def test_contradicting_options_are_refused(
    kind: str, options: dict[str, object], message: str, no_install: list[str]
) -> None:
    with pytest.raises(ValueError, match=message):
        choose_bookies(kind, **options)  # type: ignore[arg-type]
    assert no_install == []


def test_a_choice_is_consistent() -> None:
    with pytest.raises(ValueError):
        BookieChoice("bookkeeper")
    with pytest.raises(ValueError):
        BookieChoice("reference", Path("/x"))


def test_bookies_are_named_with_implementation_version_and_origin(tmp_path: Path) -> None:
    maven = distribution(tmp_path / "maven", maven=True)
    given = distribution(tmp_path / "given", "4.14.7")
    assert bookkeeper_version(maven) == "4.17.3"
    assert describe_bookkeeper(maven) == f"BookKeeper 4.17.3 (Maven, {maven})"
    assert describe_bookkeeper(given) == f"BookKeeper 4.14.7 (BOOKKEEPER_HOME, {given})"
    assert BookieChoice.bookkeeper(given).describe() == describe_bookkeeper(given)
    reference = describe_reference_bookie()
    assert reference.startswith("reference bookie (test double, bkconform ")
    assert "BookKeeper" not in reference  # the test double is never called BookKeeper


def test_a_home_under_the_users_home_is_shown_with_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    home = distribution(tmp_path / ".bkconform" / "bookkeeper" / "4.17.3", maven=True)
    assert describe_bookkeeper(home) == "BookKeeper 4.17.3 (Maven, ~/.bkconform/bookkeeper/4.17.3)"


def test_the_zookeeper_version_comes_from_the_jar_without_a_jvm(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "zookeeper-jute-3.9.5.jar").write_bytes(b"")
    (jars / "zookeeper-3.9.5.jar").write_bytes(b"")
    (jars / "netty-4.1.jar").write_bytes(b"")
    assert zookeeper_version([str(jars / "*")]) == "3.9.5"
    assert zookeeper_version([str(jars / "zookeeper-3.9.5.jar")]) == "3.9.5"
    # Debian's jar carries no version in its name: its manifest does.
    debian = tmp_path / "zookeeper.jar"
    with zipfile.ZipFile(debian, "w") as archive:
        archive.writestr(
            "META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nImplementation-Version: 3.8.4\n"
        )
    assert zookeeper_version([str(debian)]) == "3.8.4"
    assert zookeeper_version([str(tmp_path / "nothing" / "*")]) is None
    assert (
        describe_zookeeper([str(jars / "*")], "pyspark wheel") == "ZooKeeper 3.9.5 (pyspark wheel)"
    )


def test_the_system_renders_on_one_line_and_round_trips() -> None:
    system = SystemUnderTest(
        "BookKeeper 4.17.3 (Maven, ~/.bkconform/bookkeeper/4.17.3)",
        "model client (bkconform)",
        "ZooKeeper 3.9.5 (pyspark wheel)",
    )
    assert system.render() == (
        "bookies: BookKeeper 4.17.3 (Maven, ~/.bkconform/bookkeeper/4.17.3); "
        "client: model client (bkconform); zookeeper: ZooKeeper 3.9.5 (pyspark wheel)"
    )
    assert SystemUnderTest.from_dict(system.as_dict()) == system
    assert MODEL_SYSTEM.bookies == "model (no bookies)"
    assert "\n" not in MODEL_SYSTEM.render()
