"""Symmetry reduction: permutations are faithful renamings and orbits are counted right."""

from __future__ import annotations

import itertools

from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.scripted import run_script, step
from model.bookkeeper.symmetry import (
    _permutations,
    canonical_fingerprint,
    canonical_state,
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


def test_canonical_state_is_the_same_for_every_member_of_an_orbit() -> None:
    s = _some_state()
    canonical = canonical_state(CFG, s)  # type: ignore[arg-type]
    for bmap, cmap, table in _permutations(CFG.bookies, CFG.clients):
        assert canonical_state(CFG, permute(s, bmap, cmap, table)) == canonical  # type: ignore[arg-type]


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
    orbits = {canonical_state(cfg, s) for s in seen}  # type: ignore[arg-type]
    reduced = check_exhaustively(cfg, symmetry=True)
    assert reduced.complete and reduced.distinct_states == len(orbits) == 7_107
    assert reduced.depth == 19


def test_identity_is_not_among_the_permutations() -> None:
    perms = _permutations(3, 2)
    assert len(perms) == len(list(itertools.permutations(range(3)))) * 2 - 1


def test_canonical_fingerprint_is_the_hash_of_the_canonical_state() -> None:
    s = _some_state()
    assert canonical_fingerprint(CFG, s) == hash(canonical_state(CFG, s))  # type: ignore[arg-type]
    for bmap, cmap, table in _permutations(CFG.bookies, CFG.clients):
        other = permute(s, bmap, cmap, table)  # type: ignore[arg-type]
        assert canonical_fingerprint(CFG, other) == canonical_fingerprint(CFG, s)  # type: ignore[arg-type]
