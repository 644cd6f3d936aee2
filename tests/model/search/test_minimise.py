"""Causal deletion shortens violating traces and keeps them violating."""

from __future__ import annotations

import pytest

from model.bookkeeper.explore import event_of, minimise, simulate_randomly
from model.bookkeeper.interleavings import DEFECT_1
from model.bookkeeper.invariants import invariants_for, violated
from model.bookkeeper.scripted import run_script


def test_the_seed_trace_of_defect_1_is_already_minimal() -> None:
    cfg = DEFECT_1.unprotected
    trace = run_script(cfg, DEFECT_1.steps)
    shorter = minimise(cfg, trace)
    assert violated(cfg, shorter[-1].state, invariants_for(cfg))
    assert len(shorter) <= len(trace)


@pytest.mark.slow
def test_explorer_traces_shrink_to_at_most_eighteen_steps_and_still_violate() -> None:
    cfg = DEFECT_1.unprotected
    for seed in (0, 3):
        found = simulate_randomly(cfg, seed=seed, depth=60, walks=None)
        assert found.violation is not None
        shorter = minimise(cfg, found.violation.trace)
        assert len(shorter) - 1 <= 18
        assert len(shorter) <= len(found.violation.trace)
        assert violated(cfg, shorter[-1].state, invariants_for(cfg))
        # Only events of the original trace remain, in their order.
        original = [event_of(s.label) for s in found.violation.trace[1:] if s.label]
        kept = [event_of(s.label) for s in shorter[1:] if s.label]
        it = iter(original)
        assert all(any(e == o for o in it) for e in kept)
