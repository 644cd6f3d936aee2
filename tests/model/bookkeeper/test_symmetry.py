"""Symmetry reduction: permutations are faithful renamings and orbits are counted right."""

from __future__ import annotations

import itertools
import random

import pytest

from model.bookkeeper.actions import init_state, successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.explore import check_exhaustively
from model.bookkeeper.records import State
from model.bookkeeper.scripted import run_script, step
from model.bookkeeper.symmetry import (
    _permutations,
    _permuted_hash,
    canonical_fingerprint,
    orbit_min_fingerprint,
    permute,
    quick_keys,
    signatures,
)
from model.search import memo
from model.search.bfs import SearchResult, breadth_first

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


DEFECT_1 = ModelConfig(
    bookies=3, clients=2, write_quorum=3, ack_quorum=2, recovery_reads_fence=False
)
STRIPED = ModelConfig(
    bookies=4, clients=2, write_quorum=2, ack_quorum=2, ensemble_size=3, send_limit=2
)
CRASHES = ModelConfig(
    bookies=3,
    clients=2,
    write_quorum=2,
    ack_quorum=2,
    max_crashes=1,
    limbo_on_unclean_shutdown=True,
    fence_on_unclean_shutdown=True,
)


def _random_states(cfg: ModelConfig, *, walks: int, depth: int, seed: int) -> list[State]:
    """The states along seeded uniform random walks (duplicates dropped, order kept)."""
    rng = random.Random(seed)
    out: dict[State, None] = {}
    for _ in range(walks):
        s = init_state(cfg)
        out[s] = None
        for _ in range(depth):
            nexts = successors(cfg, s)
            if not nexts:
                break
            s = rng.choice(nexts).state
            out[s] = None
    return list(out)


@pytest.mark.parametrize(
    ("cfg", "walks"),
    [(DEFECT_1, 40), (STRIPED, 20), (CRASHES, 20)],
    ids=["defect1", "striped", "crashes"],
)
def test_signatures_go_with_their_owner_and_the_fingerprint_with_the_orbit(
    cfg: ModelConfig, walks: int
) -> None:
    # The soundness of the reduced candidate set rests on sig(pi(s))[pi(k)] == sig(s)[k]:
    # then the orbit members whose bookies and clients are sorted by signature are the same
    # set whichever member we start from, and so is the smallest hash among them.
    states = _random_states(cfg, walks=walks, depth=25, seed=17)
    assert len(states) > 100
    for s in states:
        assert [c.id for c in s.clients] == list(range(cfg.clients))
        keys = (signatures(s), quick_keys(s))
        fingerprint = canonical_fingerprint(cfg, s)
        for bmap, cmap, table in _permutations(cfg.bookies, cfg.clients):
            renamed = permute(s, bmap, cmap, table)
            for (bkeys, ckeys), (rbkeys, rckeys) in zip(
                keys, (signatures(renamed), quick_keys(renamed)), strict=True
            ):
                assert [rbkeys[bmap[b]] for b in range(cfg.bookies)] == bkeys
                assert [rckeys[cmap[c]] for c in range(cfg.clients)] == ckeys
            assert canonical_fingerprint(cfg, renamed) == fingerprint


def test_signatures_tell_apart_the_bookies_of_most_states() -> None:
    # Not needed for soundness, but for speed: ties cost a hash per renaming within them.
    states = _random_states(DEFECT_1, walks=40, depth=25, seed=17)
    untied = sum(len(set(signatures(s)[0])) == DEFECT_1.bookies for s in states)
    assert untied > len(states) // 2


def _bfs(
    cfg: ModelConfig, fingerprint: object, max_depth: int | None
) -> SearchResult[State, object]:
    return breadth_first(
        init_state(cfg),
        lambda s: [(t.label, t.state) for t in successors(cfg, s)],
        lambda s: [],
        canonical=lambda s: fingerprint(cfg, s),  # type: ignore[operator]
        max_depth=max_depth,
    )


@pytest.mark.parametrize(
    ("cfg", "max_depth"),
    [
        (ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1), 16),
        (ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2), None),
    ],
    ids=["B2-C2-depth16", "B3-C1-SL2"],
)
def test_the_reduced_search_finds_what_the_whole_orbit_minimum_finds(
    cfg: ModelConfig, max_depth: int | None
) -> None:
    ours = _bfs(cfg, canonical_fingerprint, max_depth)
    reference = _bfs(cfg, orbit_min_fingerprint, max_depth)
    assert (ours.distinct_states, ours.depth, ours.complete) == (
        reference.distinct_states,
        reference.depth,
        reference.complete,
    )
    # The explorer's own symmetric search (which memoises fingerprints) agrees too.
    explored = check_exhaustively(cfg, symmetry=True, max_depth=max_depth)
    assert (explored.distinct_states, explored.depth, explored.complete) == (
        reference.distinct_states,
        reference.depth,
        reference.complete,
    )


@pytest.mark.slow
def test_the_reduced_search_finds_what_the_whole_orbit_minimum_finds_on_b2_c2() -> None:
    cfg = ModelConfig(bookies=2, clients=2, write_quorum=2, ack_quorum=1)
    ours = _bfs(cfg, canonical_fingerprint, None)
    reference = _bfs(cfg, orbit_min_fingerprint, None)
    assert ours.complete and reference.complete
    assert (ours.distinct_states, ours.depth) == (reference.distinct_states, reference.depth)
    assert (ours.distinct_states, ours.depth) == (71_528, 28)


def test_a_full_fingerprint_memo_is_cleared_without_changing_the_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memo, "MEMO_SIZE", 64)
    cfg = ModelConfig(bookies=3, clients=1, write_quorum=2, ack_quorum=1, send_limit=2)
    reduced = check_exhaustively(cfg, symmetry=True)
    assert reduced.complete and (reduced.distinct_states, reduced.depth) == (7_107, 19)
