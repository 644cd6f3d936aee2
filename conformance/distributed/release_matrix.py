"""The model-client qualification over lists of releases (``bkconform qualify --target local
--bookkeeper 4.17.3,4.18.0 --zookeeper 3.8.4,3.9.3``): one qualification per (BookKeeper
release, ZooKeeper release) pair of the two lists' cross product, each in its own directory
(resumable on its own), and here the matrix of their verdicts, release pair by configuration
(and by ledger storage and configuration when the qualifications ran several storages), as
``results.json`` and ``report.html``, each row naming the systems it ran against. A dimension
that is not a list is None in every row: that release is the options' single value (or the
default). A pair whose qualification left no results is undecided.
"""

from __future__ import annotations

import html
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.installations.releases import VERSION_TEXT
from conformance.verdict import Verdict, worst

VERDICT_WORDS = frozenset(str(v) for v in Verdict)


def release_pairs(
    bookkeepers: Sequence[str], zookeepers: Sequence[str]
) -> list[tuple[str | None, str | None]]:
    """The rows' (BookKeeper, ZooKeeper) pairs, BookKeeper-major: a list of one release (or
    none) is no dimension, its side None, so that the options' single value applies."""
    return list(
        itertools.product(
            list(bookkeepers) if len(bookkeepers) > 1 else [None],
            list(zookeepers) if len(zookeepers) > 1 else [None],
        )
    )


def release_label(name: str) -> str:
    """A release as a directory name can hold it: a version as given, a directory
    (``--bookkeeper``/``--zookeeper`` take either) by its last component, so that a path
    never nests the row's directory elsewhere."""
    text = name.strip()
    if os.sep not in text and VERSION_TEXT.match(text):
        return text
    return Path(text).expanduser().resolve().name


def row_directory(bookkeeper: str | None, zookeeper: str | None) -> str:
    """``bookkeeper-<r>``, ``zookeeper-<z>`` or ``bookkeeper-<r>-zookeeper-<z>``: the
    ZooKeeper-only name is the one qualifications over ZooKeeper releases always had, so
    their run directories still resume."""
    parts = [
        f"{product}-{release_label(name)}"
        for product, name in (("bookkeeper", bookkeeper), ("zookeeper", zookeeper))
        if name is not None
    ]
    return "-".join(parts)


def pair_title(bookkeeper: str | None, zookeeper: str | None) -> str:
    """``BookKeeper 4.17.3, ZooKeeper 3.9.5``, without the side that is no list: the console's
    and the report's name of a row."""
    parts = [
        f"{product} {name}"
        for product, name in (("BookKeeper", bookkeeper), ("ZooKeeper", zookeeper))
        if name is not None
    ]
    return ", ".join(parts)


def release_row(
    bookkeeper: str | None, zookeeper: str | None, run_dir: Path, exit_code: int
) -> dict[str, Any]:
    """One release pair's row from its qualification's ``results.json`` (undecided without
    it)."""
    try:
        results = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        results = {}
    if not isinstance(results, dict):
        results = {}
    systems = results.get("system_under_test") or []
    storages = results.get("ledger_storages") or {}
    return {
        "bookkeeper": bookkeeper,
        "zookeeper": zookeeper,
        "run_dir": run_dir.name,
        "verdict": str(Verdict.named(results.get("verdict"))),
        "exit_code": exit_code,
        "configurations": dict(results.get("configurations") or {}),
        "ledger_storages": {storage: dict(cells) for storage, cells in storages.items()},
        "systems": [s.get("summary", "") for s in systems if isinstance(s, Mapping)],
        "findings": results.get("findings", 0),
        "shard_errors": len(results.get("shard_errors") or []),
    }


def matrix_verdict(rows: Sequence[Mapping[str, Any]]) -> Verdict:
    """The one precedence rule over the release pairs (no row at all is undecided)."""
    return worst(row["verdict"] for row in rows)


def _listed(rows: Sequence[Mapping[str, Any]], key: str) -> list[str]:
    """The releases of one dimension in row order ([] when that dimension is no list)."""
    return list(dict.fromkeys(row[key] for row in rows if row[key] is not None))


def write_release_matrix(run_dir: Path, rows: Sequence[Mapping[str, Any]]) -> Verdict:
    """The matrix's ``results.json`` and ``report.html`` in ``run_dir``; its verdict."""
    verdict = matrix_verdict(rows)
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        "name": "qualify-release-matrix",
        "verdict": str(verdict),
        "exit_code": verdict.exit_code,
        "bookkeeper_releases": _listed(rows, "bookkeeper"),
        "zookeeper_releases": _listed(rows, "zookeeper"),
        "rows": list(rows),
    }
    (run_dir / "results.json").write_text(json.dumps(summary, indent=2) + "\n")
    (run_dir / "report.html").write_text(render(rows, verdict))
    return verdict


def _cell(text: str) -> str:
    """A verdict coloured by its word; a storage cell's why-not (not applicable) plain."""
    css = text if text in VERDICT_WORDS else "na"
    return f"<td class='{css}'>{html.escape(text)}</td>"


def render(rows: Sequence[Mapping[str, Any]], verdict: Verdict) -> str:
    """One table, a row per release pair linking its own report and naming the systems it ran
    against: what differs between releases is read across a column."""
    configurations = sorted({c for row in rows for c in row["configurations"]})
    storages = list(dict.fromkeys(s for row in rows for s in row["ledger_storages"]))
    storage_columns = [
        (storage, configuration)
        for storage in storages
        for configuration in dict.fromkeys(
            c for row in rows for c in row["ledger_storages"].get(storage, {})
        )
    ]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in configurations) + "".join(
        f"<th>{html.escape(f'{c} on {s}')}</th>" for s, c in storage_columns
    )
    body = []
    for row in rows:
        cells = "".join(_cell(row["configurations"].get(c, "not run")) for c in configurations)
        cells += "".join(
            _cell(row["ledger_storages"].get(s, {}).get(c, "not run")) for s, c in storage_columns
        )
        systems = "<br>".join(html.escape(s) for s in row["systems"]) or "unknown"
        link = html.escape(f"{row['run_dir']}/report.html")
        body.append(
            f"<tr><th>{html.escape(pair_title(row['bookkeeper'], row['zookeeper']))}</th>"
            f"<td class='{html.escape(row['verdict'])}'><a href='{link}'>"
            f"{html.escape(row['verdict'])}</a></td>{cells}"
            f"<td>{html.escape(str(row['findings']))}</td>"
            f"<td>{html.escape(str(row['shard_errors']))}</td>"
            f"<td class='system'>{systems}</td></tr>"
        )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>bkconform qualification: releases</title>
<style>
body {{ font-family: sans-serif; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: left; }}
.clean {{ background: #d8f5d8; }} .violation, .divergence {{ background: #f8d0d0; }}
.undecided {{ background: #f5ecc8; }} .na {{ color: #777; }} .system {{ font-size: small; }}
</style></head><body>
<h1>Qualification over releases: {html.escape(str(verdict))}</h1>
<table><tr><th>releases</th><th>verdict</th>{head}<th>findings</th><th>shards in error</th>
<th>system under test</th></tr>
{"".join(body)}
</table></body></html>
"""


__all__ = [
    "matrix_verdict",
    "pair_title",
    "release_label",
    "release_pairs",
    "release_row",
    "render",
    "row_directory",
    "write_release_matrix",
]
