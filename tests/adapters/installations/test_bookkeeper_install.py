"""The BookKeeper installer without network or Maven: the POM, the mvn command, mvn's errors
made clear, atomic installs with a fake ``mvn`` on PATH, list and remove, the launcher; installs
accepted only complete (a POM Maven could not read, a class no jar holds) and checked again
on each use; the versions asked of the configured repository (a test repository of its own)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import pytest

from adapters.installations import linkage
from adapters.installations.bookkeeper import (
    DEFAULT_VERSION,
    MARKER,
    REQUIRED_CLASSES,
    BookKeeperInstallBroken,
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
from adapters.installations.errors import BrokenInstallation
from adapters.javaclient import distribution_classpath, distribution_version
from conformance.cli import main
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path
from tests.adapters.installations.maven_repo import remote_repository, use_repository

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


@pytest.fixture
def repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The configured repository: ``$HOME``'s settings mirror it to a ``file://`` repository
    listing the test versions (maven_repo.BOOKKEEPER_VERSIONS); its URL."""
    url = remote_repository(tmp_path / "remote").as_uri()
    use_repository(monkeypatch, tmp_path / "home", url)
    return url


def test_maven_failures_become_clear_messages(repository: str) -> None:
    message = explain_maven_failure("4.17.4", NOT_SERVED, offline=False)
    assert message.startswith(
        "Maven's repository does not serve org.apache.bookkeeper:bookkeeper-server:4.17.4"
    )
    # What the configured repository serves, asked as the message is made: never a fixed list.
    assert f"Asked now, {repository} (mirror 'tests' of central in " in message
    assert "of 4.17 it serves 4.17.0, 4.17.2, 4.17.3; the newest is 4.18.2" in message
    assert "`bkconform bookkeeper list --available` lists them all" in message
    assert "mvn said: Failed to execute goal" in message
    listed = explain_maven_failure("4.16.6", NOT_SERVED.replace("4.17.4", "4.16.6"), offline=False)
    assert "lists 4.16.6 of org.apache.bookkeeper:bookkeeper-server, yet mvn could not" in listed
    other_line = explain_maven_failure(
        "4.19.0", NOT_SERVED.replace("4.17.4", "4.19.0"), offline=False
    )
    assert "it serves no 4.19 release; the newest is 4.18.2" in other_line
    offline = explain_maven_failure("4.11.1", OFFLINE_MISS, offline=True)
    assert "not in the local Maven repository" in offline and "4.11.1" in offline
    unreachable = explain_maven_failure("4.17.3", UNREACHABLE, offline=False)
    assert "could not reach its repository" in unreachable
    assert f"is {repository} (mirror 'tests'" in unreachable
    assert "org.apache.bookkeeper:bookkeeper-server:4.17.3" in unreachable
    other = explain_maven_failure("4.17.3", "[ERROR] something else\n", offline=False)
    assert "mvn failed to resolve" in other and "something else" in other


def test_an_unreachable_repository_is_said_so_in_the_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.adapters.installations.maven_repo import closed_port_url

    url = closed_port_url()
    use_repository(monkeypatch, tmp_path / "home", url)
    message = explain_maven_failure("4.17.4", NOT_SERVED, offline=False)
    assert message.startswith("Maven's repository does not serve")
    assert f"Which versions {url} (mirror 'tests'" in message and "is not known" in message
    assert "could not read" in message and "Connection refused" in message
    assert "`bkconform bookkeeper list --available` asks again" in message
    assert "4.17.3" not in message  # no list from anywhere else


def test_a_pom_maven_could_not_read_is_an_incomplete_resolution(
    repository: str, tmp_path: Path
) -> None:
    """Maven's words for a POM it could not read make the failure explained as such, with
    what in the local repository explains it: here the parent POM is not there."""
    local = tmp_path / "m2"
    pom = local / "org/apache/bookkeeper/bookkeeper-server/4.14.7/bookkeeper-server-4.14.7.pom"
    pom.parent.mkdir(parents=True)
    pom.write_text(
        "<project><parent><groupId>org.apache.bookkeeper</groupId><artifactId>bookkeeper"
        "</artifactId><version>4.14.7</version></parent></project>"
    )
    message = explain_maven_failure(
        "4.14.7", INVALID_POM, offline=True, incomplete="the POM of x is invalid", maven_repo=local
    )
    assert message.startswith(
        "BookKeeper 4.14.7 was not installed: the resolution of "
        "org.apache.bookkeeper:bookkeeper-server:4.14.7 is incomplete (the POM of x is invalid)"
    )
    parent = "org.apache.bookkeeper:bookkeeper:4.14.7"
    assert f"Local repository {local}: {parent}'s POM is missing ({local}/org/apache/" in message
    assert "install without --offline" in message
    # A parent POM there but truncated: Maven will not download it again, deleting it helps.
    parent_pom = local / "org/apache/bookkeeper/bookkeeper/4.14.7/bookkeeper-4.14.7.pom"
    parent_pom.parent.mkdir(parents=True)
    parent_pom.write_text("<project><parent><groupId>org.ap")
    message = explain_maven_failure(
        "4.14.7", INVALID_POM, offline=True, incomplete="the POM of x is invalid", maven_repo=local
    )
    assert f"{parent_pom} ({parent}'s POM) is not a readable POM (" in message
    assert message.endswith(
        "Delete it and install again (Maven never downloads again a POM it finds on disk)."
    )
    parent_pom.unlink()  # missing again: online would fetch it
    # A failed run (not exit 0) whose only words are about a POM is explained the same way.
    failed = explain_maven_failure(
        "4.14.7",
        "[ERROR] Failed to read artifact descriptor for org.apache.bookkeeper:bookkeeper-server:"
        "jar:4.14.7: something\n",
        offline=False,
        maven_repo=local,
    )
    assert "is incomplete (could not read the POM of org.apache.bookkeeper:bookkeeper-server" in (
        failed
    )
    assert "Going online" in failed and "did not complete it" in failed


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

# What mvn 3.8.7 prints, word for word, when the local repository holds bookkeeper-server's POM
# but its parent POM is truncated (an interrupted download), and when it holds the jar without
# its POM: both runs exit 0 and list bookkeeper-server alone.
INVALID_POM = (
    "[WARNING] The POM for org.apache.bookkeeper:bookkeeper-server:jar:4.14.7 is invalid, "
    "transitive dependencies (if any) will not be available, enable debug logging for more "
    "details\n[INFO] BUILD SUCCESS\n"
)
MISSING_POM = (
    "[WARNING] The POM for org.apache.bookkeeper:bookkeeper-server:jar:4.14.7 is missing, no "
    "dependency information available\n[INFO] BUILD SUCCESS\n"
)

FAKE_MVN = """\
#!{python}
import os, sys, time, zipfile
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
# Modes of a run that exits 0 with bookkeeper-server alone: "invalid-pom" and "missing-pom"
# print Maven's warning (always, or only offline with "-offline"), "one-jar" prints nothing.
alone = mode in ("invalid-pom", "missing-pom", "one-jar") or (
    offline and mode in ("invalid-pom-offline", "missing-pom-offline"))
warning = {{"invalid": {invalid!r}, "missing": {missing!r}}}.get(mode.split("-")[0], "")
repo = Path(os.environ["FAKE_M2"])
repo.mkdir(parents=True, exist_ok=True)
lines = ["The following files have been resolved:"]
# The server jar holds BookKeeper's classes, the ZooKeeper jar every other required class but
# netty's, which the epoll jar holds: each jar a zip, as the install's checks read them.
entries = {entries!r}
artifacts = []
if mode != "no-server":
    artifacts.append(("org.apache.bookkeeper", "bookkeeper-server", None, version, "server"))
if not alone:
    artifacts.insert(0, ("org.apache.zookeeper", "zookeeper", None, "3.9.3", "other"))
    artifacts.append(
        ("io.netty", "netty-transport-native-epoll", "linux-x86_64", "4.1.130.Final", "netty"))
drop = os.environ.get("FAKE_MVN_DROP", "")
for group, artifact, classifier, v, part in artifacts:
    jar = repo / f"{{artifact}}-{{v}}.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\\n")
        for entry in entries[part]:
            if entry != drop:
                archive.writestr(entry, b"\\xca\\xfe\\xba\\xbe")
    coords = f"{{group}}:{{artifact}}:jar:" + (f"{{classifier}}:" if classifier else "") + v
    lines.append(f"   {{coords}}:compile:{{jar}} -- module x (auto)")
out = [a.split("=", 1)[1] for a in args if a.startswith("-DoutputFile=")][0]
Path(out).write_text("\\n".join(lines) + "\\n")
print(warning.replace("4.14.7", version) if alone else "[INFO] BUILD SUCCESS")
"""


def entry(name: str) -> str:
    return name.replace(".", "/") + ".class"


def fake_jar_entries() -> dict[str, list[str]]:
    """Which fake jar holds which required class (the first of each one's alternatives)."""
    parts: dict[str, list[str]] = {"server": [], "netty": [], "other": []}
    for required in REQUIRED_CLASSES:
        name = required.names[0]
        part = (
            "server"
            if name.startswith("org.apache.bookkeeper.")
            else "netty"
            if name.startswith("io.netty.")
            else "other"
        )
        parts[part].append(entry(name))
    return parts


def fake_link_check(own_jars: Any, classpath: Any, **_options: Any) -> linkage.Linkage:
    """The fake jars' classes are not real class files: every one links, unless
    ``FAKE_LINK_MISSING`` names a type none of the jars holds."""
    missing = os.environ.get("FAKE_LINK_MISSING")
    if len(classpath) == len(own_jars):  # the release's jars alone: its dependencies missing
        missing = missing or "io.netty.buffer.ByteBuf"
    needers = ("org.apache.bookkeeper.proto.BookieProtoEncoding",)
    return linkage.Linkage(len(own_jars) * 7, {missing: needers} if missing else {})


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``mvn`` first on PATH (and a fake link check of its fake jars); returns the file
    its calls are appended to."""
    monkeypatch.setenv("FAKE_M2", str(tmp_path / "m2"))
    monkeypatch.delenv("FAKE_MVN_DROP", raising=False)
    monkeypatch.delenv("FAKE_LINK_MISSING", raising=False)
    monkeypatch.setattr(linkage, "check", fake_link_check)
    script = FAKE_MVN.format(
        python=sys.executable,
        not_served=NOT_SERVED,
        offline_miss=OFFLINE_MISS,
        invalid=INVALID_POM,
        missing=MISSING_POM,
        entries=fake_jar_entries(),
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
            "Maven's repository does not serve org.apache.bookkeeper:bookkeeper-server:9.9.9",
        ),
        ("no-server", "it listed no org.apache.bookkeeper:bookkeeper-server:9.9.9 itself"),
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


# -- complete or nothing ------------------------------------------------------------------------


def test_a_pom_maven_could_not_read_offline_sends_the_install_online(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mvn -o`` exits 0 with the server jar alone when it could not read a POM (Maven's
    warning says so): that is no install; online resolves every dependency."""
    for mode in ("invalid-pom-offline", "missing-pom-offline"):
        monkeypatch.setenv("FAKE_MVN_MODE", mode)
        done = install("4.14.7", force=True)
        assert done.jars == 3
        first, second = fake_mvn.read_text().splitlines()[-2:]
        assert " -o " in f" {first} " and " -U " in f" {second} "
    assert [i.version for i in installed()] == ["4.14.7"]


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        (
            "invalid-pom",
            "(the POM of org.apache.bookkeeper:bookkeeper-server:jar:9.9.9 is invalid (it or a "
            "parent POM it inherits from is unreadable))",
        ),
        (
            "missing-pom",
            "(the POM of org.apache.bookkeeper:bookkeeper-server:jar:9.9.9 is missing)",
        ),
        (
            "one-jar",
            "(none of the 1 jars it resolved holds org.slf4j.impl.StaticLoggerBinder or "
            "org.apache.logging.slf4j.SLF4JServiceProvider or "
            "ch.qos.logback.classic.spi.LogbackServiceProvider (a logging backend: the shell "
            "prints its results through it))",
        ),
    ],
)
def test_an_install_that_stays_incomplete_online_fails_and_leaves_nothing(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, reason: str
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", mode)
    with pytest.raises(BookKeeperInstallError) as error:
        install("9.9.9")
    message = str(error.value)
    assert message.startswith(
        "BookKeeper 9.9.9 was not installed: the resolution of "
        f"org.apache.bookkeeper:bookkeeper-server:9.9.9 is incomplete {reason}"
    )
    assert "Going online (file://" in message and "did not complete it" in message
    calls = fake_mvn.read_text().splitlines()
    assert len(calls) == 2 and " -o " in f" {calls[0]} " and " -U " in f" {calls[1]} "
    assert [p.name for p in root_of(tmp_path).iterdir()] == [".lock-9.9.9"]
    assert installed() == []
    # Asked to stay offline, it says what would help.
    with pytest.raises(BookKeeperInstallError, match="install without --offline"):
        install("9.9.9", offline=True)
    assert installed() == []


def test_the_cli_never_reports_a_one_jar_install(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "invalid-pom")
    assert main(["bookkeeper", "install", "4.15.4"]) == 2
    captured = capsys.readouterr()
    assert "1 jars" not in captured.out and "BookKeeper 4.15.4:" not in captured.out
    assert "bkconform bookkeeper install: BookKeeper 4.15.4 was not installed" in captured.err


@pytest.mark.parametrize("required", REQUIRED_CLASSES, ids=lambda r: r.names[0])
def test_every_required_class_is_checked(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, required: object
) -> None:
    """A resolution that lacks any one required class (the first of its alternatives, which
    the fake jars hold) installs nothing."""
    from adapters.installations.releases import RequiredClass

    assert isinstance(required, RequiredClass)
    monkeypatch.setenv("FAKE_MVN_DROP", entry(required.names[0]))
    with pytest.raises(BookKeeperInstallError, match=f"holds {required.names[0]}"):
        install("4.17.3")
    assert installed() == []


def test_the_classes_are_read_from_the_jars(tmp_path: Path) -> None:
    """Any one of a class's alternatives will do (commons configuration 1 or 2); a jar that
    is no zip holds nothing."""
    from adapters.installations.releases import RequiredClass, missing_classes

    configuration = RequiredClass(
        (
            "org.apache.commons.configuration.Configuration",
            "org.apache.commons.configuration2.Configuration",
        ),
        "x",
    )
    logger = RequiredClass(("org.slf4j.Logger",), "y")
    jar = tmp_path / "c2.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("org/apache/commons/configuration2/Configuration.class", b"")
    broken = tmp_path / "broken.jar"
    broken.write_bytes(b"not a zip")
    assert missing_classes([configuration, logger], [broken, jar]) == [logger]
    assert missing_classes([configuration], [tmp_path / "gone.jar"]) == [configuration]


# -- a broken install found later ---------------------------------------------------------------


def test_a_broken_install_is_reported_with_the_command_that_reinstalls_it(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = install("4.17.3").home
    marker = json.loads((home / MARKER).read_text())
    jar = "lib/org.apache.zookeeper-zookeeper-3.9.3.jar"
    assert marker["files"][jar] == (home / jar).stat().st_size  # recorded when installed
    (home / jar).unlink()
    expected = (
        f"the BookKeeper 4.17.3 install at {home} is broken ({jar} is missing): reinstall with "
        "`bkconform bookkeeper install 4.17.3 --force`"
    )
    for use in (
        lambda: install("4.17.3"),
        lambda: resolve_bookkeeper("4.17.3"),
        lambda: resolve_bookkeeper(str(home)),
        lambda: find_bookkeeper_home(None, {"BOOKKEEPER_HOME": str(home)}),
    ):
        with pytest.raises(BookKeeperInstallBroken) as error:
            use()
        assert str(error.value) == expected
        assert isinstance(error.value, BookKeeperInstallError | BrokenInstallation)
    assert fake_mvn.read_text().count("\n") == 1  # found broken, not quietly reinstalled
    assert main(["bookkeeper", "install", "4.17.3"]) == 2
    assert expected in capsys.readouterr().err
    assert main(["bookkeeper", "list"]) == 0
    listed = capsys.readouterr().out
    assert "BROKEN" in listed and "`bkconform bookkeeper install 4.17.3 --force`" in listed
    # The command it names repairs it.
    assert main(["bookkeeper", "install", "4.17.3", "--force"]) == 0
    assert install("4.17.3").home == home and (home / jar).is_file()
    capsys.readouterr()
    assert main(["bookkeeper", "list"]) == 0
    assert "BROKEN" not in capsys.readouterr().out


def test_a_jar_that_changed_size_is_a_broken_install(fake_mvn: Path) -> None:
    home = install("4.17.3").home
    jar = home / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.17.3.jar"
    size = jar.stat().st_size
    jar.write_bytes(b"PK")  # a truncated copy
    with pytest.raises(
        BookKeeperInstallBroken,
        match=rf"lib/{jar.name} has 2 bytes, {size} when installed\): reinstall with",
    ):
        install("4.17.3")


def test_an_install_made_before_jars_were_recorded_is_checked_by_its_classes(
    fake_mvn: Path, tmp_path: Path
) -> None:
    """The bug this guards against: an older bkconform accepted a one-jar install (mvn -o
    with an unreadable POM), whose marker records no jars. Its classes tell it is broken."""
    home = install("4.15.4").home
    marker = json.loads((home / MARKER).read_text())
    del marker["files"]
    (home / MARKER).write_text(json.dumps({**marker, "jars": 1}))
    assert resolve_bookkeeper("4.15.4") == home  # complete: its jars hold every class
    for jar in (home / "lib").iterdir():
        if "bookkeeper-server" not in jar.name:
            jar.unlink()
    with pytest.raises(BookKeeperInstallBroken) as error:
        resolve_bookkeeper("4.15.4")
    message = str(error.value)
    assert message.startswith(f"the BookKeeper 4.15.4 install at {home} is broken (no jar holds ")
    assert "(a logging backend: the shell prints its results through it)" in message
    assert message.endswith("reinstall with `bkconform bookkeeper install 4.15.4 --force`")


# -- what the repository serves -----------------------------------------------------------------


def test_list_available_asks_the_configured_repository(
    fake_mvn: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.adapters.installations.maven_repo import (
        BOOKKEEPER_VERSIONS,
        http_repository,
        write_metadata,
    )

    install("4.17.3")
    install("4.17.1")  # installed, and not listed by the repository
    served = tmp_path / "served"
    write_metadata(
        served, "org.apache.bookkeeper", "bookkeeper-server", reversed(BOOKKEEPER_VERSIONS)
    )
    with http_repository(served) as url:
        use_repository(monkeypatch, tmp_path / "home", url)
        assert main(["bookkeeper", "list", "--available"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"org.apache.bookkeeper:bookkeeper-server: 7 versions served by {url} (mirror 'tests' "
        f"of central in {tmp_path / 'home' / '.m2' / 'settings.xml'}), asked now"
    )
    assert lines[1:8] == [
        "4.11.1",
        "4.14.7",
        "4.16.6",
        "4.17.0",
        "4.17.2",
        f"4.17.3\tinstalled ({root_of(tmp_path) / '4.17.3'})",
        "4.18.2",
    ]
    assert lines[8:] == ["installed, not listed by the repository: 4.17.1"]


def test_list_available_from_an_unreachable_repository_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.adapters.installations.maven_repo import closed_port_url, http_repository

    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "bkconform"))
    url = closed_port_url()
    use_repository(monkeypatch, tmp_path / "home", url)
    assert main(["bookkeeper", "list", "--available"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"bkconform bookkeeper list --available: could not ask Maven's repository, {url} "
        "(mirror 'tests' of central in "
    )
    assert "which versions of org.apache.bookkeeper:bookkeeper-server it serves: could not " in err
    assert "Connection refused" in err
    # A repository that does not answer in time is the same, after the timeout.
    with http_repository(tmp_path, delay=5.0) as slow:
        use_repository(monkeypatch, tmp_path / "home", slow)
        assert main(["bookkeeper", "list", "--available", "--timeout", "0.3"]) == 2
    assert "timed out" in capsys.readouterr().err


def test_help_names_no_served_versions(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["bookkeeper", "install", "--help"], ["bookkeeper", "list", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "4.17.2" not in text and "4.14.7" not in text and "served here" not in text
    with pytest.raises(SystemExit):
        main(["bookkeeper", "install", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "any version the repository Maven is configured with serves" in text
    assert "`bkconform bookkeeper list --available` asks it" in text


def test_an_install_whose_own_classes_do_not_link_is_incomplete(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the release's classes need is the release's to say: a type none of the resolved
    # jars holds makes the install incomplete, whatever a list of class names would say.
    monkeypatch.setenv("FAKE_LINK_MISSING", "com.google.protobuf.MessageLite")
    with pytest.raises(BookKeeperInstallError) as raised:
        install("4.17.3")
    message = str(raised.value)
    assert "com.google.protobuf.MessageLite (needed by 1 class" in message
    assert "org.apache.bookkeeper.proto.BookieProtoEncoding" in message
    assert not (root_of(tmp_path) / "4.17.3").exists()


def test_the_install_records_how_many_of_its_own_classes_linked(
    fake_mvn: Path, tmp_path: Path
) -> None:
    install("4.17.3")
    marker = json.loads((root_of(tmp_path) / "4.17.3" / "bkconform-install.json").read_text())
    assert marker["linked_classes"] == 7  # the fake check's count for the one own jar
