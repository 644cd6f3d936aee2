"""Symmetry reduction: permutations are faithful renamings and orbits are counted right."""

from __future__ import annotations

import itertools

from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.scripted import run_script, step
from model.bookkeeper.symmetry import (
    _permutations,
    _permuted_hash,
    canonical_fingerprint,
    permute,
)
from model.search.bfs import breadth_first

CFG = ModelConfig(bookies=3, clients=2, write_quorum=2, ack_quorum=1)


def _some_state() -> object:
    return run_script(
        CFG,
        [
            step("ClientCreatesLedger", client="c1"),
            step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
            step("BookieSendsAddConfirmedResponse", bookie="b1"),
            step("ClientStartsRecovery", client="c2"),
        ],
    )[-1].state


def test_permutation_commutes_with_successors() -> None:
    s = _some_state()
    for bmap, cmap, table in _permutations(CFG.bookies, CFG.clients):
        # CHOOSE picks one ensemble, so only compare actions that do not choose.
        ours = {
            permute(t.state, bmap, cmap, table)
            for t in successors(CFG, s)
            if "Ensemble" not in t.label.action
        }  # type: ignore[arg-type]
        theirs = {
            t.state
            for t in successors(CFG, permute(s, bmap, cmap, table))
            if "Ensemble" not in t.label.action
        }  # type: ignore[arg-type]
        assert ours == theirs


def test_reduced_search_counts_the_orbits_of_the_full_search() -> None:
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)
    seen: set[object] = set()

    def collect(state: object) -> list[str]:
        seen.add(state)
        return []

    full = breadth_first(
        init_state(cfg), lambda s: [(t.label, t.state) for t in successors(cfg, s)], collect
    )
    assert full.distinct_states == 21_147
    # Orbits counted without any hashing trick: each as the set of its members.
    perms = _permutations(cfg.bookies, cfg.clients)
    orbits = {
        frozenset([s, *(permute(s, b, c, t) for b, c, t in perms)])  # type: ignore[arg-type]
        for s in seen
    }
    reduced = check_exhaustively(cfg, symmetry=True)
    assert reduced.complete and reduced.distinct_states == len(orbits) == 7_107
    assert reduced.depth == 19


def test_identity_is_not_among_the_permutations() -> None:
    perms = _permutations(3, 2)
    assert len(perms) == len(list(itertools.permutations(range(3)))) * 2 - 1


def test_fingerprint_hashes_each_renaming_and_is_the_same_across_the_orbit() -> None:
    s = _some_state()
    fingerprint = canonical_fingerprint(CFG, s)  # type: ignore[arg-type]
    for bmap, cmap, table in _permutations(CFG.bookies, CFG.clients):
        renamed = permute(s, bmap, cmap, table)  # type: ignore[arg-type]
        assert _permuted_hash(s, bmap, cmap, table) == hash(renamed)  # type: ignore[arg-type]
        assert canonical_fingerprint(CFG, renamed) == fingerprint


def test_a_striped_ensembles_positions_are_renamed_with_its_bookies() -> None:
    cfg = ModelConfig(
        bookies=4, clients=2, write_quorum=2, ack_quorum=2, ensemble_size=3, send_limit=2
    )
    s = run_script(
        cfg,
        [
            step("ClientCreatesLedger", client="c1"),
            step("ClientSendsAddEntryRequests", client="c1", lost={"b2"}),
            step("ClientChangesEnsemble", client="c1"),
            step("ClientStartsRecovery", client="c2"),
        ],
    )[-1].state
    assert s.meta_fragments[0].order == (0, 3, 2)
    for bmap, cmap, table in _permutations(cfg.bookies, cfg.clients):
        renamed = permute(s, bmap, cmap, table)
        assert renamed.meta_fragments[0].order == tuple(bmap[b] for b in (0, 3, 2))
        recovering = renamed.clients[cmap[1]]
        assert recovering.recovery_order == renamed.meta_fragments[0].order
        assert _permuted_hash(s, bmap, cmap, table) == hash(renamed)
