"""Two replays of one choice sequence (real bookies, reference bookies) compared step by step,
and the differences grouped for the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.bookie_comparison.answers import Replayed


@dataclass
class Difference:
    configuration: str
    sequence: int
    source: str
    step: int
    action: str
    request: str
    real: str
    reference: str
    detail: str | None = None

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.configuration, self.action, self.request, self.real, self.reference)


@dataclass
class Comparison:
    sequences: int = 0
    steps: int = 0  # steps both sides ran
    answers: int = 0  # of those, steps where at least one side answered, plus run ends
    differences: list[Difference] = field(default_factory=list)

    def add(self, other: Comparison) -> None:
        self.sequences += other.sequences
        self.steps += other.steps
        self.answers += other.answers
        self.differences.extend(other.differences)


def compare(
    configuration: str,
    sequence: int,
    source: str,
    real: Replayed,
    reference: Replayed,
) -> Comparison:
    """Step-by-step comparison of one sequence's two replays.

    The model, not the target, chooses each step, so both replays take the same actions
    until one stops; the first step only one side ran is one difference (the stopped side's
    answer is its reason), unless the last common step already differed (that is the cause).
    The ends (verdict, final state) are compared only when both ran the same steps.
    """
    result = Comparison(sequences=1)
    common = min(len(real.steps), len(reference.steps))
    last_differed = False
    for a, b in zip(real.steps[:common], reference.steps[:common], strict=True):
        result.steps += 1
        last_differed = False
        action = a.action if a.action == b.action else f"{a.action} | {b.action}"
        if a.answer is None and b.answer is None and a.action == b.action:
            continue
        result.answers += 1
        if a.answer != b.answer or a.action != b.action:
            last_differed = True
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    a.index,
                    action,
                    a.request,
                    a.answer or "(no answer)",
                    b.answer or "(no answer)",
                    a.detail,
                )
            )
    if len(real.steps) != len(reference.steps):
        if not last_differed:
            longer = real if len(real.steps) > len(reference.steps) else reference
            step = longer.steps[common]
            stopped_real = len(real.steps) < len(reference.steps)
            why = f"(stopped: {(real if stopped_real else reference).stop or 'ended'})"
            result.answers += 1
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    step.index,
                    step.action,
                    step.request,
                    why if stopped_real else (step.answer or "(no answer)"),
                    (step.answer or "(no answer)") if stopped_real else why,
                    step.detail,
                )
            )
    else:
        result.answers += 1
        if real.end != reference.end:
            result.differences.append(
                Difference(
                    configuration,
                    sequence,
                    source,
                    common + 1,
                    "(end of run)",
                    "final state",
                    real.end,
                    reference.end,
                )
            )
    return result


@dataclass
class Group:
    configuration: str
    action: str
    request: str
    real: str
    reference: str
    count: int
    example: dict[str, Any]


def group_differences(differences: Sequence[Difference]) -> list[Group]:
    """Differences grouped by (configuration, action, request, real, reference), most frequent
    first, each with its first occurrence as the example."""
    groups: dict[tuple[str, str, str, str, str], Group] = {}
    for d in differences:
        key = d.key()
        if key not in groups:
            example = {
                "sequence": d.sequence,
                "source": d.source,
                "step": d.step,
                "detail": d.detail,
            }
            groups[key] = Group(*key, count=0, example=example)
        groups[key].count += 1
    return sorted(groups.values(), key=lambda g: (g.configuration, -g.count, g.action))


__all__ = ["Comparison", "Difference", "Group", "compare", "group_differences"]
