"""The JaCoCo installer: its paths, the mvn command, mvn's errors made clear, atomic cached
installs with a fake ``mvn`` on PATH (fast), and a real install from Maven Central (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from adapters.installations.jacoco import (
    DEFAULT_VERSION,
    MARKER,
    JacocoInstallation,
    JacocoInstallError,
    artifacts,
    explain_maven_failure,
    find_installation,
    install,
    install_root,
    maven_command,
)
from adapters.installations.java import find_java
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path
from tests.adapters.installations.maven_repo import remote_repository, use_repository

NOT_SERVED = """\
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy (default-cli) on project standalone-pom: Unable to find/resolve artifact. Could not find artifact org.jacoco:org.jacoco.cli:jar:nodeps:0.8.99 in central (https://repo.maven.apache.org/maven2) -> [Help 1]
[ERROR] \n\
"""  # noqa: E501 (mvn's own lines, as 3.8.7 prints them)
OFFLINE_MISS = """\
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy (default-cli) on project standalone-pom: Unable to find/resolve artifact. Cannot access central (https://repo.maven.apache.org/maven2) in offline mode and the artifact org.jacoco:org.jacoco.cli:jar:nodeps:0.8.14 has not been downloaded from it before. -> [Help 1]
"""  # noqa: E501
NO_NETWORK = """\
[ERROR] Plugin org.apache.maven.plugins:maven-dependency-plugin:3.6.1 or one of its dependencies could not be resolved: Could not transfer artifact org.apache.maven.plugins:maven-dependency-plugin:pom:3.6.1 from/to central (https://repo.maven.apache.org/maven2): Unknown host repo.maven.apache.org -> [Help 1]
"""  # noqa: E501


def test_the_paths_follow_bkconform_home(tmp_path: Path) -> None:
    environ = {"BKCONFORM_HOME": str(tmp_path / "state")}
    assert install_root(environ) == tmp_path / "state" / "jacoco"
    home = install_root(environ) / "0.8.15"
    found = JacocoInstallation("0.8.15", home, "t")
    assert found.agent_jar == home / "org.jacoco.agent-0.8.15-runtime.jar"
    assert found.cli_jar == home / "org.jacoco.cli-0.8.15-nodeps.jar"
    agent, cli = artifacts("0.8.15")
    assert agent.coordinates == "org.jacoco:org.jacoco.agent:0.8.15:jar:runtime"
    assert cli.coordinates == "org.jacoco:org.jacoco.cli:0.8.15:jar:nodeps"
    with pytest.raises(JacocoInstallError, match="not a JaCoCo version"):
        artifacts("latest")


def test_the_maven_command(tmp_path: Path) -> None:
    agent, _cli = artifacts("0.8.15")
    command = maven_command("mvn", agent, tmp_path, offline=True, maven_repo=tmp_path / "m2")
    assert command[:4] == ["mvn", "-B", "-Dstyle.color=never", "-o"]
    assert f"-Dmaven.repo.local={tmp_path / 'm2'}" in command
    assert "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy" in command
    assert "-Dartifact=org.jacoco:org.jacoco.agent:0.8.15:jar:runtime" in command
    assert f"-DoutputDirectory={tmp_path}" in command
    assert "-U" in maven_command("mvn", agent, tmp_path, offline=False)


def test_maven_failures_become_clear_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The configured repository is the tests' own (maven_repo.JACOCO_VERSIONS), asked as the
    # message is made: what it serves is never a list fixed in the code.
    url = remote_repository(tmp_path / "remote").as_uri()
    use_repository(monkeypatch, tmp_path / "home", url)
    _agent, cli = artifacts("0.8.99")
    text = explain_maven_failure(cli, NOT_SERVED, offline=False)
    assert text.startswith(
        "Maven's repository does not serve org.jacoco:org.jacoco.cli:0.8.99:jar:nodeps. "
        f"Asked now, {url} (mirror 'tests' of central in "
    )
    assert "of 0.8 it serves 0.8.14, 0.8.15, 0.8.16; the newest is 0.8.16" in text
    assert "mvn said: Failed to execute" in text
    _agent, listed = artifacts("0.8.16")
    text = explain_maven_failure(listed, NOT_SERVED.replace("0.8.99", "0.8.16"), offline=False)
    assert "lists 0.8.16 of org.jacoco:org.jacoco.cli, yet mvn could not get it" in text
    offline = explain_maven_failure(cli, OFFLINE_MISS, offline=True)
    assert "not in the local Maven repository" in offline
    unreachable = explain_maven_failure(cli, NO_NETWORK, offline=False)
    assert "could not reach its repository to download org.jacoco:org.jacoco.cli:0.8.99" in (
        unreachable
    )
    assert f"is {url} (mirror 'tests'" in unreachable
    assert "mvn failed to copy" in explain_maven_failure(cli, "[ERROR] odd", offline=False)


def test_no_mvn_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "bkconform"))
    with pytest.raises(JacocoInstallError, match=r"needs Maven and there is no mvn on PATH"):
        install()
    assert find_installation() is None


# -- a fake mvn ---------------------------------------------------------------------------------

FAKE_MVN = """\
#!{python}
import os, sys, time
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
mode = os.environ.get("FAKE_MVN_MODE", "ok")
if mode == "hang":
    time.sleep(60)
if Path("pom.xml").exists():
    sys.exit("run inside a project")
coords = [a.split("=", 1)[1] for a in args if a.startswith("-Dartifact=")][0]
_group, artifact, version, _type, classifier = coords.split(":")
if mode == "not-served" or (mode == "online-only" and "-o" in args):
    print({not_served!r} if mode == "not-served" else {offline_miss!r})
    sys.exit(1)
out = Path([a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")][0])
if mode != "no-file":
    (out / f"{{artifact}}-{{version}}-{{classifier}}.jar").write_bytes(b"PK fake jar")
print("[INFO] BUILD SUCCESS")
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``mvn`` first on PATH; returns the file its calls are appended to."""
    script = FAKE_MVN.format(
        python=sys.executable, not_served=NOT_SERVED, offline_miss=OFFLINE_MISS
    )
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def test_an_install_holds_both_jars_and_is_cached(fake_mvn: Path, tmp_path: Path) -> None:
    done = install()
    home = tmp_path / "bkconform" / "jacoco" / DEFAULT_VERSION
    assert done.home == home and done.version == DEFAULT_VERSION
    assert done.agent_jar.read_bytes() == done.cli_jar.read_bytes() == b"PK fake jar"
    marker = json.loads((home / MARKER).read_text())
    assert marker["artifacts"] == [a.coordinates for a in artifacts(DEFAULT_VERSION)]
    # Offline first; both jars were "in ~/.m2": one call each.
    calls = fake_mvn.read_text().splitlines()
    assert len(calls) == 2 and all(" -o " in f" {call} " for call in calls)
    assert sorted(p.name for p in home.parent.iterdir()) == [f".lock-{DEFAULT_VERSION}", "0.8.15"]
    # Cached: no mvn call the second time; force reinstalls.
    assert install() == done and find_installation() == done
    assert len(fake_mvn.read_text().splitlines()) == 2
    install(force=True)
    assert len(fake_mvn.read_text().splitlines()) == 4


def test_offline_first_then_online(fake_mvn: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "online-only")
    install()
    modes = [" -o " in f" {call} " for call in fake_mvn.read_text().splitlines()]
    assert modes == [True, False, True, False]
    with pytest.raises(JacocoInstallError, match="not in the local Maven repository"):
        install("0.8.14", offline=True)


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("not-served", "Maven's repository does not serve org.jacoco:org.jacoco.agent:9.9.9"),
        ("no-file", "reported success copying org.jacoco:org.jacoco.agent:9.9.9"),
    ],
)
def test_a_failed_install_leaves_nothing_that_looks_installed(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, message: str
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", mode)
    with pytest.raises(JacocoInstallError, match=message):
        install("9.9.9")
    assert [p.name for p in (tmp_path / "bkconform" / "jacoco").iterdir()] == [".lock-9.9.9"]
    assert find_installation("9.9.9") is None


def test_a_hanging_mvn_is_killed_at_its_timeout(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "hang")
    with pytest.raises(JacocoInstallError, match=r"did not finish within 1s \(killed\)"):
        install(timeout=1.0)


def test_an_install_whose_jar_went_missing_is_reinstalled(fake_mvn: Path) -> None:
    done = install()
    done.agent_jar.unlink()
    assert find_installation() is None
    assert install().agent_jar.is_file()
    assert len(fake_mvn.read_text().splitlines()) == 4


# -- the real thing -----------------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.slow
def test_the_default_version_installs_from_maven_central(tmp_path: Path) -> None:
    """Both jars from Maven Central (from ``~/.m2`` after the first time) into a fresh
    ``$BKCONFORM_HOME``: the agent is a Java agent, the CLI runs."""
    done = install(root=tmp_path / "jacoco")
    assert done.home == tmp_path / "jacoco" / DEFAULT_VERSION
    with zipfile.ZipFile(done.agent_jar) as agent:
        manifest = agent.read("META-INF/MANIFEST.MF").decode()
    assert "Premain-Class: org.jacoco.agent.rt.internal" in manifest
    version = subprocess.run(
        [find_java(), "-jar", str(done.cli_jar), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "report" in version.stdout + version.stderr
