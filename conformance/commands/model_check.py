"""What ``bkconform model check`` and ``bkconform zab model check`` share: their search options,
how they run a spec's breadth-first search or random simulation (each spec one
:class:`CheckedModel` value), what they print of it, and the exit code they give, whichever spec
is searched."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TextIO, TypeVar

from conformance.exploration.parallel_bfs import ParallelBreadthFirst
from conformance.exploration.spill import spilling
from conformance.verdict import Verdict
from model.search.bfs import Progress, SearchResult, Step, Violation
from model.search.explorable import Explorable, check_exhaustively, minimise, simulate_randomly
from model.search.simulation import SimulationResult
from model.search.strategies import STRATEGIES

EXIT_OK = Verdict.CLEAN.exit_code
EXIT_VIOLATION = Verdict.VIOLATION.exit_code
EXIT_UNDECIDED = Verdict.UNDECIDED.exit_code
#: A simulation's time budget when the command names none.
DEFAULT_SIMULATION_SECONDS = 300.0


def add_search_options(
    parser: argparse.ArgumentParser,
    *,
    symmetry_help: str,
    max_states: int,
    max_states_help: str,
    strategy_default: str,
    strategy_help: str,
    seconds_default: float | None,
    seconds_help: str,
) -> Any:
    """The search options both model checks take (the exhaustive search and the simulation),
    with each spec's defaults and words; returns the group, for a spec's own options."""
    search = parser.add_argument_group("search")
    search.add_argument("--symmetry", action="store_true", help=symmetry_help)
    search.add_argument("--max-states", type=int, default=max_states, help=max_states_help)
    search.add_argument("--simulate", action="store_true", help="random walks instead of BFS")
    search.add_argument(
        "--strategy", choices=STRATEGIES, default=strategy_default, help=strategy_help
    )
    search.add_argument(
        "--depth", type=int, default=100, help="maximum trace length in states (default 100)"
    )
    search.add_argument(
        "--walks", type=int, default=None, help="number of walks (default: no limit)"
    )
    search.add_argument("--seed", type=int, default=0, help="simulation seed (default 0)")
    search.add_argument("--seconds", type=float, default=seconds_default, help=seconds_help)
    search.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="processes for the breadth-first search, each with its share of the seen set "
        "(default 1; the result does not depend on it)",
    )
    search.add_argument("--quiet", action="store_true", help="no progress lines")
    return search


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def simulation_refused(args: argparse.Namespace, command: str) -> bool:
    """A simulation runs in one process: ``--workers`` above 1 with ``--simulate`` is refused,
    with a line saying so."""
    if args.simulate and args.workers > 1:
        print(
            f"bkconform {command}: --workers is for the breadth-first search; "
            "a simulation runs in one process",
            file=sys.stderr,
        )
        return True
    return False


def search_mode(symmetry: str | None, workers: int) -> str:
    """How a breadth-first search runs, for its first line."""
    reduction = (
        f"with symmetry reduction{symmetry}" if symmetry is not None else "no symmetry reduction"
    )
    return reduction + (f", {workers} worker processes" if workers > 1 else "")


#: Runs the search, calling back with its progress.
Search = Callable[[Callable[[Progress], None]], SearchResult[Any, Any]]


def run_exhaustive(
    search: Search,
    *,
    mode: str,
    quiet: bool,
    out: TextIO,
    print_violation: Callable[[Violation[Any, Any]], None],
) -> int:
    """Run ``search`` and print its figures: 1 for a violation (printed), 2 when it stopped
    before exhausting the space (nothing found so far decides nothing), 0 when exhausted."""
    print(f"Breadth-first search ({mode}).", file=out, flush=True)
    started = time.perf_counter()

    def progress(p: Progress) -> None:
        if not quiet:
            elapsed = time.perf_counter() - started
            print(
                f"  progress: {p.distinct_states} distinct states, depth {p.depth}, "
                f"{p.queue} queued, {elapsed:.0f} s",
                file=out,
                flush=True,
            )

    result = search(progress)
    elapsed = time.perf_counter() - started
    rate = result.distinct_states / elapsed if elapsed > 0 else 0.0
    print(
        f"{result.distinct_states} distinct states found, {result.states_generated} states "
        f"generated, depth {result.depth} (the initial state is level 1).",
        file=out,
    )
    print(f"Finished in {elapsed:.1f} s: {rate:,.0f} distinct states/s.", file=out)
    if result.violation is not None:
        print_violation(result.violation)
        return EXIT_VIOLATION
    if not result.complete:
        print(f"Not exhaustive: {result.stopped_reason}. No violation found so far.", file=out)
        return EXIT_UNDECIDED
    print("No invariant is violated.", file=out)
    return EXIT_OK


def run_simulation(
    simulate: Callable[[Callable[[], bool]], SimulationResult[Any, Any]],
    *,
    strategy: str,
    seed: int,
    depth: int,
    walks: int | None,
    seconds: float,
    out: TextIO,
    print_violation: Callable[[Violation[Any, Any]], None],
    minimise: Callable[[Violation[Any, Any]], Violation[Any, Any]] | None = None,
) -> int:
    """Run ``simulate`` (given when to stop) for ``seconds`` and print its figures: 1 for a
    violation (``minimise``d first when given, then printed), 0 when the walks found none."""
    shown = "unbounded" if walks is None else str(walks)
    print(
        f"Random simulation ({strategy}): seed {seed}, depth {depth}, "
        f"walks {shown}, budget {seconds:.0f} s.",
        file=out,
        flush=True,
    )
    started = time.perf_counter()
    deadline = started + seconds
    result = simulate(lambda: time.perf_counter() > deadline)
    elapsed = time.perf_counter() - started
    cells = f", {result.cells} archived cells" if result.cells is not None else ""
    print(
        f"{result.walks} walks, {result.steps} steps in {elapsed:.1f} s "
        f"({result.steps / elapsed if elapsed > 0 else 0:,.0f} steps/s){cells}.",
        file=out,
    )
    if result.violation is None:
        print("No invariant violated in the walks run.", file=out)
        return EXIT_OK
    replay = (
        f"rerun with --seed {seed}"
        if strategy == "archive"
        else f"walk seed {result.violating_walk_seed}"
    )
    print(f"Found by walk {result.violating_walk} ({replay}).", file=out)
    violation = result.violation
    if minimise is not None:
        before = len(violation.trace) - 1
        violation = minimise(violation)
        print(f"Minimised from {before} to {len(violation.trace) - 1} steps.", file=out)
    print_violation(violation)
    return EXIT_VIOLATION


class Configuration(Protocol):
    """A spec's configuration, as the commands print it."""

    def describe(self) -> str: ...


C = TypeVar("C", bound=Configuration)
S = TypeVar("S", bound=Hashable)
L = TypeVar("L")
C_contra = TypeVar("C_contra", bound=Configuration, contravariant=True)


class SequenceDiagram(Protocol[C_contra, S, L]):
    """A spec's trace in sequencediagram.org syntax (its ``render.sequence_diagram``)."""

    def __call__(
        self,
        cfg: C_contra,
        trace: Sequence[Step[S, L]],
        *,
        title: str | None = None,
        final_note: str | None = None,
    ) -> str: ...


@dataclass(frozen=True)
class CheckedModel(Generic[C, S, L]):
    """A spec as a model-check command runs it: ``command``, the command's name in its messages
    (``"model check"``); ``explorable`` binds the spec to a configuration for the explorers;
    ``symmetry_over`` completes "with symmetry reduction" in the first line of a breadth-first
    search (``""``, ``" over servers"``); ``numbered_trace`` and ``sequence_diagram`` print a
    violating trace; ``minimise_option``: the command has ``--minimise`` (shorten a simulated
    violation before printing it)."""

    command: str
    explorable: Callable[[C], Explorable[S, L]]
    symmetry_over: str
    numbered_trace: Callable[[C, Sequence[Step[S, L]]], str]
    sequence_diagram: SequenceDiagram[C, S, L]
    minimise_option: bool = False


def run_model_check(
    model: CheckedModel[C, S, L], cfg: C, args: argparse.Namespace, out: TextIO
) -> int:
    """The search the options ask for, of ``model`` under ``cfg``: a random simulation
    (``--simulate``), or else the breadth-first search; its exit code."""
    if simulation_refused(args, model.command):
        return EXIT_UNDECIDED
    if args.simulate:
        return _simulate(model, cfg, args, out)
    return _exhaustive(model, cfg, args, out)


def _exhaustive(model: CheckedModel[C, S, L], cfg: C, args: argparse.Namespace, out: TextIO) -> int:
    return run_exhaustive(
        lambda progress: check_exhaustively(
            model.explorable(cfg),
            symmetry=args.symmetry,
            max_states=args.max_states or None,
            progress=progress,
            new_level=spilling(workers=args.workers),
            search=ParallelBreadthFirst(args.workers),
        ),
        mode=search_mode(model.symmetry_over if args.symmetry else None, args.workers),
        quiet=args.quiet,
        out=out,
        print_violation=lambda violation: print_violation(model, cfg, violation, out),
    )


def _simulate(model: CheckedModel[C, S, L], cfg: C, args: argparse.Namespace, out: TextIO) -> int:
    def shortened(found: Violation[Any, Any]) -> Violation[Any, Any]:
        return Violation(found.invariants, minimise(model.explorable(cfg), found.trace))

    return run_simulation(
        lambda should_stop: simulate_randomly(
            model.explorable(cfg),
            strategy=args.strategy,
            seed=args.seed,
            depth=args.depth,
            walks=args.walks,
            should_stop=should_stop,
        ),
        strategy=args.strategy,
        seed=args.seed,
        depth=args.depth,
        walks=args.walks,
        seconds=args.seconds if args.seconds is not None else DEFAULT_SIMULATION_SECONDS,
        out=out,
        print_violation=lambda violation: print_violation(model, cfg, violation, out),
        minimise=shortened if model.minimise_option and args.minimise else None,
    )


def print_violation(
    model: CheckedModel[C, S, L], cfg: C, violation: Violation[S, L], out: TextIO
) -> None:
    """The violated invariants, the numbered trace and its sequence diagram."""
    names = ", ".join(violation.invariants)
    steps = len(violation.trace) - 1
    print(f"\nInvariant violated: {names}", file=out)
    print(f"Trace ({steps} steps, {len(violation.trace)} states):", file=out)
    print(model.numbered_trace(cfg, violation.trace), file=out)
    print("\nSequence diagram (paste into https://sequencediagram.org/):\n", file=out)
    print(
        model.sequence_diagram(
            cfg,
            violation.trace,
            title=f"{names} ({cfg.describe()})",
            final_note=f"VIOLATED: {names}",
        ),
        file=out,
    )
