"""What one replay of a choice sequence answered, step by step, in words that compare across runs
and across the two kinds of bookies (no endpoints, ledger ids or entry numbers)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from conformance.engine import Outcome
from model.bookkeeper.action_table import Effect, names_with


@dataclass(frozen=True)
class StepAnswer:
    """One step of a replay: the model's action, what the request was (model words, without
    entry numbers), and the target's answer (None: nothing on the wire or in ZooKeeper)."""

    index: int
    action: str
    request: str
    answer: str | None
    detail: str | None = None  # the step's own description, for the example column


@dataclass
class Replayed:
    """One sequence replayed on one target. ``stop`` says why it ended before its length
    (a divergence, a violation, an error, an exception), ``end`` is the verdict and the
    final-state differences from the model."""

    steps: list[StepAnswer]
    end: str
    stop: str | None = None
    verdict: str = "undecided"
    seconds: float = 0.0


_HOST_PORT = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d+\b|\blocalhost:\d+\b")
_LEDGER = re.compile(r"\bledger (?:id )?\d+\b")
_ENTRY_NUMBERS = re.compile(r" e\d+| \(lac=\d+\)")


def normalise_error(message: str) -> str:
    """An error message without what changes from run to run (endpoints, ledger ids), so
    that the same failure on both sides compares equal and groups together."""
    first = message.strip().splitlines()[0] if message.strip() else "(empty)"
    first = _HOST_PORT.sub("HOST:PORT", first)
    first = _LEDGER.sub("ledger N", first)
    return first[:200]


def render_observed(observed: dict[str, Any]) -> str:
    """``kind STATUS field=value ...``: the whole answer, compact and stable."""
    kind = observed.get("kind", "?")
    status = observed.get("status", "?")
    rest = " ".join(f"{k}={observed[k]}" for k in sorted(observed) if k not in ("kind", "status"))
    return f"{kind} {status}" + (f" {rest}" if rest else "")


def request_kind(action: str, request: str | None) -> str:
    """The request in the model's words without entry numbers: ``add``, ``recovery add``,
    ``fence (read LAC)``, ``recovery read``, ``recovery read, fence``; ``metadata`` for a
    compare-and-set; ``-`` for steps that send nothing."""
    if request:
        return _ENTRY_NUMBERS.sub("", request).strip()
    if action in names_with(Effect.METADATA_WRITE):
        return "metadata"
    return "-"


def answers_of(records: Iterable[Any]) -> list[StepAnswer]:
    """The answers of an engine run (``StepRecord``\\ s, or anything with their fields)."""
    answers = []
    for r in records:
        if r.error is not None:
            answer: str | None = "error: " + normalise_error(r.error)
        elif r.observed is not None:
            answer = render_observed(r.observed)
        else:
            answer = None
        answers.append(
            StepAnswer(r.index, r.action, request_kind(r.action, r.request), answer, r.description)
        )
    return answers


def end_of(outcome: Outcome) -> str:
    """The verdict and the final-state differences (the observer's v2 reads, the znode)."""
    final = sorted(d for d in outcome.divergences if d.startswith("final state"))
    return "; ".join([outcome.verdict, *final])


def stop_of(outcome: Outcome) -> str | None:
    if outcome.error:
        return "error: " + normalise_error(outcome.error)
    if outcome.divergences:
        return "divergence from the model"
    if outcome.violations:
        return "violation: " + ", ".join(outcome.violations)
    return None


__all__ = [
    "Replayed",
    "StepAnswer",
    "answers_of",
    "end_of",
    "normalise_error",
    "render_observed",
    "request_kind",
    "stop_of",
]
