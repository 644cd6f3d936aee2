"""Keep rolling upgrade and downgrade runs as fixtures, for the judge's fast tests.

Reads the run directories ``bkconform scenario rolling-upgrade-java-client --target local``
(and ``rolling-downgrade-java-client``) wrote, and writes one JSON line per run in the format of
``tools/record_fault_runs.py`` (the name, the bookies' first release, the plan, the role's
settings, the faults as carried out, the record) to ``--out``, gzipped when the name ends in
``.gz``; ``tests/conformance/javaclient/test_upgrades.py`` judges them offline:

    .venv/bin/python tools/record_rolling_runs.py runs/*-rolling-upgrade-java-client \\
        runs/*-rolling-downgrade-java-client \\
        --out tests/conformance/javaclient/recorded_runs/rolling-upgrade-runs.jsonl.gz

Exit 0 when every directory held a judged run; 2 otherwise (the others are still written).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path
from typing import Any


def row_of(run_dir: Path) -> dict[str, Any]:
    """One fixture row from a rolling scenario's run directory (KeyError, OSError: not one)."""
    results = json.loads((run_dir / "results.json").read_text())
    record = json.loads((run_dir / "record.json").read_text())
    return {
        "name": results["name"],
        "bookkeeper": results["target"]["bookkeeper"],
        "client_bookkeeper": results["target"].get("client_bookkeeper"),
        "verdict": results["verdict"],
        "plan": results["finding_plan"],
        "role_settings": results["role_settings"],
        "faults": results.get("faults", []),
        "rolling": results.get("rolling"),
        "record": record,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="rolling scenario run directories")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    rows, failed = [], 0
    for run_dir in args.runs:
        try:
            rows.append(row_of(run_dir))
        except (KeyError, OSError, ValueError) as exc:
            print(f"{run_dir}: not a judged rolling run ({exc!r})", file=sys.stderr)
            failed += 1
    text = "".join(json.dumps(row) + "\n" for row in rows)
    if args.out.suffix == ".gz":
        with gzip.open(args.out, "wt") as sink:
            sink.write(text)
    else:
        args.out.write_text(text)
    print(f"{len(rows)} runs written to {args.out}")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
