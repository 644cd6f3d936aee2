"""The plugin loads in every pytest run of its environment: loading it must never fail.

Each run here is a real pytest session in a subprocess (the plugin comes in through its
``pytest11`` entry point) in which Hypothesis cannot be imported: an unrelated run still
passes without importing the search, and a run that uses our options, fixtures or
properties stops with a usage error that names them and the missing package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conformance import pytest_plugin
from conformance.search.runner import PROFILES

#: First on the subprocess's path, this stands in for Hypothesis and cannot be imported. (A
#: ``sys.meta_path`` blocker is not enough: pytest's assertion rewriter imports the modules of
#: plugin distributions, Hypothesis's among them, through its own finder, ahead of the others.)
HIDDEN_HYPOTHESIS = (
    "raise ModuleNotFoundError(\"No module named 'hypothesis' (hidden)\", name='hypothesis')\n"
)

UNRELATED = """\
import sys


def test_ok(request):
    assert request.config.pluginmanager.has_plugin("bkconform")
    heavy = ("hypothesis", "conformance.search", "conformance.targets", "adapters")
    assert [name for name in sys.modules if name.startswith(heavy)] == []
"""


def _pytest_without_hypothesis(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    hidden = tmp_path / "hidden"
    hidden.mkdir(exist_ok=True)
    (hidden / "hypothesis.py").write_text(HIDDEN_HYPOTHESIS)
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "test_unrelated.py").write_text(UNRELATED)
    (run / "test_mine.py").write_text("def test_budget(bk_search):\n    pass\n")
    # Without Hypothesis installed its own plugin would not be there either (it imports
    # Hypothesis at the end of every run).
    plugins = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, "-q", *args],
        cwd=run,
        env={**os.environ, "PYTHONPATH": str(hidden)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unrelated_run_passes_and_imports_nothing_heavy(tmp_path: Path) -> None:
    done = _pytest_without_hypothesis(tmp_path, "test_unrelated.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_help_lists_our_options_without_hypothesis(tmp_path: Path) -> None:
    done = _pytest_without_hypothesis(tmp_path, "--help")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--bk-target" in done.stdout and "ci,nightly,qualify" in done.stdout


def test_bk_profile_without_hypothesis_is_a_usage_error(tmp_path: Path) -> None:
    done = _pytest_without_hypothesis(tmp_path, "test_unrelated.py", "--bk-profile", "ci")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert "--bk-profile needs the 'hypothesis' package" in done.stderr


def test_our_properties_without_hypothesis_are_a_usage_error(tmp_path: Path) -> None:
    done = _pytest_without_hypothesis(tmp_path, "--pyargs", "conformance.properties")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the bkconform properties" in done.stderr
    assert "needs the 'hypothesis' package" in done.stderr


def test_our_fixtures_without_hypothesis_are_a_usage_error(tmp_path: Path) -> None:
    done = _pytest_without_hypothesis(tmp_path, "test_mine.py")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "the bk_search fixture of test_mine.py::test_budget" in done.stderr
    assert "needs the 'hypothesis' package" in done.stderr


def test_profile_names_are_the_search_profiles() -> None:
    assert tuple(PROFILES) == pytest_plugin.PROFILE_NAMES


def test_profiles_are_registered_with_hypothesis() -> None:
    from hypothesis import settings

    pytest_plugin.register_profiles()
    assert settings.get_profile("bkconform-ci").max_examples == PROFILES["ci"].max_examples
    assert settings.get_profile("bkconform-ci").derandomize
    assert not settings.get_profile("bkconform-nightly").derandomize
