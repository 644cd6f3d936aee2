"""The BookKeeper installer without network or Maven: the POM, the mvn command, mvn's errors
made clear, atomic installs with a fake ``mvn`` on PATH, list and remove, the launcher."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from adapters.installations.bookkeeper import (
    DEFAULT_VERSION,
    MARKER,
    BookKeeperInstallError,
    explain_maven_failure,
    find_bookkeeper_home,
    install,
    installed,
    launcher_script,
    maven_command,
    parse_listing,
    render_pom,
    resolve_bookkeeper,
)
from adapters.javaclient import distribution_classpath, distribution_version
from conformance.cli import main
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path

NOT_SERVED = """\
[INFO] Scanning for projects...
[WARNING] The POM for org.apache.bookkeeper:bookkeeper-server:jar:4.17.4 is missing, no dependency information available
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal on project bookkeeper-install: Could not resolve dependencies for project bkconform:bookkeeper-install:pom:1: Could not find artifact org.apache.bookkeeper:bookkeeper-server:jar:4.17.4 in central (https://repo.maven.apache.org/maven2) -> [Help 1]
[ERROR] \n\
[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.
"""  # noqa: E501 (mvn's own lines, as 3.8.7 prints them)

OFFLINE_MISS = """\
[ERROR] Failed to execute goal on project bookkeeper-install: Could not resolve dependencies for project bkconform:bookkeeper-install:pom:1: Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact org.apache.bookkeeper:bookkeeper-server:jar:4.11.1 has not been downloaded from it before. -> [Help 1]
"""  # noqa: E501

UNREACHABLE = """\
[ERROR] Failed to execute goal on project bookkeeper-install: Could not resolve dependencies for project bkconform:bookkeeper-install:pom:1: Failed to collect dependencies at org.apache.bookkeeper:bookkeeper-server:jar:4.17.3: Failed to read artifact descriptor for org.apache.bookkeeper:bookkeeper-server:jar:4.17.3: Could not transfer artifact org.apache.bookkeeper:bookkeeper-server:pom:4.17.3 from/to central (https://repo.maven.apache.org/maven2): Connect to repo.maven.apache.org:443 [repo.maven.apache.org/151.101.0.215] failed: Connection refused -> [Help 1]
"""  # noqa: E501


# -- pure parts ---------------------------------------------------------------------------------


def test_the_pom_names_the_server_artifact_and_version() -> None:
    pom = render_pom("4.11.1")
    assert "<artifactId>bookkeeper-server</artifactId>" in pom
    assert "<version>4.11.1</version>" in pom and "@BOOKKEEPER_VERSION@" not in pom
    with pytest.raises(BookKeeperInstallError, match="not a BookKeeper version"):
        render_pom("4.17.3</version><x>")


def test_the_maven_command(tmp_path: Path) -> None:
    pom, listing = tmp_path / "pom.xml", tmp_path / "deps.txt"
    offline = maven_command("mvn", pom, listing, offline=True)
    assert offline[:5] == ["mvn", "-B", "-Dstyle.color=never", "-f", str(pom)]
    assert "-o" in offline and "-U" not in offline
    assert "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:list" in offline
    assert {"-DincludeScope=runtime", "-DoutputAbsoluteArtifactFilename=true"} <= set(offline)
    assert f"-DoutputFile={listing}" in offline
    online = maven_command("mvn", pom, listing, offline=False, maven_repo=tmp_path / "m2")
    assert "-U" in online and "-o" not in online
    assert f"-Dmaven.repo.local={tmp_path / 'm2'}" in online


def test_the_listing_is_parsed_with_classifiers_and_module_names() -> None:
    text = textwrap.dedent(
        """
        The following files have been resolved:
           org.apache.bookkeeper:bookkeeper-server:jar:4.17.3:compile:/m2/bookkeeper-server-4.17.3.jar -- module bookkeeper.server (auto)
           io.netty:netty-transport-native-epoll:jar:linux-x86_64:4.1.130.Final:compile:/m2/epoll.jar -- module io.netty.transport.epoll.linux.x86_64 [auto]
           org.slf4j:slf4j-api:jar:1.7.32:runtime:/m2/slf4j-api-1.7.32.jar
        """  # noqa: E501
    )
    server, epoll, slf4j = parse_listing(text)
    assert server.distribution_name == "org.apache.bookkeeper-bookkeeper-server-4.17.3.jar"
    assert server.path == Path("/m2/bookkeeper-server-4.17.3.jar")
    assert epoll.classifier == "linux-x86_64"
    assert (
        epoll.distribution_name
        == "io.netty-netty-transport-native-epoll-4.1.130.Final-linux-x86_64.jar"
    )
    assert slf4j.scope == "runtime" and slf4j.classifier is None


def test_maven_failures_become_clear_messages() -> None:
    message = explain_maven_failure("4.17.4", NOT_SERVED, offline=False)
    assert message.startswith(
        "Maven Central does not serve org.apache.bookkeeper:bookkeeper-server:4.17.4"
    )
    assert "Versions served here: 4.17.3" in message and "not served: 4.17.4" in message
    assert "mvn said: Failed to execute goal" in message
    offline = explain_maven_failure("4.11.1", OFFLINE_MISS, offline=True)
    assert "not in the local Maven repository" in offline and "4.11.1" in offline
    unreachable = explain_maven_failure("4.17.3", UNREACHABLE, offline=False)
    assert "could not reach its repository" in unreachable
    assert "org.apache.bookkeeper:bookkeeper-server:4.17.3" in unreachable
    other = explain_maven_failure("4.17.3", "[ERROR] something else\n", offline=False)
    assert "mvn failed to resolve" in other and "something else" in other


def test_the_launcher_runs_the_server_main_with_bookie_conf() -> None:
    script = launcher_script("4.17.3")
    assert script.startswith("#!/bin/sh\n") and "BookKeeper\n# 4.17.3 resolved" in script
    assert "BOOKIE_CONF=${BOOKIE_CONF:-$BK_HOME/conf/bk_server.conf}" in script
    assert 'bookie) set -- org.apache.bookkeeper.server.Main --conf "$BOOKIE_CONF" "$@"' in script
    assert 'org.apache.bookkeeper.bookie.BookieShell -conf "$BOOKIE_CONF"' in script
    assert 'CLASSPATH="$BK_HOME/conf:$BK_HOME/lib/*"' in script
    for variable in (
        "BOOKIE_MAX_HEAP_MEMORY",
        "BOOKIE_MIN_HEAP_MEMORY",
        "BOOKIE_MAX_DIRECT_MEMORY",
    ):
        assert variable in script
    assert "-Dlog4j.configurationFile=$BK_HOME/conf/log4j2.xml" in script
    assert "-Dlog4j.configuration=file:$BK_HOME/conf/log4j.properties" in script


# -- a fake mvn ---------------------------------------------------------------------------------

FAKE_MVN = """\
#!{python}
import os, sys, time
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
mode = os.environ.get("FAKE_MVN_MODE", "ok")
offline = "-o" in args
version = Path([a for a in args if a.endswith("pom.xml")][0]).read_text().split(
    "<artifactId>bookkeeper-server</artifactId>")[1].split("<version>")[1].split("<")[0]
if mode == "hang":
    time.sleep(60)
if mode == "not-served" or (mode == "online-only" and offline):
    text = {not_served!r} if mode == "not-served" else {offline_miss!r}
    print(text.replace("4.17.4", version).replace("4.11.1", version))
    sys.exit(1)
repo = Path(os.environ["FAKE_M2"])
repo.mkdir(parents=True, exist_ok=True)
lines = ["The following files have been resolved:"]
artifacts = [("org.apache.zookeeper", "zookeeper", None, "3.9.3")]
if mode != "no-server":
    artifacts.append(("org.apache.bookkeeper", "bookkeeper-server", None, version))
artifacts.append(("io.netty", "netty-transport-native-epoll", "linux-x86_64", "4.1.130.Final"))
for group, artifact, classifier, v in artifacts:
    jar = repo / f"{{artifact}}-{{v}}.jar"
    jar.write_bytes(b"PK fake jar")
    coords = f"{{group}}:{{artifact}}:jar:" + (f"{{classifier}}:" if classifier else "") + v
    lines.append(f"   {{coords}}:compile:{{jar}} -- module x (auto)")
out = [a.split("=", 1)[1] for a in args if a.startswith("-DoutputFile=")][0]
Path(out).write_text("\\n".join(lines) + "\\n")
print("[INFO] BUILD SUCCESS")
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``mvn`` first on PATH; returns the file its calls are appended to."""
    monkeypatch.setenv("FAKE_M2", str(tmp_path / "m2"))
    script = FAKE_MVN.format(
        python=sys.executable, not_served=NOT_SERVED, offline_miss=OFFLINE_MISS
    )
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def root_of(tmp_path: Path) -> Path:
    return tmp_path / "bkconform" / "bookkeeper"


def test_an_install_is_a_bookkeeper_home(fake_mvn: Path, tmp_path: Path) -> None:
    done = install("4.17.3")
    home = root_of(tmp_path) / "4.17.3"
    assert done.home == home and done.version == "4.17.3" and done.jars == 3
    assert find_bookkeeper_home(home, {}) == home
    assert str(distribution_version(home)) == "4.17.3"
    names = {jar.name for jar in distribution_classpath(home)}
    assert "org.apache.bookkeeper-bookkeeper-server-4.17.3.jar" in names
    assert "io.netty-netty-transport-native-epoll-4.1.130.Final-linux-x86_64.jar" in names
    assert os.access(home / "bin" / "bookkeeper", os.X_OK)
    assert {p.name for p in (home / "conf").iterdir()} == {
        "log4j2.xml",
        "log4j.properties",
        "bk_server.conf",
    }
    assert json.loads((home / MARKER).read_text())["artifact"] == (
        "org.apache.bookkeeper:bookkeeper-server:4.17.3"
    )
    assert "<version>4.17.3</version>" in (home / "maven" / "pom.xml").read_text()
    # Offline first; the jars were "in ~/.m2", so one call.
    assert fake_mvn.read_text().count("\n") == 1 and " -o " in fake_mvn.read_text()
    # Nothing but the install and its lock file.
    assert sorted(p.name for p in root_of(tmp_path).iterdir()) == [".lock-4.17.3", "4.17.3"]


def test_an_installed_version_is_reused_without_maven(fake_mvn: Path, tmp_path: Path) -> None:
    first = install("4.17.3")
    calls = fake_mvn.read_text()
    assert install("4.17.3") == first
    assert resolve_bookkeeper("4.17.3") == first.home
    assert fake_mvn.read_text() == calls  # no mvn call
    install("4.17.3", force=True)
    assert fake_mvn.read_text().count("\n") == 2


def test_offline_first_then_online(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "online-only")
    install("4.11.1")
    first, second = fake_mvn.read_text().splitlines()
    assert " -o " in f" {first} " and " -U " in f" {second} "
    fake_mvn.unlink()
    with pytest.raises(BookKeeperInstallError, match="not in the local Maven repository"):
        install("4.17.2", offline=True)
    assert fake_mvn.read_text().count("\n") == 1


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            "not-served",
            "Maven Central does not serve org.apache.bookkeeper:bookkeeper-server:9.9.9",
        ),
        ("no-server", "not org.apache.bookkeeper:bookkeeper-server:9.9.9 itself"),
    ],
)
def test_a_failed_install_leaves_nothing_that_looks_installed(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", mode)
    with pytest.raises(BookKeeperInstallError, match=message):
        install("9.9.9")
    assert [p.name for p in root_of(tmp_path).iterdir()] == [".lock-9.9.9"]
    assert installed() == []


def test_a_hanging_mvn_is_killed_at_its_timeout(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "hang")
    with pytest.raises(BookKeeperInstallError, match=r"did not finish within 1s \(killed\)"):
        install("4.17.3", timeout=1.0)
    assert [p.name for p in root_of(tmp_path).iterdir()] == [".lock-4.17.3"]


def test_an_interrupted_install_is_cleaned_by_the_next(fake_mvn: Path, tmp_path: Path) -> None:
    # What a killed install leaves: a staging directory with jars but no marker.
    stale = root_of(tmp_path) / ".staging-4.17.3-abc"
    (stale / "lib").mkdir(parents=True)
    (stale / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.17.3.jar").write_bytes(b"")
    assert installed() == []
    install("4.17.3")
    assert not stale.exists()
    assert [i.version for i in installed()] == ["4.17.3"]


def test_no_mvn_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "bkconform"))
    with pytest.raises(BookKeeperInstallError, match=r"needs Maven and there is no mvn on PATH"):
        install("4.17.3")


def test_list_and_remove_through_the_cli(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bookkeeper", "list"]) == 0
    assert "no BookKeeper installed" in capsys.readouterr().out
    assert main(["bookkeeper", "install"]) == 0
    out = capsys.readouterr().out
    assert f"BookKeeper {DEFAULT_VERSION}: {root_of(tmp_path) / DEFAULT_VERSION}" in out
    assert main(["bookkeeper", "install", "4.11.1"]) == 0
    capsys.readouterr()
    assert main(["bookkeeper", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["4.11.1", DEFAULT_VERSION]
    assert main(["bookkeeper", "remove", "4.11.1"]) == 0
    assert main(["bookkeeper", "remove", "4.11.1"]) == 1
    assert [i.version for i in installed()] == [DEFAULT_VERSION]
    assert not (root_of(tmp_path) / "4.11.1").exists()


def test_the_cli_reports_an_unserved_version(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "not-served")
    assert main(["bookkeeper", "install", "4.17.4"]) == 2
    err = capsys.readouterr().err
    assert "does not serve org.apache.bookkeeper:bookkeeper-server:4.17.4" in err


def test_bookkeeper_option_takes_a_version_or_a_directory(fake_mvn: Path, tmp_path: Path) -> None:
    from conformance.cli import build_parser
    from conformance.commands.options import bookie_choice_from_args

    def bookkeeper_home_from_args(args: argparse.Namespace) -> Path | None:
        return bookie_choice_from_args(args).home

    parse = build_parser().parse_args
    args = parse(["scenario", "defect1-fencing", "--target", "local", "--bookkeeper", "4.17.3"])
    home = bookkeeper_home_from_args(args)
    assert home == root_of(tmp_path) / "4.17.3"
    args = parse(["scenario", "defect1-fencing", "--bookkeeper", str(home)])
    assert bookkeeper_home_from_args(args) == home
    args = parse(["scenario", "defect1-fencing", "--bookkeeper", str(tmp_path)])
    with pytest.raises(ValueError, match="no executable bin/bookkeeper"):
        bookkeeper_home_from_args(args)
    args = parse(["scenario", "defect1-fencing", "--bookkeeper", "4.17.3"])
    args.bookkeeper_home = home
    with pytest.raises(ValueError, match="not both"):
        bookkeeper_home_from_args(args)


def test_the_launcher_passes_bookie_conf_and_runs_any_main(fake_mvn: Path, tmp_path: Path) -> None:
    home = install("4.17.3").home
    fake_java = tmp_path / "jdk" / "bin" / "java"
    fake_java.parent.mkdir(parents=True)
    fake_java.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    fake_java.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "jdk"), "BOOKIE_CONF": "/x/bk_server.conf"}
    env["BOOKIE_MAX_HEAP_MEMORY"] = "256m"
    script = str(home / "bin" / "bookkeeper")
    bookie = subprocess.run(
        [script, "bookie"], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert bookie[-3:] == ["org.apache.bookkeeper.server.Main", "--conf", "/x/bk_server.conf"]
    assert bookie[:2] == ["-cp", f"{home}/conf:{home}/lib/*"] and "-Xmx256m" in bookie
    shell = subprocess.run(
        [script, "shell", "listbookies", "-rw"], env=env, capture_output=True, text=True
    ).stdout.splitlines()
    assert shell[-4:] == ["-conf", "/x/bk_server.conf", "listbookies", "-rw"]
    assert shell[-5] == "org.apache.bookkeeper.bookie.BookieShell"
    other = subprocess.run(
        [script, "org.example.Main", "a"], env=env, capture_output=True, text=True
    )
    assert other.stdout.splitlines()[-2:] == ["org.example.Main", "a"]
    bad = subprocess.run([script, "nonsense"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown command nonsense" in bad.stderr


# -- the real thing -----------------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.slow
def test_the_default_version_installs_and_runs_a_real_bookie(tmp_path: Path) -> None:
    """Installs the default version from Maven Central (from the cache after the first time),
    starts a real bookie on it, and lists it with ``bin/bookkeeper shell``."""
    from adapters.cluster import BookieImplementation, LocalCluster, LocalClusterOptions

    home = install(DEFAULT_VERSION).home
    assert str(distribution_version(home)) == DEFAULT_VERSION
    options = LocalClusterOptions(
        bookies=1, work_dir=tmp_path / "cluster", bookkeeper_home=home, start_timeout=120
    )
    with LocalCluster(options) as cluster:
        assert cluster.bookie_implementation() is BookieImplementation.BOOKKEEPER
        (bookie_id,) = cluster.endpoints().bookies
        assert list(cluster.registered_bookies()) == [bookie_id]
        conf = cluster.bookie(bookie_id).config.config_path
        shell = subprocess.run(
            [str(home / "bin" / "bookkeeper"), "shell", "listbookies", "-rw"],
            env={**os.environ, "BOOKIE_CONF": str(conf)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert shell.returncode == 0, shell.stdout + shell.stderr
        assert bookie_id in shell.stdout + shell.stderr
    log = (tmp_path / "cluster" / "logs" / "bookie1.log").read_text()
    assert "org.apache.bookkeeper" in log or "Bookie" in log  # the console reached the log


def test_an_install_of_an_older_layout_is_replaced(fake_mvn: Path, tmp_path: Path) -> None:
    home = install("4.17.3").home
    marker = json.loads((home / MARKER).read_text())
    (home / MARKER).write_text(json.dumps({**marker, "layout": 0}))
    assert installed() == []
    assert install("4.17.3").home == home
    assert fake_mvn.read_text().count("\n") == 2 and [i.version for i in installed()] == ["4.17.3"]


@pytest.mark.cluster
def test_the_default_zookeeper_is_the_one_the_default_bookkeeper_depends_on() -> None:
    """The default ZooKeeper release is read from the default BookKeeper's own dependencies
    (its bookkeeper-server POM, as the install resolved it): a new default BookKeeper that
    moves to another ZooKeeper fails here until the ZooKeeper default follows."""
    from adapters.installations import zookeeper
    from adapters.installations.system import zookeeper_version

    home = install(DEFAULT_VERSION).home
    assert zookeeper_version([str(home / "lib" / "*")]) == zookeeper.DEFAULT_VERSION
