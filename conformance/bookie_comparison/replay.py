"""A corpus replayed on one target of real or of reference bookies, the target opened once."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from adapters.installations.system import BookieChoice
from conformance.bookie_comparison.answers import (
    Replayed,
    answers_of,
    end_of,
    normalise_error,
    stop_of,
)
from conformance.bookie_comparison.corpus import CorpusItem
from conformance.distributed.plan import CONFIGURATIONS
from conformance.errors import ConformanceError
from conformance.search.runner import replay_choices
from conformance.targets.local_target import LocalTarget


class BudgetExceeded(ConformanceError):
    """The hard deadline passed: stop replaying, close the targets, report what was done."""


def replay_on(
    name: str,
    kind: str,
    corpus: Sequence[CorpusItem],
    *,
    work_dir: Path,
    deadline: float,
    log: Callable[[str], None],
) -> tuple[list[Replayed], str]:
    """Replay ``corpus`` in order on one LocalTarget of ``kind`` (``real`` or ``reference``)
    until ``deadline`` (monotonic); the target is opened once and closed in a ``finally``.
    Returns the replays done and the system under test."""
    cfg = CONFIGURATIONS[name]
    bookies = BookieChoice.reference() if kind == "reference" else None
    target_dir = work_dir / f"{name}-{kind}"
    target_dir.mkdir(parents=True, exist_ok=True)
    target = LocalTarget(bookies=bookies, work_dir=target_dir)
    done: list[Replayed] = []
    system = "unknown"
    try:
        system = target.system_under_test().render()
        started = time.monotonic()
        target.open(cfg)
        log(f"  {kind}: cluster up in {time.monotonic() - started:.1f} s ({system})")
        for number, item in enumerate(corpus, 1):
            if time.monotonic() >= deadline:
                log(f"  {kind}: out of time after {len(done)} of {len(corpus)} sequences")
                break
            started = time.monotonic()
            try:
                run = replay_choices(cfg, target, list(item.choices), max_steps=item.max_steps)
            except BudgetExceeded:
                raise
            except Exception as exc:  # a bug or an outage: a difference, not a crash of ours
                why = f"raised {type(exc).__name__}: {normalise_error(str(exc))}"
                done.append(Replayed([], why, why, "raised", time.monotonic() - started))
                log(f"  {kind} #{number}: raised {exc!r}")
                continue
            outcome = run.outcome
            done.append(
                Replayed(
                    answers_of(outcome.steps),
                    end_of(outcome),
                    stop_of(outcome),
                    outcome.verdict,
                    time.monotonic() - started,
                )
            )
            log(
                f"  {kind} #{number} ({item.source}): {outcome.verdict}, "
                f"{len(outcome.steps)} steps, {time.monotonic() - started:.1f} s"
            )
    finally:
        target.close()
    return done, system


__all__ = ["BudgetExceeded", "replay_on"]
