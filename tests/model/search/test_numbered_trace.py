"""The numbered layout of a trace, whichever spec it is of."""

from __future__ import annotations

from model.search.bfs import Step
from model.search.numbered_trace import numbered_trace


def test_steps_are_numbered_after_the_configuration_and_the_final_state_follows() -> None:
    trace = [Step(None, 0), Step("inc", 1), Step("inc", 2)]
    text = numbered_trace(
        "counter to 2", trace, lambda label: f"{label}()", lambda state: [f"n={state}", "ok"]
    )
    assert text.splitlines() == [
        "Configuration: counter to 2",
        "  1. inc()",
        "  2. inc()",
        "Final state:",
        "     n=2",
        "     ok",
    ]
