"""The one search of a real system: Hypothesis draws plans, each is run live, the first finding
is shrunk live.

Where the examples come from: the role's generator (:meth:`~.role.LiveRole.plans`, drawn by
Hypothesis in generate-only mode: no example database, no shrinking of its own, no deadline)
and, when the caller passes them, ``guided`` plans (the model's explorer's): every other example
is then the next of those, cycling.

Stop rules: the first violation stops the search (``StopAt.VIOLATION``, the default: a
divergence is kept, the first one, and the search goes on, as a system that diverges from the
spec may or may not lose data) or the first finding of either kind (``StopAt.FINDING``); so do
a run the role could not judge at all (:meth:`~.role.LiveRole.unjudged`: the search is
undecided, never clean), ``max_examples`` and the ``seconds`` budget.

Shrinking: greedy, on the live system (:func:`shrink_greedily`): try the role's smaller plans
one at a time, keep the first that fails the same way, start again from it; bounded by a number
of runs and a deadline. Hypothesis' own shrinker would spend hundreds of real runs.

Progress: ``progress`` hears of the search at least every :data:`PROGRESS_INTERVAL_S`, whatever
it is doing (an example of a live system may take minutes).
"""

from __future__ import annotations

import contextlib
import enum
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic

from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance.errors import ConformanceError
from conformance.live.role import LiveRole, PlanT, RunT
from conformance.search.runner import PROGRESS_INTERVAL_S
from conformance.verdict import Verdict


class StopAt(enum.Enum):
    """Which example ends a search."""

    #: The first violation; a divergence is kept and the search goes on.
    VIOLATION = "violation"
    #: The first violation or divergence.
    FINDING = "finding"


class Stopped(enum.StrEnum):
    """Why a search stopped."""

    FINDING = "finding"  # an example ended it (StopAt)
    EXAMPLES = "examples"  # every example allowed ran
    BUDGET = "budget"  # the time budget was spent
    UNDECIDED = "undecided"  # an example could not be judged
    HALTED = "halted"  # told to stop from outside (another search side by side found one)


class StopSearch(ConformanceError, AssertionError):
    """Ends the Hypothesis run: the search has decided or spent its budget (an
    AssertionError, as Hypothesis expects of a failing example)."""


@dataclass
class SearchFinding(Generic[PlanT, RunT]):
    #: The run that failed, as found, its number (1-based) and when, since the start.
    found: RunT
    example: int
    seconds_to_find: float
    #: The smallest run that still fails the same way (``found`` when nothing smaller did),
    #: its plan, and how many runs shrinking took.
    shrunk: RunT
    plan: PlanT
    shrink_runs: int = 0


@dataclass
class SearchResult(Generic[PlanT, RunT]):
    examples: int = 0
    finding: SearchFinding[PlanT, RunT] | None = None
    verdicts: Counter[Verdict] = field(default_factory=Counter)
    #: Why examples could not be judged; the search stopped at the first.
    errors: list[str] = field(default_factory=list)
    #: Examples drawn from the ``guided`` plans.
    guided_examples: int = 0
    seconds: float = 0.0
    #: Why the search stopped (None: it has not).
    stopped: Stopped | None = None
    #: Examples that diverged (the search went on looking for a violation).
    divergent_examples: int = 0
    #: The verdict of the finding's shrunk run (set with ``finding``).
    finding_verdict: Verdict | None = None

    @property
    def undecided(self) -> int:
        return self.verdicts[Verdict.UNDECIDED]

    @property
    def verdict(self) -> Verdict:
        """A finding stands; otherwise clean only when examples ran and every one was."""
        if self.finding_verdict is not None:
            return self.finding_verdict
        if self.errors or self.examples == 0 or self.verdicts[Verdict.UNDECIDED]:
            return Verdict.UNDECIDED
        return Verdict.CLEAN


@dataclass(frozen=True)
class SearchProgress:
    """What a search is doing, for a progress line."""

    phase: str  # "examples" or "shrink"
    elapsed: float
    examples: int
    max_examples: int
    findings: int
    shrink_runs: int = 0
    seconds: float | None = None

    def describe(self) -> str:
        left = (
            f", {max(0.0, self.seconds - self.elapsed):.0f} s of {self.seconds:g} left"
            if self.seconds is not None
            else ""
        )
        shrinking = f", {self.shrink_runs} shrink runs" if self.phase == "shrink" else ""
        return (
            f"[{self.elapsed:.0f} s] {self.phase}: {self.examples} of {self.max_examples} "
            f"examples, {self.findings} findings{shrinking}{left}"
        )


class _Ticker:
    """Calls ``report`` with the search's progress at least every ``interval`` seconds, from a
    thread of its own (a live run may block the search's thread for minutes)."""

    def __init__(self, report: Callable[[], None] | None, interval: float) -> None:
        self._report, self._interval = report, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Ticker:
        if self._report is not None:
            self._thread = threading.Thread(target=self._run, name="search-progress", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        assert self._report is not None
        while not self._stop.wait(self._interval):
            self._report()

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._interval)


def drive_examples(
    run_one: Callable[[st.DataObject], None], *, max_examples: int, seed: int | None
) -> None:
    """Hypothesis calls ``run_one`` with fresh data up to ``max_examples`` times (generation
    only: no example database, no shrinking of its own, no deadline; seeded, or derandomized
    without a seed); ``run_one`` ends the loop early by raising :class:`StopSearch`."""
    property_ = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        phases=(Phase.generate,),
        suppress_health_check=list(HealthCheck),
    )(given(st.data())(run_one))
    if seed is not None:
        property_ = hypothesis_seed(seed)(property_)
    with contextlib.suppress(StopSearch):
        property_()


def interleaved(guided: Sequence[PlanT], number: int, drawn: PlanT) -> PlanT:
    """Example ``number`` (0-based): with ``guided`` plans, every other example is the next of
    them in turn (cycling), the rest Hypothesis' (``drawn``). Hypothesis draws a plan for
    every example all the same: its generation must not depend on the example's number."""
    if guided and number % 2 == 0:
        return guided[(number // 2) % len(guided)]
    return drawn


def shrink_greedily(
    found: PlanT,
    smaller: Callable[[PlanT], Iterable[PlanT]],
    fails: Callable[[PlanT], bool],
    *,
    max_runs: int | None = None,
    more: Callable[[], bool] = lambda: True,
) -> tuple[PlanT, int]:
    """Greedy shrinking on the live target: try each of ``smaller(best)`` in turn, keep the
    first that still ``fails``, start again from it; at most ``max_runs`` tries while ``more``
    says there is time. A candidate that passes (the failure needs what it removed, or the
    timing went the other way this time) is simply not taken. The smallest plan that failed,
    and how many tries it took."""
    best, runs = found, 0

    def may_run() -> bool:
        return (max_runs is None or runs < max_runs) and more()

    improved = True
    while improved and may_run():
        improved = False
        for candidate in smaller(best):
            if not may_run():
                break
            runs += 1
            if fails(candidate):
                best, improved = candidate, True
                break
    return best, runs


RunCallback = Callable[[int, RunT], None]


def search(
    role: LiveRole[PlanT, RunT],
    *,
    max_examples: int = 20,
    seconds: float | None = None,
    seed: int | None = None,
    guided: Sequence[PlanT] = (),
    shrink: bool = True,
    stop_at: StopAt = StopAt.VIOLATION,
    max_shrink_runs: int | None = 30,
    shrink_until: float | None = None,
    on_example: RunCallback[RunT] | None = None,
    on_shrink: RunCallback[RunT] | None = None,
    progress: Callable[[SearchProgress], None] | None = None,
    into: SearchResult[PlanT, RunT] | None = None,
    halt: Callable[[], bool] | None = None,
    on_finding: Callable[[], None] | None = None,
) -> SearchResult[PlanT, RunT]:
    """Run up to ``max_examples`` plans of ``role`` (or until ``seconds`` are spent), stop by
    the rules of the module docstring, and shrink the finding reported (``shrink``: at most
    ``max_shrink_runs`` runs, none after ``shrink_until``, a ``time.monotonic()``).
    ``on_example`` hears of each example's run, ``on_shrink`` of each shrinking try; ``into``:
    the result to fill (a caller's richer one), a new one by default. ``halt``, asked before
    each example: True stops the search (:attr:`Stopped.HALTED`; searches side by side, one
    of which found something). ``on_finding`` is called once when an example stops the search
    with a finding, before it is shrunk (to halt the others)."""
    if not isinstance(stop_at, StopAt):
        raise ValueError(f"stop_at is a StopAt ({', '.join(s.name for s in StopAt)}): {stop_at!r}")
    result: SearchResult[PlanT, RunT] = SearchResult() if into is None else into
    started = time.monotonic()
    #: The example to report: the one that stopped the search, else the first divergence.
    pending: list[tuple[PlanT, RunT, int, float]] = []
    strategy = role.plans()
    shrink_runs = [0]
    phase = ["examples"]

    def report() -> None:
        if progress is not None:
            progress(
                SearchProgress(
                    phase[0],
                    time.monotonic() - started,
                    result.examples,
                    max_examples,
                    sum(v for k, v in result.verdicts.items() if k.finding),
                    shrink_runs[0],
                    seconds,
                )
            )

    def run_one(data: st.DataObject) -> None:
        # Drawn first, whatever happens next: Hypothesis replays a failing example and checks
        # that it draws the same.
        drawn = data.draw(strategy)
        if result.stopped:
            # Hypothesis replays a failing example once more: do not run it again.
            raise StopSearch(result.stopped)
        from_model = bool(guided) and result.examples % 2 == 0
        plan = interleaved(guided, result.examples, drawn)
        if seconds is not None and time.monotonic() - started > seconds:
            result.stopped = Stopped.BUDGET
            raise StopSearch(Stopped.BUDGET)
        if halt is not None and halt():
            result.stopped = Stopped.HALTED
            raise StopSearch(Stopped.HALTED)
        run = role.perform(plan)
        verdict = role.verdict(run)
        result.examples += 1
        result.guided_examples += from_model
        result.verdicts[verdict] += 1
        for label, value in role.steering(run).items():
            target(value, label=label)
        if on_example is not None:
            on_example(result.examples, run)
        unjudged = role.unjudged(run)
        if unjudged is not None:
            result.errors.append(f"plan ({role.describe(plan)}): {unjudged}")
            result.stopped = Stopped.UNDECIDED
            raise StopSearch(Stopped.UNDECIDED)
        if not verdict.finding:
            return
        found = (plan, run, result.examples, time.monotonic() - started)
        if verdict is Verdict.VIOLATION or stop_at is StopAt.FINDING:
            pending[:] = [found]
            result.stopped = Stopped.FINDING
            if on_finding is not None:
                on_finding()
            raise StopSearch(verdict)
        # A divergence: kept (the first one), and the search goes on for a violation.
        if not pending:
            pending.append(found)
        result.divergent_examples += 1

    with _Ticker(report if progress is not None else None, PROGRESS_INTERVAL_S):
        drive_examples(run_one, max_examples=max_examples, seed=seed)
        result.stopped = result.stopped or Stopped.EXAMPLES
        if pending and not result.errors:
            phase[0] = "shrink"
            plan, run, number, found_at = pending[0]
            #: The plan and run of each try that failed the same way: the last is the best.
            failed = [(plan, run)]
            if shrink:

                def fails(candidate: PlanT) -> bool:
                    tried = role.perform(candidate)
                    shrink_runs[0] += 1
                    if on_shrink is not None:
                        on_shrink(shrink_runs[0], tried)
                    if role.same_failure(run, tried):
                        failed.append((candidate, tried))
                        return True
                    return False

                shrink_greedily(
                    plan,
                    role.smaller_plans,
                    fails,
                    max_runs=max_shrink_runs,
                    more=lambda: shrink_until is None or time.monotonic() < shrink_until,
                )
            shrunk_plan, shrunk_run = failed[-1]
            result.finding = SearchFinding(
                run, number, found_at, shrunk_run, shrunk_plan, shrink_runs[0]
            )
            result.finding_verdict = role.verdict(shrunk_run)
    result.seconds = time.monotonic() - started
    return result


__all__ = [
    "PROGRESS_INTERVAL_S",
    "RunCallback",
    "SearchFinding",
    "SearchProgress",
    "SearchResult",
    "StopAt",
    "StopSearch",
    "Stopped",
    "drive_examples",
    "interleaved",
    "search",
    "shrink_greedily",
]
