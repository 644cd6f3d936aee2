"""A fake ``mvn`` on PATH for the installers' tests (the script itself is each test's own)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.adapters.installations.maven_repo import remote_repository, use_repository


def put_fake_mvn_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> Path:
    """Write ``script`` as an executable ``mvn`` first on PATH, with ``FAKE_MVN_CALLS`` naming
    the file it appends its calls to (returned), ``BKCONFORM_HOME`` under ``tmp_path`` and no
    ``FAKE_MVN_MODE`` (each test sets the mode it wants). ``$HOME`` is ``tmp_path/home``,
    whose Maven settings mirror every repository to ``tmp_path/remote`` (``file://``, listing
    the test versions): what a message asks of "the configured repository" is asked there."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    mvn.write_text(script)
    mvn.chmod(0o755)
    calls = tmp_path / "mvn-calls.txt"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MVN_CALLS", str(calls))
    monkeypatch.setenv("BKCONFORM_HOME", str(tmp_path / "bkconform"))
    monkeypatch.delenv("FAKE_MVN_MODE", raising=False)
    remote = remote_repository(tmp_path / "remote")
    use_repository(monkeypatch, tmp_path / "home", remote.as_uri())
    return calls
