"""Hand-made steps and records of replays, for the comparison's tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from conformance.bookie_comparison.answers import StepAnswer


def record(index: int, action: str, **fields: Any) -> SimpleNamespace:
    base: dict[str, Any] = {
        "index": index,
        "action": action,
        "description": f"{action} #{index}",
        "request": None,
        "observed": None,
        "error": None,
    }
    return SimpleNamespace(**{**base, **fields})


def step(index: int, answer: str | None, action: str = "BookieSendsAddConfirmed") -> StepAnswer:
    return StepAnswer(index, action, "add", answer)
