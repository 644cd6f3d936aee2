"""The installer of a set of jars from Maven (``adapters.installations.maven_jars``), on a set
of the tests' own: two jars, one with a classifier and one without, and an error class of its
own. Coordinates and file names, the marker, version checks, the missing-``mvn`` message, and
atomic cached installs with a fake ``mvn`` on PATH (fast; JaCoCo's and ByteBuddy's own tests
cover their sets)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from adapters.errors import ClusterError
from adapters.installations.maven_jars import (
    LAYOUT_VERSION,
    MARKER,
    Artifact,
    Jar,
    JarSet,
    JarsInstallation,
    explain_maven_failure,
    find_installation,
    install,
    maven_command,
)
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path


class WidgetInstallError(ClusterError):
    retriable = False


WIDGETS = JarSet(
    name="Widgets",
    directory="widgets",
    group="org.example",
    jars=(Jar("widget-core"), Jar("widget-tool", "all")),
    version_pattern=re.compile(r"^\d+\.\d+$"),
    expected="major.minor, e.g. 1.2",
    error=WidgetInstallError,
    purpose="the tests",
)


class WidgetInstallation(JarsInstallation):
    jar_set: ClassVar[JarSet] = WIDGETS


def test_artifacts_with_and_without_a_classifier() -> None:
    core, tool = WIDGETS.artifacts(" 1.2 ")
    assert core == Artifact("org.example", "widget-core", "1.2")
    assert core.coordinates == "org.example:widget-core:1.2:jar"
    assert core.file_name == "widget-core-1.2.jar"
    assert tool.coordinates == "org.example:widget-tool:1.2:jar:all"
    assert tool.file_name == "widget-tool-1.2-all.jar"
    with pytest.raises(WidgetInstallError, match=r"not a Widgets version: '1' \(expected maj"):
        WIDGETS.artifacts("1")


def test_the_paths_the_marker_and_the_command(tmp_path: Path) -> None:
    assert WIDGETS.install_root({"BKCONFORM_HOME": str(tmp_path)}) == tmp_path / "widgets"
    found = WidgetInstallation("1.2", tmp_path, "t")
    assert found.path("widget-tool") == tmp_path / "widget-tool-1.2-all.jar"
    marker = WIDGETS.marker("1.2", "t")
    assert marker == {
        "version": "1.2",
        "layout": LAYOUT_VERSION,
        "artifacts": ["org.example:widget-core:1.2:jar", "org.example:widget-tool:1.2:jar:all"],
        "installed_at": "t",
    }
    one = JarSet("One", "one", "g", (Jar("a"),), re.compile(r".+"), "anything", WidgetInstallError)
    assert one.marker("1", "t")["artifact"] == "g:a:1:jar"
    command = maven_command("mvn", WIDGETS.artifacts("1.2")[1], tmp_path, offline=False)
    assert command[:4] == ["mvn", "-B", "-Dstyle.color=never", "-U"]
    assert "-Dartifact=org.example:widget-tool:1.2:jar:all" in command


def test_an_unexplained_failure_shows_mavens_tail() -> None:
    core, _tool = WIDGETS.artifacts("1.2")
    text = explain_maven_failure(core, "[INFO] a\n[ERROR] odd", offline=False)
    assert text == "mvn failed to copy org.example:widget-core:1.2:jar:\n[INFO] a\n[ERROR] odd"


def test_no_mvn_raises_the_sets_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "bkconform"))
    expected = (
        "installing Widgets (org.example:widget-core and org.example:widget-tool, for the "
        "tests) needs Maven and there is no mvn on PATH: install it (apt-get install maven)"
    )
    with pytest.raises(WidgetInstallError) as raised:
        install(WidgetInstallation, "1.2")
    assert str(raised.value) == expected
    assert find_installation(WidgetInstallation, "1.2") is None


# -- a fake mvn ---------------------------------------------------------------------------------

OFFLINE_MISS = (
    "[ERROR] Failed to execute goal ... Cannot access central in offline mode and the artifact "
    "has not been downloaded from it before."
)

FAKE_MVN = """\
#!{python}
import os, sys
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
    calls.write(" ".join(args) + "\\n")
mode = os.environ.get("FAKE_MVN_MODE", "ok")
coords = [a.split("=", 1)[1] for a in args if a.startswith("-Dartifact=")][0]
_group, artifact, version, _type, *classifier = coords.split(":")
if mode == "online-only" and "-o" in args:
    print({offline_miss!r})
    sys.exit(1)
if mode == "tool-not-served" and artifact == "widget-tool":
    print("[ERROR] Could not find artifact " + coords)
    sys.exit(1)
out = Path([a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")][0])
tail = "".join("-" + c for c in classifier)
(out / f"{{artifact}}-{{version}}{{tail}}.jar").write_bytes(coords.encode())
print("[INFO] BUILD SUCCESS")
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = FAKE_MVN.format(python=sys.executable, offline_miss=OFFLINE_MISS)
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def test_an_install_holds_every_jar_and_is_cached(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = install(WidgetInstallation, "1.2", progress=True)
    home = tmp_path / "bkconform" / "widgets" / "1.2"
    assert isinstance(done, WidgetInstallation)
    assert (done.version, done.home) == ("1.2", home)
    assert done.path("widget-core").read_bytes() == b"org.example:widget-core:1.2:jar"
    assert done.path("widget-tool").read_bytes() == b"org.example:widget-tool:1.2:jar:all"
    assert json.loads((home / MARKER).read_text()) == WIDGETS.marker("1.2", done.installed_at)
    assert capsys.readouterr().out.splitlines() == [
        "resolving org.example:widget-core:1.2:jar from the local Maven repository",
        "resolving org.example:widget-tool:1.2:jar:all from the local Maven repository",
    ]
    assert sorted(p.name for p in home.parent.iterdir()) == [".lock-1.2", "1.2"]
    assert install(WidgetInstallation, "1.2") == done
    assert find_installation(WidgetInstallation, "1.2") == done
    assert len(fake_mvn.read_text().splitlines()) == 2
    install(WidgetInstallation, "1.2", force=True)
    assert len(fake_mvn.read_text().splitlines()) == 4


def test_offline_first_then_online_and_offline_only(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "online-only")
    install(WidgetInstallation, "1.2")
    modes = [" -o " in f" {call} " for call in fake_mvn.read_text().splitlines()]
    assert modes == [True, False, True, False]
    with pytest.raises(WidgetInstallError, match="not in the local Maven repository"):
        install(WidgetInstallation, "1.3", offline=True)


def test_a_jar_not_served_leaves_nothing_installed(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "tool-not-served")
    with pytest.raises(WidgetInstallError, match=r"does not serve org\.example:widget-tool:1\.2"):
        install(WidgetInstallation, "1.2", offline=False)
    assert [p.name for p in (tmp_path / "bkconform" / "widgets").iterdir()] == [".lock-1.2"]
    assert find_installation(WidgetInstallation, "1.2") is None


def test_what_is_no_complete_install(fake_mvn: Path) -> None:
    done = install(WidgetInstallation, "1.2")
    marker = done.home / MARKER
    text = marker.read_text()
    marker.write_text(text.replace(f'"layout": {LAYOUT_VERSION}', '"layout": 0'))
    assert WidgetInstallation.read(done.home) is None  # an older layout
    marker.write_text(text.replace('"version": "1.2"', '"version": "latest"'))
    assert WidgetInstallation.read(done.home) is None  # no version of the set
    marker.write_text(text)
    assert WidgetInstallation.read(done.home) == done
    done.path("widget-tool").unlink()
    assert WidgetInstallation.read(done.home) is None  # a jar went missing
    assert install(WidgetInstallation, "1.2").path("widget-tool").is_file()
