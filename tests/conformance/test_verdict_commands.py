"""Every exit code of ``run``, ``replay``, ``scenario`` and ``qualify --master none``, with the
lying target in place of the one the options name: 0 only when everything was checked and
agreed, 1 for a finding, 2 when the run could not decide or the options make no sense."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.targets.base import Target
from conformance.targets.spec import TargetSpec
from tests.conformance.lying_target import Lie, LyingTarget

SEARCH = ["--quiet", "--fresh", "--max-examples", "10", "--steps", "30", "--no-explore"]


def _lying(monkeypatch: pytest.MonkeyPatch, module: str, *lies: Lie) -> list[LyingTarget]:
    made: list[LyingTarget] = []

    def factory(args: argparse.Namespace, config: object = None) -> Target:
        made.append(LyingTarget(*lies))
        return made[-1]

    monkeypatch.setattr(f"conformance.commands.{module}.target_from_args", factory)
    return made


def _results(runs: Path, suffix: str) -> dict[str, object]:
    (run_dir,) = [p for p in runs.iterdir() if p.name.endswith(suffix)]
    results: dict[str, object] = json.loads((run_dir / "results.json").read_text())
    return results


@pytest.mark.parametrize(
    ("lies", "code", "verdict"),
    [
        ((), 0, "clean"),
        ((Lie("add-status", 0),), 1, "divergence"),
        ((Lie("extra-entry"),), 1, "divergence"),
        ((Lie("error", 2),), 2, "undecided"),
        ((Lie("snapshot-error"),), 2, "undecided"),
    ],
)
def test_run_exit_codes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    lies: tuple[Lie, ...],
    code: int,
    verdict: str,
) -> None:
    made = _lying(monkeypatch, "run", *lies)
    assert main(["run", "--runs-dir", str(tmp_path), *SEARCH]) == code
    out = capsys.readouterr().out
    assert f"Verdict: {verdict}." in out
    assert _results(tmp_path, "-run")["verdict"] == verdict
    assert made[0].closed == 1
    if code == 2:
        assert "UNDECIDED" in out


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--seconds", "0"], "--seconds must be positive"),
        (["--seconds", "-5"], "--seconds must be positive"),
        (["--max-examples", "0"], "--max-examples must be at least 1"),
        (["--steps", "-1"], "--steps must be at least 1"),
    ],
)
def test_run_refuses_a_budget_that_checks_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: list[str],
    message: str,
) -> None:
    made = _lying(monkeypatch, "run")
    code = main(["run", "--runs-dir", str(tmp_path), "--quiet", "--no-explore", *option])
    assert code == 2
    assert message in capsys.readouterr().err
    assert made == [] and list(tmp_path.iterdir()) == []


def test_run_with_no_explore_and_no_time_is_refused_not_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The audit's case: it printed "0 examples ... Verdict: clean" and exited 0.
    argv = ["run", "--no-recovery-read-fence", "--seconds", "0", "--no-explore", "--fresh"]
    assert main([*argv, "--runs-dir", str(tmp_path), "--quiet"]) == 2
    assert "Verdict: clean" not in capsys.readouterr().out


def test_the_budget_line_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _lying(monkeypatch, "run")
    assert main(["run", "--runs-dir", str(tmp_path), *SEARCH, "--seconds", "2.5"]) == 0
    assert "budget 2.5 s," in capsys.readouterr().out


def test_replay_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _lying(monkeypatch, "run", Lie("add-status", 0))
    assert main(["run", "--runs-dir", str(tmp_path / "found"), *SEARCH]) == 1
    (run_dir,) = (tmp_path / "found").iterdir()
    capsys.readouterr()
    replays = tmp_path / "replays"
    for lies, code, verdict in [
        ((Lie("add-status", 0),), 1, "divergence"),
        ((), 0, "clean"),
        ((Lie("error"),), 2, "undecided"),
    ]:
        _lying(monkeypatch, "run", *lies)
        assert main(["replay", str(run_dir), "--runs-dir", str(replays)]) == code, lies
        assert f"Verdict: {verdict}." in capsys.readouterr().out


@pytest.mark.parametrize(
    ("switch", "lies", "code", "verdict"),
    [
        ([], (), 0, "clean"),
        (["--no-recovery-read-fence"], (), 1, "violation"),
        ([], (Lie("lac"),), 1, "divergence"),
        ([], (Lie("metadata"),), 1, "divergence"),
        ([], (Lie("missing-entry"),), 1, "divergence"),
        ([], (Lie("error", 3),), 2, "undecided"),
        ([], (Lie("metadata-outage", 2),), 2, "undecided"),
    ],
)
def test_scenario_exit_codes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    switch: list[str],
    lies: tuple[Lie, ...],
    code: int,
    verdict: str,
) -> None:
    _lying(monkeypatch, "scenario", *lies)
    argv = ["scenario", "defect1-fencing", *switch, "--runs-dir", str(tmp_path)]
    assert main(argv) == code
    assert f"Verdict: {verdict}." in capsys.readouterr().out
    assert _results(tmp_path, "-defect1-fencing")["verdict"] == verdict


@pytest.mark.parametrize(
    ("lies", "code", "verdict"),
    [
        ((), 0, "clean"),
        ((Lie("add-status", 0),), 1, "divergence"),
        ((Lie("error", 0),), 2, "undecided"),
    ],
)
def test_qualify_exit_codes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    lies: tuple[Lie, ...],
    code: int,
    verdict: str,
) -> None:
    monkeypatch.setattr(TargetSpec, "build", lambda self, config=None: LyingTarget(*lies))
    arguments = [
        "qualify", "--master", "none", "--shards", "2", "--configs", "fenced-recovery",
        "--max-examples", "5", "--steps", "20", "--seconds", "30", "--no-explore",
        "--run-dir", str(tmp_path / "run"), "--quiet",
    ]  # fmt: skip
    assert main(arguments) == code
    out = capsys.readouterr().out
    assert f"Verdict: {verdict}." in out
    if code == 2:
        assert "ERROR shard 0 after 2 attempts: undecided" in out


def test_qualify_refuses_a_zero_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["qualify", "--master", "none", "--seconds", "0", "--runs-dir", str(tmp_path), "--quiet"]
    )
    assert code == 2
    assert "time budget must be positive" in capsys.readouterr().err


def test_qualify_refuses_a_crash_share_that_is_not_positive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["qualify", "--master", "none", "--crash-time-share", "0", "--runs-dir", str(tmp_path)]
    assert main(argv) == 2
    assert "crash time share must be a positive number, got 0.0" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # refused before a run directory was made
