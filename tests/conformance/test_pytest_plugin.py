"""``pytest --pyargs conformance`` works from any directory, on the chosen target."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_properties_run_from_any_directory_on_the_model(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path, "--pyargs", "conformance.properties", "--bk-target", "model", "--bk-seconds", "3"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 passed" in done.stdout  # 6 scenario verdicts, 4 protected searches


@pytest.mark.cluster
def test_properties_run_on_a_local_cluster(tmp_path: Path) -> None:
    # The searches are protected (clean) and need one example each: the 3 s budget is read
    # before each example only, so the first runs to its end however slow the machine.
    done = _pytest(
        tmp_path,
        "--pyargs",
        "conformance.properties",
        "--bk-target",
        "local",
        "--bk-profile",
        "ci",
        "--bk-seconds",
        "3",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 passed" in done.stdout


def test_the_plugin_chooses_the_bookies_as_the_commands_do(tmp_path: Path) -> None:
    # The same function reads --bk-bookie-kind, --bk-bookkeeper and --bk-bookkeeper-home: the
    # contradiction is refused before any cluster starts.
    done = _pytest(
        tmp_path,
        "--pyargs",
        "conformance.properties",
        "--bk-target",
        "local",
        "--bk-bookie-kind",
        "reference",
        "--bk-bookkeeper",
        "4.17.3",
        "-x",
    )
    assert done.returncode != 0
    assert "takes no --bookkeeper or --bookkeeper-home" in done.stdout + done.stderr


def test_unknown_target_is_refused(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--pyargs", "conformance.properties", "--bk-target", "mars")
    assert done.returncode != 0 and "invalid choice" in done.stderr


def test_a_finding_fails_the_property_with_its_sequence_diagram(tmp_path: Path) -> None:
    (tmp_path / "test_unprotected.py").write_text(
        "from conformance.properties import test_search\n"
        "from conformance.scenarios import SCENARIOS\n"
        "test_search.CONFIGURATIONS['b3-wq3-aq2'] = "
        "SCENARIOS['defect1-fencing'].config(protected=False)\n"
        "from conformance.properties.test_search import "
        "test_search_finds_nothing_when_protected  # noqa: F401\n"
    )
    done = _pytest(tmp_path, "test_unprotected.py", "-k", "b3-wq3-aq2", "--bk-seconds", "60")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "NoDivergenceBetweenClientAndMetaData" in done.stdout
    assert "participant w1" in done.stdout and "replay blob:" in done.stdout
