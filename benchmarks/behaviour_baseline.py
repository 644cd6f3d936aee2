"""Behaviour before and after a refactoring: the outcome of a fixed set of runs, recorded once
on each side and printed side by side.

An outcome is what a user sees of a run: its verdict, the invariants it broke, its divergences
and the length of its shrunk example (or, for a qualification, each configuration's verdict and
finding count). Wall times are not compared. The set of runs:

- ``bkconform run --target model`` seeds 0-9 (random configurations, defects allowed, so that
  some seeds find Defect 1 or 2 and some are clean);
- ``bkconform run --target local`` seeds 0-2 (the same, Hypothesis only, real bookies);
- every named scenario on ``model`` and ``local``, with its protection on and off;
- ``bkconform qualify --master none`` on the model, small.

    python benchmarks/behaviour_baseline.py record OUT.json [--skip-local] [--only PREFIX]
    python benchmarks/behaviour_baseline.py compare BEFORE.json [BEFORE2.json ...] AFTER.json

``record`` runs the CLI of the checkout it is started from (``python -m conformance`` from the
current directory). ``compare`` prints each case's outcomes and exits 1 when any differs from
every recording before the change.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SCENARIOS = {
    "defect1-fencing": "--no-recovery-read-fence",
    "defect1-java-client": "--no-recovery-read-fence",
    "defect2-invalid-fragment": "--no-recovery-fragment-fix",
    "limbo-crash": "--no-limbo",
}


def cases(skip_local: bool) -> list[tuple[str, list[str]]]:
    found: list[tuple[str, list[str]]] = []
    for seed in range(10):
        found.append(
            (
                f"run model seed {seed}",
                f"run --target model --seed {seed} --random-config --with-defects --fresh "
                "--max-examples 50 --steps 40 --seconds 60 --quiet".split(),
            )
        )
    targets = ["model"] if skip_local else ["model", "local"]
    if not skip_local:
        for seed in range(3):
            found.append(
                (
                    f"run local seed {seed}",
                    f"run --target local --seed {seed} --random-config --with-defects --fresh "
                    "--no-explore --max-examples 15 --steps 30 --seconds 600 --quiet".split(),
                )
            )
    for target in targets:
        for name, switch in SCENARIOS.items():
            for off in (False, True):
                label = f"scenario {name} {target}" + (f" {switch}" if off else "")
                argv = ["scenario", name, "--target", target, *([switch] if off else [])]
                found.append((label, argv))
    found.append(
        (
            "qualify model master none",
            [
                *("qualify", "--master", "none", "--target", "model", "--shards", "4"),
                *("--configs", "fenced-recovery,no-recovery-read-fence", "--max-examples", "20"),
                *("--steps", "40", "--seconds", "20", "--quiet"),
            ],
        )
    )
    return found


def outcome_of(run_dir: Path, rc: int, stderr: str) -> dict[str, Any]:
    """The outcome of the newest run directory under ``run_dir``."""
    results = sorted(run_dir.rglob("results.json"), key=lambda p: p.stat().st_mtime)
    if not results:
        return {"exit_code": rc, "verdict": None, "error": stderr.strip().splitlines()[-1:]}
    data = json.loads(results[-1].read_text())
    found: dict[str, Any] = {"exit_code": rc, "verdict": data.get("verdict")}
    if "configurations" in data:  # a qualification
        found["configurations"] = data["configurations"]
        found["findings"] = data.get("findings")
        return found
    found["violations"] = sorted(data.get("violations") or [])
    found["divergences"] = len(data.get("divergences") or [])
    found["steps"] = data.get("steps")
    return found


def record(out: Path, skip_local: bool, only: str | None) -> int:
    recorded: dict[str, Any] = {}
    for label, argv in cases(skip_local):
        if only and not label.startswith(only):
            continue
        with tempfile.TemporaryDirectory(prefix="bkc-baseline-") as tmp:
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "conformance", *argv, "--runs-dir", tmp],
                capture_output=True,
                text=True,
                timeout=1_800,
                check=False,
            )
            recorded[label] = outcome_of(Path(tmp), done.returncode, done.stderr)
            print(
                f"{label}: {json.dumps(recorded[label])} ({time.monotonic() - started:.0f} s)",
                flush=True,
            )
        out.write_text(json.dumps(recorded, indent=1, sort_keys=True))
    return 0


def compare(before_paths: list[Path], after_path: Path) -> int:
    """Each case's outcome after the change against its outcomes before it. A search's shrunk
    length can differ between two runs of the same code (the explorer's phase is bounded by
    time, and the trace it hands over can differ), so the code before the change may be
    recorded more than once: a case is the same when it matches any recording before."""
    befores = [json.loads(p.read_text()) for p in before_paths]
    after = json.loads(after_path.read_text())
    labels = sorted(set(after).union(*befores))
    width = max(len(k) for k in labels)
    differ = 0
    for label in labels:
        seen = [b[label] for b in befores if label in b]
        now = after.get(label)
        same = now in seen
        differ += not same
        print(f"{label:<{width}}  {'same' if same else 'DIFFERS'}")
        for i, b in enumerate(seen, 1):
            name = f"before{i}" if len(seen) > 1 else "before"
            print(f"{'':<{width}}    {name} {json.dumps(b, sort_keys=True)}")
        print(f"{'':<{width}}    after  {json.dumps(now, sort_keys=True)}")
    print(f"{len(labels)} cases, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--skip-local", action="store_true")
    rec.add_argument("--only", help="only the cases whose label starts with this")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path, nargs="+", help="one or more recordings before")
    cmp_.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        return record(args.out, args.skip_local, args.only)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
