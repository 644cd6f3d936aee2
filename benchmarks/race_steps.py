"""Races on real bookies: concurrent steps per second next to sequential steps, in one run, and
an unfaulted soak that counts false divergences.

Each example starts on a fresh ledger and takes random model steps with no message lost and no
bookie crashed (the unfaulted protocol: the model's writer and recovering client). In the
**concurrent** pass, every step where two or more requests could be processed next is a race
(two to four of them, sent together, each on its own connection; ``Execution.apply_race``,
judged by the serial orders the model allows); in the **sequential** pass the same kind of
examples take one step at a time. Printed: steps per second of each pass, their ratio, the
races run, the serial orders checked, the longest search; and every example that was not clean
(a divergence here is a false one, or a real bug: the bookies were not faulted).

    python benchmarks/race_steps.py [--bookkeeper 4.17.3 | --reference]
        [--concurrent-steps 10000] [--sequential-steps 3000] [--seed 0]

Exit code 0 when every example was clean, 1 when one was not, 2 when the target failed.
Numbers only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from adapters.installations.system import REFERENCE, choose_bookies
from conformance.engine import Execution
from conformance.races import MAX_RACE, RaceTally, raceable
from conformance.targets.base import TargetError
from conformance.targets.local_target import LocalTarget
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig

#: The writer and a recovering client on three bookies, two entries (the model's defaults).
CFG = ModelConfig(bookies=3, clients=2, write_quorum=3, ack_quorum=2, send_limit=2)
MAX_STEPS = 40


@dataclass
class Pass:
    steps: int = 0
    seconds: float = 0.0
    examples: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    races: RaceTally = field(default_factory=RaceTally)
    findings: list[str] = field(default_factory=list)

    @property
    def per_second(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0


def _example(target: LocalTarget, rng: random.Random, *, race: bool, tally: Pass) -> None:
    execution = Execution(CFG, target)
    if not execution.begin():
        raise TargetError(execution.error or "no fresh ledger")
    started = time.perf_counter()
    for _ in range(MAX_STEPS):
        enabled = [t for t in execution.enabled() if not t.label.lost]
        if not enabled:
            break
        candidates = raceable(enabled)
        if race and len(candidates) >= 2:
            members = rng.sample(candidates, rng.randint(2, min(MAX_RACE, len(candidates))))
            records = execution.apply_race(members)
            tally.steps += len(records)
        else:
            execution.apply(rng.choice(enabled))
            tally.steps += 1
        if execution.stopped:
            break
    outcome = execution.finish()
    tally.seconds += time.perf_counter() - started
    tally.examples += 1
    tally.verdicts[outcome.verdict.value] += 1
    if outcome.races is not None:
        tally.races.merge(outcome.races)
    if outcome.verdict is Verdict.UNDECIDED:
        raise TargetError(outcome.error or "undecided")
    if outcome.verdict is not Verdict.CLEAN:
        tally.findings.append("; ".join(outcome.divergences + outcome.violations))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bookkeeper", default=None, help="version (default: the default)")
    parser.add_argument(
        "--reference", action="store_true", help="the reference bookies (the test double)"
    )
    parser.add_argument("--concurrent-steps", type=int, default=10_000)
    parser.add_argument("--sequential-steps", type=int, default=3_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.reference:
        bookies = choose_bookies(REFERENCE)
    else:
        bookies = choose_bookies(bookkeeper=args.bookkeeper, progress=True)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bkconform-race-bench-") as work:
        target = LocalTarget(bookies=bookies, work_dir=Path(work))
        target.open(CFG)
        try:
            print(f"{target.system_under_test().render()}; model: {CFG.describe()}", flush=True)
            passes = {"sequential": Pass(), "concurrent": Pass()}
            while passes["sequential"].steps < args.sequential_steps:
                _example(target, rng, race=False, tally=passes["sequential"])
            while passes["concurrent"].races.concurrent_steps < args.concurrent_steps:
                _example(target, rng, race=True, tally=passes["concurrent"])
        except TargetError as exc:
            print(f"the target failed: {exc}", file=sys.stderr)
            return 2
        finally:
            target.close()
    for name, done in passes.items():
        print(
            f"{name:10} {done.examples:5} examples, {done.steps:6} steps in {done.seconds:6.1f} s: "
            f"{done.per_second:6.1f} steps/s; verdicts {dict(done.verdicts)}"
        )
    concurrent = passes["concurrent"]
    print(f"races: {concurrent.races.describe()}")
    ratio = concurrent.per_second / passes["sequential"].per_second
    print(f"concurrent / sequential steps per second: {ratio:.2f}")
    for finding in concurrent.findings + passes["sequential"].findings:
        print(f"NOT CLEAN: {finding}")
    return 1 if concurrent.findings or passes["sequential"].findings else 0


if __name__ == "__main__":
    sys.exit(main())
