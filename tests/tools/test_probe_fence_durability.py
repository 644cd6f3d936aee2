"""tools/probe_fence_durability.py: a release it cannot install is refused (exit 2) before
anything starts; the verdict reads the probe's answers (a fence lost is exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import probe_fence_durability


def test_a_bookkeeper_that_is_not_there_is_refused_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert probe_fence_durability.main(["--bookkeeper", str(tmp_path / "no-such-home")]) == 2
    assert "probe_fence_durability:" in capsys.readouterr().err


def test_a_fence_lost_is_exit_1_and_every_fence_held_exit_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Cluster:
        def __init__(self, options: object) -> None:
            pass

        def __enter__(self) -> Cluster:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(probe_fence_durability, "resolve_bookkeeper", lambda release: Path("."))
    monkeypatch.setattr(probe_fence_durability, "LocalCluster", Cluster)
    held = {"fenced, never written, restarted": "EFENCED", "written, fenced, restarted": "EFENCED"}
    monkeypatch.setattr(probe_fence_durability, "probe", lambda cluster: held)
    assert probe_fence_durability.main([]) == 0
    assert "every fence held" in capsys.readouterr().out
    lost = {**held, "fenced, never written, restarted": "EOK"}
    monkeypatch.setattr(probe_fence_durability, "probe", lambda cluster: lost)
    assert probe_fence_durability.main([]) == 1
    assert "fence lost: fenced, never written, restarted" in capsys.readouterr().out
