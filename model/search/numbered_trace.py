"""A trace of any spec as numbered steps after its configuration, with its final state spelled
out: the layout every spec's ``render.numbered_trace`` prints (the specs say how a step and a
state read)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from model.search.bfs import Step

S = TypeVar("S")
L = TypeVar("L")


def numbered_trace(
    configuration: str,
    trace: Sequence[Step[S, L]],
    describe_step: Callable[[L], str],
    describe_state: Callable[[S], list[str]],
) -> str:
    """``Configuration: ...``, then ``  1. <step>`` for each step, then ``Final state:`` and the
    last state's lines, indented."""
    lines = [f"Configuration: {configuration}"]
    for number, step in enumerate(trace[1:], start=1):
        assert step.label is not None  # only the first step of a trace has no label
        lines.append(f"{number:3d}. {describe_step(step.label)}")
    lines.append("Final state:")
    lines.extend("     " + line for line in describe_state(trace[-1].state))
    return "\n".join(lines)


__all__ = ["numbered_trace"]
