"""``bkconform zab search``: fault schedules on real ZooKeeper's quorum traffic, drawn along
the spec's window (the model's paths into it, ``bkconform zab paths``, and hand-written
templates: conformance/zab/model_paths.py, schedule.py), run through the quorum proxy, judged,
and a finding shrunk to a minimal schedule (conformance/zab/guided.py).

A run directory ``<runs-dir>/<UTC time>-zab-search/`` keeps results.json (the verdict, the
versions, examples, time to the first finding, the window shapes reached) and, for a finding,
schedule.json (replay it: ``bkconform replay <run dir>`` or ``bkconform zab search --replay
<schedule.json>``) and frames.txt (the finding's quorum packets as the proxy saw them); a
replay keeps every attempt's packets (frames-<attempt>.txt).

Exit codes: 0 = every schedule ran and was clean; 1 = a finding; 2 = undecided.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from adapters.installations.system import describe_zookeeper, zookeeper_version
from adapters.process_records import reap_orphans_once
from conformance.commands.options import add_zookeeper_option, zookeeper_from_args
from conformance.rundir import new_run_dir
from conformance.verdict import Verdict, worst
from conformance.zab.guided import ScheduleOutcome, SearchOutcome, run_schedule, search
from conformance.zab.model_paths import model_schedules
from conformance.zab.schedule import ScheduleError, from_json, to_json
from model.zab.protocol.windows import WINDOW_GOALS

RUN_KIND = "zab-search"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "search",
        help="search fault schedules on the quorum traffic of real servers (the spec's window)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, default=600.0, help="budget (default 600)")
    parser.add_argument(
        "--max-examples", type=int, default=1000, help="schedules at most (default 1000)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    parser.add_argument(
        "--no-shrink", action="store_true", help="keep a finding as first found (no shrinking)"
    )
    parser.add_argument(
        "--replay",
        type=Path,
        default=None,
        help="run this schedule.json (or a search's run directory) instead of searching",
    )
    parser.add_argument(
        "--attempts", type=int, default=1, help="with --replay: how many times (default 1)"
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where runs go")
    add_zookeeper_option(parser)
    parser.set_defaults(func=zab_search_command)
    paths = commands.add_parser(
        "paths",
        help="the model's paths into the window and the schedules compiled from them",
        description="Each window goal's shortest path in the Zab model from an established "
        "ensemble (model/zab/protocol/windows.py) and the schedule compiled from it for real "
        "servers (conformance/zab/model_paths.py); the search draws these. With --goal and "
        "--json, that schedule alone as JSON, for `bkconform zab search --replay`.",
    )
    goals = sorted([*WINDOW_GOALS, *(f"{goal}+committed" for goal in WINDOW_GOALS)])
    paths.add_argument(
        "--goal",
        choices=goals,
        default=None,
        help="one goal (+committed: its path with a transaction committed first)",
    )
    paths.add_argument(
        "--json", action="store_true", help="with --goal: the schedule as JSON, nothing else"
    )
    paths.set_defaults(func=zab_paths_command)


def zab_paths_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if args.json and args.goal is None:
        print("bkconform zab paths: --json needs --goal", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    found = {model.name: model for model in model_schedules()}
    goals = (
        [args.goal]
        if args.goal
        else [f"{goal}{suffix}" for goal in WINDOW_GOALS for suffix in ("", "+committed")]
    )
    for goal in goals:
        if goal not in found:
            print(f"{goal}: no path within the search's bounds", file=out)
        elif args.json:
            print(to_json(found[goal].schedule), file=out)
        else:
            print(found[goal].describe(), file=out)
    return 0


def _results(directory: Path) -> dict[str, Any]:
    try:
        results = json.loads((directory / "results.json").read_text())
    except (OSError, ValueError):
        return {}
    return results if isinstance(results, dict) else {}


def is_search_run(directory: Path) -> bool:
    return _results(directory).get("kind") == RUN_KIND


def replay_run_dir(args: argparse.Namespace, directory: Path) -> int:
    """``bkconform replay`` of a search's run directory: its schedule once more, on the
    ZooKeeper release it ran (unless ``--zookeeper`` names another)."""
    recorded = _results(directory).get("zookeeper_version")
    args.replay, args.attempts = directory, 1
    args.zookeeper = getattr(args, "zookeeper", None) or recorded
    args.seconds, args.max_examples, args.seed = 1.0, 1, 0
    return zab_search_command(args)


def _schedule_path(source: Path) -> Path:
    return source / "schedule.json" if source.is_dir() else source


def _frames(outcome: ScheduleOutcome) -> str:
    return "\n".join(record.describe() for record in outcome.records) + "\n"


def _outcome_json(outcome: ScheduleOutcome) -> dict[str, Any]:
    return {
        "verdict": str(outcome.verdict),
        "findings": outcome.findings,
        "shortfalls": outcome.shortfalls,
        "acknowledged": outcome.acknowledged,
        "unknown": outcome.unknown,
        "window_shapes": sorted(outcome.shapes),
        "quorum_trace": outcome.trace.summary() if outcome.trace else None,
        "seconds": round(outcome.seconds, 1),
        "steps": [step.describe() for step in outcome.schedule],
        # The crashes and restarts the steps injected, as the fault injector recorded them.
        "faults": [event.to_json() for event in outcome.faults],
    }


def zab_search_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        if args.seconds <= 0 or args.max_examples < 1 or args.attempts < 1:
            raise ValueError("--seconds must be positive, --max-examples and --attempts >= 1")
        replayed = None
        if args.replay is not None:
            replayed = from_json(_schedule_path(args.replay).read_text())
        install = zookeeper_from_args(args)
    except (ValueError, OSError) as exc:  # ScheduleError is a ValueError
        print(f"bkconform zab search: {exc}", file=sys.stderr)
        return Verdict.UNDECIDED.exit_code
    for reaped in reap_orphans_once():
        print(f"bkconform: a run that died left {reaped.describe()}", file=sys.stderr)
    system = describe_zookeeper(install.classpath, install.source)
    label = "zab-search" if replayed is None else "zab-replay"
    run_dir = new_run_dir(args.runs_dir.resolve(), label)
    print(f"System under test: {system}", file=out)
    print(f"Run directory: {run_dir}", file=out, flush=True)
    results: dict[str, Any] = {
        "kind": RUN_KIND,
        "zookeeper": system,
        "zookeeper_version": zookeeper_version(install.classpath),
        "seed": args.seed,
    }
    if replayed is not None:
        verdict = _replay(install, replayed, args.attempts, run_dir, results, out)
    else:
        verdict = _search(install, args, run_dir, results, out)
    results["verdict"] = str(verdict)
    (run_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(f"Verdict: {verdict} ({run_dir / 'results.json'})", file=out)
    return verdict.exit_code


def _replay(
    install: Any,
    schedule: Any,
    attempts: int,
    run_dir: Path,
    results: dict[str, Any],
    out: TextIO,
) -> Verdict:
    (run_dir / "schedule.json").write_text(to_json(schedule) + "\n")
    print("Schedule: " + "; ".join(step.describe() for step in schedule), file=out)
    verdicts = []
    rows = []
    for attempt in range(1, attempts + 1):
        outcome = run_schedule(install, schedule)
        verdicts.append(outcome.verdict)
        rows.append(_outcome_json(outcome))
        print(f"  attempt {attempt}: {outcome.describe()}", file=out, flush=True)
        # Every attempt's packets, finding or not: a replay is also how a window is shown.
        (run_dir / f"frames-{attempt}.txt").write_text(_frames(outcome))
    hits = sum(1 for v in verdicts if v.finding)
    print(f"Hit in {hits} of {attempts} attempts", file=out)
    results["attempts"] = rows
    return worst(verdicts)


def _search(
    install: Any, args: argparse.Namespace, run_dir: Path, results: dict[str, Any], out: TextIO
) -> Verdict:
    print(
        f"Search: up to {args.max_examples} schedules, {args.seconds:g} s, seed {args.seed}"
        + ("" if not args.no_shrink else ", no shrinking"),
        file=out,
        flush=True,
    )

    def progress(number: int, outcome: ScheduleOutcome) -> None:
        print(f"  [{number}] {outcome.describe()}", file=out, flush=True)

    def shrinking(number: int, outcome: ScheduleOutcome) -> None:
        still = "still fails" if outcome.verdict.finding else f"{outcome.verdict}: not taken"
        print(f"  [shrink {number}] {len(outcome.schedule)} steps: {still}", file=out, flush=True)

    found: SearchOutcome = search(
        install,
        seconds=args.seconds,
        max_examples=args.max_examples,
        seed=args.seed,
        shrink=not args.no_shrink,
        on_example=progress,
        on_shrink=shrinking,
        # A schedule's run takes many seconds: the search says what it is doing at least
        # every 10 s all the same.
        progress=lambda report: print(f"  {report.describe()}", file=out, flush=True),
    )
    shapes = dict(sorted(found.shapes.items()))
    print(
        f"Examples: {found.examples} ({found.undecided} undecided) in {found.seconds:.0f} s; "
        f"window shapes reached: {len(shapes)}",
        file=out,
    )
    for shape, count in shapes.items():
        print(f"  {shape}: {count}", file=out)
    for note in found.notes:
        print(f"Note: {note}", file=out)
    results.update(
        {
            "examples": found.examples,
            "undecided": found.undecided,
            "seconds": round(found.seconds, 1),
            "first_finding_s": found.first_finding_s,
            "window_shapes": shapes,
            "notes": found.notes,
        }
    )
    if found.finding is not None:
        finding = found.finding
        (run_dir / "schedule.json").write_text(to_json(finding.schedule) + "\n")
        (run_dir / "frames.txt").write_text(_frames(finding))
        results["finding"] = _outcome_json(finding)
        print(
            f"Finding after {found.first_finding_s:.0f} s (minimal schedule, "
            f"{len(finding.schedule)} steps):",
            file=out,
        )
        for step in finding.schedule:
            print(f"  {step.describe()}", file=out)
        for why in finding.findings[:5]:
            print(f"  -> {why}", file=out)
        print(f"Replay: bkconform replay {run_dir}", file=out)
    return found.verdict


__all__ = [
    "RUN_KIND",
    "ScheduleError",
    "is_search_run",
    "register",
    "replay_run_dir",
    "zab_search_command",
]
