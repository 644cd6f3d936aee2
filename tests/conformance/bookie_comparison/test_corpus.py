"""The corpus: its ranking, the interleaving of its sources, and what the limbo configuration's
explorer traces leave out. No cluster."""

from __future__ import annotations

from conformance.bookie_comparison.corpus import CorpusItem, build_corpus, interleave, rank_examples


def test_rank_prefers_crashes_then_answers_and_drops_duplicate_stories() -> None:
    candidates = [
        (("a",), False, 9, 9),
        (("b",), True, 0, 1),
        (("a",), True, 9, 9),  # the same story as the first: dropped
        (("c",), True, 0, 5),
        (("d",), False, 9, 9),
    ]
    assert rank_examples(candidates) == [3, 1, 0, 4]


def test_interleave_alternates_and_fills_from_the_longer_source() -> None:
    h = [CorpusItem("h", (i,), 60) for i in range(4)]
    e = [CorpusItem("e", (10,), 60), CorpusItem("e", (0,), 60)]  # (0,) duplicates h[0]
    out = interleave(h, e, 5)
    assert [(c.source, c.choices) for c in out] == [
        ("h", (0,)),
        ("e", (10,)),
        ("h", (1,)),
        ("h", (2,)),
        ("h", (3,)),
    ]
    assert interleave(h, e, 2) == [h[0], e[0]]


def test_the_limbo_corpus_leaves_out_traces_with_the_bookies_own_steps() -> None:
    # The explorer reaches the bookies' own recovery of a limbo ledger (4.18.0 runs it as a
    # bookie restarts): no example can make a bookie act, and encoding such a trace failed
    # with a KeyError before any bookie was compared.
    corpus = build_corpus(
        "limbo-crash",
        seed=0,
        per_config=15,
        max_steps=60,
        hypothesis_examples=5,
        explorer_rounds=300,
        database=None,
    )
    assert any(item.source == "explorer archive" for item in corpus)
