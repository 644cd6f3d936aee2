"""The ByteBuddy installer (the gate agent's library): its paths, the mvn command, and atomic
cached installs with a fake ``mvn`` on PATH (offline first, then online; a failure leaves
nothing that looks installed). The real install is ``tests/adapters/cluster/test_gates.py``'s
build of the agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from adapters.installations.bytebuddy import (
    DEFAULT_VERSION,
    MARKER,
    ByteBuddyInstallError,
    find_installation,
    install,
    install_root,
    maven_command,
)
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path

OFFLINE_MISS = (
    "[ERROR] Failed to execute goal ... Cannot access central in offline mode and the artifact "
    "net.bytebuddy:byte-buddy:jar:1.18.17 has not been downloaded from it before."
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
_group, artifact, version, _type = coords.split(":")
if mode == "online-only" and "-o" in args:
    print({offline_miss!r})
    sys.exit(1)
out = Path([a.split("=", 1)[1] for a in args if a.startswith("-DoutputDirectory=")][0])
if mode != "no-file":
    (out / f"{{artifact}}-{{version}}.jar").write_bytes(b"PK fake jar")
print("[INFO] BUILD SUCCESS")
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = FAKE_MVN.format(python=sys.executable, offline_miss=OFFLINE_MISS)
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def test_the_paths_and_the_command(tmp_path: Path) -> None:
    assert install_root({"BKCONFORM_HOME": str(tmp_path)}) == tmp_path / "bytebuddy"
    command = maven_command("mvn", "1.18.17", tmp_path, offline=True)
    assert command[:4] == ["mvn", "-B", "-Dstyle.color=never", "-o"]
    assert "-Dartifact=net.bytebuddy:byte-buddy:1.18.17:jar" in command
    with pytest.raises(ByteBuddyInstallError, match="not a ByteBuddy version"):
        install("latest")


def test_an_install_is_cached_and_goes_online_only_when_needed(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "online-only")
    done = install()
    assert done.home == tmp_path / "bkconform" / "bytebuddy" / DEFAULT_VERSION
    assert done.jar.read_bytes() == b"PK fake jar"
    marker = json.loads((done.home / MARKER).read_text())
    assert marker["artifact"] == f"net.bytebuddy:byte-buddy:{DEFAULT_VERSION}:jar"
    modes = [" -o " in f" {call} " for call in fake_mvn.read_text().splitlines()]
    assert modes == [True, False]
    assert install() == done and find_installation() == done
    assert len(fake_mvn.read_text().splitlines()) == 2


def test_a_failed_install_leaves_nothing_that_looks_installed(
    fake_mvn: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_MVN_MODE", "no-file")
    with pytest.raises(ByteBuddyInstallError, match="reported success copying"):
        install("1.18.16")
    assert find_installation("1.18.16") is None
