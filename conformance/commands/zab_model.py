"""``bkconform zab model check``: explore the executable Zab protocol spec (``Zab.tla`` of
apache/zookeeper's protocol-spec), exhaustively like TLC's model checking or by random
simulation like its simulation mode.

The bounds are the spec's ``Parameters``; ``--naive N`` switches on the naive reading of the
paper behind seed 003's Issue N (1: PROPOSE to ackldRecv; 2: a redundant PROPOSE is illegal;
3: COMMIT-LD carries ACK-LD's zxid). Without --naive the model is the published, fixed spec.

Exit codes: 0 = explored completely (or every walk ran) and no invariant was violated;
1 = an invariant was violated (the trace and a sequence diagram are printed); 2 = could not
decide (bad configuration, or a state limit stopped an exhaustive search first).
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
from model.zab.protocol.actions import Label
from model.zab.protocol.config import NAIVE_READINGS, ConfigError, ZabConfig
from model.zab.protocol.explore import explorable
from model.zab.protocol.invariants import invariants_for
from model.zab.protocol.records import State
from model.zab.protocol.render import numbered_trace, sequence_diagram

DEFAULT_MAX_STATES = 100_000_000

#: The Zab spec, as ``zab model check`` runs it (with ``--minimise``).
ZAB: CheckedModel[ZabConfig, State, Label] = CheckedModel(
    command="zab model check",
    explorable=explorable,
    symmetry_over=" over servers",
    numbered_trace=numbered_trace,
    sequence_diagram=sequence_diagram,
    minimise_option=True,
)


def _bound(text: str) -> int | None:
    """A ``Parameters`` bound: a number, or ``none`` (absent: unbounded)."""
    if text.strip().lower() in ("none", "unbounded"):
        return None
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 or none, got {value}")
    return value


def register(commands: Any) -> None:
    """Add ``model check`` to the ``bkconform zab`` subcommands."""
    model = commands.add_parser("model", help="the executable Zab protocol model (Zab.tla)")
    sub = model.add_subparsers(dest="zab_model_command", metavar="{check}", required=True)
    check = sub.add_parser(
        "check",
        help="model-check the Zab spec: breadth-first like TLC, or random simulation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    spec = check.add_argument_group("constants (the spec's Server and Parameters)")
    spec.add_argument("--servers", type=int, default=3, help="|Server| (default 3)")
    spec.add_argument(
        "--max-transactions", type=_bound, default=2, help="MaxTransactionNum (default 2)"
    )
    spec.add_argument(
        "--max-epoch",
        type=int,
        default=2,
        help="MaxEpoch (default 2, at most 10; MaxEpoch 3 is more than 2 million states)",
    )
    spec.add_argument(
        "--max-timeouts",
        type=_bound,
        default=1,
        help="MaxTimeoutFailures (default 1; 0 disables Timeout and Restart; none = unbounded)",
    )
    spec.add_argument(
        "--max-restarts", type=_bound, default=1, help="MaxRestarts (default 1; none = unbounded)"
    )
    spec.add_argument(
        "--naive",
        type=int,
        nargs="+",
        action="extend",
        choices=sorted(NAIVE_READINGS),
        default=[],
        metavar="N",
        help="switch on seed 003's naive reading N (repeatable): "
        + "; ".join(f"{n}: {text}" for n, text in NAIVE_READINGS.items()),
    )
    spec.add_argument(
        "--no-pc",
        action="store_true",
        help="leave recorder.pc (the last action) out of the state: fewer states than TLC counts",
    )
    search = add_search_options(
        check,
        symmetry_help="symmetry reduction over servers",
        max_states=DEFAULT_MAX_STATES,
        max_states_help=f"stop an exhaustive search after N distinct states, exit 2 "
        f"(default {DEFAULT_MAX_STATES:,}; 0 = no limit)",
        strategy_default="uniform",
        strategy_help="simulation strategy: uniform (TLC's simulation; default), swarm (each "
        "walk switches off some actions), archive (short walks from an archive of coarse "
        "states)",
        seconds_default=300.0,
        seconds_help="simulation time budget (default 300 s)",
    )
    search.add_argument(
        "--minimise",
        action="store_true",
        help="shorten a simulated violation by causal deletion before printing it",
    )
    check.set_defaults(func=run_check)


def config_from_args(args: argparse.Namespace) -> ZabConfig:
    return ZabConfig(
        servers=args.servers,
        max_timeout_failures=args.max_timeouts,
        max_transaction_num=args.max_transactions,
        max_epoch=args.max_epoch,
        max_restarts=args.max_restarts,
        record_pc=not args.no_pc,
    ).with_naive(set(args.naive))


def run_check(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out
    try:
        cfg = config_from_args(args)
    except ConfigError as exc:
        print(f"bkconform {ZAB.command}: bad configuration: {exc}", file=sys.stderr)
        return EXIT_UNDECIDED
    print(f"Model: {cfg.describe()}", file=out)
    for number in sorted(cfg.naive):
        print(f"Naive reading {number}: {NAIVE_READINGS[number]}", file=out)
    print("Invariants: " + ", ".join(inv.name for inv in invariants_for(cfg)), file=out)
    return run_model_check(ZAB, cfg, args, out)
