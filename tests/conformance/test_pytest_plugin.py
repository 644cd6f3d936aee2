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
    done = _pytest(tmp_path, "--pyargs", "conformance.properties", "--bk-target", "model")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


@pytest.mark.cluster
def test_properties_run_on_a_local_cluster(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path, "--pyargs", "conformance.properties", "--bk-target", "local", "--bk-profile", "ci"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout


def test_unknown_target_is_refused(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--pyargs", "conformance.properties", "--bk-target", "mars")
    assert done.returncode != 0 and "invalid choice" in done.stderr
