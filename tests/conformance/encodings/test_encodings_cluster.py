"""``bkconform encodings compare --bookkeeper 4.17.3,4.18.0`` end to end: both releases on
local clusters in turn (about 40 s on 2 cores), compared; the same kinds as the captures saved
in ``captures/`` (test_encodings.py checks those in detail)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.processes import processes_matching
from conformance.cli import main
from conformance.encodings.captures import load_capture
from conformance.encodings.compare import compare_captures
from tests.bookkeeper_fixtures import installed_home

CAPTURES = Path(__file__).resolve().parent / "captures"


@pytest.mark.cluster
def test_4_17_3_and_4_18_0_compared_on_real_clusters(tmp_path: Path) -> None:
    for version in ("4.17.3", "4.18.0"):
        installed_home(version)  # installed here, or the test fails saying why
    out = tmp_path / "out"
    argv = ["encodings", "compare", "--bookkeeper", "4.17.3,4.18.0", "--out", str(out)]
    assert main(argv) == 0, (out / "report.md").read_text()
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"] == "clean"
    (comparison,) = report["comparisons"]
    differing = {k["kind"] for k in comparison["kinds"] if k["outcome"] == "differs"}
    assert len(differing) == 4 and all(k["explained"] for k in comparison["kinds"])
    assert len(report["shell_checks"]) == 12
    assert all(check["ok"] for check in report["shell_checks"])
    # The run's captures hold the kinds of the saved ones (the sessions ran alike).
    fresh = compare_captures(
        load_capture(out / "captures", "4.17.3"), load_capture(out / "captures", "4.18.0")
    )
    saved = compare_captures(load_capture(CAPTURES, "4.17.3"), load_capture(CAPTURES, "4.18.0"))
    assert {(k.kind, k.outcome) for k in fresh.kinds} == {(k.kind, k.outcome) for k in saved.kinds}
    # Nothing the run started is left: no ZooKeeper or bookie in its scratch directories, no
    # JVM or shell logging under its output.
    assert processes_matching("bkconform-encodings-") == []
    assert processes_matching(str(out)) == []
