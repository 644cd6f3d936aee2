"""The explorer as a portfolio of workers (conformance/search/portfolio.py)."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from conformance.search import portfolio
from conformance.search.portfolio import (
    ExplorerProgress,
    WorkerFinding,
    explore_portfolio,
    first_finding,
    worker_seed,
)
from model.bookkeeper.explore import simulate_randomly
from model.bookkeeper.interleavings import DEFECT_1
from model.bookkeeper.invariants import invariants_for, violated
from model.search.bfs import Violation
from model.search.simulation import SimulationResult

CFG = DEFECT_1.unprotected
#: A seed whose own explorer finds Defect 1 quickly (25,465 model steps).
SEED = 1


def _finding(worker: int, steps: int) -> WorkerFinding:
    return WorkerFinding(worker, steps, Violation([f"w{worker}"], []))


def test_the_finding_is_the_fewest_steps_then_the_lowest_worker() -> None:
    assert first_finding([]) is None
    found = first_finding([_finding(2, 90), _finding(1, 40), _finding(0, 40), _finding(3, 41)])
    assert found is not None and (found.worker, found.steps) == (0, 40)
    found = first_finding([_finding(3, 7), _finding(1, 8)])
    assert found is not None and found.worker == 3


def test_worker_zero_has_the_search_seed_and_the_others_their_own() -> None:
    seeds = [worker_seed(5, w) for w in range(4)]
    assert seeds[0] == 5 and len(set(seeds)) == 4
    assert worker_seed(5, 1) != worker_seed(6, 1)


def test_one_worker_is_the_explorer_as_it_was() -> None:
    rounds = 300
    alone = simulate_randomly(CFG, seed=SEED, depth=60, walks=rounds)
    asked = [0]

    def after_rounds() -> bool:  # asked once before each round (and once more at the end)
        asked[0] += 1
        return asked[0] > rounds

    portfolio_of_one = explore_portfolio(
        CFG, seed=SEED, depth=60, workers=1, should_stop=after_rounds
    )
    assert alone.violation is None and portfolio_of_one.violation is None
    assert (portfolio_of_one.walks, portfolio_of_one.steps) == (rounds, alone.steps)
    assert portfolio_of_one.archive == alone.archive


@pytest.mark.slow
def test_the_finding_is_the_workers_fewest_steps_whichever_runs_faster() -> None:
    # Each worker alone, then the portfolio twice: the portfolio's finding is the one with the
    # fewest steps, every time.
    workers = 2
    alone = [
        simulate_randomly(CFG, seed=worker_seed(SEED, w), depth=60, walks=None)
        for w in range(workers)
    ]
    steps = [r.steps for r in alone if r.violation is not None]
    best = min(range(workers), key=lambda w: (alone[w].steps, w))
    for _ in range(2):
        found = explore_portfolio(CFG, seed=SEED, depth=60, workers=workers)
        assert found.violation is not None
        assert found.violation.trace == alone[best].violation.trace  # type: ignore[union-attr]
        assert violated(CFG, found.violation.trace[-1].state, invariants_for(CFG))
        assert found.steps >= min(steps)  # every worker's steps are counted


def test_a_stop_ends_every_worker() -> None:
    started = time.monotonic()
    found = explore_portfolio(
        CFG, seed=SEED, depth=60, workers=3, should_stop=lambda: time.monotonic() > started + 0.3
    )
    assert found.violation is None and found.archive  # worker 0's archive, for the corpus
    assert time.monotonic() - started < 5.0
    assert not multiprocessing.active_children()


def test_a_worker_that_fails_fails_the_explorer(monkeypatch: pytest.MonkeyPatch) -> None:
    real = portfolio.simulate_randomly

    def failing_helpers(cfg, *, seed, **kwargs):  # type: ignore[no-untyped-def]
        if seed != SEED:
            raise MemoryError("out of memory")
        return real(cfg, seed=seed, **kwargs)

    monkeypatch.setattr(portfolio, "simulate_randomly", failing_helpers)
    with pytest.raises(RuntimeError, match="explorer worker 1 failed: MemoryError: out of memory"):
        explore_portfolio(CFG, seed=SEED, depth=60, workers=2)
    assert not multiprocessing.active_children()


def test_no_worker_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        explore_portfolio(CFG, seed=SEED, depth=60, workers=0)


def test_a_step_bound_ends_the_explorer_after_the_same_steps_each_time() -> None:
    # The protected configuration: no violation, so only the bound ends the explorers.
    cfg = DEFECT_1.protected
    runs = [explore_portfolio(cfg, seed=SEED, depth=60, workers=1, max_steps=2_000) for _ in "ab"]
    assert runs[0].violation is None and runs[0].archive
    assert runs[0].steps == runs[1].steps and runs[0].steps >= 2_000
    assert runs[0].steps < 2_000 + 60  # a round started goes to its end, no further
    both = explore_portfolio(cfg, seed=SEED, depth=60, workers=2, max_steps=2_000)
    assert 2 * 2_000 <= both.steps < 2 * (2_000 + 60)
    assert not multiprocessing.active_children()


def test_a_step_bound_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one step"):
        explore_portfolio(CFG, seed=SEED, depth=60, workers=1, max_steps=0)


# Progress (issue 48): the portfolio's counts while it runs


def test_progress_is_told_the_counts_after_every_round_of_its_own_worker() -> None:
    told: list[ExplorerProgress] = []
    found = explore_portfolio(
        DEFECT_1.protected, seed=SEED, depth=60, workers=1, max_steps=500, progress=told.append
    )
    assert len(told) >= found.walks  # once before each round
    assert all(p.workers == 1 and p.max_steps == 500 for p in told)
    assert [p.walks for p in told] == sorted(p.walks for p in told)
    assert told[0].steps == 0 and 0 < told[-1].steps <= found.steps
    assert told[-1].running == 1 and told[-1].cells > 1


def test_the_wait_for_the_other_workers_reports_their_counts_as_they_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Worker 0 is done at once; worker 1, in its own process, takes six rounds of 50 ms: the
    # search's process reports while it waits, with worker 1's counts as they grow.
    def explorer(cfg, *, seed, on_round, should_stop, **kwargs):  # type: ignore[no-untyped-def]
        if seed == SEED:
            on_round(0, 0, 1)
            return SimulationResult(1, 5, cells=1, archive=[])
        for done in range(6):
            on_round(done, 10 * done, 2)
            time.sleep(0.05)
        return SimulationResult(6, 60, cells=2, archive=[])

    monkeypatch.setattr(portfolio, "simulate_randomly", explorer)
    told: list[ExplorerProgress] = []
    found = explore_portfolio(CFG, seed=SEED, depth=60, workers=2, progress=told.append)
    assert (found.walks, found.steps) == (7, 65)
    waiting = [p for p in told if p.running == 1]
    assert len(waiting) >= 3  # a look every 50 ms for 300 ms
    assert all(p.workers == 2 for p in waiting)
    assert waiting[-1].steps > waiting[0].steps  # worker 1's steps, read as they grow
    assert waiting[-1].walks >= 1 + 4
    assert waiting[0].describe().startswith("1 of 2 workers running, ")
    assert not multiprocessing.active_children()


def test_the_explorer_counts_in_words() -> None:
    assert (
        ExplorerProgress(2, 2, 10_432, 198_233, 1_204).describe()
        == "2 workers running, 10,432 walks, 198,233 model steps, 1,204 cells"
    )
    assert (
        ExplorerProgress(4, 3, 5, 1_000, 7, max_steps=2_000).describe()
        == "3 of 4 workers running, 5 walks, 1,000 of 8,000 model steps, 7 cells"
    )
    assert ExplorerProgress(1, 0, 5, 60, 3).describe().startswith("1 worker done, 5 walks")
