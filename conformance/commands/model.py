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
    CheckedModel,
    add_search_options,
    run_model_check,
)
from conformance.commands.options import add_model_options, config_from_args
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ConfigError, ModelConfig
from model.bookkeeper.explore import explorable
from model.bookkeeper.invariants import invariants_for
from model.bookkeeper.records import State
from model.bookkeeper.render import numbered_trace, sequence_diagram

# Seen states are 64-bit fingerprints (~100 bytes each) and levels past two million states
# are spilled to disk, so the default cap is about memory for the fingerprints alone.
DEFAULT_MAX_STATES = 100_000_000

#: The BookKeeper spec, as ``model check`` runs it.
BOOKKEEPER: CheckedModel[ModelConfig, State, Label] = CheckedModel(
    command="model check",
    explorable=explorable,
    symmetry_over="",
    numbered_trace=numbered_trace,
    sequence_diagram=sequence_diagram,
)


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
        print(f"bkconform {BOOKKEEPER.command}: bad configuration: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    print(f"Model: {cfg.describe()}", file=out)
    print(
        "Invariants: " + ", ".join(inv.name for inv in invariants_for(cfg)),
        file=out,
    )
    return run_model_check(BOOKKEEPER, cfg, args, out)
