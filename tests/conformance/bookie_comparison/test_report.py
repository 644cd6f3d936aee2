"""The comparison's Markdown report and its tallies. No cluster."""

from __future__ import annotations

from typing import Any

from conformance.bookie_comparison.answers import Replayed
from conformance.bookie_comparison.differences import Difference, group_differences
from conformance.bookie_comparison.report import answer_histogram, render_markdown, verdict_counts
from tests.conformance.bookie_comparison.replays import step


def test_markdown_report_lists_counts_and_groups() -> None:
    groups = group_differences(
        [Difference("limbo-crash", 2, "hypothesis", 5, "Act", "add", "a|b", "c", "desc")]
    )
    report: dict[str, Any] = {
        "command": "tools/compare_bookies.py --out x.md",
        "systems": {"real": "bookies: BookKeeper 4.17.3", "reference": "reference"},
        "seed": 0,
        "per_config": 2,
        "max_steps": 60,
        "elapsed": 12.0,
        "partial": False,
        "configurations": [
            {
                "name": "limbo-crash",
                "corpus": 2,
                "sources": "hypothesis 2",
                "sequences": 2,
                "steps": 20,
                "answers": 9,
                "differences": 1,
                "verdicts": {"real": "clean 2", "reference": "clean 2"},
            }
        ],
        "totals": {"corpus": 2, "sequences": 2, "steps": 20, "answers": 9, "differences": 1},
        "groups": [vars(g) for g in groups],
        "errors": [],
    }
    text = render_markdown(report)
    assert "| limbo-crash | 2 (hypothesis 2) | 2 | 20 | 9 | 1 |" in text
    assert "| a\\|b | c | 1 |" in text  # a pipe in an answer does not break the table
    report["groups"] = []
    assert "No difference" in render_markdown(report)


def test_answer_histogram_counts_request_and_answer() -> None:
    runs = [
        Replayed([step(1, "add EOK success=True"), step(2, None)], "clean"),
        Replayed([step(1, "add EOK success=True"), step(2, "add EFENCED success=False")], "clean"),
    ]
    assert answer_histogram(runs) == {
        "add: add EFENCED success=False": 1,
        "add: add EOK success=True": 2,
    }


def test_verdict_counts_tally_each_verdict() -> None:
    runs = [Replayed([], "clean", verdict=verdict) for verdict in ("clean", "raised", "clean")]
    assert verdict_counts(runs) == "clean 2, raised 1"
    assert verdict_counts([]) == "-"
