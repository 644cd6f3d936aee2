"""tools/findings_table.py: bad options are refused before anything runs; each cell reads its
run's results (a scenario's verdict and window, a search's races, the shutdown benchmark's
count); a finding that does not apply to a storage says why; a cell that did not end is
undecided and so is the table (exit 2)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tools import findings_table
from tools.findings_table import FINDINGS, Cell, run_cell

_BY_KEY = {f.key: f for f in FINDINGS}


def _args(**more: object) -> argparse.Namespace:
    return argparse.Namespace(race_seconds=5, shutdown_restarts=3, timeout=10.0, **more)


def _fake_run(
    monkeypatch: pytest.MonkeyPatch, code: int | None, output: str, seen: list[list[str]]
) -> None:
    def run(command: Sequence[str], log: Path, timeout: float) -> tuple[int | None, str]:
        seen.append(list(command))
        return code, output

    monkeypatch.setattr(findings_table, "_run", run)


def _run_dir(tmp_path: Path, results: dict[str, object]) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir


def test_bad_options_are_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert findings_table.main(["--findings", "no-such", "--out", str(tmp_path)]) == 2
    assert findings_table.main(["--storages", "tape", "--out", str(tmp_path)]) == 2
    assert "findings_table: unknown findings ['no-such']" in capsys.readouterr().err
    assert not (tmp_path / "table.json").exists()


def test_a_scenario_cell_reads_its_verdict_and_whether_its_window_was_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run_dir(
        tmp_path, {"verdict": "violation", "report_window": {"reached": True, "exit_code": 1}}
    )
    seen: list[list[str]] = []
    output = f"...\nVerdict of the run: violation. Run directory: {run_dir}\n"
    _fake_run(monkeypatch, 1, output, seen)
    cell = run_cell(_BY_KEY["fence-lost-clean-restart"], "4.18.0", "db", tmp_path, _args())
    assert cell.text() == "exit 1, violation, reached" and cell.decided
    assert seen[0][-10:-2] == [
        "scenario",
        "fence-lost-on-clean-restart-java-client",
        "--target",
        "local",
        "--bookkeeper",
        "4.18.0",
        "--ledger-storage",
        "db",
    ]


def test_a_window_not_reached_is_said_and_a_run_that_did_not_end_is_undecided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = _run_dir(
        tmp_path,
        {"verdict": "clean", "error": "no bookie", "report_window": {"reached": False}},
    )
    _fake_run(monkeypatch, 2, f"Run directory: {run_dir}\n", [])
    cell = run_cell(_BY_KEY["bk-3005"], "4.14.7", "sorted", tmp_path, _args())
    assert cell.text() == "exit 2, clean, NOT reached, no bookie" and not cell.decided
    _fake_run(monkeypatch, None, "", [])
    stopped = run_cell(_BY_KEY["bk-3005"], "4.14.7", "sorted", tmp_path, _args())
    assert stopped.verdict == "undecided" and not stopped.decided


def test_the_shutdown_crash_runs_on_db_only_and_reads_the_benchmark_s_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    summary = "BookKeeper 4.17.3, workaround OFF: 3 in-JVM restarts, 1 crashes (33.3%; 9 s)"
    _fake_run(monkeypatch, 1, summary + "\n", seen)
    finding = _BY_KEY["shutdown-crash"]
    skipped = run_cell(finding, "4.17.3", "sorted", tmp_path, _args())
    assert skipped.decided and skipped.text().startswith("n/a: no data-integrity check")
    assert seen == []
    cell = run_cell(finding, "4.17.3", "db", tmp_path, _args())
    assert cell.text() == "exit 1, crash, 3 in-JVM restarts, 1 crashes (33.3%; 9 s)"
    assert "--no-workaround" in seen[0] and seen[0][seen[0].index("--restarts") + 1] == "3"


def test_the_table_has_a_row_per_release_and_a_column_per_storage() -> None:
    cells = [
        Cell("races", "4.17.3", "sorted", 0, "clean", None, "9 races", 1.0),
        Cell("races", "4.18.0", "db", 1, "violation", None, "", 1.0),
    ]
    text = findings_table.markdown(cells, ["4.17.3", "4.18.0"], ["sorted", "db"])
    assert "| 4.17.3 | exit 0, clean, 9 races | not run |" in text
    assert "| 4.18.0 | not run | exit 1, violation |" in text
    assert "### Races at the bookie" in text and "#3005" not in text


def test_an_undecided_cell_runs_again_and_says_what_each_run_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    said = iter(
        [
            Cell("bk-3005", "4.18.0", "db", 2, "divergence", False, "", 1.0),
            Cell("bk-3005", "4.18.0", "db", 1, "violation", True, "", 1.0),
        ]
    )
    runs: list[str] = []

    def run_cell(finding: object, release: str, storage: str, out: Path, args: object) -> Cell:
        runs.append(storage)
        return next(said)

    monkeypatch.setattr(findings_table, "run_cell", run_cell)
    argv = ["--findings", "bk-3005", "--releases", "4.18.0", "--storages", "db"]
    assert findings_table.main([*argv, "--out", str(tmp_path)]) == 0
    (cell,) = findings_table.read_cells(tmp_path)
    assert cell.text() == (
        "exit 1, violation, reached (run 2 of 2; before: exit 2, divergence, NOT reached)"
    )
    # Run again on the same --out, a decided cell is kept as it is.
    assert findings_table.main([*argv, "--out", str(tmp_path)]) == 0
    assert runs == ["db", "db"]


def test_a_cell_still_undecided_after_its_attempts_leaves_the_table_undecided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_cell(finding: object, release: str, storage: str, out: Path, args: object) -> Cell:
        return Cell("races", release, storage, None, "undecided", None, "timed out", 1.0)

    monkeypatch.setattr(findings_table, "run_cell", run_cell)
    argv = ["--findings", "races", "--releases", "4.18.0", "--storages", "sorted"]
    assert findings_table.main([*argv, "--attempts", "3", "--out", str(tmp_path)]) == 2
    (cell,) = findings_table.read_cells(tmp_path)
    assert len(cell.earlier) == 2 and not cell.decided
    # Resumed: it runs again, its three earlier runs kept.
    assert findings_table.main([*argv, "--attempts", "1", "--out", str(tmp_path)]) == 2
    (cell,) = findings_table.read_cells(tmp_path)
    assert len(cell.earlier) == 3 and cell.earlier[2] == "did not end, undecided, timed out"


def test_the_shutdown_crash_needs_the_data_integrity_check_of_4_15_0_and_later() -> None:
    finding = _BY_KEY["shutdown-crash"]
    assert "before 4.15.0" in str(finding.not_applicable("4.14.7", "db"))
    assert finding.not_applicable("4.16.6", "db") is None
    assert finding.not_applicable("/opt/bookkeeper-master", "db") is None
    assert "DbLedgerStorage only" in str(finding.not_applicable("4.18.0", "sorted"))


def test_a_table_resumed_for_one_finding_keeps_every_cell_in_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_cell(finding: Any, release: str, storage: str, out: Path, args: object) -> Cell:
        return Cell(finding.key, release, storage, 0, "clean", None, "", 1.0)

    monkeypatch.setattr(findings_table, "run_cell", run_cell)
    first = ["--findings", "races", "--releases", "4.16.6,4.18.0", "--out", str(tmp_path)]
    assert findings_table.main(first) == 0
    again = ["--findings", "bk-3005", "--releases", "4.17.3", "--storages", "db"]
    assert findings_table.main([*again, "--out", str(tmp_path)]) == 0
    table = (tmp_path / "table.md").read_text()
    assert "| 4.16.6 | exit 0, clean | exit 0, clean |" in table  # the first run's cells
    assert "| 4.17.3 | not run | exit 0, clean |" in table.split("### #3005")[1]
    assert table.index("| 4.16.6 |") < table.index("| 4.17.3 |") < table.index("| 4.18.0 |")
