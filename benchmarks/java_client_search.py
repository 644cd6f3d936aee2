"""Time to Defect 1 with the REAL Java client, by search from scratch, and the same budget on
a fixed release, in one run.

For each seed: ``bkconform run --client java --bookkeeper OLD`` (default 4.11.1, whose recovery
reads carry no fence flag, #2614) with an empty example database and no built-in plan: seconds
from the command's start to the first violation, the example that found it and where it came
from (the model's explorer or Hypothesis), the shrunk plan's size (frame decisions, w1's adds);
then the median. Then the same search and budget on ``--new`` (default 4.17.3): examples run
and their verdicts (the goal: nothing found). With ``--no-explore`` as well: the same on OLD
without the model's guidance, for the ratio. Numbers only: nothing here asserts on time.

    python benchmarks/java_client_search.py [--seeds 1,2,3,4,5] [--budget 300] [--old 4.11.1]
        [--new 4.17.3] [--no-explore-too]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from adapters.installations.bookkeeper import install
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.run import SearchRunOptions, SearchRunResult, search_run


def _run(home: Path, seed: int, budget: float, guidance: bool) -> SearchRunResult:
    run_dir = Path(tempfile.mkdtemp(prefix=f"bkconform-bench-java-{seed}-"))
    options = SearchRunOptions(
        home, run_dir, RecoveryRole(), seed=seed, seconds=budget, model_guidance=guidance
    )
    return search_run(options)


def _finding_line(seed: int, result: SearchRunResult) -> tuple[str, float | None]:
    stats = result.stats
    first = stats.get("seconds_to_first_finding_from_start")
    if result.finding_plan is None or first is None:
        return f"  seed {seed}: {result.verdict}, {stats.get('examples', 0)} examples", None
    plan = result.finding_plan
    origin = result.found_plan.origin if result.found_plan is not None else "?"
    return (
        f"  seed {seed}: {result.verdict} {result.outcome.violations} after {first:.1f} s "
        f"(example {stats['first_finding_example']}, {origin}); shrunk to "
        f"{len(plan.schedule.without_forwards().decisions)} frame decisions and "
        f"{len(plan.writer.adds)} adds of w1",
        float(first),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per search")
    parser.add_argument("--old", default="4.11.1")
    parser.add_argument("--new", default="4.17.3")
    parser.add_argument("--no-explore-too", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    old, new = install(args.old).home, install(args.new).home
    print(f"Defect 1 by search, real Java client {args.old}, budget {args.budget:.0f} s:")
    times = []
    for seed in seeds:
        line, first = _finding_line(seed, _run(old, seed, args.budget, True))
        print(line, flush=True)
        if first is not None:
            times.append(first)
    if times:
        print(
            f"  median time to the first violation: {statistics.median(times):.1f} s "
            f"({len(times)}/{len(seeds)} seeds; goal: under 300 s)"
        )
    print(f"The same search on {args.new}, seed {seeds[0]}:")
    result = _run(new, seeds[0], args.budget, True)
    print(
        f"  {result.verdict}: {result.stats.get('examples', 0)} examples "
        f"({result.stats.get('guided_examples', 0)} guided), {result.stats.get('verdicts')}"
    )
    if args.no_explore_too:
        print(f"Without the model's guidance, {args.old}, seed {seeds[0]}:")
        line, _ = _finding_line(seeds[0], _run(old, seeds[0], args.budget, False))
        print(line)


if __name__ == "__main__":
    main()
