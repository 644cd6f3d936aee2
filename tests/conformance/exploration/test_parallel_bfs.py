"""The breadth-first search on worker processes: the single-process result, and a clear error
with every worker stopped when one fails or dies."""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal

import pytest

from conformance.exploration.parallel_bfs import ParallelBreadthFirst, ParallelSearchError
from conformance.exploration.spill import spilling
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.search.bfs import breadth_first
from model.search.collector import NEVER
from model.zab.protocol.config import ZabConfig
from model.zab.protocol.explore import check_exhaustively as check_zab

SECOND = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)


def ring(s: int) -> list[tuple[str, int]]:
    return [(f"{s}+1", (s + 1) % 500), (f"{s}*7", (s * 7) % 500)]


@pytest.fixture(autouse=True)
def no_worker_left() -> object:
    yield
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("workers", [1, 2])
def test_the_fidelity_configuration_with_one_and_two_workers(workers: int) -> None:
    result = check_exhaustively(SECOND, search=ParallelBreadthFirst(workers))
    assert result.complete and result.violation is None
    assert (result.distinct_states, result.depth) == (21_147, 19)


def test_zab_with_symmetry_on_two_workers() -> None:
    result = check_zab(
        ZabConfig(max_timeout_failures=0), symmetry=True, search=ParallelBreadthFirst(2)
    )
    assert result.complete and (result.distinct_states, result.depth) == (3_656, 32)


def test_defect_1_trace_is_the_single_process_one() -> None:
    cfg = ModelConfig(
        bookies=2, clients=2, write_quorum=2, ack_quorum=2, recovery_reads_fence=False
    )
    plain = check_exhaustively(cfg)
    parallel = check_exhaustively(cfg, search=ParallelBreadthFirst(2))
    assert plain.violation is not None and parallel.violation is not None
    assert [s.state for s in parallel.violation.trace] == [s.state for s in plain.violation.trace]


def test_a_failing_worker_ends_the_search_with_its_traceback() -> None:
    def successors(s: int) -> list[tuple[str, int]]:
        if s == 77:
            raise RuntimeError("the spec broke at 77")
        return ring(s)

    with pytest.raises(ParallelSearchError, match="the spec broke at 77"):
        ParallelBreadthFirst(2)(0, successors, lambda s: [])


def test_a_worker_that_dies_ends_the_search() -> None:
    parent = os.getpid()

    def successors(s: int) -> list[tuple[str, int]]:
        if s == 77 and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return ring(s)

    with pytest.raises(ParallelSearchError, match="died"):
        ParallelBreadthFirst(2)(0, successors, lambda s: [])


def test_same_counts_as_the_plain_search_on_a_small_graph() -> None:
    plain = breadth_first(0, ring, lambda s: [])
    parallel = ParallelBreadthFirst(3)(0, ring, lambda s: [])
    assert (parallel.distinct_states, parallel.depth) == (plain.distinct_states, plain.depth)


def test_rounds_of_a_few_parents_give_the_same_counts_and_report_within_levels() -> None:
    plain = breadth_first(0, ring, lambda s: [])
    reports: list[int] = []
    parallel = ParallelBreadthFirst(2, round_parents=7)(
        0, ring, lambda s: [], progress=lambda p: reports.append(p.distinct_states)
    )
    assert (parallel.distinct_states, parallel.depth) == (plain.distinct_states, plain.depth)
    assert len(reports) > plain.depth  # several reports in some levels
    assert reports == sorted(reports) and reports[-1] == plain.distinct_states


def test_workers_expand_without_full_collections() -> None:
    def successors(s: int) -> list[tuple[str, int]]:
        if gc.get_threshold()[2] != NEVER:
            raise AssertionError(f"a worker runs with the collector at {gc.get_threshold()}")
        return ring(s)

    result = ParallelBreadthFirst(2)(0, successors, lambda s: [])
    assert result.complete


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ParallelBreadthFirst(0)
    with pytest.raises(ValueError, match="round_parents"):
        ParallelBreadthFirst(2, round_parents=0)


@pytest.mark.slow
def test_the_first_fidelity_configuration_on_two_workers() -> None:
    """285,773 states, depth 28: TLC's figures, whatever the number of workers (about 10 s)."""
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
    result = check_exhaustively(cfg, search=ParallelBreadthFirst(2))
    assert result.complete and (result.distinct_states, result.depth) == (285_773, 28)


def test_levels_spilled_to_disk_give_the_same_counts() -> None:
    # A tiny spill limit sends the level, the candidates met and moved states through the
    # pickled files.
    result = check_exhaustively(
        SECOND, search=ParallelBreadthFirst(2), new_level=spilling(100, workers=2)
    )
    assert result.complete and (result.distinct_states, result.depth) == (21_147, 19)
