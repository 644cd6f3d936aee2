"""Time to Defect 1 from scratch: the search, with no scenario hints, on the model target (five
seeds) and on the local target (real ZooKeeper) with real BookKeeper bookies (the default
version) next to reference bookies (the test double), in one run.

Configuration: 3 bookies, WQ3/AQ2, recovery reads without the fence flag (``bkconform run
--no-recovery-read-fence``). Each search starts with an empty example database. Printed per
seed: seconds to the first NoDivergence violation, which phase found it, its length, the length
after shrinking, and the whole search's time (shrinking included); then the median and its
ratio to TLC's breadth-first time for this defect on this machine kind (2.5 to 6 minutes;
TLC's random simulation found nothing in 150 s); then, per local seed, real bookies against
reference bookies: time to the violation and target steps/s, with their ratios. Numbers only:
nothing here asserts on time.

    python benchmarks/time_to_defect.py [--seeds 0,1,2,3,4] [--budget 300] [--no-local]
        [--explorer-workers N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hypothesis.database import InMemoryExampleDatabase

from adapters.installations.system import BookieChoice, choose_bookies
from conformance.scenarios import SCENARIOS
from conformance.search.portfolio import default_workers
from conformance.search.runner import PROFILES, SearchSettings, run_search
from conformance.search.verdict import SearchReport
from conformance.targets.base import Target
from conformance.targets.local_target import LocalTarget
from conformance.targets.model_target import ModelTarget

TLC_BFS_SECONDS = (150.0, 360.0)
CFG = SCENARIOS["defect1-fencing"].config(protected=False)


def _search(target: Target, seed: int, budget: float, workers: int) -> SearchReport:
    settings = SearchSettings(
        max_examples=PROFILES["ci"].max_examples,
        max_steps=PROFILES["ci"].max_steps,
        seed=seed,
        time_budget=budget,
        explorer_workers=workers,
    )
    return run_search(CFG, target, settings, database=InMemoryExampleDatabase())


def _line(label: str, report: SearchReport) -> float | None:
    finding = report.finding
    if finding is None or "NoDivergenceBetweenClientAndMetaData" not in (
        finding.run.outcome.violations
    ):
        print(
            f"  {label}: no violation within the budget ({report.verdict}, {report.elapsed:.1f} s)"
        )
        return None
    shrunk = len(finding.run.outcome.steps)
    print(
        f"  {label}: first violation after {finding.found_after:6.1f} s (by the "
        f"{finding.found_by}, {finding.found_steps} steps), shrunk to {shrunk} steps; "
        f"search {report.elapsed:.1f} s, {report.examples} examples, "
        f"{report.steps} target steps ({report.steps_per_second:,.0f}/s), "
        f"{report.explorer_steps} explorer steps"
    )
    return finding.found_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds per search")
    parser.add_argument("--local-seeds", default="0", help="seeds for the local target")
    parser.add_argument("--no-local", action="store_true")
    parser.add_argument(
        "--explorer-workers",
        type=int,
        default=default_workers(),
        help="explorers at once (default: as bkconform run, one per core, at most 4)",
    )
    args = parser.parse_args()
    workers = args.explorer_workers
    print(f"Defect 1 from scratch: {CFG.describe()}; {workers} explorer worker(s)")

    print("Target model (in process):")
    times = []
    lengths = []
    for seed in (int(s) for s in args.seeds.split(",")):
        target = ModelTarget()
        target.open(CFG)
        report = _search(target, seed, args.budget, workers)
        found = _line(f"seed {seed}", report)
        if found is not None and report.finding is not None:
            times.append(found)
            lengths.append(len(report.finding.run.outcome.steps))
    if times:
        median = statistics.median(times)
        print(
            f"  median time to first violation: {median:.1f} s over {len(times)} seeds "
            f"(issue 32's goal: < 5 s); TLC breadth-first needs "
            f"{TLC_BFS_SECONDS[0] / median:.0f}x to {TLC_BFS_SECONDS[1] / median:.0f}x longer; "
            f"shrunk traces {min(lengths)} to {max(lengths)} steps (goal <= 20)"
        )

    if args.no_local:
        return
    print("Target local (real ZooKeeper; bookies over TCP):")
    kinds = {"real": choose_bookies(progress=True), "reference": BookieChoice.reference()}
    with tempfile.TemporaryDirectory(prefix="bkconform-bench-") as work:
        for seed in (int(s) for s in args.local_seeds.split(",")):
            measured: dict[str, tuple[float | None, float]] = {}
            for kind, bookies in kinds.items():
                local = LocalTarget(bookies=bookies, work_dir=Path(work) / f"{kind}-{seed}")
                started = time.perf_counter()
                try:
                    local.open(CFG)
                    print(
                        f"  {kind} bookies ({local.system_under_test().bookies}): cluster "
                        f"started in {time.perf_counter() - started:.1f} s"
                    )
                    report = _search(local, seed, args.budget, workers)
                    measured[kind] = (_line(f"seed {seed}", report), report.steps_per_second)
                finally:
                    local.close()
            (real_found, real_rate), (ref_found, ref_rate) = measured["real"], measured["reference"]
            summary = (
                f"{real_found:.1f} s vs {ref_found:.1f} s ({real_found / ref_found:.1f}x)"
                if real_found is not None and ref_found is not None
                else "not found on both"
            )
            rate = f"{real_rate:,.0f} vs {ref_rate:,.0f} steps/s"
            if ref_rate:
                rate += f" ({real_rate / ref_rate:.2f}x)"
            print(f"  seed {seed}, real vs reference: Defect 1 after {summary}; {rate}")


if __name__ == "__main__":
    main()
