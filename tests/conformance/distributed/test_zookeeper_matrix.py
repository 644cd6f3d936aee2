"""The model-client qualification's matrix over ZooKeeper releases: rows from each release's
results, the one precedence rule, and a report that names the systems (fast)."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.distributed.zookeeper_matrix import (
    matrix_verdict,
    write_zookeeper_matrix,
    zookeeper_row,
)
from conformance.verdict import Verdict


def _qualification(root: Path, release: str, verdict: str) -> Path:
    run_dir = root / f"zookeeper-{release}"
    run_dir.mkdir(parents=True)
    system = f"bookies: BookKeeper 4.17.3; zookeeper: ZooKeeper {release}"
    results = {
        "verdict": verdict,
        "configurations": {"fenced-recovery": verdict},
        "system_under_test": [{"summary": system}],
        "findings": 1 if verdict == "violation" else 0,
        "shard_errors": [],
    }
    (run_dir / "results.json").write_text(json.dumps(results))
    return run_dir


def test_the_matrix_takes_each_release_s_verdict_and_names_its_systems(tmp_path: Path) -> None:
    rows = [
        zookeeper_row("3.8.4", _qualification(tmp_path, "3.8.4", "clean"), 0),
        zookeeper_row("3.9.3", _qualification(tmp_path, "3.9.3", "violation"), 1),
    ]
    assert write_zookeeper_matrix(tmp_path, rows) is Verdict.VIOLATION
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["zookeeper_releases"] == ["3.8.4", "3.9.3"] and results["exit_code"] == 1
    report = (tmp_path / "report.html").read_text()
    assert "ZooKeeper 3.8.4" in report and "zookeeper: ZooKeeper 3.9.3" in report
    assert "zookeeper-3.9.3/report.html" in report and "fenced-recovery" in report


def test_a_release_without_results_is_undecided_and_so_is_the_matrix(tmp_path: Path) -> None:
    clean = zookeeper_row("3.8.4", _qualification(tmp_path, "3.8.4", "clean"), 0)
    missing = zookeeper_row("3.9.3", tmp_path / "zookeeper-3.9.3", 2)
    assert missing["verdict"] == "undecided" and missing["systems"] == []
    assert matrix_verdict([clean, missing]) is Verdict.UNDECIDED
    assert matrix_verdict([clean]) is Verdict.CLEAN
    assert matrix_verdict([]) is Verdict.UNDECIDED
