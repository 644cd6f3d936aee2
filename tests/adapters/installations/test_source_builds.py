"""Installs built from a source checkout, without Maven: recognising BookKeeper's and
ZooKeeper's checkouts, the install's name from the version and the commit (clean, dirty, no
git), reuse of an existing build, the refusals, and the build run by a fake ``mvn`` (its
failure's last lines and log, its timeout) before the release installer assembles the
install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.installations import linkage, source_builds
from adapters.installations.bookkeeper import find_bookkeeper_home, resolve_bookkeeper
from adapters.installations.errors import BrokenInstallation
from adapters.installations.source_builds import (
    COMMIT_FILE,
    SOURCE_MARKER,
    UNKNOWN_COMMIT,
    SourceBuildError,
    bookkeeper_source,
    checkout_options,
    detect,
    install_from_source,
    read_checkout,
    read_source_build,
    zookeeper_source,
)
from adapters.installations.system import describe_bookkeeper
from adapters.installations.zookeeper import resolve_zookeeper
from conformance.cli import main
from tests.adapters.installations.fake_mvn import put_fake_mvn_on_path
from tests.adapters.installations.test_bookkeeper_install import (
    FAKE_MVN,
    INVALID_POM,
    MISSING_POM,
    NOT_SERVED,
    OFFLINE_MISS,
    fake_jar_entries,
    fake_link_check,
)

POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <parent><groupId>org.apache</groupId><artifactId>apache</artifactId><version>31</version>
  </parent>
  <groupId>{group}</groupId>
  <artifactId>{artifact}</artifactId>
  <version>{version}</version>
</project>
"""


def bookkeeper_checkout(path: Path, version: str = "4.18.0") -> Path:
    path.mkdir(parents=True)
    (path / "pom.xml").write_text(
        POM.format(group="org.apache.bookkeeper", artifact="bookkeeper", version=version)
    )
    (path / "bookkeeper-server").mkdir()
    (path / "bookkeeper-server" / "Main.java").write_text("class Main {}\n")
    return path


def zookeeper_checkout(path: Path, version: str = "3.9.5") -> Path:
    path.mkdir(parents=True)
    (path / "pom.xml").write_text(
        POM.format(group="org.apache.zookeeper", artifact="parent", version=version)
    )
    (path / "zookeeper-server").mkdir()
    return path


def git(path: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def committed(path: Path) -> str:
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "x")
    return git(path, "rev-parse", "HEAD")


# Recognising a checkout -----------------------------------------------------------------------


def test_both_kinds_of_checkout_are_recognised_by_their_root_pom(tmp_path: Path) -> None:
    bookkeeper = detect(bookkeeper_checkout(tmp_path / "bk"))
    zookeeper = detect(zookeeper_checkout(tmp_path / "zk"))
    assert bookkeeper is not None and bookkeeper.module == "bookkeeper-server"
    assert bookkeeper.product.directory == "bookkeeper"
    assert zookeeper is not None and zookeeper.module == "zookeeper-server"
    assert zookeeper.product.directory == "zookeeper"
    # A distribution, a POM of something else, a POM without its server module: none.
    assert detect(tmp_path) is None
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "pom.xml").write_text(
        POM.format(group="org.example", artifact="bookkeeper", version="1.0.0")
    )
    assert detect(tmp_path / "other") is None
    (tmp_path / "bk" / "bookkeeper-server" / "Main.java").unlink()
    (tmp_path / "bk" / "bookkeeper-server").rmdir()
    assert detect(tmp_path / "bk") is None


def test_a_git_checkout_is_named_by_its_version_and_commit(tmp_path: Path) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    commit = committed(path)
    clean = read_checkout(path, bookkeeper_source())
    assert (clean.commit, clean.dirty, clean.commit_from) == (commit, False, "git")
    assert clean.name == f"4.18.0-{commit[:12]}"
    assert clean.describe() == f"source build of {path.resolve()} at {commit[:12]}"


def test_a_dirty_checkout_is_named_so_and_its_changes_digested(tmp_path: Path) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    commit = committed(path)
    (path / "bookkeeper-server" / "Main.java").write_text("class Main { int x; }\n")
    dirty = read_checkout(path)
    assert dirty.dirty and dirty.name == f"4.18.0-{commit[:12]}-dirty"
    assert dirty.state and "uncommitted changes" in dirty.describe()
    assert read_checkout(path).state == dirty.state  # the same changes: the same digest
    (path / "New.java").write_text("class New {}\n")  # untracked files count
    again = read_checkout(path)
    assert again.dirty and again.state != dirty.state


def test_a_plain_tree_takes_its_commit_from_a_file_or_is_of_unknown_commit(
    tmp_path: Path,
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk", "4.19.0-SNAPSHOT")
    unknown = read_checkout(path)
    assert (unknown.commit, unknown.commit_from) == (UNKNOWN_COMMIT, "none")
    assert unknown.name == "4.19.0-SNAPSHOT-unknown-commit" and not unknown.known
    (path / COMMIT_FILE).write_text("CD06340851D6D657B7C7546DF01DF365C18980DE\n")
    known = read_checkout(path)
    assert known.name == "4.19.0-SNAPSHOT-cd06340851d6" and known.commit_from == COMMIT_FILE
    (path / COMMIT_FILE).write_text("release-4.18.0\n")
    with pytest.raises(SourceBuildError, match="holds no commit"):
        read_checkout(path)


def test_a_tree_inside_another_work_tree_is_not_that_repository(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "README").write_text("x\n")
    committed(outer)
    checkout = read_checkout(bookkeeper_checkout(outer / "bk"))
    assert checkout.commit == UNKNOWN_COMMIT


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(SourceBuildError, match="is not a BookKeeper source checkout"):
        read_checkout(tmp_path, bookkeeper_source())
    zookeeper = zookeeper_checkout(tmp_path / "zk")
    with pytest.raises(
        SourceBuildError,
        match="ZooKeeper source checkout, not BookKeeper's: give it to --zookeeper",
    ):
        read_checkout(zookeeper, bookkeeper_source())
    bookkeeper = bookkeeper_checkout(tmp_path / "bk", "${revision}")
    with pytest.raises(SourceBuildError, match="names no version"):
        read_checkout(bookkeeper)


# Building -------------------------------------------------------------------------------------

BUILD_WRAPPER = """\
#!{python}
import os, sys, time
args = sys.argv[1:]
if "-pl" in args:
    with open(os.environ["FAKE_MVN_CALLS"], "a") as calls:
        calls.write("BUILD " + os.getcwd() + " " + " ".join(args) + "\\n")
    mode = os.environ.get("FAKE_BUILD_MODE", "ok")
    if mode == "hang":
        time.sleep(60)
    for number in range(40):
        print(f"[INFO] building line {{number}}")
    if mode == "fail":
        print("[ERROR] COMPILATION ERROR : Main.java:[1,1] cannot find symbol")
        print("[INFO] BUILD FAILURE")
        sys.exit(1)
    print("[INFO] BUILD SUCCESS")
    sys.exit(0)
os.execv(sys.executable, [sys.executable, {lister!r}, *args])
"""


@pytest.fixture
def fake_mvn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``mvn``: the build (``-pl``) prints and exits as ``FAKE_BUILD_MODE`` says; any
    other call is the release installer's fake resolution. Returns its calls' file."""
    monkeypatch.setenv("FAKE_M2", str(tmp_path / "m2"))
    monkeypatch.delenv("FAKE_BUILD_MODE", raising=False)
    monkeypatch.delenv("FAKE_MVN_DROP", raising=False)
    monkeypatch.delenv("FAKE_LINK_MISSING", raising=False)
    monkeypatch.setattr(linkage, "check", fake_link_check)
    lister = tmp_path / "fake-lister.py"
    lister.write_text(
        FAKE_MVN.format(
            python=sys.executable,
            not_served=NOT_SERVED,
            offline_miss=OFFLINE_MISS,
            invalid=INVALID_POM,
            missing=MISSING_POM,
            entries=fake_jar_entries(),
        )
    )
    script = BUILD_WRAPPER.format(python=sys.executable, lister=str(lister))
    return put_fake_mvn_on_path(tmp_path, monkeypatch, script)


def builds(calls: Path) -> list[str]:
    if not calls.exists():
        return []
    return [line for line in calls.read_text().splitlines() if line.startswith("BUILD ")]


def source_root_of(tmp_path: Path) -> Path:
    return tmp_path / "bkconform" / "bookkeeper" / "source"


def test_a_checkout_is_built_into_an_install_named_by_version_and_commit(
    fake_mvn: Path, tmp_path: Path
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    commit = committed(path)
    done = install_from_source(path, bookkeeper_source())
    name = f"4.18.0-{commit[:12]}"
    assert done.home == source_root_of(tmp_path) / name and not done.reused
    assert (done.name, done.version, done.commit, done.dirty) == (name, "4.18.0", commit, False)
    # The build: the checkout's own, in it, into the source builds' Maven repository.
    (build,) = builds(fake_mvn)
    repository = tmp_path / "bkconform" / "m2-source-builds"
    assert build.startswith(f"BUILD {path.resolve()} ")
    assert f"-Dmaven.repo.local={repository}" in build
    assert " install -DskipTests " in build and build.endswith("-pl bookkeeper-server -am")
    # ... then assembled as a release is, resolved from that repository.
    listing = [line for line in fake_mvn.read_text().splitlines() if ":list" in line]
    assert listing and all(f"-Dmaven.repo.local={repository}" in line for line in listing)
    assert find_bookkeeper_home(done.home, {}) == done.home
    assert (done.home / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.18.0.jar").is_file()
    assert os.access(done.home / "bin" / "bookkeeper", os.X_OK)
    marker = json.loads((done.home / SOURCE_MARKER).read_text())
    assert marker["checkout"] == str(path.resolve()) and marker["commit"] == commit
    assert Path(marker["build_log"]).is_file()
    assert "building line 39" in Path(marker["build_log"]).read_text()
    # The system under test names it.
    assert describe_bookkeeper(done.home) == (
        f"BookKeeper {name} (source build of {path.resolve()} at {commit[:12]}, {done.home})"
    )


def test_a_clean_build_is_reused_without_maven(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    committed(path)
    first = install_from_source(path, bookkeeper_source())
    # No mvn on PATH: git alone.
    only_git = tmp_path / "only-git"
    only_git.mkdir()
    git_path = shutil.which("git")
    assert git_path is not None
    (only_git / "git").symlink_to(git_path)
    monkeypatch.setenv("PATH", str(only_git))
    again = install_from_source(path, bookkeeper_source())
    assert again.reused and again.home == first.home and again.built_at == first.built_at
    # Through --bookkeeper PATH, as every command takes it.
    assert resolve_bookkeeper(str(path)) == first.home
    assert len(builds(fake_mvn)) == 1


def test_a_dirty_build_is_reused_only_while_its_changes_are_the_same(
    fake_mvn: Path, tmp_path: Path
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    committed(path)
    (path / "bookkeeper-server" / "Main.java").write_text("class Main { int x; }\n")
    first = install_from_source(path, bookkeeper_source())
    assert first.dirty and first.name.endswith("-dirty")
    assert install_from_source(path, bookkeeper_source()).reused
    (path / "bookkeeper-server" / "Main.java").write_text("class Main { int y; }\n")
    rebuilt = install_from_source(path, bookkeeper_source())
    assert not rebuilt.reused and rebuilt.home == first.home
    assert len(builds(fake_mvn)) == 2


def test_a_tree_of_unknown_commit_is_built_every_time(fake_mvn: Path, tmp_path: Path) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    assert install_from_source(path, bookkeeper_source()).name == "4.18.0-unknown-commit"
    assert not install_from_source(path, bookkeeper_source()).reused
    assert len(builds(fake_mvn)) == 2
    (path / COMMIT_FILE).write_text("cd06340851d6d657b7c7546df01df365c18980de\n")
    install_from_source(path, bookkeeper_source())
    assert install_from_source(path, bookkeeper_source()).reused
    assert len(builds(fake_mvn)) == 3


def test_a_failed_build_says_mavens_last_lines_and_its_log(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    monkeypatch.setenv("FAKE_BUILD_MODE", "fail")
    with pytest.raises(SourceBuildError) as raised:
        install_from_source(path, bookkeeper_source())
    message = str(raised.value)
    assert f"building BookKeeper 4.18.0 from {path.resolve()} failed (mvn exit 1)" in message
    assert "cannot find symbol" in message and "building line 39" in message
    assert "building line 5\n" not in message  # the last lines, not all
    log = source_root_of(tmp_path) / "logs" / "4.18.0-unknown-commit.log"
    assert f"full log: {log}" in message and log.is_file()
    # Nothing that looks installed.
    assert [p.name for p in source_root_of(tmp_path).iterdir() if not p.name.startswith(".")] == [
        "logs"
    ]


def test_a_hanging_build_is_killed_at_its_timeout(
    fake_mvn: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    monkeypatch.setenv("FAKE_BUILD_MODE", "hang")
    started = time.monotonic()
    with pytest.raises(SourceBuildError, match="did not finish within 1s"):
        install_from_source(path, bookkeeper_source(), timeout=1)
    assert time.monotonic() - started < 20
    assert read_source_build(source_root_of(tmp_path) / "4.18.0-unknown-commit") is None


def test_source_builds_are_listed_with_the_releases(
    fake_mvn: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    commit = committed(path)
    install_from_source(path, bookkeeper_source())
    assert main(["bookkeeper", "list"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    name, home, jars, built = line.split("\t")
    assert name == f"4.18.0-{commit[:12]}" and home == str(source_root_of(tmp_path) / name)
    assert jars == "3 jars" and built.endswith(f"from {path.resolve()} at {commit[:12]}")
    assert source_builds.installed(zookeeper_source()) == []


def test_the_zookeeper_option_refuses_a_bookkeeper_checkout(fake_mvn: Path, tmp_path: Path) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    with pytest.raises(SourceBuildError, match="give it to --bookkeeper"):
        resolve_zookeeper(str(path))
    assert builds(fake_mvn) == []


def test_native_io_is_built_with_plain_cargo_without_cargo_zigbuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    checkout = read_checkout(path)
    assert checkout_options(checkout) == []  # no native-io module: nothing to choose
    (path / "native-io").mkdir()
    (path / "native-io" / "pom.xml").write_text(
        "<project><properties><native.io.pure.rust>false</native.io.pure.rust></properties>"
        "</project>"
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert checkout_options(checkout, {"PATH": str(bin_dir)}) == ["-Dnative.io.pure.rust=true"]
    zigbuild = bin_dir / "cargo-zigbuild"
    zigbuild.write_text("#!/bin/sh\n")
    zigbuild.chmod(0o755)
    assert checkout_options(checkout, {"PATH": str(bin_dir)}) == []


def test_a_broken_source_build_names_the_checkout_to_build_again(
    fake_mvn: Path, tmp_path: Path
) -> None:
    path = bookkeeper_checkout(tmp_path / "bk")
    committed(path)
    done = install_from_source(path, bookkeeper_source())
    (done.home / "lib" / "org.apache.zookeeper-zookeeper-3.9.3.jar").unlink()
    with pytest.raises(
        BrokenInstallation, match=f"build it again with --bookkeeper {path.resolve()}"
    ):
        find_bookkeeper_home(done.home, {})
    # --bookkeeper PATH builds it again rather than refusing it.
    again = install_from_source(path, bookkeeper_source())
    assert not again.reused and find_bookkeeper_home(again.home, {}) == again.home
