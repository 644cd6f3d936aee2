"""``report.html``: the qualification report, one self-contained page (it opens offline).

Verdict per configuration, the de-duplicated findings with their sequence diagrams (inline
SVG), shards in error with their logs, coverage (how often each model action and each response
kind was exercised), and the steps/s and time-to-first-finding plots (matplotlib, embedded as
PNG data).
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.installations.system import SystemUnderTest
from conformance.distributed.diff import Aggregates
from conformance.distributed.plan import Plan
from conformance.distributed.schema import RowStatus
from model.bookkeeper.action_table import ALL_ACTIONS

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; font-size: 0.9em; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.clean { color: #11772d; font-weight: bold; }
.violation, .divergence, .error { color: #b00020; font-weight: bold; }
.undecided { color: #a86400; font-weight: bold; }
pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 0.85em; }
.finding { border: 1px solid #ddd; padding: 1em; margin-bottom: 1.5em; }
.zero { color: #b00020; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _verdict(value: str) -> str:
    return f'<span class="{_e(value)}">{_e(value)}</span>'


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{cell}</td>' if i in numeric else f"<td>{cell}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return f'<img alt="plot" src="data:image/png;base64,{encoded}">'


def plots(shards: Sequence[Mapping[str, Any]]) -> str:
    """Steps/s per shard, and time to first finding per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    configurations = sorted({row["configuration"] for row in shards})
    colours = {c: f"C{i % 10}" for i, c in enumerate(configurations)}
    parts = []
    figure, axes = pyplot.subplots(figsize=(9, 3.2))
    try:
        for name in configurations:
            mine = [r for r in shards if r["configuration"] == name]
            axes.bar(
                [r["shard"] for r in mine],
                [r["steps_per_second"] for r in mine],
                color=colours[name],
                label=name,
            )
        axes.set_xlabel("shard")
        axes.set_ylabel("steps/s")
        axes.set_title("Steps on the target per second, per shard")
        if configurations:
            axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
        parts.append(_png(figure))
    finally:
        pyplot.close(figure)
    figure, axes = pyplot.subplots(figsize=(9, 3.2))
    try:
        found_any = False
        labels = []
        for index, name in enumerate(configurations):
            mine = [r for r in shards if r["configuration"] == name]
            times = [r["time_to_first_finding"] for r in mine if r["time_to_first_finding"]]
            if times:
                found_any = True
                axes.scatter(times, [index] * len(times), color=colours[name], zorder=3)
            labels.append(f"{name}\n({len(times)}/{len(mine)} shards found)")
        axes.set_yticks(range(len(configurations)), labels)
        axes.set_ylim(-0.7, max(len(configurations) - 0.3, 0.5))
        axes.set_xlim(left=0)
        axes.set_xlabel("seconds from the shard's start to its first finding")
        axes.set_title("Time to first finding" + ("" if found_any else " (no finding)"))
        axes.grid(axis="x", alpha=0.3)
        parts.append(_png(figure))
    finally:
        pyplot.close(figure)
    return "\n".join(parts)


def render_report(
    *,
    plan: Plan,
    master: str,
    verdict: str,
    aggregates: Aggregates,
    shards: Sequence[Mapping[str, Any]],
    elapsed: float,
) -> str:
    budget = plan.budget
    out = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>bkconform qualification: {_e(verdict)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>bkconform qualification: {_verdict(verdict)}</h1>",
        "<p>"
        f"Target <b>{_e(plan.target)}</b>, master <b>{_e(master)}</b>, "
        f"{len(plan.shards)} shards from master seed {plan.master_seed}; per shard: "
        f"{budget.max_examples} examples of up to {budget.max_steps} steps, "
        f"{budget.time_budget or 'no'} s budget, explorer {'on' if budget.explore else 'off'}. "
        f"Shards run now: {_e(_ran(shards))}; wall time {elapsed:.1f} s.</p>",
        _systems_html(shards),
        "<h2>Verdict per configuration</h2>",
        _table(
            [
                "configuration",
                "model",
                "verdict",
                "shards",
                "in error",
                "findings",
                "steps",
                "divergent steps",
                "verdicts",
            ],
            [
                [
                    _e(r["configuration"]),
                    _e(r["config_summary"]),
                    _verdict(r["verdict"]),
                    str(r["shards"]),
                    str(r["errors"]),
                    str(r["findings"]),
                    str(r["steps"]),
                    str(r["divergences"]),
                    _e(", ".join(f"{k} {v}" for k, v in r["verdicts"].items())),
                ]
                for r in aggregates["by_configuration"]
            ],
            numeric={3, 4, 5, 6, 7},
        ),
    ]
    out.append(f"<h2>Findings ({len(aggregates['findings'])}, de-duplicated by shrunk trace)</h2>")
    if not aggregates["findings"]:
        out.append("<p>No finding.</p>")
    for f in aggregates["findings"]:
        problems = [*f["violations"], *f["divergences"]]
        out.append(
            f"<div class='finding'><h3>{_verdict(f['verdict'])} in {_e(f['configuration'])}"
            f" ({f['shrunk_steps']} steps)</h3>"
            f"<p>{_e('; '.join(problems))}</p>"
            f"<p>Found by the {_e(f['found_by'])} after {f['found_after']:.1f} s "
            f"({f['found_steps']} steps), shrunk to {f['shrunk_steps']} steps. Found by "
            f"{f['occurrences']} shard(s): {_e(', '.join(map(str, f['shards'])))}; "
            f"configurations: {_e(', '.join(f['configurations']))}.</p>"
            f"<p>Replay: <code>bkconform replay {_e(f['blob'])}</code> (with the "
            "configuration's options)</p>"
            f"{f['sequence_svg']}"
            f"<details><summary>Numbered trace</summary><pre>{_e(f['trace_text'])}</pre>"
            "</details><details><summary>sequencediagram.org text</summary>"
            f"<pre>{_e(f['sequence_text'])}</pre></details></div>"
        )
    errors = [r for r in shards if r["status"] is RowStatus.ERROR]
    out.append(f"<h2>Shards in error ({len(errors)})</h2>")
    if not errors:
        out.append("<p>None.</p>")
    for r in errors:
        out.append(
            f"<h3 class='error'>shard {r['shard']} ({_e(r['configuration'])}): error after "
            f"{r['attempts']} attempts</h3><p>{_e(r['error'])}</p>"
            f"<details><summary>log</summary><pre>{_e(r['log'])}</pre></details>"
        )
    out.append("<h2>Coverage</h2><h3>Model actions</h3>")
    by_action = {r["action"]: r for r in aggregates["by_action"]}
    action_rows = []
    for action in sorted(set(ALL_ACTIONS) | set(by_action)):
        counted: dict[str, Any] = by_action.get(action) or {}
        steps = counted.get("steps", 0)
        cell = str(steps) if steps else "<span class='zero'>0 (never exercised)</span>"
        action_rows.append(
            [
                _e(action),
                cell,
                *(
                    str(counted.get(k, 0))
                    for k in ("compared", "divergences", "violations", "errors")
                ),
            ]
        )
    out.append(
        _table(
            ["action", "steps", "compared", "divergent", "with violations", "errors"],
            action_rows,
            numeric={1, 2, 3, 4, 5},
        )
    )
    out.append("<h3>Response kinds (observed status per action)</h3>")
    grouped: dict[str, list[str]] = defaultdict(list)
    for r in aggregates["responses"]:
        grouped[r["action"]].append(f"{_e(r['response'])}: {r['count']}")
    out.append(
        _table(["action", "responses"], [[_e(a), ", ".join(v)] for a, v in sorted(grouped.items())])
    )
    out.append("<h3>Per target</h3>")
    out.append(
        _table(
            ["target", "shards", "steps", "compared", "divergent"],
            [
                [
                    _e(r["target"]),
                    str(r["shards"]),
                    str(r["steps"]),
                    str(r["compared"]),
                    str(r["divergences"]),
                ]
                for r in aggregates["by_target"]
            ],
            numeric={1, 2, 3, 4},
        )
    )
    out.append("<h2>Steps and restarts per configuration</h2>")
    out.append(
        "<p>How deep each configuration's shards searched, and what the crashes cost: on a "
        "cluster every crash restarts a bookie. Steps per shard are next to the configuration "
        "with the most.</p>"
    )
    efforts = configuration_efforts(shards)
    out.append(
        _table(
            [
                "configuration",
                "shards",
                "steps per shard",
                "of the most",
                "crashes (bookie restarts)",
                "mean restart s",
                "restart share of search time",
            ],
            [
                [
                    _e(e.configuration),
                    str(e.shards),
                    f"{e.steps_per_shard:,.0f}",
                    f"{e.share_of_most:.0%}",
                    "n/a" if e.restarts is None else str(e.restarts),
                    "" if e.mean_restart is None else f"{e.mean_restart:.2f}",
                    "" if e.restart_share is None else f"{e.restart_share:.0%}",
                ]
                for e in efforts
            ],
            numeric={1, 2, 3, 4, 5, 6},
        )
    )
    out.append("<h2>Throughput and time to first finding</h2>")
    out.append(plots(shards))
    out.append("<h2>Shards</h2>")
    out.append(
        _table(
            [
                "shard",
                "configuration",
                "seed",
                "status",
                "verdict",
                "examples",
                "steps",
                "steps/s",
                "search s",
                "wall s",
                "attempts",
                "worker",
            ],
            [
                [
                    str(r["shard"]),
                    _e(r["configuration"]),
                    str(r["seed"]),
                    _e(r["status"]),
                    _verdict(r["verdict"]),
                    str(r["examples"]),
                    str(r["steps"]),
                    f"{r['steps_per_second']:,.0f}",
                    f"{r['elapsed']:.1f}",
                    f"{r['wall']:.1f}",
                    str(r["attempts"]),
                    _e(r["worker"]),
                ]
                for r in shards
            ],
            numeric={0, 2, 5, 6, 7, 8, 9, 10},
        )
    )
    out.append(
        "<h2>Versions</h2><pre>"
        + _e(json.dumps(json.loads(shards[0]["versions"]) if shards else {}, indent=2))
        + "</pre></body></html>\n"
    )
    return "\n".join(out)


@dataclass(frozen=True)
class ConfigurationEffort:
    """One configuration's search depth and crash cost, over its shards."""

    configuration: str
    shards: int
    steps_per_shard: float  # mean steps on the target
    share_of_most: float  # steps_per_shard over the largest of any configuration
    restarts: int | None  # None: not recorded (a run written before restarts were)
    mean_restart: float | None  # seconds per restart
    restart_share: float | None  # restart seconds over search seconds


def configuration_efforts(shards: Sequence[Mapping[str, Any]]) -> list[ConfigurationEffort]:
    """Per configuration: mean target steps per shard (and as a share of the deepest
    configuration's), restarts and their mean duration and share of the search time."""
    grouped: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in shards:
        grouped[row["configuration"]].append(row)
    means = {name: sum(r["steps"] for r in rows) / len(rows) for name, rows in grouped.items()}
    most = max(means.values(), default=0.0)
    efforts = []
    for name in sorted(grouped):
        rows = grouped[name]
        recorded = [r for r in rows if r.get("restarts") is not None]
        restarts = sum(r["restarts"] for r in recorded) if recorded else None
        seconds = sum(r.get("restart_seconds") or 0.0 for r in recorded)
        searched = sum(r["elapsed"] for r in recorded)
        efforts.append(
            ConfigurationEffort(
                configuration=name,
                shards=len(rows),
                steps_per_shard=means[name],
                share_of_most=means[name] / most if most else 0.0,
                restarts=restarts,
                mean_restart=seconds / restarts if restarts else None,
                restart_share=seconds / searched if restarts and searched else None,
            )
        )
    return efforts


def shard_systems(shards: Sequence[Mapping[str, Any]]) -> list[SystemUnderTest]:
    """The distinct systems the shards ran against, in shard order (one, unless the run was
    resumed on another installation)."""
    found: list[SystemUnderTest] = []
    for row in sorted(shards, key=lambda r: r["shard"]):
        system = SystemUnderTest.from_dict(row)
        if system not in found:
            found.append(system)
    return found


def _systems_html(shards: Sequence[Mapping[str, Any]]) -> str:
    systems = shard_systems(shards)
    if not systems:
        return "<p>System under test: no shard recorded one.</p>"
    items = "".join(
        f"<li>bookies <b>{_e(s.bookies)}</b>; client <b>{_e(s.client)}</b>; "
        f"<b>{_e(s.zookeeper)}</b></li>"
        for s in systems
    )
    return f"<h2>System under test</h2><ul class='sut'>{items}</ul>"


def _ran(shards: Sequence[Mapping[str, Any]]) -> str:
    done = sum(1 for r in shards if r["status"] is RowStatus.DONE)
    return f"{len(shards)} recorded, {done} done, {len(shards) - done} in error"


def write_report(run_dir: Path, **fields: Any) -> Path:
    path = run_dir / "report.html"
    path.write_text(render_report(**fields))
    return path
