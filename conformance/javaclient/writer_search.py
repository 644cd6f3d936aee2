"""The search over writer examples: Hypothesis draws plans, the model's danger plans come
first in turn, every example is judged, and a finding is shrunk on the live cluster.

Every other example, while they last, is the next of the model's plans
(:func:`~.writer_guidance.writer_guided_plans`); the others are drawn: 1..4 entries and up to
``max_faults`` decisions, each a drop or a hold of one add (bookie, entry), the bookie any of
the cluster's (a bookie outside the entry's first write set gets the entry only after an
ensemble change, which is what makes those decisions interesting). A divergence is kept and
the search goes on; the first violation stops it. What the examples reached is counted
(:class:`WriterCoverage`): the model's actions taken, ensemble changes per example, the
client's callbacks and closes by outcome.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from adapters.javaclient.pipelined_adds import code_name
from conformance.javaclient.plans import DROP, Choice, FrameKey, FrameSchedule, hold
from conformance.javaclient.search import StopSearch, drive_examples
from conformance.javaclient.writer_plans import MAX_ENTRIES, WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_session import WriterExample, WriterSession, run_writer_plan
from conformance.verdict import Verdict


@st.composite
def writer_run_plans(draw: st.DrawFn, shape: WriterShape, max_faults: int = 3) -> WriterRunPlan:
    entries = draw(st.integers(1, MAX_ENTRIES))
    keys = st.tuples(st.sampled_from(shape.names), st.integers(0, entries - 1))
    chosen = draw(st.lists(keys, max_size=max_faults, unique=True))
    choices = st.one_of(st.just(DROP), st.integers(1, 4).map(hold))
    decisions: dict[FrameKey, Choice] = {
        add_key(bookie, entry): draw(choices) for bookie, entry in chosen
    }
    delayed = draw(st.integers(0, entries - 1)) if entries > 1 and draw(st.booleans()) else 0
    # Around the add timeout, which fires 1-2 s after the send (the client checks timeouts
    # once a second): the delayed adds go out while the client changes its
    # ensemble (#4097's window), or just before or after it.
    delay_ms = draw(st.integers(700, 2500)) if delayed else 0
    return WriterRunPlan(
        shape, entries, FrameSchedule(decisions), delayed=delayed, delay_ms=delay_ms
    )


@dataclass
class WriterCoverage:
    """What the examples reached, summed."""

    examples: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    #: Ensemble changes per example -> how many examples made that many.
    ensemble_changes: dict[int, int] = field(default_factory=dict)
    #: How the client's add callbacks and closes ended, by BookKeeper's code name.
    callbacks: dict[str, int] = field(default_factory=dict)
    closes: dict[str, int] = field(default_factory=dict)
    entries_acknowledged: int = 0
    #: Examples whose metadata shows a bookie coming back into the ledger's ensemble.
    ensembles_repeated: int = 0

    def add(self, run: WriterExample) -> None:
        self.examples += 1
        judgement = run.judgement
        if judgement is not None:
            for action, count in judgement.actions.items():
                self.actions[action] = self.actions.get(action, 0) + count
            changes = judgement.ensemble_changes
            self.ensemble_changes[changes] = self.ensemble_changes.get(changes, 0) + 1
        for outcome in run.record.outcomes:
            name = "no callback" if outcome.code is None else code_name(outcome.code)
            self.callbacks[name] = self.callbacks.get(name, 0) + 1
            self.entries_acknowledged += outcome.acknowledged
        close = "OK" if run.record.close_error is None else run.record.close_error.split(":")[0]
        self.closes[close] = self.closes.get(close, 0) + 1
        ensembles = [bookies for _first, bookies in run.record.segments]
        if any(set(b) == set(a) for i, a in enumerate(ensembles) for b in ensembles[i + 1 :]):
            self.ensembles_repeated += 1

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
            "callbacks": dict(sorted(self.callbacks.items())),
            "closes": dict(sorted(self.closes.items())),
            "entries_acknowledged": self.entries_acknowledged,
            "examples_where_a_bookie_came_back": self.ensembles_repeated,
        }


@dataclass
class WriterFinding:
    found: WriterExample
    example: int
    seconds_to_find: float
    shrunk: WriterExample
    shrink_runs: int


@dataclass
class WriterSearchResult:
    examples: int = 0
    guided_examples: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    coverage: WriterCoverage = field(default_factory=WriterCoverage)
    finding: WriterFinding | None = None
    stopped: str | None = None
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    divergent_examples: int = 0

    @property
    def verdict(self) -> str:
        if self.finding is not None:
            return self.finding.shrunk.verdict
        if self.errors or not self.examples:
            return Verdict.UNDECIDED.value
        if self.verdicts.get(Verdict.UNDECIDED.value):
            return Verdict.UNDECIDED.value
        return Verdict.CLEAN.value


WriterExampleCallback = Callable[[int, WriterExample], None]


def writer_search(
    session: WriterSession,
    *,
    max_examples: int = 20,
    seconds: float | None = None,
    seed: int | None = None,
    guided: Sequence[WriterRunPlan] = (),
    max_faults: int = 3,
    shrink: bool = True,
    on_example: WriterExampleCallback | None = None,
) -> WriterSearchResult:
    """Run writer examples on ``session`` until ``max_examples`` or ``seconds`` run out, or
    a violation (see the module docstring)."""
    shape = session.options.shape
    result = WriterSearchResult()
    started = time.monotonic()
    pending: list[tuple[WriterExample, int, float]] = []
    queue = list(guided)

    def run_one(data: st.DataObject) -> None:
        drawn = data.draw(writer_run_plans(shape, max_faults))
        if result.stopped:
            raise StopSearch(result.stopped)
        from_model = bool(queue) and result.examples % 2 == 0
        plan = queue.pop(0) if from_model else drawn
        if seconds is not None and time.monotonic() - started > seconds:
            result.stopped = "budget"
            raise StopSearch("budget")
        run = run_writer_plan(session, plan)
        result.examples += 1
        result.guided_examples += from_model
        result.verdicts[run.verdict] = result.verdicts.get(run.verdict, 0) + 1
        result.coverage.add(run)
        if on_example is not None:
            on_example(result.examples, run)
        if run.unapplied is not None:
            result.errors.append(f"plan ({'; '.join(plan.describe())}): {run.unapplied}")
            result.stopped = "undecided"
            raise StopSearch("undecided")
        if run.verdict not in (Verdict.VIOLATION.value, Verdict.DIVERGENCE.value):
            return
        found = (run, result.examples, time.monotonic() - started)
        if run.verdict == Verdict.VIOLATION.value:
            pending[:] = [found]
            result.stopped = "finding"
            raise StopSearch(run.verdict)
        if not pending:
            pending.append(found)
        result.divergent_examples += 1

    drive_examples(run_one, max_examples=max_examples, seed=seed)
    result.stopped = result.stopped or "examples"
    result.seconds = time.monotonic() - started
    if pending and not result.errors:
        run, number, found_at = pending[0]
        shrunk, runs = shrink_writer_finding(session, run) if shrink else (run, 0)
        result.finding = WriterFinding(run, number, found_at, shrunk, runs)
    return result


def smaller_writer_plans(plan: WriterRunPlan) -> Iterator[WriterRunPlan]:
    """Each plan with one thing taken away: a fault, a hold made shorter, the delay, the last
    entry."""
    decisions = dict(plan.schedule.decisions)
    for key in sorted(decisions):
        rest = {k: c for k, c in decisions.items() if k != key}
        yield dataclasses.replace(plan, schedule=FrameSchedule(rest))
    for key, choice in sorted(decisions.items()):
        if choice.action == "hold" and choice.after > 1:
            shorter = {**decisions, key: hold(choice.after - 1)}
            yield dataclasses.replace(plan, schedule=FrameSchedule(shorter))
    if plan.delayed:
        yield dataclasses.replace(plan, delayed=0, delay_ms=0)
    if plan.entries > 1:
        last = plan.entries - 1
        kept = {k: c for k, c in decisions.items() if k.entry_id < last}
        delayed = min(plan.delayed, last - 1)
        yield WriterRunPlan(
            plan.shape,
            last,
            FrameSchedule(kept),
            plan.origin,
            delayed=delayed,
            delay_ms=plan.delay_ms if delayed else 0,
        )


def same_writer_failure(a: WriterExample, b: WriterExample) -> bool:
    """Whether ``b`` fails as ``a`` did: the same verdict, and for a violation the same
    invariant broken."""
    if a.verdict != b.verdict:
        return False
    if a.verdict != Verdict.VIOLATION.value or a.judgement is None or b.judgement is None:
        return True
    names = {v.split(" ")[0] for v in a.judgement.outcome.violations}
    return bool(names & {v.split(" ")[0] for v in b.judgement.outcome.violations})


def shrink_writer_finding(
    session: WriterSession, found: WriterExample, *, max_runs: int = 30
) -> tuple[WriterExample, int]:
    """Greedy shrinking on the live cluster: take the first smaller plan that fails the same
    way, until none does or ``max_runs`` plans were run."""
    best, runs = found, 0
    improved = True
    while improved and runs < max_runs:
        improved = False
        for smaller in smaller_writer_plans(best.plan):
            if runs >= max_runs:
                break
            runs += 1
            candidate = run_writer_plan(session, smaller)
            if same_writer_failure(found, candidate):
                best, improved = candidate, True
                break
    return best, runs


__all__ = [
    "WriterCoverage",
    "WriterFinding",
    "WriterSearchResult",
    "same_writer_failure",
    "shrink_writer_finding",
    "smaller_writer_plans",
    "writer_run_plans",
    "writer_search",
]
