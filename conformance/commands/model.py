"""``bkconform model check``: explore the executable BookKeeper spec, exhaustively or randomly.

The default constants are the configuration whose TLC figures the model reproduces
(Bookies=2, Clients=2, WQ=2, AQ=1, SendLimit=1, InflightLimit=1: 285,773 distinct states,
depth 28).

Exit codes: 0 = explored completely (or every walk ran) and no invariant was violated;
1 = an invariant was violated (the trace is printed); 2 = could not decide (a state or time
limit stopped an exhaustive search first).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from conformance.commands.model_check import (
    EXIT_UNDECIDED,
    add_search_options,
    run_exhaustive,
    run_simulation,
    search_mode,
    simulation_refused,
)
from conformance.commands.options import add_model_options, config_from_args
from conformance.parallel_bfs import ParallelBreadthFirst
from conformance.spill import spilling
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.explore import check_exhaustively, simulate_randomly
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.records import State
from model.bookkeeper.render import numbered_trace, sequence_diagram
from model.search.bfs import Violation

# Seen states are 64-bit fingerprints (~100 bytes each) and levels past two million states
# are spilled to disk, so the default cap is about memory for the fingerprints alone.
DEFAULT_MAX_STATES = 100_000_000


def register(subparsers: Any) -> None:
    model = subparsers.add_parser("model", help="the executable BookKeeper protocol model")
    commands = model.add_subparsers(dest="model_command", metavar="{check}", required=True)
    check = commands.add_parser(
        "check",
        help="model-check the spec: breadth-first like TLC, or random simulation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_model_options(check, bookies=2, clients=2, wq=2, aq=1)
    add_search_options(
        check,
        symmetry_help="symmetry reduction over bookies and clients",
        max_states=DEFAULT_MAX_STATES,
        max_states_help=f"stop an exhaustive search after N distinct states, exit 2 (default "
        f"{DEFAULT_MAX_STATES:,}, about 10 GiB of fingerprints; 0 = no limit)",
        strategy_default="archive",
        strategy_help="simulation strategy: archive (restart short swarm walks from an archive "
        "of coarse states; default), swarm (whole swarm walks), uniform (TLC's simulation)",
        seconds_default=None,
        seconds_help="time budget (simulation default: 300 s; exhaustive: none)",
    )
    check.set_defaults(func=run_check)


def run_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    try:
        cfg = config_from_args(args)
    except ConfigError as exc:
        print(f"bkconform model check: bad configuration: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    print(f"Model: {cfg.describe()}", file=out)
    print(
        "Invariants: " + ", ".join(inv.name for inv in invariants_for(cfg)),
        file=out,
    )
    if simulation_refused(args, "model check"):
        return EXIT_UNDECIDED
    if args.simulate:
        return _simulate(cfg, args, out)
    return _exhaustive(cfg, args, out)


def _exhaustive(cfg: ModelConfig, args: argparse.Namespace, out: TextIO) -> int:
    return run_exhaustive(
        lambda progress: check_exhaustively(
            cfg,
            symmetry=args.symmetry,
            max_states=args.max_states or None,
            progress=progress,
            new_level=spilling(workers=args.workers),
            search=ParallelBreadthFirst(args.workers),
        ),
        mode=search_mode("" if args.symmetry else None, args.workers),
        quiet=args.quiet,
        out=out,
        print_violation=lambda violation: _print_violation(cfg, violation, out),
    )


def _simulate(cfg: ModelConfig, args: argparse.Namespace, out: TextIO) -> int:
    return run_simulation(
        lambda should_stop: simulate_randomly(
            cfg,
            seed=args.seed,
            depth=args.depth,
            walks=args.walks,
            strategy=args.strategy,
            should_stop=should_stop,
        ),
        strategy=args.strategy,
        seed=args.seed,
        depth=args.depth,
        walks=args.walks,
        seconds=args.seconds if args.seconds is not None else 300.0,
        out=out,
        print_violation=lambda violation: _print_violation(cfg, violation, out),
    )


def _print_violation(cfg: ModelConfig, violation: Violation[State, Label], out: TextIO) -> None:
    names = ", ".join(violation.invariants)
    steps = len(violation.trace) - 1
    print(f"\nInvariant violated: {names}", file=out)
    print(f"Trace ({steps} steps, {len(violation.trace)} states):", file=out)
    print(numbered_trace(cfg, violation.trace), file=out)
    print("\nSequence diagram (paste into https://sequencediagram.org/):\n", file=out)
    print(
        sequence_diagram(
            cfg,
            violation.trace,
            title=f"{names} ({cfg.describe()})",
            final_note=f"VIOLATED: {names}",
        ),
        file=out,
    )
