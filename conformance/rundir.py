"""The run directory, the one place a run's results are written (Jepsen's store is the anchor).

``runs/<UTC time>-<target>-<name>/``: ``results.json`` (verdict, findings, configuration,
versions), ``history.jsonl`` (every step: action, request, predicted and observed answers,
divergences, violations), ``trace.txt`` (the numbered trace), ``sequence.txt``
(sequencediagram.org text) and ``sequence.svg`` (the same diagram, self-contained).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from adapters.installations.system import SystemUnderTest
from conformance.engine import Outcome
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.render import numbered_trace, sequence_diagram
from model.bookkeeper.svg import sequence_svg


def versions(**extra: str) -> dict[str, str]:
    """Versions of what a run depends on, plus ``extra`` (e.g. the cluster's)."""
    found = {"python": platform.python_version(), "platform": platform.platform(), **extra}
    for package in ("bkconform", "hypothesis", "kazoo", "protobuf"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def system_record(system: SystemUnderTest) -> dict[str, str]:
    """``results.json``'s ``system_under_test``."""
    return {**system.as_dict(), "summary": system.render()}


def system_header(system: SystemUnderTest) -> str:
    """The console header's line naming what a run runs against."""
    return f"System under test: {system.render()}"


def new_run_dir(root: Path, *labels: str) -> Path:
    """``<root>/<UTC time>-<label>-<label>...``, made fresh (a suffix keeps same-second runs
    apart). Every engine's runs go through here: BookKeeper (target, scenario) and Zab."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = "-".join((stamp, *labels))
    path = root / base
    suffix = 1
    while path.exists():
        suffix += 1
        path = root / f"{base}-{suffix}"
    path.mkdir(parents=True)
    return path


def write_run(
    path: Path,
    *,
    name: str,
    cfg: ModelConfig,
    outcome: Outcome,
    target: dict[str, str],
    system: SystemUnderTest,
    extra: dict[str, Any] | None = None,
) -> None:
    """``system``: what the run ran against, recorded as ``system_under_test`` (its parts and,
    under ``summary``, the line the console header printed)."""
    config = {k: v for k, v in asdict(cfg).items() if k != "effective_ensemble_size"}
    results = {
        "name": name,
        "verdict": outcome.verdict,
        "exit_code": outcome.exit_code,
        "violations": outcome.violations,
        "divergences": outcome.divergences,
        "error": outcome.error,
        "note": outcome.note,
        "steps": len(outcome.steps),
        "config": config,
        "config_summary": cfg.describe(),
        "target": target,
        "system_under_test": system_record(system),
        "versions": versions(),
        **(extra or {}),
    }
    (path / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    with (path / "history.jsonl").open("w") as history:
        for record in outcome.steps:
            history.write(json.dumps(record.as_dict()) + "\n")
    if not outcome.trace:
        return  # nothing was found: no story to tell
    (path / "trace.txt").write_text(numbered_trace(cfg, outcome.trace) + "\n")
    findings = ", ".join(outcome.violations + (["divergence"] if outcome.divergences else []))
    title = f"{name} ({cfg.describe()})"
    note = f"VERDICT: {outcome.verdict}" + (f" ({findings})" if findings else "")
    (path / "sequence.txt").write_text(
        sequence_diagram(cfg, outcome.trace, title=title, final_note=note)
    )
    (path / "sequence.svg").write_text(
        sequence_svg(cfg, outcome.trace, title=title, final_note=note)
    )
