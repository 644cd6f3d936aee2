"""Behaviour before and after a refactoring, offline: every recorded real Java-client run
judged, its outcome recorded once on each side and compared.

The recorded runs are the ones the tests judge (``tests/conformance/javaclient/recorded_runs``:
runs of the real 4.14.7 / 4.17.3 / 4.18.0 client under the proxies, each with its frames,
deliveries and faults). An outcome is what a user sees of a judgement: its verdict, the number
of the model's steps in the story and how often each action was taken, the divergences' count
and the invariants broken. Nothing is timed.

    python benchmarks/behaviour_recorded.py record OUT.json
    python benchmarks/behaviour_recorded.py compare BEFORE.json AFTER.json

``record`` judges with the code of the checkout it is started from (run it from that
checkout's root). ``compare`` prints the runs whose outcome differs and exits 1 when any does.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

RECORDED = Path("tests/conformance/javaclient/recorded_runs")


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each recorded run of a file with its name (the file's, and the row's where it has one)."""
    if path.name.endswith(".jsonl.gz"):
        with gzip.open(path, "rt") as lines:
            for number, line in enumerate(lines, start=1):
                row = json.loads(line)
                label = row.get("name") or row.get("source") or f"row-{number}"
                yield f"{path.name}:{label}", row
    else:
        yield path.name, json.loads(path.read_text())


def _judge(path: Path, row: dict[str, Any]) -> Any:
    """The judgement of one recorded run, by the role that made it. The imports are the
    checkout's own: this file is the same on both sides of a change."""
    from conformance.javaclient.failover_role import FailoverRole
    from conformance.javaclient.recording import record_from_json
    from conformance.javaclient.roles import role_of_plan
    from conformance.javaclient.story import judge as judge_recovery
    from conformance.javaclient.writer_plans import WriterShape
    from conformance.javaclient.writer_role import WriterRole
    from conformance.javaclient.writer_story import judge as judge_writer

    if "plan" in row and "record" in row:
        role = role_of_plan(row["plan"], row.get("role_settings") or {})
        return role.judge(role.record_from_json(row["record"]))
    if "record" in row or "shape" in row:
        record = row.get("record", row)
        if "failover" in path.name or "finding-examples" in path.name:
            return judge_writer(FailoverRole.records.from_json(record))
        return judge_writer(WriterRole(WriterShape.parse(record["shape"])).record_from_json(record))
    data = {key: value for key, value in row.items() if key != "source"}
    return judge_recovery(record_from_json(data))


def outcome(judgement: Any) -> dict[str, Any]:
    steps = judgement.outcome.steps
    return {
        "verdict": str(judgement.verdict.value),
        "steps": len(steps),
        "actions": dict(sorted(Counter(str(step.action) for step in steps).items())),
        "divergences": len(judgement.outcome.divergences),
        "violations": sorted(str(v) for v in judgement.outcome.violations),
    }


def record(out: Path) -> int:
    results: dict[str, Any] = {}
    for path in sorted(RECORDED.iterdir()):
        if not path.name.endswith((".json", ".jsonl.gz")):
            continue
        for name, row in _rows(path):
            try:
                results[name] = outcome(_judge(path, row))
            except Exception as exc:  # a run the checkout cannot judge is an outcome too
                results[name] = {"error": f"{type(exc).__name__}: {exc}"}
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    verdicts = Counter(r.get("verdict", "error") for r in results.values())
    print(f"{len(results)} recorded runs judged: {dict(sorted(verdicts.items()))} -> {out}")
    return 0


def compare(before_path: Path, after_path: Path, say: Callable[[str], None] = print) -> int:
    before = json.loads(before_path.read_text())
    after = json.loads(after_path.read_text())
    differ = 0
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            differ += 1
            say(f"DIFFERS {name}:\n  before {before.get(name)}\n  after  {after.get(name)}")
    steps = sum(int(r.get("steps", 0)) for r in after.values())
    say(f"{len(after)} runs ({steps} model steps in all), {differ} differ")
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("record").add_argument("out", type=Path)
    comparing = sub.add_parser("compare")
    comparing.add_argument("before", type=Path)
    comparing.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "record":
        return record(args.out)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
