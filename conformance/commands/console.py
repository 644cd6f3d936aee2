"""What a run prints of its outcome on the console, the same way for every command."""

from __future__ import annotations

from conformance.engine import Outcome


def print_findings(outcome: Outcome) -> None:
    """A run's note and findings, worst first (the one precedence rule, conformance.verdict)."""
    if outcome.note:
        print(outcome.note)
    for violation in outcome.violations:
        print(f"VIOLATION {violation}")
    for divergence in outcome.divergences:
        print(f"DIVERGENCE {divergence}")
    if outcome.error:
        print(f"UNDECIDED {outcome.error}")
