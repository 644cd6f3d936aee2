"""``bkconform cluster up`` / ``down`` through the command module's ``register``."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.cluster.bookies import reference_bookie_available
from adapters.processes import processes_matching
from conformance.commands.cluster import register


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="bkconform")
    register(root.add_subparsers(dest="command", required=True))
    return root


def run_detached_command(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run the command in its own interpreter, which exits when the command returns."""
    script = (
        "import argparse, sys\n"
        "from conformance.commands.cluster import register\n"
        "root = argparse.ArgumentParser(prog='bkconform')\n"
        "register(root.add_subparsers(dest='command', required=True))\n"
        "args = root.parse_args(sys.argv[1:])\n"
        "sys.exit(args.func(args))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120
    )


def run(*argv: str) -> int:
    args = parser().parse_args(argv)
    result = args.func(args)
    assert isinstance(result, int)
    return result


@pytest.fixture(autouse=True)
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "bkconform-home"
    monkeypatch.setenv("BKCONFORM_HOME", os.fspath(home))
    return home


def test_arguments_are_parsed_and_checked() -> None:
    args = parser().parse_args(["cluster", "up", "--bookies", "5", "--zk", "3"])
    assert (args.bookies, args.zk, args.work_dir, args.bookkeeper_home) == (5, 3, None, None)
    with pytest.raises(SystemExit):
        parser().parse_args(["cluster", "up", "--zk", "0"])
    with pytest.raises(SystemExit):
        parser().parse_args(["cluster"])


def test_down_without_a_recorded_cluster_fails_clearly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert run("cluster", "down") == 1
    assert "no running cluster recorded" in capsys.readouterr().err
    assert run("cluster", "down", "--work-dir", str(tmp_path / "nothing")) == 1
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.cluster
@pytest.mark.skipif(not reference_bookie_available(), reason="adapters.refbookie is absent")
def test_up_then_down(
    tmp_path: Path,
    private_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("BOOKKEEPER_HOME", raising=False)
    work_dir = tmp_path / "cluster"
    marker = f"{work_dir}{os.sep}"
    try:
        result = run_detached_command(
            "cluster",
            "up",
            "--bookies",
            "2",
            "--bookie-kind",
            "reference",
            "--work-dir",
            str(work_dir),
        )
        assert result.returncode == 0, result.stderr
        output = result.stdout
        state = json.loads((work_dir / "cluster.json").read_text())
        assert json.loads((private_home / "cluster.json").read_text()) == {
            "work_dir": str(work_dir)
        }
        assert len(state["endpoints"]["bookies"]) == 2
        assert state["implementation"] == "reference"
        assert f"zookeeper: {state['endpoints']['zookeeper_connect']}" in output
        assert "System under test: bookies: reference bookie (test double" in output
        for bookie_id in state["endpoints"]["bookies"]:
            assert f"bookie: {bookie_id}" in output
        pids = sorted(p["pid"] for p in state["processes"])
        assert len(pids) == 3
        # Detached: the processes outlive the command that started them.
        assert sorted(processes_matching(marker)) == pids
        # A second `up` in the same work dir is refused while the first one runs.
        assert run("cluster", "up", "--work-dir", str(work_dir)) == 1
        assert "already running" in capsys.readouterr().err

        assert run("cluster", "down") == 0  # finds the cluster through the pointer
        assert "stopped 3 processes" in capsys.readouterr().out
        assert processes_matching(marker) == []
        assert not (work_dir / "cluster.json").exists()
        assert not (private_home / "cluster.json").exists()
        assert (work_dir / "logs" / "zk1.log").is_file(), "a given work dir keeps its logs"
    finally:
        leftovers = processes_matching(marker)
        for pid in leftovers:
            os.kill(pid, 9)
        assert not leftovers, f"cluster up/down left processes behind: {leftovers}"
