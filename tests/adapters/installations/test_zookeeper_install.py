"""ZooKeeper releases from Maven Central without network or Maven (a fake ``mvn`` on PATH): the
POM, the install's layout, list and remove through the CLI, and which ZooKeeper a cluster runs
(named, ``ZOOKEEPER_HOME``, the default release) with the errors when it cannot; installs
accepted only complete and checked on each use; the versions the configured repository (the
tests' own) serves."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from adapters.installations.errors import ZooKeeperNotFound
from adapters.installations.releases import MARKER, ListedArtifact
from adapters.installations.system import describe_zookeeper, zookeeper_version
from adapters.installations.zookeeper import (
    DEFAULT_VERSION,
    MAIN_CLASS,
    REQUIRED_CLASSES,
    ZOOKEEPER,
    ZooKeeperInstallBroken,
    ZooKeeperInstallError,
    _logback_of_the_release,
    contains_quorum_peer_main,
    install,
    installed,
    is_version,
    locate_zookeeper,
)
from conformance.cli import main
from conformance.targets.spec import TargetSpec
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path

MAIN_ENTRY = MAIN_CLASS.replace(".", "/") + ".class"
#: The server jar of the fake resolution holds every required class (the first of each's
#: alternatives), as the install's check reads them.
SERVER_ENTRIES = [required.names[0].replace(".", "/") + ".class" for required in REQUIRED_CLASSES]

# Lists what a real resolution lists (names and versions as 3.9.3's), each jar a zip; the
# server jar holds QuorumPeerMain and the other required classes. Modes: ok, not-served,
# no-server, invalid-pom (Maven's warning for a POM it could not read, the server jar alone).
FAKE_MVN = """\
#!{python}
import os, sys, zipfile
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
mode = os.environ.get("FAKE_MVN_MODE", "ok")
pom = Path([a for a in args if a.endswith("pom.xml")][0]).read_text()
version = pom.split("<artifactId>zookeeper</artifactId>")[1].split("<version>")[1].split("<")[0]
if mode == "not-served":
    print("[ERROR] Failed to execute goal on project zookeeper-install: Could not resolve "
          "dependencies for project bkconform:zookeeper-install:pom:1: Could not find artifact "
          f"org.apache.zookeeper:zookeeper:jar:{{version}} in central -> [Help 1]")
    sys.exit(1)
repo = Path(os.environ["FAKE_M2"])
repo.mkdir(parents=True, exist_ok=True)
artifacts = [("ch.qos.logback", "logback-classic", "1.2.13", [])]
if mode != "no-server":
    artifacts.append(("org.apache.zookeeper", "zookeeper", version, {server_entries!r}))
artifacts.append(("io.dropwizard.metrics", "metrics-core", "4.1.12.1", []))
if mode == "invalid-pom":
    artifacts = artifacts[1:2]
lines = ["The following files have been resolved:"]
for group, artifact, v, entries in artifacts:
    jar = repo / f"{{artifact}}-{{v}}.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", b"x")
        for entry in entries:
            archive.writestr(entry, b"x")
    lines.append(f"   {{group}}:{{artifact}}:jar:{{v}}:compile:{{jar}}")
out = [a.split("=", 1)[1] for a in args if a.startswith("-DoutputFile=")][0]
Path(out).write_text("\\n".join(lines) + "\\n")
if mode == "invalid-pom":
    print(f"[WARNING] The POM for org.apache.zookeeper:zookeeper:jar:{{version}} is invalid, "
          "transitive dependencies (if any) will not be available")
print("[INFO] BUILD SUCCESS")
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FAKE_M2", str(tmp_path / "m2"))
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    script = FAKE_MVN.format(python=sys.executable, server_entries=SERVER_ENTRIES)
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def root_of(tmp_path: Path) -> Path:
    return tmp_path / "bkconform" / "zookeeper"


def make_jar(path: Path, *entries: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for entry in entries:
            archive.writestr(entry, b"\xca\xfe\xba\xbe")
    return path


# -- pure parts ---------------------------------------------------------------------------------


def test_the_pom_resolves_the_server_with_what_its_distribution_adds() -> None:
    pom = ZOOKEEPER.render_pom("3.9.2")
    assert "@ZOOKEEPER_VERSION@" not in pom and pom.count("<version>3.9.2</version>") == 2
    for artifact in ("zookeeper", "parent", "metrics-core", "snappy-java", "logback-classic"):
        assert f"<artifactId>{artifact}</artifactId>" in pom
    assert "<scope>import</scope>" in pom  # the release's own versions of metrics and snappy
    # One logging backend for every release: log4j 1.2 (3.5 to 3.7) is excluded; logback's
    # two jars at one version (3.9.1's parent manages core at 1.2.10: its servers died).
    assert "<artifactId>slf4j-log4j12</artifactId>" in pom
    for part in ("classic", "core"):
        assert f"<artifactId>logback-{part}</artifactId>\n      <version>1.2.13</version>" in pom
    with pytest.raises(ZooKeeperInstallError, match="not a ZooKeeper version"):
        ZOOKEEPER.render_pom("3.9.2</version><x>")


def _listed_from(repo: Path, version: str, parent_pom: str | None) -> list[ListedArtifact]:
    """What a resolution lists for ``version``, the jar where Maven's local repository keeps
    it, with the release's parent POM beside it (None: no parent POM there)."""
    group = repo / "org" / "apache" / "zookeeper"
    jar = make_jar(group / "zookeeper" / version / f"zookeeper-{version}.jar")
    if parent_pom is not None:
        parent = group / "parent" / version / f"parent-{version}.pom"
        parent.parent.mkdir(parents=True)
        parent.write_text(parent_pom)
    return [ListedArtifact("org.apache.zookeeper", "zookeeper", "jar", None, version, "", jar)]


def test_logback_is_the_one_the_release_s_parent_manages(tmp_path: Path) -> None:
    # 3.9.4 moved to SLF4J 2: with logback 1.2 its servers logged nothing at all.
    managed = "<properties><logback-version>1.3.15</logback-version></properties>"
    listed = _listed_from(tmp_path / "a", "3.9.5", managed)
    values = _logback_of_the_release("3.9.5", listed)
    assert values == {"@LOGBACK_VERSION@": "1.3.15"}
    pom = ZOOKEEPER.render_pom("3.9.5", values)
    for part in ("classic", "core"):
        assert f"<artifactId>logback-{part}</artifactId>\n      <version>1.3.15</version>" in pom
    # A parent that manages none (3.5 to 3.7), or none found: the fallback.
    unmanaged = _listed_from(tmp_path / "b", "3.7.2", "<properties></properties>")
    assert _logback_of_the_release("3.7.2", unmanaged) == {"@LOGBACK_VERSION@": "1.2.13"}
    assert _logback_of_the_release("3.9.5", _listed_from(tmp_path / "c", "3.9.5", None)) == {
        "@LOGBACK_VERSION@": "1.2.13"
    }


def test_a_version_is_told_from_a_directory(tmp_path: Path) -> None:
    assert is_version("3.9.3") and is_version(" 3.8.4 ")
    assert not is_version(str(tmp_path)) and not is_version("zk/3.9.3")
    assert not is_version(tmp_path) and not is_version("three")


def test_the_version_is_read_from_either_jar_name(tmp_path: Path) -> None:
    installed_jar = make_jar(tmp_path / "a" / "org.apache.zookeeper-zookeeper-3.9.3.jar")
    make_jar(tmp_path / "a" / "org.apache.zookeeper-zookeeper-jute-3.9.3.jar")
    assert zookeeper_version([str(tmp_path / "a" / "*")]) == "3.9.3"
    assert zookeeper_version([str(installed_jar)]) == "3.9.3"
    distribution_jar = make_jar(tmp_path / "b" / "zookeeper-3.9.5.jar")
    assert zookeeper_version([str(distribution_jar)]) == "3.9.5"


def test_a_jar_with_quorum_peer_main_is_recognised(tmp_path: Path) -> None:
    assert contains_quorum_peer_main(make_jar(tmp_path / "zookeeper-3.9.5.jar", MAIN_ENTRY))
    assert not contains_quorum_peer_main(make_jar(tmp_path / "other.jar", "a/B.class"))
    (tmp_path / "broken.jar").write_bytes(b"not a zip")
    assert not contains_quorum_peer_main(tmp_path / "broken.jar")


# -- installing ---------------------------------------------------------------------------------


def test_an_install_is_a_runnable_zookeeper(fake_mvn: Path, tmp_path: Path) -> None:
    done = install("3.9.2")
    home = root_of(tmp_path) / "3.9.2"
    assert done.home == home and done.jars == 3
    assert (home / "lib" / "org.apache.zookeeper-zookeeper-3.9.2.jar").is_file()
    assert "ch.qos.logback" in (home / "conf" / "logback.xml").read_text()
    marker = json.loads((home / MARKER).read_text())
    assert marker["artifact"] == "org.apache.zookeeper:zookeeper:3.9.2"
    found = locate_zookeeper("3.9.2")
    assert found.classpath[0] == str(home / "conf") and found.home == home
    assert found.source.startswith("Maven, ") and found.source.endswith("zookeeper/3.9.2")
    assert describe_zookeeper(found.classpath, found.source).startswith("ZooKeeper 3.9.2 (Maven")
    calls = fake_mvn.read_text()
    assert calls.count("\n") == 1 and " -o " in calls  # offline first; once
    assert locate_zookeeper("3.9.2") == found and fake_mvn.read_text() == calls  # reused


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("not-served", "Maven's repository does not serve org.apache.zookeeper:zookeeper:9.9.9"),
        ("no-server", "it listed no org.apache.zookeeper:zookeeper:9.9.9 itself"),
        (
            "invalid-pom",
            r"ZooKeeper 9.9.9 was not installed: the resolution of org.apache.zookeeper:"
            r"zookeeper:9.9.9 is incomplete \(the POM of org.apache.zookeeper:zookeeper:jar:9.9.9 "
            "is invalid",
        ),
    ],
)
def test_a_failed_install_is_a_clear_error_and_leaves_nothing(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", mode)
    with pytest.raises(ZooKeeperInstallError, match=message):
        install("9.9.9")
    assert installed() == []


def test_list_and_remove_through_the_cli(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["zookeeper", "list"]) == 0
    assert "no ZooKeeper installed" in capsys.readouterr().out
    assert main(["zookeeper", "install"]) == 0
    out = capsys.readouterr().out
    assert f"ZooKeeper {DEFAULT_VERSION}: {root_of(tmp_path) / DEFAULT_VERSION}" in out
    assert f"--zookeeper {DEFAULT_VERSION}" in out
    assert main(["zookeeper", "install", "3.8.4"]) == 0
    capsys.readouterr()
    assert main(["zookeeper", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["3.8.4", DEFAULT_VERSION]
    assert main(["zookeeper", "remove", "3.8.4"]) == 0
    assert main(["zookeeper", "remove", "3.8.4"]) == 1
    assert [i.version for i in installed()] == [DEFAULT_VERSION]


def test_the_cli_reports_an_unserved_version(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "not-served")
    assert main(["zookeeper", "install", "3.1.0"]) == 2
    assert "does not serve org.apache.zookeeper:zookeeper:3.1.0" in capsys.readouterr().err


# -- which ZooKeeper a cluster runs -------------------------------------------------------------


def test_the_default_is_the_default_release_installed_on_first_use(
    fake_mvn: Path, tmp_path: Path
) -> None:
    found = locate_zookeeper(environ={"BKCONFORM_HOME": str(tmp_path / "bkconform")})
    assert found.home == root_of(tmp_path) / DEFAULT_VERSION


def test_zookeeper_home_comes_before_the_default(fake_mvn: Path, tmp_path: Path) -> None:
    home = tmp_path / "zk-home"
    jar = make_jar(home / "lib" / "zookeeper-3.9.5.jar", MAIN_ENTRY)
    dependency = make_jar(home / "lib" / "slf4j-api-2.0.jar", "org/slf4j/Logger.class")
    (home / "conf").mkdir()
    found = locate_zookeeper(environ={"ZOOKEEPER_HOME": str(home)})
    assert found.classpath == (str(home / "conf"), str(dependency), str(jar))
    assert found.source == f"ZOOKEEPER_HOME={home}"
    assert not fake_mvn.exists()  # mvn never ran: nothing was installed
    # A named release wins over ZOOKEEPER_HOME (installed under this test's BKCONFORM_HOME).
    environ = {"ZOOKEEPER_HOME": str(home), "BKCONFORM_HOME": str(tmp_path / "bkconform")}
    assert locate_zookeeper("3.9.2", environ).home == root_of(tmp_path) / "3.9.2"


def test_a_named_or_configured_zookeeper_that_is_not_one_is_an_error(
    fake_mvn: Path, tmp_path: Path
) -> None:
    home = tmp_path / "not-zk"
    make_jar(home / "lib" / "zookeeper-3.9.5.jar", "org/apache/zookeeper/Other.class")
    with pytest.raises(ZooKeeperNotFound, match=r"ZOOKEEPER_HOME=.*QuorumPeerMain"):
        locate_zookeeper(environ={"ZOOKEEPER_HOME": str(home)})
    with pytest.raises(ZooKeeperNotFound, match=r"--zookeeper .*not-zk: no zookeeper jar"):
        locate_zookeeper(str(home))


def test_a_default_that_cannot_be_installed_says_what_to_do(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "not-served")
    with pytest.raises(ZooKeeperNotFound) as error:
        locate_zookeeper(environ={"BKCONFORM_HOME": str(tmp_path / "bkconform")})
    message = str(error.value)
    assert f"the default release, {DEFAULT_VERSION}, could not be installed" in message
    assert "--zookeeper VERSION|DIR" in message and "ZOOKEEPER_HOME" in message


def test_a_target_spec_runs_the_named_release_on_every_executor(
    fake_mvn: Path, tmp_path: Path
) -> None:
    spec = TargetSpec(kind="local", bookie_kind="reference", zookeeper_release="3.9.2")
    resolved = spec.resolved(progress=False)
    assert resolved.zookeeper_release == str(root_of(tmp_path) / "3.9.2")  # installed, by path
    assert resolved.zookeeper_install() == locate_zookeeper("3.9.2")
    docker = TargetSpec(kind="docker", bookie_kind="reference", zookeeper_release="3.9.2")
    assert docker.resolved(progress=False).zookeeper_release == str(root_of(tmp_path) / "3.9.2")
    for kind, extra in (
        ("docker", {"official_images": True}),
        ("external", {"zookeeper": "127.0.0.1:2181"}),
    ):
        with pytest.raises(ValueError, match="only --target local and --target docker"):
            TargetSpec(kind=kind, zookeeper_release="3.9.2", **extra)  # type: ignore[arg-type]


# -- complete, and still complete when used -----------------------------------------------------


def test_a_broken_install_is_reported_wherever_it_is_used(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = install(DEFAULT_VERSION).home
    jar = "lib/io.dropwizard.metrics-metrics-core-4.1.12.1.jar"
    assert json.loads((home / MARKER).read_text())["files"][jar] > 0
    (home / jar).unlink()
    expected = (
        f"the ZooKeeper {DEFAULT_VERSION} install at {home} is broken ({jar} is missing): "
        f"reinstall with `bkconform zookeeper install {DEFAULT_VERSION} --force`"
    )
    environ = {"BKCONFORM_HOME": str(tmp_path / "bkconform")}
    for use in (
        lambda: locate_zookeeper(DEFAULT_VERSION),
        lambda: locate_zookeeper(str(home)),
        lambda: locate_zookeeper(environ={"ZOOKEEPER_HOME": str(home)}),
        # The default release broken is said as such, not as "could not be installed".
        lambda: locate_zookeeper(environ=environ),
    ):
        with pytest.raises(ZooKeeperInstallBroken) as error:
            use()
        assert str(error.value) == expected
    assert fake_mvn.read_text().count("\n") == 1  # never quietly reinstalled
    install(DEFAULT_VERSION, force=True)
    assert locate_zookeeper(DEFAULT_VERSION).home == home


def test_an_install_made_before_jars_were_recorded_is_checked_by_its_classes(
    fake_mvn: Path,
) -> None:
    home = install("3.9.2").home
    marker = json.loads((home / MARKER).read_text())
    del marker["files"]
    (home / MARKER).write_text(json.dumps(marker))
    assert locate_zookeeper("3.9.2").home == home
    server = home / "lib" / "org.apache.zookeeper-zookeeper-3.9.2.jar"
    with zipfile.ZipFile(server, "w") as archive:  # the server alone, no client nor netty
        archive.writestr(MAIN_ENTRY, b"x")
    with pytest.raises(
        ZooKeeperInstallBroken, match=r"no jar holds org.apache.zookeeper.ZooKeeper"
    ):
        locate_zookeeper("3.9.2")


def test_list_available_asks_the_configured_repository(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install("3.9.3")
    assert main(["zookeeper", "list", "--available"]) == 0
    lines = capsys.readouterr().out.splitlines()
    remote = (tmp_path / "remote").as_uri()
    assert lines[0].startswith(
        f"org.apache.zookeeper:zookeeper: 5 versions served by {remote} (mirror 'tests' "
    )
    assert lines[1:] == [
        "3.6.3",
        "3.8.4",
        "3.9.2",
        f"3.9.3\tinstalled ({root_of(tmp_path) / '3.9.3'})",
        "3.9.5",
    ]


def test_the_cli_says_what_the_repository_serves(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "not-served")
    assert main(["zookeeper", "install", "3.9.9"]) == 2
    err = capsys.readouterr().err
    assert "of 3.9 it serves 3.9.2, 3.9.3, 3.9.5; the newest is 3.9.5" in err
    with pytest.raises(SystemExit):
        main(["zookeeper", "install", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "3.5.x" not in text and "3.8.4" not in text
    assert "`bkconform zookeeper list --available` asks it" in text
