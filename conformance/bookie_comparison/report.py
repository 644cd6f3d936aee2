"""The comparison's Markdown report, and the tallies it shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.bookie_comparison.answers import Replayed


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Real bookies vs the reference bookie: every answer of the search corpus",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Real: {report['systems'].get('real', 'unknown')}  ",
        f"Reference: {report['systems'].get('reference', 'unknown')}",
        "",
        f"Seed {report['seed']}, up to {report['per_config']} sequences per configuration, "
        f"steps up to {report['max_steps']}; {report['elapsed']:.0f} s"
        + (" (**stopped by the budget: partial**)" if report["partial"] else "")
        + ".",
        "",
        "| configuration | corpus | sequences compared | steps compared | answers compared "
        "| differences | real: verdicts | reference: verdicts |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in report["configurations"]:
        lines.append(
            f"| {c['name']} | {c['corpus']} ({_cell(c['sources'])}) | {c['sequences']} "
            f"| {c['steps']} | {c['answers']} | {c['differences']} "
            f"| {_cell(c['verdicts']['real'])} | {_cell(c['verdicts']['reference'])} |"
        )
    t = report["totals"]
    lines += [
        f"| **total** | {t['corpus']} | {t['sequences']} | {t['steps']} | {t['answers']} "
        f"| {t['differences']} | | |",
        "",
    ]
    if report["errors"]:
        lines += ["Errors:", "", *[f"* {_cell(e)}" for e in report["errors"]], ""]
    seen = [c for c in report["configurations"] if c.get("answers_seen")]
    if seen:
        lines += [
            "## Answers seen (on real bookies; request: answer, count)",
            "",
            *[
                f"* {c['name']}: "
                + "; ".join(f"{k} x{v}" for k, v in c["answers_seen"]["real"].items())
                for c in seen
            ],
            "",
        ]
    if not report["groups"]:
        lines.append("No difference: every compared answer was the same on both.")
        return "\n".join(lines) + "\n"
    lines += [
        "## Differences",
        "",
        "| configuration | action | request | real answer | reference answer | count "
        "| example (sequence, source, step) |",
        "|---|---|---|---|---|---|---|",
    ]
    for g in report["groups"]:
        ex = g["example"]
        lines.append(
            f"| {g['configuration']} | {_cell(g['action'])} | {_cell(g['request'])} "
            f"| {_cell(g['real'])} | {_cell(g['reference'])} | {g['count']} "
            f"| #{ex['sequence']} {ex['source']}, step {ex['step']}: {_cell(ex['detail'] or '')} |"
        )
    return "\n".join(lines) + "\n"


def answer_histogram(replays: Sequence[Replayed]) -> dict[str, int]:
    """How often each (request, answer) was seen: what the corpus exercised."""
    counts: dict[str, int] = {}
    for replay in replays:
        for s in replay.steps:
            if s.answer is not None:
                key = f"{s.request}: {s.answer}"
                counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


def verdict_counts(replays: Sequence[Replayed]) -> str:
    """How many replays ended with each verdict: ``clean 3, divergence 1``."""
    counts: dict[str, int] = {}
    for r in replays:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


__all__ = ["answer_histogram", "render_markdown", "verdict_counts"]
