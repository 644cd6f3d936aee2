"""The figures of Java-client writer searches, side by side: what each run reached.

For each run directory of ``bkconform run --client java --role writer`` (``results.json`` and
``examples.jsonl``) one Markdown column: the shape and fault set, the examples and their
verdicts, the first finding (when it came, what it was), the ensemble changes (examples with
one, pending adds moved by them), the faults that took effect by kind (answers held past the
add timeout, forged errors, crashes, pauses, stalls, held ZooKeeper writes...), and the
client's JaCoCo line and branch coverage per class.

    .venv/bin/python tools/search_figures.py runs/<time>-local-run-java ... > figures.md
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

#: A hold for a time this long or longer outlasts the writer's add timeout (1 s) and the
#: client's next check of it (1 s).
PAST_TIMEOUT_MS = 2000


def faults_of(plan: dict[str, Any], untriggered: list[str]) -> Counter[str]:
    """The faults of one example's plan, by kind (fault events whose frame never came are
    left out: they did nothing)."""
    kinds: Counter[str] = Counter()
    for item in plan.get("schedule", []):
        if "fault" in item:
            kinds[item["fault"]] += 1
            continue
        side = "answer" if item.get("answer") else "request"
        action = item["action"]
        if action == "hold" and item.get("for_ms", 0) >= PAST_TIMEOUT_MS:
            kinds[f"{side} held past the add timeout"] += 1
        elif action == "forge":
            kinds[f"{side} answered by a forged {item['status']}"] += 1
        else:
            kinds[f"{side} {action}"] += 1
    events = sorted(
        (item["fault"] for item in plan.get("schedule", []) if "fault" in item), key=len
    )
    for what in untriggered:
        # The longest kind the description starts with ("restart empty b2 ...", not "restart").
        matching = [kind for kind in events if what == kind or what.startswith(kind + " ")]
        if matching:
            kinds[matching[-1]] -= 1
    return +kinds


def figures(run_dir: Path) -> dict[str, Any]:
    results = json.loads((run_dir / "results.json").read_text())
    search = results.get("java_search", {})
    examples = [
        json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines() if line
    ]
    faults: Counter[str] = Counter()
    for example in examples:
        for kind in faults_of(example["plan"], example.get("untriggered", [])):
            faults[kind] += 1  # examples with that fault, not faults
    coverage = search.get("coverage") or {}
    actions = coverage.get("model_actions", {})
    client = search.get("client_coverage") or {}
    settings = results.get("role_settings", {})
    first = search.get("first_finding_example")
    return {
        "run": run_dir.name,
        "shape": settings.get("shape"),
        "faults": settings.get("faults"),
        "examples": search.get("examples", len(examples)),
        "search seconds": search.get("search_seconds"),
        "verdicts": search.get("verdicts"),
        "verdict": results.get("verdict"),
        "first finding": None
        if first is None
        else f"example {first} after {search.get('seconds_to_first_finding')} s: "
        + "; ".join(results.get("violations") or results.get("divergences") or [])[:300],
        "examples with an ensemble change": coverage.get("examples_with_an_ensemble_change"),
        "pending adds moved by ensemble changes": actions.get("ClientResendsPendingAddOp"),
        "examples with a fault that never triggered": search.get("untriggered_examples"),
        "examples with each fault": dict(sorted(faults.items())),
        "client coverage": {
            unit: f"lines {c['lines']['covered']}/{c['lines']['covered'] + c['lines']['missed']}, "
            f"branches {c['branches']['covered']}/"
            f"{c['branches']['covered'] + c['branches']['missed']}"
            for unit, c in {**client.get("units", {}), "total": client.get("total")}.items()
            if c
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    missing = [str(run) for run in args.runs if not (run / "results.json").is_file()]
    if missing:
        print(f"search_figures: not a run directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    for run in args.runs:
        print(json.dumps(figures(run), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
