"""tools/compare_bookies.py, the thin script over ``conformance/bookie_comparison/``: its
arguments refused with a clear message, and a corpus-only run (no cluster) through the script
writes the report and its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tools.compare_bookies import main

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--configs", "no-such-configuration"], "unknown configuration"),
        (["--budget", "45"], "--budget must be more than 45 s"),
    ],
)
def test_bad_arguments_are_refused(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--out", str(tmp_path / "r.md"), *argv])
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()


def test_a_corpus_only_run_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "corpus.md"
    argv = [
        "--configs", "no-limbo", "--per-config", "2", "--hypothesis-examples", "3",
        "--explorer-rounds", "20", "--corpus-only", "--out", str(out),
    ]  # fmt: skip
    ran = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "compare_bookies.py"), *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["command"] == " ".join(["tools/compare_bookies.py", *argv])
    (configuration,) = report["configurations"]
    assert configuration["name"] == "no-limbo" and configuration["corpus"] == 2
    assert len(configuration["blobs"]) == 2 and report["totals"]["sequences"] == 0
    assert "| no-limbo | 2 (" in out.read_text()
