"""The search: Hypothesis over a role's plans, with the real Java client in that role.

Where the examples come from: Hypothesis' generator (:meth:`~.role.Role.plans`) and, when the
caller passes them, the plans the model's explorer proposes (:meth:`~.role.Role.guided_plans`):
every other example is then the next of those, in the explorer's order, cycling. Nothing is
built in: no recipe comes first.

Each example is one run of a plan on a fresh ledger in one :class:`~.session.ClientSession`
(:func:`run_plan`: the :class:`~.controller.ScheduleController` applies the plan's schedule at
the proxies while the role carries the plan out), judged by the role. ``StopAt.VIOLATION``
(the default): a divergence is kept (the first) and the search goes on, as a client that
diverges from the spec's may or may not lose data; the first violation stops it.
``StopAt.FINDING``: the first violation or divergence stops it. The example reported is shrunk on
the live cluster (:func:`shrink_finding`: greedy, one simplification at a time, each candidate
a real run; Hypothesis' own shrinker would spend hundreds of them). An example whose schedule
was not applied (the controller failed) is undecided and stops the search: it is never counted
clean. A fault event whose frame never came (its bookie never got that add: the client's
ensembles decide) did nothing: the run is judged as it happened, and the examples with such a
fault are counted (``untriggered_examples``).
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance.errors import ConformanceError
from conformance.javaclient.controller import ScheduleController, unapplied_reason
from conformance.javaclient.role import Example, PlanT, RecordT, Role, same_failure
from conformance.javaclient.session import ClientSession
from conformance.verdict import Verdict


def run_plan(
    session: ClientSession,
    role: Role[PlanT, RecordT],
    plan: PlanT,
    *,
    max_hold_s: float | None = None,
) -> Example[PlanT, RecordT]:
    """Carry out ``plan`` once on ``session`` (a fresh ledger) and judge what happened. A
    held frame is released after ``k`` other frames or at ``max_hold_s`` (the role's by
    default)."""
    hold_s = role.max_hold_s if max_hold_s is None else max_hold_s
    controllers: list[ScheduleController] = []

    @contextlib.contextmanager
    def arranged(ledger_id: int, names: Mapping[str, str]) -> Iterator[object]:
        # Only a plan with fault events needs the session's cluster (a stand-in has none).
        executor = session.faults(names) if plan.has_fault_events else None
        with ScheduleController(
            session.group,
            session.proxies,
            ledger_id,
            plan.schedule,
            max_hold_s=hold_s,
            names=names,
            executor=executor,
        ) as controller:
            controllers.append(controller)
            yield controller

    started = time.monotonic()
    record = role.perform(session, plan, arranged)
    unapplied = unapplied_reason(controllers)
    # A schedule that was not applied is never judged: that would pass a schedule never tried.
    judgement = None if unapplied is not None else role.judge(record)
    decisions = controllers[0].decisions if controllers else []
    return Example(
        plan,
        record,
        judgement,
        decisions,
        time.monotonic() - started,
        unapplied=unapplied,
        new_coverage=session.measure_coverage(),
        faults=tuple(fault for controller in controllers for fault in controller.faults),
        untriggered=tuple(event for c in controllers for event in c.untriggered),
    )


@dataclass
class Coverage:
    """What the examples reached, summed: the model's actions the stories took, ensemble
    changes per example, and the role's own tallies (the client's callbacks and closes, its
    recoveries' outcomes...)."""

    examples: int = 0
    actions: Counter[str] = field(default_factory=Counter)
    #: Ensemble changes per example -> how many examples made that many.
    ensemble_changes: Counter[int] = field(default_factory=Counter)
    named: dict[str, Counter[str]] = field(default_factory=dict)
    summed: Counter[str] = field(default_factory=Counter)

    def add(self, example: Example[Any, Any], tallies: Mapping[str, Sequence[str] | int]) -> None:
        self.examples += 1
        judgement = example.judgement
        if judgement is not None:
            self.actions.update(judgement.actions)
            self.ensemble_changes[judgement.ensemble_changes] += 1
        for name, tally in tallies.items():
            if isinstance(tally, int):
                self.summed[name] += tally
            else:
                self.named.setdefault(name, Counter()).update(tally)

    def as_dict(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "model_actions": dict(sorted(self.actions.items())),
            "ensemble_changes_per_example": {
                str(k): v for k, v in sorted(self.ensemble_changes.items())
            },
            "examples_with_an_ensemble_change": sum(
                v for k, v in self.ensemble_changes.items() if k > 0
            ),
            **{name: dict(sorted(counts.items())) for name, counts in sorted(self.named.items())},
            **dict(sorted(self.summed.items())),
        }


@dataclass
class SearchFinding(Generic[PlanT, RecordT]):
    #: The example that failed, as found, its number (1-based) and when, since the start.
    found: Example[PlanT, RecordT]
    example: int
    seconds_to_find: float
    #: The smallest plan that still fails the same way (``found`` when nothing smaller did),
    #: and how many runs shrinking took.
    shrunk: Example[PlanT, RecordT]
    shrink_runs: int = 0

    @property
    def plan(self) -> PlanT:
        return self.shrunk.plan


@dataclass
class SearchResult(Generic[PlanT, RecordT]):
    examples: int = 0
    finding: SearchFinding[PlanT, RecordT] | None = None
    verdicts: Counter[Verdict] = field(default_factory=Counter)
    coverage: Coverage = field(default_factory=Coverage)
    #: Why examples could not be judged (the schedule was not applied); the search stops.
    errors: list[str] = field(default_factory=list)
    #: Examples drawn from the model explorer's plans.
    guided_examples: int = 0
    seconds: float = 0.0
    #: Why the search stopped (None: it has not).
    stopped: Stopped | None = None
    #: Examples that diverged (the search went on looking for a violation).
    divergent_examples: int = 0
    #: Examples with a fault event whose frame never came (judged as they happened).
    untriggered_examples: int = 0

    @property
    def verdict(self) -> Verdict:
        """A finding stands; otherwise clean only when examples ran and every one was."""
        if self.finding is not None:
            return self.finding.shrunk.verdict
        if self.errors or self.examples == 0 or self.verdicts[Verdict.UNDECIDED]:
            return Verdict.UNDECIDED
        return Verdict.CLEAN


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
    UNDECIDED = "undecided"  # an example's schedule was not applied


class StopSearch(ConformanceError, AssertionError):
    """Ends the Hypothesis run: the search has decided or spent its budget (an
    AssertionError, as Hypothesis expects of a failing example)."""


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


ExampleCallback = Callable[[int, Example[Any, Any]], None]


def search(
    session: ClientSession,
    role: Role[PlanT, RecordT],
    *,
    max_examples: int = 20,
    seconds: float | None = None,
    seed: int | None = None,
    guided: Sequence[PlanT] = (),
    shrink: bool = True,
    stop_at: StopAt = StopAt.VIOLATION,
    on_example: ExampleCallback | None = None,
) -> SearchResult[PlanT, RecordT]:
    """Run up to ``max_examples`` plans of ``role`` (or until ``seconds`` are spent) on
    ``session`` (see the module docstring)."""
    if not isinstance(stop_at, StopAt):
        raise ValueError(f"stop_at is a StopAt ({', '.join(s.name for s in StopAt)}): {stop_at!r}")
    result: SearchResult[PlanT, RecordT] = SearchResult()
    started = time.monotonic()
    #: The example to report: the violation that stopped the search, else the first divergence.
    pending: list[tuple[Example[PlanT, RecordT], int, float]] = []
    strategy = role.plans()

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
        run = run_plan(session, role, plan)
        result.examples += 1
        result.guided_examples += from_model
        result.verdicts[run.verdict] += 1
        result.untriggered_examples += bool(run.untriggered)
        result.coverage.add(run, role.tallies(run))
        _steer(role, run)
        if on_example is not None:
            on_example(result.examples, run)
        if run.unapplied is not None:
            result.errors.append(f"plan ({'; '.join(plan.describe())}): {run.unapplied}")
            result.stopped = Stopped.UNDECIDED
            raise StopSearch(Stopped.UNDECIDED)
        if not run.finding:
            return
        found = (run, result.examples, time.monotonic() - started)
        if run.verdict is Verdict.VIOLATION or stop_at is StopAt.FINDING:
            pending[:] = [found]
            result.stopped = Stopped.FINDING
            raise StopSearch(run.verdict)
        # A divergence: kept (the first one), and the search goes on for a violation.
        if not pending:
            pending.append(found)
        result.divergent_examples += 1

    drive_examples(run_one, max_examples=max_examples, seed=seed)
    result.stopped = result.stopped or Stopped.EXAMPLES
    result.seconds = time.monotonic() - started
    if pending and not result.errors:
        run, number, found_at = pending[0]
        shrunk, runs = shrink_finding(session, role, run) if shrink else (run, 0)
        result.finding = SearchFinding(run, number, found_at, shrunk, runs)
    return result


def _steer(role: Role[Any, Any], run: Example[Any, Any]) -> None:
    """Hypothesis' targets: the client's code an example covered first, its ensemble changes,
    and the role's own dangers (:meth:`~.role.Role.steering`)."""
    if run.new_coverage is not None:
        target(run.new_coverage.score, label="new client coverage")
    if run.judgement is not None:
        target(float(run.judgement.ensemble_changes), label="ensemble changes")
        for label, value in role.steering(run).items():
            target(value, label=label)


def shrink_finding(
    session: ClientSession,
    role: Role[PlanT, RecordT],
    found: Example[PlanT, RecordT],
    *,
    max_runs: int = 30,
) -> tuple[Example[PlanT, RecordT], int]:
    """Greedy shrinking on the live target: try each of the role's smaller plans, keep the
    first that fails the same way, start again from it; at most ``max_runs`` runs. A candidate
    that passes (the failure needs what it removed, or the timing went the other way this
    time) is simply not taken."""
    best, runs = found, 0
    improved = True
    while improved and runs < max_runs:
        improved = False
        for candidate in role.smaller_plans(best.plan):
            if runs >= max_runs:
                break
            run = run_plan(session, role, candidate)
            runs += 1
            if same_failure(found, run):
                best, improved = run, True
                break
    return best, runs


__all__ = [
    "Coverage",
    "ExampleCallback",
    "SearchFinding",
    "SearchResult",
    "StopAt",
    "StopSearch",
    "Stopped",
    "drive_examples",
    "interleaved",
    "run_plan",
    "search",
    "shrink_finding",
]
