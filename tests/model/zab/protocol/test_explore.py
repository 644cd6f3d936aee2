"""Simulation, archive-guided search, replay and minimisation bound to the Zab model."""

from __future__ import annotations

import pytest

from model.zab.protocol.config import ZabConfig
from model.zab.protocol.explore import (
    check_exhaustively,
    event_of,
    minimise,
    progress_cell,
    replay,
    simulate_randomly,
)
from model.zab.protocol.invariants import violated
from model.zab.protocol.render import describe_step, numbered_trace, sequence_diagram

MUST_SHOW = ZabConfig()
NO_TIMEOUT = ZabConfig(max_timeout_failures=0)


@pytest.mark.parametrize("issue", [1, 2, 3])
@pytest.mark.parametrize("strategy", ["uniform", "swarm"])
def test_simulation_finds_each_issue_from_scratch(issue: int, strategy: str) -> None:
    cfg = MUST_SHOW.with_naive({issue})
    for seed in range(5):
        result = simulate_randomly(cfg, seed=seed, depth=100, walks=2_000, strategy=strategy)
        assert result.violation is not None, (issue, strategy, seed)
        assert result.violation.invariants == ["ShouldNotBeTriggered"]


def test_a_walk_replays_from_its_seed() -> None:
    cfg = MUST_SHOW.with_naive({2})
    result = simulate_randomly(cfg, seed=3, depth=100, walks=2_000)
    assert result.violation is not None and result.violating_walk_seed is not None
    trace, broken = replay(cfg, walk_seed=result.violating_walk_seed, depth=100)
    assert broken == result.violation.invariants
    assert [s.label for s in trace] == [s.label for s in result.violation.trace]


def test_archive_guided_search_finds_issue_3() -> None:
    cfg = MUST_SHOW.with_naive({3})
    result = simulate_randomly(cfg, seed=0, depth=100, walks=5_000, strategy="archive")
    assert result.violation is not None
    assert result.cells is not None and result.cells > 1


def test_with_every_fix_simulation_finds_nothing() -> None:
    result = simulate_randomly(MUST_SHOW, seed=0, depth=100, walks=200)
    assert result.violation is None and result.walks == 200


def test_minimise_shortens_a_simulated_trace_to_a_violating_one() -> None:
    cfg = MUST_SHOW.with_naive({1})
    result = simulate_randomly(cfg, seed=0, depth=100, walks=2_000)
    assert result.violation is not None
    long = result.violation.trace
    short = minimise(cfg, long)
    assert len(short) <= len(long)
    assert violated(short[-1].state)
    shortest = check_exhaustively(NO_TIMEOUT.with_naive({1})).depth  # no shorter with timeouts
    assert len(short) >= shortest


def test_event_and_cell_ignore_the_past() -> None:
    cfg = NO_TIMEOUT.with_naive({2})
    result = check_exhaustively(cfg)
    assert result.violation is not None
    trace = result.violation.trace
    labels = [s.label for s in trace[1:] if s.label is not None]
    assert event_of(labels[0]) == ("UpdateLeader", labels[0].i, None, None)
    assert len({progress_cell(s.state) for s in trace}) > 5


def test_violation_renders() -> None:
    cfg = NO_TIMEOUT.with_naive({3})
    result = check_exhaustively(cfg)
    assert result.violation is not None
    trace = result.violation.trace
    text = numbered_trace(cfg, trace)
    assert text.splitlines()[0] == f"Configuration: {cfg.describe()}"
    assert "naive=3" in text
    assert f"{len(trace) - 1:3d}. FollowerProcessCOMMIT(" in text
    assert "Exception: Committing zxid not equals next pending txn zxid." in text
    diagram = sequence_diagram(cfg, trace, title="Issue 3", final_note="VIOLATED")
    assert diagram.startswith("title Issue 3\nparticipant s1\n")
    assert "COMMITLD(" in diagram and "->" in diagram
    last = trace[-1].label
    assert last is not None and describe_step(last).startswith("FollowerProcessCOMMIT(")
