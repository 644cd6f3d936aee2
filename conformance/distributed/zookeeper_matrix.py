"""The model-client qualification over a list of ZooKeeper releases (``bkconform qualify
--target local --zookeeper 3.8.4,3.9.3``): one qualification per release, each in its own
directory ``zookeeper-<release>/`` (resumable on its own), and here the matrix of their
verdicts, release by configuration, as ``results.json`` and ``report.html``, each row naming the
systems it ran against. A release whose qualification left no results is undecided.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.verdict import Verdict, worst


def zookeeper_row(release: str, run_dir: Path, exit_code: int) -> dict[str, Any]:
    """One release's row from its qualification's ``results.json`` (undecided without it)."""
    try:
        results = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        results = {}
    if not isinstance(results, dict):
        results = {}
    systems = results.get("system_under_test") or []
    return {
        "zookeeper": release,
        "run_dir": run_dir.name,
        "verdict": str(Verdict.named(results.get("verdict"))),
        "exit_code": exit_code,
        "configurations": dict(results.get("configurations") or {}),
        "systems": [s.get("summary", "") for s in systems if isinstance(s, Mapping)],
        "findings": results.get("findings", 0),
        "shard_errors": len(results.get("shard_errors") or []),
    }


def matrix_verdict(rows: Sequence[Mapping[str, Any]]) -> Verdict:
    """The one precedence rule over the releases (no row at all is undecided)."""
    return worst(row["verdict"] for row in rows)


def write_zookeeper_matrix(run_dir: Path, rows: Sequence[Mapping[str, Any]]) -> Verdict:
    verdict = matrix_verdict(rows)
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        "name": "qualify-zookeeper-matrix",
        "verdict": str(verdict),
        "exit_code": verdict.exit_code,
        "zookeeper_releases": [row["zookeeper"] for row in rows],
        "rows": list(rows),
    }
    (run_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    (run_dir / "report.html").write_text(render(rows, verdict))
    return verdict


def render(rows: Sequence[Mapping[str, Any]], verdict: Verdict) -> str:
    configurations = sorted({c for row in rows for c in row["configurations"]})
    head = "".join(f"<th>{html.escape(c)}</th>" for c in configurations)
    body = []
    for row in rows:
        cells = "".join(
            f"<td class='{html.escape(v)}'>{html.escape(v)}</td>"
            for v in (row["configurations"].get(c, "not run") for c in configurations)
        )
        systems = "<br>".join(html.escape(s) for s in row["systems"]) or "unknown"
        link = html.escape(f"{row['run_dir']}/report.html")
        body.append(
            f"<tr><th>ZooKeeper {html.escape(row['zookeeper'])}</th>"
            f"<td class='{html.escape(row['verdict'])}'><a href='{link}'>"
            f"{html.escape(row['verdict'])}</a></td>{cells}"
            f"<td>{row['findings']}</td><td>{row['shard_errors']}</td>"
            f"<td class='system'>{systems}</td></tr>"
        )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>bkconform qualification: ZooKeeper releases</title>
<style>
body {{ font-family: sans-serif; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
.clean {{ background: #d8f5d8; }} .violation, .divergence {{ background: #f8d0d0; }}
.undecided {{ background: #f5ecc8; }} .system {{ font-size: small; }}
</style></head><body>
<h1>Qualification over ZooKeeper releases: {html.escape(str(verdict))}</h1>
<table><tr><th>release</th><th>verdict</th>{head}<th>findings</th><th>shards in error</th>
<th>system under test</th></tr>
{"".join(body)}
</table></body></html>
"""


__all__ = ["matrix_verdict", "render", "write_zookeeper_matrix", "zookeeper_row"]
