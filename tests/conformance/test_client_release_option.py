"""``--client-bookkeeper VERSION|DIR``: the Java client's release apart from the bookies'
(fast: the option, its refusals, what a run says it ran)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from adapters.installations.system import describe_java_client
from conformance.cli import build_parser, main
from conformance.commands.java_client_scenario import CannotRun, client_home
from conformance.javaclient.roles import role_named
from conformance.javaclient.run import _target, java_client_system


def _distribution(root: Path, version: str) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "lib").mkdir()
    launcher = root / "bin" / "bookkeeper"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    (root / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--client", "java", "--target", "local"],
        ["replay", "somewhere"],
        ["scenario", "rolling-upgrade-java-client", "--target", "local"],
        ["qualify", "--client", "java", "--target", "local"],
    ],
)
def test_every_java_client_command_takes_the_option(argv: list[str]) -> None:
    args = build_parser().parse_args([*argv, "--client-bookkeeper", "4.18.0"])
    assert args.client_bookkeeper == "4.18.0"


def test_the_client_of_another_release_is_its_distribution(tmp_path: Path) -> None:
    home = _distribution(tmp_path / "bk", "4.18.0")
    assert client_home(argparse.Namespace(client_bookkeeper=None)) is None
    assert client_home(argparse.Namespace(client_bookkeeper=str(home))) == home
    with pytest.raises(CannotRun, match="one release here"):
        client_home(argparse.Namespace(client_bookkeeper="4.17.3,4.18.0"))
    with pytest.raises(CannotRun, match="--client-bookkeeper"):
        client_home(argparse.Namespace(client_bookkeeper=str(tmp_path / "nothing")))


def test_a_run_says_which_release_the_bookies_and_the_client_ran(tmp_path: Path) -> None:
    bookies = _distribution(tmp_path / "bookies", "4.17.3")
    client = _distribution(tmp_path / "client", "4.18.0")
    system = java_client_system(bookies, "4.18.0", None, client_home=client)
    assert system.bookies.startswith("BookKeeper 4.17.3 (BOOKKEEPER_HOME")
    assert system.client.startswith(f"{describe_java_client('4.18.0')} (BOOKKEEPER_HOME")
    same = java_client_system(bookies, "4.17.3", None)
    assert same.client == describe_java_client("4.17.3")
    mixed = java_client_system(bookies, "4.17.3", None, bookie_homes=(bookies, client, client))
    assert mixed.bookies.startswith("BookKeeper 4.17.3 (BOOKKEEPER_HOME")
    assert "on bookie1; BookKeeper 4.18.0" in mixed.bookies
    assert mixed.bookies.endswith("on bookie2, bookie3")
    target = _target(role_named("recovery"), "4.17.3", None, "4.18.0")
    assert target["bookkeeper"] == "4.17.3" and target["client_bookkeeper"] == "4.18.0"
    assert _target(role_named("recovery"), "4.17.3", None)["client_bookkeeper"] == "4.17.3"


def test_the_writer_needs_a_client_that_can_be_routed_whatever_the_bookies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bookies = _distribution(tmp_path / "bookies", "4.17.3")
    old = _distribution(tmp_path / "old", "4.11.1")
    runs = tmp_path / "runs"
    argv = ["run", "--client", "java", "--target", "local", "--role", "writer"]
    argv += ["--bookkeeper-home", str(bookies), "--client-bookkeeper", str(old)]
    assert main([*argv, "--runs-dir", str(runs)]) == 2
    assert "(BookKeeper >= 4.12.0)" in capsys.readouterr().err
    assert not runs.exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "--client-bookkeeper", "4.18.0"], "--client-bookkeeper needs --client java"),
        (
            ["scenario", "defect1-fencing", "--client-bookkeeper", "4.18.0"],
            "--client-bookkeeper is for the *-java-client scenarios",
        ),
        (
            ["scenario", "rolling-upgrade-java-client"],
            "rolling-upgrade-java-client runs on --target local only",
        ),
    ],
)
def test_the_option_is_for_the_java_client_only(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_source_build_s_client_is_named_by_its_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client from a source build is that build (its commit, its changes), not the release
    its POM names: a patched client must not read as the released one."""
    from conformance.javaclient import run as javaclient_run

    bookies = _distribution(tmp_path / "bookies", "4.18.0")
    client = _distribution(tmp_path / "client", "4.18.0")

    class Built:
        name = "4.18.0-cd06340851d6-dirty"

        def describe(self) -> str:
            return "source build of /tmp/bk at cd06340851d6, with uncommitted changes"

    built_homes = {bookies}
    monkeypatch.setattr(
        javaclient_run, "read_source_build", lambda home: Built() if home in built_homes else None
    )
    expected = (
        f"{describe_java_client('4.18.0-cd06340851d6-dirty')} "
        "(source build of /tmp/bk at cd06340851d6, with uncommitted changes)"
    )
    assert java_client_system(bookies, "4.18.0", None).client == expected  # the bookies' build
    released = java_client_system(bookies, "4.18.0", None, client_home=client).client
    assert released.startswith(f"{describe_java_client('4.18.0')} (BOOKKEEPER_HOME")
    built_homes = {client}
    assert java_client_system(bookies, "4.18.0", None, client_home=client).client == expected
