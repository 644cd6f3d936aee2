"""What ``bkconform model check`` and ``bkconform zab model check`` print of a breadth-first
search, and the exit code they give, whichever spec is searched."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TextIO

from model.search.bfs import Progress, SearchResult, Violation

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_UNDECIDED = 2

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
