"""Breadth-first search against TLC's figures, and the switches that make violations appear.

TLC 2.20 on the spec text (breadth-first, no symmetry, deadlock not checked, all five
invariants holding) gives the figures asserted here; the model must reproduce them exactly.

For each switch, the search finds a violation with the switch off; with it on, the same
search finds none within the horizon (the depth at which the violation appeared, or the whole
state space where that is affordable).
"""

from __future__ import annotations

import pytest

from model.bookkeeper import interleavings
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("cfg", "states", "depth"),
    [
        (ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1), 285_773, 28),
        (ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2), 21_147, 19),
    ],
    ids=["B2-C2-WQ2-AQ1-SL1", "B3-C1-WQ2-AQ1-SL2"],
)
def test_distinct_states_and_depth_equal_tlc(cfg: ModelConfig, states: int, depth: int) -> None:
    result = check_exhaustively(cfg)
    assert result.complete and result.violation is None
    assert (result.distinct_states, result.depth) == (states, depth)


def _off_then_on(off: ModelConfig, on: ModelConfig, invariant: str) -> None:
    found = check_exhaustively(off)
    assert found.violation is not None, "the defect's switch is off: a violation must exist"
    assert invariant in found.violation.invariants
    horizon = found.depth
    clean = check_exhaustively(on, max_depth=horizon)
    assert clean.violation is None
    assert clean.stopped_reason in ("exhausted", f"depth limit {horizon} reached")
    assert clean.depth == horizon or clean.complete


def test_defect_1_appears_exactly_without_recovery_read_fence() -> None:
    base = {"bookies": 2, "clients": 2, "write_quorum": 2, "ack_quorum": 2}
    _off_then_on(
        ModelConfig(**base, recovery_reads_fence=False),  # type: ignore[arg-type]
        ModelConfig(**base),  # type: ignore[arg-type]
        "NoDivergenceBetweenClientAndMetaData",
    )


def test_defect_2_appears_exactly_without_the_fragment_fix() -> None:
    base = {"bookies": 3, "clients": 2, "write_quorum": 2, "ack_quorum": 1, "send_limit": 2}
    _off_then_on(
        ModelConfig(**base, recovery_starts_at_fragment=False),  # type: ignore[arg-type]
        ModelConfig(**base),  # type: ignore[arg-type]
        "OnlyValidFragments",
    )


def test_seed_001_data_loss_appears_exactly_without_limbo() -> None:
    _off_then_on(
        interleavings.SEED_001.unprotected,
        interleavings.SEED_001.protected,
        "NoDivergenceBetweenClientAndMetaData",
    )


def test_limbo_does_not_protect_a_ledger_that_is_already_closed() -> None:
    # A model finding beyond seed 001's scope: a bookie that loses its data after the ledger
    # is CLOSED also loses its fence (limbo covers only ledgers that are not closed), so a
    # writer that recovery did not fence everywhere can still reach AQ past the end.
    cfg = ModelConfig(
        bookies=2,
        clients=2,
        write_quorum=2,
        ack_quorum=2,
        max_crashes=1,
        crash_when_open=False,
        crash_in_recovery=False,
        limbo_on_unclean_shutdown=True,
        fence_on_unclean_shutdown=True,
    )
    found = check_exhaustively(cfg)
    assert found.violation is not None
    assert found.violation.invariants == ["NoDivergenceBetweenClientAndMetaData"]
    crash = [
        s.label
        for s in found.violation.trace
        if s.label and s.label.action == "BookieRestartsEmpty"
    ]
    assert len(crash) == 1


def test_striping_keeps_defect_1_and_its_fix() -> None:
    # E=3 > WQ=2: entries go to their write sets; fencing must cover every write set.
    base = {"bookies": 3, "clients": 2, "ensemble_size": 3, "write_quorum": 2, "ack_quorum": 2}
    _off_then_on(
        ModelConfig(**base, recovery_reads_fence=False),  # type: ignore[arg-type]
        ModelConfig(**base),  # type: ignore[arg-type]
        "NoDivergenceBetweenClientAndMetaData",
    )
