"""Replay the search corpus on real BookKeeper bookies and on the reference bookie (the test
double of ``adapters/refbookie``) and compare every answer, step by step.

For each configuration (``conformance.distributed.plan.CONFIGURATIONS``) a corpus of choice
sequences is built deterministically from ``--seed``, with no cluster:

* **hypothesis**: the search's Hypothesis phase run on the in-process model target
  (``run_search`` with ``explore=False``), every example it ran; the most dangerous are kept
  (crashes first, then the danger score, then the number of bookie answers);
* **explorer**: the traces that first reached each corner of the model explorer's archive
  (``simulate_randomly(strategy="archive")``, a fixed number of rounds), encoded as choices
  as the search's corpus phase does; the explorer's violating trace when it finds one;
* **database** (``--database DIR``): failures kept in a Hypothesis example database
  (``runs/hypothesis-examples`` of ``bkconform run``) under this configuration's keys.

Every sequence is replayed with ``replay_choices`` on one ``LocalTarget`` with real bookies
(BookKeeper, ``choose_bookies()``) and then on one with reference bookies; each target is
opened once per configuration and closed in a ``finally``. The ``observed`` answer of every
step is compared (the whole dict, the wire status included); a step where one side raised,
and a run that stopped before the other, count as differences; so does the end of the run
(the verdict and the final-state differences from the model) when both ran every step.

Run (about 10-15 minutes for the default corpus on a 2-core machine):

    .venv/bin/python tools/compare_bookies.py --out runs/compare-bookies/report.md
    .venv/bin/python tools/compare_bookies.py --configs limbo-crash no-limbo --per-config 5 \\
        --budget 300 --out /tmp/cmp.md
    .venv/bin/python tools/compare_bookies.py --corpus-only --out /tmp/corpus.md   # no cluster

Writes the Markdown report to ``--out`` and the same data as JSON next to it (``.json``).
Exit code 0 when no difference was found, 1 when some were, 2 when nothing could be compared.
Every process started is stopped on every way out (a ``finally`` per target; SIGTERM and
SIGINT unwind through it; the cluster's own supervision stops children at exit); the total
time is bounded by ``--budget`` (a soft deadline between sequences, and an alarm after it).

This script parses the arguments; the comparison is ``conformance/bookie_comparison/``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the project's packages come from the tree
    sys.path.insert(0, str(ROOT))

from conformance.bookie_comparison.run import (  # noqa: E402
    DEFAULT_CONFIGS,
    RESERVE,
    ComparisonSettings,
    run_comparison,
)
from conformance.distributed.plan import CONFIGURATIONS  # noqa: E402


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the Markdown report (.md)")
    parser.add_argument(
        "--configs", nargs="+", default=list(DEFAULT_CONFIGS), help="configuration names"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-config", type=int, default=15, help="sequences per configuration")
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument(
        "--hypothesis-examples", type=int, default=200, help="examples of the model search"
    )
    parser.add_argument("--explorer-rounds", type=int, default=300)
    parser.add_argument(
        "--database", type=Path, default=None, help="a Hypothesis example database to add"
    )
    parser.add_argument("--budget", type=float, default=900.0, help="total seconds")
    parser.add_argument("--work-dir", type=Path, default=None, help="cluster dirs (kept)")
    parser.add_argument("--corpus-only", action="store_true", help="build the corpus, no cluster")
    args = parser.parse_args(argv)

    unknown = [c for c in args.configs if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configuration(s) {unknown}; known: {', '.join(CONFIGURATIONS)}")
    if args.budget <= RESERVE:
        parser.error(f"--budget must be more than {RESERVE:g} s")
    settings = ComparisonSettings(
        out=args.out,
        configs=args.configs,
        seed=args.seed,
        per_config=args.per_config,
        max_steps=args.max_steps,
        hypothesis_examples=args.hypothesis_examples,
        explorer_rounds=args.explorer_rounds,
        database=args.database,
        budget=args.budget,
        work_dir=args.work_dir,
        corpus_only=args.corpus_only,
    )
    command = " ".join(["tools/compare_bookies.py", *(argv or sys.argv[1:])])
    return run_comparison(settings, command)


if __name__ == "__main__":
    sys.exit(main())
