"""``bookie_recovers_limbo``: the bookies' own recovery client and ``BookieLeavesLimbo`` in the
model (the judge of them: tests/conformance/test_bookies_own_recovery.py)."""

from __future__ import annotations

import dataclasses

from model.bookkeeper.actions import init_state
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import simulate_randomly
from model.bookkeeper.interleavings import SEED_001
from model.bookkeeper.invariants import no_divergence_between_client_and_metadata
from model.bookkeeper.readings import BOOKIE_AS_IMPLEMENTED
from model.bookkeeper.records import STATUS_CLOSED, STATUS_IN_RECOVERY, Fragment

CFG = BOOKIE_AS_IMPLEMENTED.apply(SEED_001.protected)


def test_with_limbo_the_configuration_gets_the_bookies_own_client() -> None:
    assert (CFG.clients, CFG.internal_client) == (3, 2)
    assert BOOKIE_AS_IMPLEMENTED.apply(CFG) is CFG
    plain = BOOKIE_AS_IMPLEMENTED.apply(ModelConfig())
    assert plain.clients == ModelConfig().clients and plain.internal_client is None
    assert "BookieRecoversLimbo=TRUE(c3)" in CFG.describe()


def test_a_client_still_recovering_may_be_behind_a_ledger_the_other_recovery_closed() -> None:
    state = init_state(CFG)
    recovering = state.clients[1]._replace(status=STATUS_IN_RECOVERY, lac=1)
    closed = state._replace(
        meta_status=STATUS_CLOSED,
        meta_last_entry=0,
        meta_fragments=(Fragment(1, 0b11, 1),),
        clients=(state.clients[0], recovering, state.clients[2]),
    )
    assert no_divergence_between_client_and_metadata(CFG, closed)
    spec = dataclasses.replace(CFG, bookie_recovers_limbo=False)
    assert not no_divergence_between_client_and_metadata(spec, closed)
    # A client that closed, or wrote, beyond the end is held to it still.
    done = closed._replace(
        clients=(state.clients[0], recovering._replace(status=STATUS_CLOSED), state.clients[2])
    )
    assert not no_divergence_between_client_and_metadata(CFG, done)


def test_the_protected_limbo_configuration_stays_safe_with_the_bookies_own_recovery() -> None:
    # Seeded, bounded by walks: the archive explorer that found the two recoveries' race in
    # seconds before the exemption (docs/model.md) finds no violation now.
    result = simulate_randomly(CFG, seed=5, depth=60, walks=4_000)
    assert result.violation is None, result.violation
    assert result.steps > 20_000
