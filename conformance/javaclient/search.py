"""The search of the Java client's runs: a role of the real Java client as a value of the
kernel's :class:`~conformance.live.role.LiveRole`, searched by the kernel's one loop
(:func:`conformance.live.search.search`: Hypothesis over the role's plans, stop rules, greedy
shrinking on the live cluster, progress).

Where the examples come from: Hypothesis' generator (:meth:`~.role.Role.plans`) and, when the
caller passes them, the plans the model's explorer proposes (:meth:`~.role.Role.guided_plans`):
every other example is then the next of those, in the explorer's order, cycling. Nothing is
built in: no recipe comes first.

Each example is one run of a plan on a fresh ledger in one :class:`~.session.ClientSession`
(:func:`run_plan`: the :class:`~.controller.ScheduleController` applies the plan's schedule at
the proxies while the role carries the plan out, the session's fault injector carries out its
faults, and the record keeps them), judged by the role. ``StopAt.VIOLATION`` (the default): a
divergence is kept (the first) and the search goes on, as a client that diverges from the
spec's may or may not lose data; the first violation stops it. ``StopAt.FINDING``: the first
violation or divergence stops it. The example reported is shrunk on the live cluster (greedy,
one simplification at a time, each candidate a real run, at most 30). An example whose
schedule was not applied (the controller failed) is undecided and stops the search: it is
never counted clean. A fault event whose frame never came (its bookie never got that add: the
client's ensembles decide) did nothing: the run is judged as it happened, and the examples
with such a fault are counted (``untriggered_examples``).
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic

from hypothesis import strategies as st

from conformance.javaclient.controller import ScheduleController, unapplied_reason
from conformance.javaclient.delivery_order import with_delivery_order
from conformance.javaclient.role import Example, PlanT, RecordT, Role, same_failure
from conformance.javaclient.session import ClientSession, SessionFaults
from conformance.live import search as live
from conformance.live.search import SearchProgress, StopAt
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
    injectors: list[SessionFaults] = []

    @contextlib.contextmanager
    def arranged(ledger_id: int, names: Mapping[str, str]) -> Iterator[object]:
        # Only a plan with fault events needs the session's cluster (a stand-in has none).
        executor = session.faults(names) if plan.has_fault_events else None
        if executor is not None:
            injectors.append(executor)
        with ScheduleController(
            session.group,
            session.proxies,
            ledger_id,
            plan.schedule,
            max_hold_s=hold_s,
            names=names,
            executor=executor,
            metadata=session.ledger_writes(ledger_id),
        ) as controller:
            controllers.append(controller)
            yield controller

    started = time.monotonic()
    record = role.perform(session, plan, arranged)
    # Every fault injected and healed goes into the record that is judged and written.
    faults = [event for injector in injectors for event in injector.events]
    if faults:
        record = role.with_faults(record, faults)
    if controllers and controllers[0].metadata_writes:
        record = role.with_metadata_writes(record, controllers[0].metadata_writes)
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
class SearchResult(live.SearchResult[PlanT, Example[PlanT, RecordT]]):
    """The kernel's result of a Java-client search, with the coverage of its examples and the
    examples with a fault whose frame never came."""

    coverage: Coverage = field(default_factory=Coverage)
    #: Examples with a fault event whose frame never came (judged as they happened).
    untriggered_examples: int = 0


ExampleCallback = Callable[[int, Example[Any, Any]], None]

#: How many runs a search keeps for its shrinking (the finding's and the candidates' since).
_RUNS_KEPT = 8


@dataclass
class JavaClientSearch(Generic[PlanT, RecordT]):
    """A role of the Java client on a session, as the kernel searches it.

    Shrinking keeps the interleaving that failed: each smaller plan is tried with the delivery
    order its parent's run recorded (:func:`~.delivery_order.with_delivery_order`: the
    answers and the metadata writes as they reached the client). Without it a candidate that
    drops the very hold that made the window (#3005: b1's answer to e0 held while the
    change's metadata write is in flight) could fail the same way once by chance and be kept,
    and its finding then replays now and then (seen: 8 of 10); with it, the window the parent
    ran into is enforced in the candidate's run, and recorded again in its own order."""

    session: ClientSession
    role: Role[PlanT, RecordT]
    #: The latest runs (plan, record), looked up by the plan's identity when it is shrunk.
    _runs: list[tuple[PlanT, RecordT]] = field(default_factory=list)

    def plans(self) -> st.SearchStrategy[PlanT]:
        return self.role.plans()

    def smaller_plans(self, plan: PlanT) -> Iterator[PlanT]:
        parent = next((record for tried, record in self._runs if tried is plan), None)
        for candidate in self.role.smaller_plans(plan):
            yield candidate if parent is None else with_delivery_order(candidate, parent)

    def perform(self, plan: PlanT) -> Example[PlanT, RecordT]:
        run = run_plan(self.session, self.role, plan)
        self._runs = [*self._runs[-(_RUNS_KEPT - 1) :], (plan, run.record)]
        return run

    def verdict(self, run: Example[PlanT, RecordT]) -> Verdict:
        return run.verdict

    def unjudged(self, run: Example[PlanT, RecordT]) -> str | None:
        return run.unapplied

    def same_failure(self, found: Example[PlanT, RecordT], run: Example[PlanT, RecordT]) -> bool:
        return same_failure(found, run)

    def steering(self, run: Example[PlanT, RecordT]) -> Mapping[str, float]:
        """Hypothesis' targets: the client's code an example covered first, its ensemble
        changes, and the role's own dangers (:meth:`~.role.Role.steering`)."""
        targets: dict[str, float] = {}
        if run.new_coverage is not None:
            targets["new client coverage"] = run.new_coverage.score
        if run.judgement is not None:
            targets["ensemble changes"] = float(run.judgement.ensemble_changes)
            targets.update(self.role.steering(run))
        return targets

    def describe(self, plan: PlanT) -> str:
        return "; ".join(plan.describe())


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
    progress: Callable[[SearchProgress], None] | None = None,
    halt: Callable[[], bool] | None = None,
    on_finding: Callable[[], None] | None = None,
) -> SearchResult[PlanT, RecordT]:
    """Run up to ``max_examples`` plans of ``role`` (or until ``seconds`` are spent) on
    ``session`` (see the module docstring); ``halt`` and ``on_finding`` as the kernel's
    (:func:`conformance.live.search.search`: searches side by side)."""
    result: SearchResult[PlanT, RecordT] = SearchResult()

    def counted(number: int, run: Example[PlanT, RecordT]) -> None:
        result.untriggered_examples += bool(run.untriggered)
        result.coverage.add(run, role.tallies(run))
        if on_example is not None:
            on_example(number, run)

    live.search(
        JavaClientSearch(session, role),
        max_examples=max_examples,
        seconds=seconds,
        seed=seed,
        guided=guided,
        shrink=shrink,
        stop_at=stop_at,
        max_shrink_runs=SHRINK_RUNS,
        on_example=counted,
        progress=progress,
        into=result,
        halt=halt,
        on_finding=on_finding,
    )
    return result


#: Shrinking a finding takes at most this many runs (each a real run of the Java client).
SHRINK_RUNS = 30


__all__ = [
    "SHRINK_RUNS",
    "Coverage",
    "ExampleCallback",
    "JavaClientSearch",
    "SearchResult",
    "run_plan",
    "search",
]
