"""A search's verdict: what it found, whether anything went wrong, and how much it ran become
one :class:`SearchReport`. Clean only when examples ran on the target and none failed;
nothing run, or a target error with nothing found, is undecided (Jepsen's ``unknown``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.engine import BookiesOwnTally
from conformance.races import RaceTally
from conformance.search.choices import to_blob
from conformance.search.program import ExampleRun
from conformance.verdict import Verdict


@dataclass
class Finding:
    """A failing example, shrunk: its run on the target and the choices that replay it."""

    run: ExampleRun
    choices: list[int]
    found_by: str  # "hypothesis" or "explorer"
    found_after: float  # seconds from the start of the search
    found_steps: int  # the trace length when first found, before shrinking

    @property
    def blob(self) -> str:
        return to_blob(self.choices)


@dataclass
class SearchReport:
    verdict: Verdict
    finding: Finding | None
    examples: int
    steps: int  # on the target
    elapsed: float
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    explorer_steps: int = 0  # in the model alone, by the explorer
    races: RaceTally | None = None  # the examples' races, if any raced
    #: What the bookies did on their own (bookie_recovers_limbo); None: no such actor.
    bookies_own: BookiesOwnTally | None = None

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.elapsed if self.elapsed > 0 else 0.0


@dataclass(frozen=True)
class SearchTally:
    """How much a search ran: examples and steps on the target, model steps of the explorer."""

    examples: int
    steps: int
    elapsed: float
    explorer_steps: int = 0
    races: RaceTally | None = None
    bookies_own: BookiesOwnTally | None = None


def conclude(
    found: ExampleRun | None,
    first_found: tuple[str, float, int] | None,
    error: str | None,
    tally: SearchTally,
    notes: list[str],
    budget: str,
) -> SearchReport:
    """The report of a search that ended with ``found`` (its final, shrunk failing run, or
    None), ``first_found`` (who found it first, after how long, how long it was then), the
    target ``error`` that stopped it (if any) and the ``budget`` it had, in words."""
    if found is None:
        if error is not None:
            verdict, reason = Verdict.UNDECIDED, error
        elif tally.examples == 0:
            # Clean means something was checked and passed; nothing ran on the target here.
            verdict = Verdict.UNDECIDED
            reason = f"nothing was checked: no example ran on the target (time budget {budget})"
        else:
            verdict, reason = Verdict.CLEAN, None
        return SearchReport(
            verdict,
            None,
            tally.examples,
            tally.steps,
            tally.elapsed,
            reason,
            notes,
            tally.explorer_steps,
            tally.races,
            tally.bookies_own,
        )
    if first_found is None:
        raise ValueError("a search that found a failing run must say who found it first")
    how, when, length = first_found
    return SearchReport(
        found.outcome.verdict,
        Finding(found, found.choices, how, when, length),
        tally.examples,
        tally.steps,
        tally.elapsed,
        None,
        notes,
        tally.explorer_steps,
        tally.races,
        tally.bookies_own,
    )
