"""tools/search_figures.py: the faults of an example by kind, those that never took effect
left out; a directory that is no run is refused."""

from __future__ import annotations

import json
from pathlib import Path

from tools.search_figures import faults_of, figures, main


def test_faults_by_kind_leave_out_what_never_triggered() -> None:
    plan = {
        "schedule": [
            {"kind": "add", "bookie": "b2", "entry": 0, "action": "hold", "for_ms": 3000},
            {
                "kind": "add",
                "bookie": "b2",
                "entry": 0,
                "answer": True,
                "action": "forge",
                "status": "EIO",
            },
            {"kind": "add", "bookie": "b1", "entry": 1, "action": "hold", "for_ms": 300},
            {"fault": "restart empty", "bookie": "b2", "at": None},
            {"fault": "restart", "bookie": "b1", "at": None},
        ]
    }
    kinds = faults_of(plan, ["restart empty b2 when add e3 to b2 passes"])
    assert kinds == {
        "request held past the add timeout": 1,
        "answer answered by a forged EIO": 1,
        "request hold": 1,
        "restart": 1,
    }


def test_a_run_directorys_figures_and_a_refusal(tmp_path: Path, capsys: object) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(
        json.dumps(
            {
                "verdict": "clean",
                "role_settings": {"shape": "2/1/1", "faults": "extended"},
                "java_search": {"examples": 1, "verdicts": {"clean": 1}},
            }
        )
    )
    (run / "examples.jsonl").write_text(
        json.dumps({"plan": {"schedule": [{"fault": "crash", "bookie": "b1", "at": None}]}}) + "\n"
    )
    found = figures(run)
    assert found["examples with each fault"] == {"crash": 1} and found["shape"] == "2/1/1"
    assert main([str(tmp_path / "nothing")]) == 2
