"""The model-client qualification's matrix over releases: rows from each release pair's
results, the one precedence rule, the rows' directories, and a report that names the systems
and, when the qualifications ran several ledger storages, their cells (fast)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.distributed.release_matrix import (
    matrix_verdict,
    pair_title,
    release_label,
    release_pairs,
    release_row,
    row_directory,
    write_release_matrix,
)
from conformance.verdict import Verdict

LIMBO_ON_SORTED = "not applicable: limbo (data integrity checking) needs DbLedgerStorage"


def _qualification(
    root: Path,
    bookkeeper: str | None,
    zookeeper: str,
    verdict: str,
    storages: dict[str, dict[str, str]] | None = None,
) -> Path:
    """A row's directory as its qualification leaves it (results.json only)."""
    run_dir = root / row_directory(bookkeeper, zookeeper)
    run_dir.mkdir(parents=True)
    system = f"bookies: BookKeeper {bookkeeper or '4.17.3'}; zookeeper: ZooKeeper {zookeeper}"
    results: dict[str, Any] = {
        "verdict": verdict,
        "configurations": {"fenced-recovery": verdict},
        "system_under_test": [{"summary": system}],
        "findings": 1 if verdict == "violation" else 0,
        "shard_errors": [],
    }
    if storages is not None:
        results["ledger_storages"] = storages
    (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir


def test_the_matrix_takes_each_release_s_verdict_and_names_its_systems(tmp_path: Path) -> None:
    rows = [
        release_row(None, "3.8.4", _qualification(tmp_path, None, "3.8.4", "clean"), 0),
        release_row(None, "3.9.3", _qualification(tmp_path, None, "3.9.3", "violation"), 1),
    ]
    assert write_release_matrix(tmp_path, rows) is Verdict.VIOLATION
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["name"] == "qualify-release-matrix" and results["exit_code"] == 1
    assert results["zookeeper_releases"] == ["3.8.4", "3.9.3"]
    assert results["bookkeeper_releases"] == []
    report = (tmp_path / "report.html").read_text()
    assert "<th>ZooKeeper 3.8.4</th>" in report and "zookeeper: ZooKeeper 3.9.3" in report
    assert "zookeeper-3.9.3/report.html" in report and "fenced-recovery" in report
    assert "<th>BookKeeper" not in report  # the BookKeeper release is no dimension here


def test_a_release_without_results_is_undecided_and_so_is_the_matrix(tmp_path: Path) -> None:
    clean = release_row(None, "3.8.4", _qualification(tmp_path, None, "3.8.4", "clean"), 0)
    missing = release_row(None, "3.9.3", tmp_path / "zookeeper-3.9.3", 2)
    assert missing["verdict"] == "undecided" and missing["systems"] == []
    assert missing["ledger_storages"] == {}
    assert matrix_verdict([clean, missing]) is Verdict.UNDECIDED
    assert matrix_verdict([clean]) is Verdict.CLEAN
    assert matrix_verdict([]) is Verdict.UNDECIDED


def test_rows_are_the_cross_product_of_the_lists_bookkeeper_first() -> None:
    assert release_pairs(["4.17.3", "4.18.0"], ["3.8.4", "3.9.3"]) == [
        ("4.17.3", "3.8.4"),
        ("4.17.3", "3.9.3"),
        ("4.18.0", "3.8.4"),
        ("4.18.0", "3.9.3"),
    ]
    # A single release, or none, is no dimension: the options' value applies as given.
    assert release_pairs(["4.17.3", "4.18.0"], ["3.9.3"]) == [("4.17.3", None), ("4.18.0", None)]
    assert release_pairs([], ["3.8.4", "3.9.3"]) == [(None, "3.8.4"), (None, "3.9.3")]


def test_a_row_s_directory_and_title_name_only_the_listed_releases(tmp_path: Path) -> None:
    assert row_directory("4.17.3", None) == "bookkeeper-4.17.3"
    assert row_directory(None, "3.9.3") == "zookeeper-3.9.3"
    assert row_directory("4.17.3", "3.9.3") == "bookkeeper-4.17.3-zookeeper-3.9.3"
    assert pair_title("4.17.3", "3.9.3") == "BookKeeper 4.17.3, ZooKeeper 3.9.3"
    assert pair_title(None, "3.9.3") == "ZooKeeper 3.9.3"
    assert pair_title("4.18.0", None) == "BookKeeper 4.18.0"
    # A directory (VERSION|DIR) is named by its last component, never nested by its path.
    home = tmp_path / "apache-zookeeper-3.9.5-bin"
    assert release_label(f"{home}/") == "apache-zookeeper-3.9.5-bin"
    assert row_directory(None, str(home)) == "zookeeper-apache-zookeeper-3.9.5-bin"


def test_rows_of_both_lists_with_storages_get_a_column_per_storage_and_configuration(
    tmp_path: Path,
) -> None:
    storages = {
        "sorted": {"fenced-recovery": "clean", "limbo-crash": LIMBO_ON_SORTED},
        "db": {"fenced-recovery": "violation", "limbo-crash": "clean"},
    }
    rows = [
        release_row(
            bookkeeper,
            zookeeper,
            _qualification(tmp_path, bookkeeper, zookeeper, verdict, storages),
            Verdict(verdict).exit_code,
        )
        for bookkeeper, zookeeper, verdict in (
            ("4.17.3", "3.8.4", "clean"),
            ("4.17.3", "3.9.3", "clean"),
            ("4.18.0", "3.8.4", "violation"),
            ("4.18.0", "3.9.3", "clean"),
        )
    ]
    assert rows[2]["ledger_storages"] == storages
    assert write_release_matrix(tmp_path, rows) is Verdict.VIOLATION
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["bookkeeper_releases"] == ["4.17.3", "4.18.0"]
    assert results["zookeeper_releases"] == ["3.8.4", "3.9.3"]
    assert [(r["bookkeeper"], r["zookeeper"], r["verdict"]) for r in results["rows"]] == [
        ("4.17.3", "3.8.4", "clean"),
        ("4.17.3", "3.9.3", "clean"),
        ("4.18.0", "3.8.4", "violation"),
        ("4.18.0", "3.9.3", "clean"),
    ]
    assert results["rows"][0]["ledger_storages"]["db"]["fenced-recovery"] == "violation"
    report = (tmp_path / "report.html").read_text()
    for header in ("fenced-recovery on db", "fenced-recovery on sorted", "limbo-crash on db"):
        assert f"<th>{header}</th>" in report
    assert f"<td class='na'>{LIMBO_ON_SORTED}</td>" in report
    assert "<th>BookKeeper 4.18.0, ZooKeeper 3.8.4</th>" in report
    assert "bookkeeper-4.18.0-zookeeper-3.8.4/report.html" in report
    assert "bookies: BookKeeper 4.18.0; zookeeper: ZooKeeper 3.9.3" in report


def test_the_report_escapes_what_it_is_given(tmp_path: Path) -> None:
    run_dir = _qualification(tmp_path, None, "3.9.3", "clean", {"<db>": {"a&b": "clean"}})
    rows = [release_row("<b>", "3.9.3", run_dir, 0)]
    write_release_matrix(tmp_path, rows)
    report = (tmp_path / "report.html").read_text()
    assert "<b>" not in report and "BookKeeper &lt;b&gt;" in report
    assert "a&amp;b on &lt;db&gt;" in report
