"""The choice sequences replayed on both kinds of bookies, built deterministically from a seed and
the model alone (no cluster): the search's Hypothesis examples on the model target, the model
explorer's archive, and the failures of a Hypothesis example database."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, choices_from_bytes

from conformance.distributed.plan import CONFIGURATIONS
from conformance.search.danger import danger
from conformance.search.program import ExampleRun, bookies_own_steps_in, encode_trace
from conformance.search.runner import SearchSettings, database_key, run_search
from conformance.targets.model_target import ModelTarget
from model.bookkeeper.explore import simulate_randomly


@dataclass(frozen=True)
class CorpusItem:
    """One choice sequence to replay, where it came from, and the step bound it was made for
    (the example's length is a choice bounded by ``max_steps``)."""

    source: str
    choices: tuple[int, ...]
    max_steps: int


def rank_examples(candidates: Sequence[tuple[Any, bool, int, int]]) -> list[int]:
    """Indices of (signature, crashed, danger, answers) candidates, best first, keeping the
    first of each signature (the steps taken: choice lists differing only in choices the
    example never read are the same story): a crash first (the limbo stories), then the
    number of answers on the wire, then danger."""
    seen: set[Any] = set()
    unique = []
    for i, (signature, *_rest) in enumerate(candidates):
        if signature not in seen:
            seen.add(signature)
            unique.append(i)
    return sorted(
        unique, key=lambda i: (-candidates[i][1], -candidates[i][3], -candidates[i][2], i)
    )


def interleave(
    first: Sequence[CorpusItem], second: Sequence[CorpusItem], n: int
) -> list[CorpusItem]:
    """``n`` items, alternating between the two sources while both last (no duplicates)."""
    out: list[CorpusItem] = []
    seen: set[tuple[int, ...]] = set()
    queues = [list(first), list(second)]
    turn = 0
    while len(out) < n and any(queues):
        queue = queues[turn % 2] or queues[(turn + 1) % 2]
        item = queue.pop(0)
        if item.choices not in seen:
            seen.add(item.choices)
            out.append(item)
        turn += 1
    return out


def build_corpus(
    name: str,
    *,
    seed: int,
    per_config: int,
    max_steps: int,
    hypothesis_examples: int,
    explorer_rounds: int,
    database: Path | None,
) -> list[CorpusItem]:
    """The configuration's sequences, from the model alone (no cluster)."""
    cfg = CONFIGURATIONS[name]
    seen: list[tuple[Any, bool, int, int]] = []
    choices_of: list[tuple[int, ...]] = []

    def collect(_phase: str, run: ExampleRun) -> None:
        steps = run.outcome.steps
        crashed = any(s.action == "BookieRestartsEmpty" for s in steps)
        answered = sum(1 for s in steps if s.observed is not None or s.request)
        signature = tuple(s.description for s in steps)
        seen.append((signature, crashed, run.max_danger, answered))
        choices_of.append(tuple(run.choices))

    settings = SearchSettings(
        max_examples=hypothesis_examples,
        max_steps=max_steps,
        seed=seed,
        time_budget=None,
        explore=False,
    )
    run_search(cfg, ModelTarget(cfg), settings, on_example=collect)
    hypothesis = [CorpusItem("hypothesis", choices_of[i], max_steps) for i in rank_examples(seen)]

    explored = simulate_randomly(
        cfg, seed=seed, depth=max_steps, walks=explorer_rounds, strategy="archive"
    )
    explorer: list[CorpusItem] = []
    # As the search's corpus phase: a trace with the bookies' own steps is no example.
    if explored.violation is not None:
        trace = explored.violation.trace
        if len(trace) - 1 <= max_steps and not bookies_own_steps_in(cfg, trace):
            choices = tuple(encode_trace(cfg, trace, max_steps))
            explorer.append(CorpusItem("explorer violation", choices, max_steps))
    archive = [
        t
        for t in explored.archive or []
        if 1 < len(t) <= max_steps + 1 and not bookies_own_steps_in(cfg, t)
    ]
    # The search's own corpus order: the most dangerous corner first, then the deepest.
    archive.sort(key=lambda t: (-max(danger(cfg, s.state) for s in t), -len(t)))
    explorer += [
        CorpusItem("explorer archive", tuple(encode_trace(cfg, t, max_steps)), max_steps)
        for t in archive
    ]
    corpus = interleave(hypothesis, explorer, per_config)

    if database is not None and database.is_dir():
        db = DirectoryBasedExampleDatabase(str(database))
        known = {c.choices for c in corpus}
        for target_name in ("model", "local", "docker", "external"):
            for steps in sorted({max_steps, 60, 80, 100}):
                for blob in db.fetch(database_key(cfg, target_name, steps)):
                    decoded = choices_from_bytes(blob)
                    if decoded is None or not all(isinstance(c, int) for c in decoded):
                        continue
                    choices = tuple(int(c) for c in decoded)
                    if choices not in known:
                        known.add(choices)
                        corpus.append(CorpusItem(f"database ({target_name})", choices, steps))
    return corpus


__all__ = ["CorpusItem", "build_corpus", "interleave", "rank_examples"]
