"""Precision: how often the judges cry wolf on targets known to be correct (issue 46).

On each correct target, N seeds x a budget, one search each; printed: the verdicts, the
divergences (every one here is a false alarm, or a real bug of the target: say which), and the
undecided runs (a run that decides nothing is not an alarm, but it is not a check either).

- ``reference``: the reference bookies (the test double, correct mode) as processes, with real
  ZooKeeper, the Python client, races on (the race judge's state set);
- ``model``: the model target (the spec's own bookies: a divergence is the engine's bug);
- ``real``: real BookKeeper (``--bookkeeper``, default the suite's default) with the Python
  client, races on;
- ``java``: the real Java client's searches (``--java-roles``), divergences per 100 examples
  per role, by class (``conformance/javaclient/divergences.py``): classes with no write-up are
  the open ones.

The Python-client targets run the configuration of the races test (a writer and a recovering
client on three bookies, two entries, the bookie's LAC its highest entry's), or with
``--limbo`` seed 001's limbo configuration with the bookies' own recovery (crashes; not on the
model target's races).

    python benchmarks/false_alarms.py [--targets reference,model,real,java] [--seeds 1,2,3]
        [--budget 40] [--bookkeeper 4.17.3] [--java-roles recovery,writer,both]
        [--java-seconds 300] [--limbo]

Exit code 0 when no run diverged or broke an invariant, 1 when one did, 2 when a target could
not be run. Numbers only: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from adapters.installations.bookkeeper import install
from adapters.installations.system import REFERENCE, choose_bookies
from conformance.distributed.plan import as_real_bookies_run
from conformance.javaclient.divergences import count_classes
from conformance.javaclient.roles import ROLE_NAMES, role_named
from conformance.javaclient.run import SearchRunOptions, search_run
from conformance.races import TWO_CLIENTS_TWO_ENTRIES
from conformance.rundir import read_history
from conformance.search.runner import SearchReport, SearchSettings, run_search
from conformance.targets.base import Target, TargetError
from conformance.targets.local_target import LocalTarget
from conformance.targets.model_target import ModelTarget
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.interleavings import SEED_001

RACES = TWO_CLIENTS_TWO_ENTRIES
LIMBO = as_real_bookies_run(SEED_001.protected)


@dataclass
class Tally:
    """One target's runs."""

    verdicts: Counter[str] = field(default_factory=Counter)
    examples: int = 0
    steps: int = 0
    races: int = 0
    most_states: int = 1
    bookies_own: int = 0
    classes: Counter[str] = field(default_factory=Counter)
    alarms: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)

    def add(self, seed: int, report: SearchReport) -> None:
        self.verdicts[report.verdict.value] += 1
        self.examples += report.examples
        self.steps += report.steps
        if report.races is not None:
            self.races += report.races.races
            self.most_states = max(self.most_states, report.races.most_states)
        if report.bookies_own is not None:
            self.bookies_own += report.bookies_own.examples
        if report.verdict is Verdict.UNDECIDED:
            self.undecided.append(f"seed {seed}: {report.error}")
        elif report.finding is not None:
            outcome = report.finding.run.outcome
            self.classes.update(count_classes(outcome.divergences))
            self.alarms.append(
                f"seed {seed}: " + "; ".join(outcome.violations + outcome.divergences)
            )

    def line(self, name: str) -> str:
        alarms = sum(n for v, n in self.verdicts.items() if v in ("divergence", "violation"))
        return (
            f"{name:10} runs {sum(self.verdicts.values()):3}  alarms {alarms:3}  undecided "
            f"{self.verdicts['undecided']:3}  examples {self.examples:7}  steps {self.steps:8}  "
            f"races {self.races:6}  most states kept {self.most_states}  runs where the "
            f"bookies acted on their own {self.bookies_own}"
        )


def _python_client(
    name: str, make: Callable[[], Target], cfg: ModelConfig, seeds: list[int], budget: float
) -> Tally:
    tally = Tally()
    target = make()
    target.open(cfg)
    try:
        for seed in seeds:
            races = name != "model" or not cfg.max_crashes
            settings = SearchSettings(
                max_examples=50, max_steps=30, seed=seed, time_budget=budget, races=races
            )
            report = run_search(cfg, target, settings)
            tally.add(seed, report)
            print(f"  {name} seed {seed}: {report.verdict.value}", flush=True)
    finally:
        target.close()
    return tally


def _java(version: str, roles: list[str], seeds: list[int], seconds: float) -> None:
    home = install(version, progress=True).home
    for role_name in roles:
        examples = divergent = 0
        classes: Counter[str] = Counter()
        for seed in seeds:
            run_dir = Path(tempfile.mkdtemp(prefix=f"bkconform-false-alarms-{role_name}-{seed}-"))
            result = search_run(
                SearchRunOptions(home, run_dir, role_named(role_name), seed=seed, seconds=seconds)
            )
            by_example: dict[object, list[str]] = {}
            for line in read_history(run_dir):
                if not isinstance(line.get("example"), int):
                    continue  # the finding's replay (example "finding") repeats an example
                by_example.setdefault(line.get("example"), []).extend(line.get("divergence", []))
            examples += int(result.stats.get("examples", 0))
            for texts in by_example.values():
                if texts:
                    divergent += 1
                    classes.update(count_classes(texts))
            print(f"  java {role_name} seed {seed}: {result.verdict.value}", flush=True)
        per_100 = 100 * divergent / examples if examples else 0.0
        print(
            f"java {role_name:9} {examples:6} examples, {divergent} with a divergence "
            f"({per_100:.1f} per 100); by class: {dict(classes)}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="reference,model,real")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--budget", type=float, default=40.0, help="seconds per search")
    parser.add_argument("--bookkeeper", default=None, help="real bookies' version")
    parser.add_argument("--java-roles", default=",".join(ROLE_NAMES))
    parser.add_argument("--java-seconds", type=float, default=300.0)
    parser.add_argument("--limbo", action="store_true", help="seed 001's limbo configuration")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    targets = [t for t in args.targets.split(",") if t]
    unknown = set(targets) - {"reference", "model", "real", "java"}
    if unknown:
        print(f"unknown targets: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    cfg = LIMBO if args.limbo else RACES
    print(f"model: {cfg.describe()}; seeds {seeds}, {args.budget:g} s each", flush=True)
    makers: dict[str, Callable[[], Target]] = {
        "reference": lambda: LocalTarget(
            bookies=choose_bookies(REFERENCE), work_dir=Path(tempfile.mkdtemp())
        ),
        "model": ModelTarget,
        "real": lambda: LocalTarget(
            bookies=choose_bookies(bookkeeper=args.bookkeeper, progress=True),
            work_dir=Path(tempfile.mkdtemp()),
        ),
    }
    tallies: dict[str, Tally] = {}
    try:
        for name in targets:
            if name != "java":
                tallies[name] = _python_client(name, makers[name], cfg, seeds, args.budget)
        if "java" in targets:
            roles = [r for r in args.java_roles.split(",") if r]
            _java(args.bookkeeper or "4.17.3", roles, seeds, args.java_seconds)
    except TargetError as exc:
        print(f"a target failed: {exc}", file=sys.stderr)
        return 2
    for name, tally in tallies.items():
        print(tally.line(name))
        if tally.classes:
            print(f"  by class: {dict(tally.classes)}")
        for alarm in tally.alarms:
            print(f"  ALARM {alarm}")
        for undecided in tally.undecided:
            print(f"  UNDECIDED {undecided}")
    return 1 if any(t.alarms for t in tallies.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
