"""The search: Hypothesis over recovery plans, with the real Java client as the recovering w2.

An example is a :class:`~.plans.RecoveryPlan`: w1's adds (how many entries, which bookie got
each before the recovery, which after, which never) and the proxies' schedule, which decides
for each frame the Java client sends whether the proxy forwards it, drops it, or holds it
until ``k`` other frames have passed through the proxies (in either direction, at any proxy).
Frames are named by what they are (the fence read to b3, the recovery read of e0 to b2...),
never by arrival index or txnId: the client sends its fence reads in no fixed order (issue 8),
so only a frame's meaning makes a schedule replayable. A frame no decision names (a second
read of the same entry to the same bookie, say) is forwarded.

Where the examples come from: Hypothesis' generator, and, when the caller passes them, the
plans the model's explorer read off traces that reach a violation in the model
(:mod:`.guidance`): every other example is then the next of those, in the explorer's order
(shortest trace first), cycling. Nothing is built in: no recipe comes first.

Every request of the ledger is held on arrival by a rule; :class:`ScheduleController`, a
thread beside the proxies, applies the decisions. A hold is released after ``max_hold_s``
even if ``k`` frames never come (the client may be waiting on that very frame), so no run
hangs. Each example is one recovery of a fresh ledger in one :class:`~.scenario.
RecoverySession`, judged by :func:`~.story.judge`. The first example that ends in a violation
or a divergence stops the search and is shrunk on the live cluster (:func:`shrink_finding`:
greedy, one simplification at a time, each candidate a real run; Hypothesis' own shrinker
would spend hundreds of them). An example whose schedule was not applied is undecided and
stops the search: it is never counted clean.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from adapters.netproxy import BookieProxy, FrameRecord, Hold, NotHeld, Operation, ProxyGroup
from adapters.netproxy.policy import FrameMatch
from conformance.errors import ConformanceError
from conformance.javaclient.observed import frame_kind
from conformance.javaclient.plans import (
    BOOKIES,
    DROP,
    FORWARD,
    Choice,
    FrameKey,
    FrameSchedule,
    PlanError,
    RecoveryPlan,
    WriterPlan,
    hold,
    searched_frames,
    writer_from_phases,
)
from conformance.javaclient.scenario import Arrangement
from conformance.javaclient.story import Judgement, RecoveryRecord, judge
from conformance.verdict import Verdict


def choices(max_after: int = 4) -> st.SearchStrategy[Choice]:
    return st.one_of(st.just(FORWARD), st.just(DROP), st.integers(1, max_after).map(hold))


def frame_schedules(writer: WriterPlan, max_after: int = 4) -> st.SearchStrategy[FrameSchedule]:
    """A decision for each frame a recovery of ``writer``'s ledger may send."""
    return st.fixed_dictionaries({key: choices(max_after) for key in searched_frames(writer)}).map(
        lambda decisions: FrameSchedule(decisions).without_forwards()
    )


_PHASES = ("before", "after", "lost")


@st.composite
def writer_plans(draw: st.DrawFn, max_entries: int = 2) -> WriterPlan:
    """w1's part: 0 or 1 acked entries, then 1..``max_entries`` unconfirmed ones, each reaching
    each bookie before the recovery, after it, or never."""
    acked = draw(st.integers(0, 1))
    entries = draw(st.integers(1, max_entries))
    phases = {
        (entry, bookie): draw(st.sampled_from(_PHASES))
        for entry in range(acked, acked + entries)
        for bookie in BOOKIES
    }
    return writer_from_phases(phases, entries, acked)


def generated_plans(max_entries: int = 2) -> st.SearchStrategy[RecoveryPlan]:
    return writer_plans(max_entries).flatmap(
        lambda writer: frame_schedules(writer).map(lambda schedule: RecoveryPlan(writer, schedule))
    )


def interleaved(guided: Sequence[RecoveryPlan], number: int, drawn: RecoveryPlan) -> RecoveryPlan:
    """Example ``number`` (0-based): with ``guided`` plans, every other example is the next of
    them in turn (cycling), the rest Hypothesis' (``drawn``). Hypothesis draws a plan for
    every example all the same: its generation must not depend on the example's number."""
    if guided and number % 2 == 0:
        return guided[(number // 2) % len(guided)]
    return drawn


def key_of(record: FrameRecord, names: Mapping[str, str] | None = None) -> FrameKey | None:
    """What ``record`` is, with its bookie named ``names[proxy]`` (default: the proxy's name)."""
    info = record.info
    if info.entry_id is None:
        return None
    bookie = record.proxy if names is None else names.get(record.proxy, record.proxy)
    return FrameKey(frame_kind(record).value, bookie, info.entry_id)


class ScheduleController:
    """Holds every request of ``ledger_id`` at the proxies and applies ``schedule`` to each.

    Use it as a context manager around the recovery; on exit the rules go and every frame
    still held is released (so the log ends with what really happened).
    """

    def __init__(
        self,
        group: ProxyGroup,
        proxies: Mapping[str, BookieProxy],
        ledger_id: int,
        schedule: FrameSchedule,
        *,
        max_hold_s: float = 2.0,
        poll_s: float = 0.005,
        names: Mapping[str, str] | None = None,
    ) -> None:
        """``names``: proxy name -> the bookie's name in ``schedule`` (a writer run names
        bookies by their position in the ledger's first ensemble)."""
        self.names = names
        self.group = group
        self.proxies = proxies
        self.ledger_id = ledger_id
        self.schedule = schedule
        self.max_hold_s = max_hold_s
        self.poll_s = poll_s
        #: ``(frame description, what was done)``, in the order decided.
        self.decisions: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self._seen: set[FrameKey] = set()
        self._decided: set[int] = set()
        self._holding: dict[int, tuple[FrameRecord, int, float]] = {}
        self._rules: list[tuple[BookieProxy, int]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ScheduleController:
        match = FrameMatch.request(ledger_id=self.ledger_id)
        for proxy in self.proxies.values():
            self._rules.append((proxy, proxy.add_rule(match, Hold())))
        self._thread = threading.Thread(target=self._run, name="schedule-controller", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10.0)
            if self._thread.is_alive():
                self.errors.append("the schedule controller did not stop within 10 s")
        for proxy, rule_id in self._rules:
            with contextlib.suppress(Exception):
                proxy.remove_rule(rule_id)
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.release_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.step()
            except Exception as exc:  # the controller must not die silently
                self.errors.append(repr(exc))
                return
            time.sleep(self.poll_s)

    def step(self) -> None:
        """Decide the newly held frames and release the holds that are due (one pass)."""
        now = time.monotonic()
        held = sorted(
            (frame for proxy in self.proxies.values() for frame in proxy.held()),
            key=lambda frame: frame.frame_id,
        )
        for frame in held:
            if frame.frame_id not in self._decided:
                self._decide(frame, now)
        if self._holding:
            last = self.group.mark()
            for frame_id, (frame, after, since) in sorted(self._holding.items()):
                passed = last - frame_id
                due = passed >= after or now - since > self.max_hold_s
                if due and self._behind(frame) is None:
                    del self._holding[frame_id]
                    self._release(frame)

    def _behind(self, frame: FrameRecord) -> int | None:
        """The earlier add still held on ``frame``'s connection, if ``frame`` is an add: it
        waits for it. A hold must not reorder a client's adds to one bookie: TCP keeps a
        connection's frames in order, and the spec's channels keep a client's adds to a
        bookie in order (``IsEarliestMsg``); a reordering the spec forbids would be the
        harness's divergence, not the client's. Reads may overtake (the spec keeps no order
        for them, and a bookie serves them on other threads anyway)."""
        if frame.info.operation is not Operation.ADD_ENTRY:
            return None
        for frame_id, (other, _after, _since) in self._holding.items():
            if (
                frame_id < frame.frame_id
                and other.proxy == frame.proxy
                and other.connection_id == frame.connection_id
                and other.info.operation is Operation.ADD_ENTRY
            ):
                return frame_id
        return None

    def _decide(self, frame: FrameRecord, now: float) -> None:
        self._decided.add(frame.frame_id)
        key = key_of(frame, self.names)
        choice = FORWARD
        if key is not None and key not in self._seen:
            self._seen.add(key)
            choice = self.schedule.choice(key)
        self.decisions.append((frame.describe(), choice.describe()))
        if choice.action == "drop":
            with contextlib.suppress(NotHeld):
                self.proxies[frame.proxy].discard(frame.frame_id)
        elif choice.action == "hold":
            self._holding[frame.frame_id] = (frame, choice.after, now)
        elif self._behind(frame) is not None:
            self._holding[frame.frame_id] = (frame, 0, now)  # released right after it
        else:
            self._release(frame)

    def _release(self, frame: FrameRecord) -> None:
        with contextlib.suppress(NotHeld):
            self.proxies[frame.proxy].release(frame.frame_id)


class Recoveries(Protocol):
    """What the search needs of a :class:`~.scenario.RecoverySession`."""

    @property
    def group(self) -> ProxyGroup: ...

    @property
    def proxies(self) -> Mapping[str, BookieProxy]: ...

    def recover(self, arrange: Arrangement, writer: WriterPlan) -> RecoveryRecord: ...


@dataclass
class ExampleRun:
    """One plan run on the session and judged (``judgement`` None: it could not be judged)."""

    plan: RecoveryPlan
    record: RecoveryRecord
    judgement: Judgement | None
    #: ``(frame, what the controller did)`` in the order decided.
    decisions: list[tuple[str, str]]
    seconds: float
    #: Why the schedule was not (wholly) applied: the example is undecided, never clean.
    unapplied: str | None = None

    @property
    def verdict(self) -> str:
        if self.unapplied is not None or self.judgement is None:
            return Verdict.UNDECIDED.value
        return self.judgement.outcome.verdict

    @property
    def finding(self) -> bool:
        return Verdict.named(self.verdict).finding


def run_plan(session: Recoveries, plan: RecoveryPlan, *, max_hold_s: float = 1.5) -> ExampleRun:
    """Carry out ``plan`` once on ``session`` (a fresh ledger) and judge what happened."""
    controllers: list[ScheduleController] = []

    @contextlib.contextmanager
    def arranged(ledger_id: int) -> Iterator[object]:
        with ScheduleController(
            session.group, session.proxies, ledger_id, plan.schedule, max_hold_s=max_hold_s
        ) as controller:
            controllers.append(controller)
            yield controller

    started = time.monotonic()
    record = session.recover(arranged, plan.writer)
    unapplied = unapplied_reason(controllers)
    # A schedule that was not applied is never judged: that would pass a schedule never tried.
    judgement = None if unapplied is not None else judge(record)
    decisions = controllers[0].decisions if controllers else []
    return ExampleRun(
        plan, record, judgement, decisions, time.monotonic() - started, unapplied=unapplied
    )


@dataclass
class SearchFinding:
    #: The example that failed, as found.
    found: ExampleRun
    #: Its number (1-based) and when, since the search started.
    example: int
    seconds_to_find: float
    #: The smallest plan that still fails the same way (``found`` when nothing smaller did),
    #: and how many runs shrinking took.
    shrunk: ExampleRun
    shrink_runs: int = 0

    @property
    def judgement(self) -> Judgement:
        assert self.shrunk.judgement is not None
        return self.shrunk.judgement

    @property
    def plan(self) -> RecoveryPlan:
        return self.shrunk.plan


@dataclass
class SearchResult:
    examples: int = 0
    finding: SearchFinding | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    #: Why examples could not be judged (the schedule was not applied); the search stops.
    errors: list[str] = field(default_factory=list)
    #: Examples drawn from the model explorer's plans, and from the generator.
    guided_examples: int = 0
    seconds: float = 0.0
    #: Why the search stopped: "finding", "examples", "budget", "undecided".
    stopped: str = ""
    #: Examples that diverged (the search went on looking for a violation).
    divergent_examples: int = 0

    @property
    def verdict(self) -> str:
        """A finding stands; otherwise clean only when examples ran and none was undecided."""
        if self.finding is not None:
            return self.finding.judgement.outcome.verdict
        if self.errors or self.examples == 0:
            return Verdict.UNDECIDED.value
        return Verdict.CLEAN.value


class StopSearch(ConformanceError, AssertionError):
    """Ends the Hypothesis run: the search has decided or spent its budget (an
    AssertionError, as Hypothesis expects of a failing example)."""


ExampleCallback = Callable[[int, ExampleRun], None]


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


def search(
    session: Recoveries,
    *,
    max_examples: int = 20,
    seconds: float | None = None,
    seed: int | None = None,
    guided: Sequence[RecoveryPlan] = (),
    max_entries: int = 2,
    max_hold_s: float = 1.5,
    shrink: bool = True,
    stop_at: str = "violation",
    on_example: ExampleCallback | None = None,
) -> SearchResult:
    """Run up to ``max_examples`` plans (or until ``seconds`` are spent) on ``session``.

    ``stop_at="violation"`` (the default): a divergence is kept (the first) and the search
    goes on, as a client that diverges from the spec's may or may not lose data; the first
    violation stops it. ``"finding"``: the first violation or divergence stops it. The
    example reported (the violation, else the first divergence) is shrunk on the session.
    No plan is built in: the examples come from Hypothesis' generator and, given
    ``guided``, from the model's explorer."""
    if stop_at not in ("violation", "finding"):
        raise ValueError(f"stop_at is 'violation' or 'finding', not {stop_at!r}")
    result = SearchResult()
    started = time.monotonic()
    guided_set = set(map(_plan_key, guided))
    #: The example to report: the violation that stopped the search, else the first divergence.
    pending: list[tuple[ExampleRun, int, float]] = []

    def run_one(data: st.DataObject) -> None:
        # Drawn first, whatever happens next: Hypothesis replays a failing example and checks
        # that it draws the same.
        drawn = data.draw(generated_plans(max_entries))
        if result.stopped:
            # Hypothesis replays a failing example once more: do not run it again.
            raise StopSearch(result.stopped)
        plan = interleaved(guided, result.examples, drawn)
        if seconds is not None and time.monotonic() - started > seconds:
            result.stopped = "budget"
            raise StopSearch("budget")
        run = run_plan(session, plan, max_hold_s=max_hold_s)
        result.examples += 1
        result.guided_examples += _plan_key(plan) in guided_set
        result.verdicts[run.verdict] = result.verdicts.get(run.verdict, 0) + 1
        if on_example is not None:
            on_example(result.examples, run)
        if run.unapplied is not None:
            result.errors.append(f"plan ({'; '.join(plan.describe())}): {run.unapplied}")
            result.stopped = "undecided"
            raise StopSearch("undecided")
        if not run.finding:
            return
        found = (run, result.examples, time.monotonic() - started)
        if run.verdict == Verdict.VIOLATION.value or stop_at == "finding":
            pending[:] = [found]
            result.stopped = "finding"
            raise StopSearch(run.verdict)
        # A divergence: kept (the first one), and the search goes on for a violation.
        if not pending:
            pending.append(found)
        result.divergent_examples += 1

    drive_examples(run_one, max_examples=max_examples, seed=seed)
    result.stopped = result.stopped or "examples"
    result.seconds = time.monotonic() - started
    if pending and not result.errors:
        run, number, found_at = pending[0]
        shrunk, runs = shrink_finding(session, run, max_hold_s=max_hold_s) if shrink else (run, 0)
        result.finding = SearchFinding(run, number, found_at, shrunk, runs)
    return result


def _plan_key(plan: RecoveryPlan) -> tuple[WriterPlan, tuple[tuple[FrameKey, Choice], ...]]:
    return plan.writer, tuple(sorted(plan.schedule.without_forwards().decisions.items()))


def smaller_plans(plan: RecoveryPlan) -> Iterator[RecoveryPlan]:
    """Each plan one simplification away from ``plan``: a frame decision back to forward, a
    hold made shorter, one of w1's adds left out, its last unconfirmed entry or its acked
    entry left out."""
    decisions = dict(plan.schedule.without_forwards().decisions)
    for key, choice in sorted(decisions.items()):
        yield _with(plan, schedule={k: c for k, c in decisions.items() if k != key})
        if choice.action == "hold" and choice.after > 1:
            yield _with(plan, schedule={**decisions, key: hold(choice.after - 1)})
    writer = plan.writer
    for add in writer.adds:
        smaller = _writer(writer, adds=tuple(a for a in writer.adds if a != add))
        if smaller is not None:
            yield _with(plan, writer=smaller)
    if writer.entries > 1:
        last = writer.acked + writer.entries - 1
        smaller = _writer(
            writer,
            entries=writer.entries - 1,
            adds=tuple(a for a in writer.adds if a.entry != last),
        )
        if smaller is not None:
            yield _with(plan, writer=smaller, schedule=_frames_of(decisions, smaller))
    if writer.acked:
        smaller = _writer(
            writer,
            acked=0,
            adds=tuple(dataclasses.replace(a, entry=a.entry - writer.acked) for a in writer.adds),
        )
        if smaller is not None:
            yield _with(plan, writer=smaller, schedule=_shift(decisions, -writer.acked))


def _writer(writer: WriterPlan, **changes: object) -> WriterPlan | None:
    try:
        return dataclasses.replace(writer, **changes)  # type: ignore[arg-type]
    except PlanError:
        return None


def _with(
    plan: RecoveryPlan,
    *,
    writer: WriterPlan | None = None,
    schedule: Mapping[FrameKey, Choice] | None = None,
) -> RecoveryPlan:
    return RecoveryPlan(
        writer or plan.writer,
        plan.schedule if schedule is None else FrameSchedule(dict(schedule)),
        origin=f"shrunk from {plan.origin}"
        if not plan.origin.startswith("shrunk")
        else plan.origin,
    )


def _frames_of(decisions: Mapping[FrameKey, Choice], writer: WriterPlan) -> dict[FrameKey, Choice]:
    keep = set(searched_frames(writer))
    return {k: c for k, c in decisions.items() if k in keep}


def _shift(decisions: Mapping[FrameKey, Choice], by: int) -> dict[FrameKey, Choice]:
    return {
        (k if k.entry_id < 0 else dataclasses.replace(k, entry_id=k.entry_id + by)): c
        for k, c in decisions.items()
        if k.entry_id < 0 or k.entry_id + by >= 0
    }


def same_failure(a: ExampleRun, b: ExampleRun) -> bool:
    """Whether ``b`` fails as ``a`` did: the same verdict, and for a violation the same
    invariants broken."""
    if a.judgement is None or b.judgement is None or a.verdict != b.verdict:
        return False
    if a.verdict == Verdict.VIOLATION.value:
        return sorted(a.judgement.outcome.violations) == sorted(b.judgement.outcome.violations)
    return True


def shrink_finding(
    session: Recoveries,
    found: ExampleRun,
    *,
    max_runs: int = 30,
    max_hold_s: float = 1.5,
) -> tuple[ExampleRun, int]:
    """Greedy shrinking on the live target: try each :func:`smaller_plans` candidate, keep the
    first that fails the same way, start again from it; at most ``max_runs`` runs. A candidate
    that passes (the failure needs what it removed, or the timing went the other way this
    time) is simply not taken."""
    best, runs = found, 0
    improved = True
    while improved and runs < max_runs:
        improved = False
        for candidate in smaller_plans(best.plan):
            if runs >= max_runs:
                break
            run = run_plan(session, candidate, max_hold_s=max_hold_s)
            runs += 1
            if same_failure(found, run):
                best, improved = run, True
                break
    return best, runs


def unapplied_reason(controllers: list[ScheduleController]) -> str | None:
    """Why the schedule was not applied to the run, or None."""
    if not controllers:
        return "the recovery never arranged the schedule (no controller ran)"
    errors = [e for c in controllers for e in c.errors]
    if errors:
        return "the schedule controller failed: " + "; ".join(errors)
    return None


__all__ = [
    "ExampleRun",
    "Recoveries",
    "ScheduleController",
    "SearchFinding",
    "SearchResult",
    "StopSearch",
    "drive_examples",
    "frame_schedules",
    "generated_plans",
    "interleaved",
    "key_of",
    "run_plan",
    "same_failure",
    "search",
    "shrink_finding",
    "smaller_plans",
    "unapplied_reason",
    "writer_plans",
]
