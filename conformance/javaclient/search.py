"""Hypothesis over proxy schedules, with the real Java client as the recovering w2.

A schedule decides, for each frame the Java client sends, what the proxy does with it:
forward it, drop it, or hold it until ``k`` other frames have passed through the proxies (in
either direction, at any proxy) and then release it. Frames are named by what they are (the
fence read to b3, the recovery read of e0 to b2...), not by arrival index or txnId: the
client sends its fence reads in no fixed order (issue 8), so only a frame's meaning makes a
schedule replayable. A frame no decision names (a second read of the same entry to the same
bookie, say) is forwarded.

Every request of the ledger is held on arrival by a rule; :class:`ScheduleController`, a
thread beside the proxies, applies the decisions. A hold is released after ``max_hold_s``
even if ``k`` frames never come (the client may be waiting on that very frame), so no run
hangs. Each example is one recovery of a fresh ledger in one :class:`~.scenario.
RecoverySession`, judged by :func:`~.story.judge`; an example that ends in a violation or a
divergence fails the property, and the failing schedule is reported (not shrunk: every
example is a real run of a second or more).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from adapters.netproxy import BookieProxy, FrameRecord, Hold, NotHeld, ProxyGroup
from adapters.netproxy.policy import FrameMatch
from conformance.errors import ConformanceError
from conformance.javaclient.observed import FrameKind, frame_kind
from conformance.javaclient.scenario import Arrangement
from conformance.javaclient.story import Judgement, RecoveryRecord, judge
from conformance.verdict import Verdict

BOOKIES = ("b1", "b2", "b3")


@dataclass(frozen=True, order=True)
class FrameKey:
    """What a frame is: its kind, its bookie, and its entry (BookKeeper's ids)."""

    kind: str
    bookie: str
    entry_id: int

    def describe(self) -> str:
        if self.entry_id < 0:
            return f"{self.kind} to {self.bookie}"
        return f"{self.kind} e{self.entry_id} to {self.bookie}"


@dataclass(frozen=True)
class Choice:
    """``forward``, ``drop``, or ``hold`` until ``after`` other frames have passed."""

    action: str
    after: int = 0

    def describe(self) -> str:
        if self.action == "hold":
            return f"hold until {self.after} other frames passed"
        return self.action


FORWARD = Choice("forward")
DROP = Choice("drop")


def hold(after: int) -> Choice:
    if after < 1:
        raise ValueError(f"a hold releases after >= 1 other frames, got {after}")
    return Choice("hold", after)


#: The frames a recovery of Defect 1's ledger sends: fence reads, reads of e0 (and of e1 when
#: e0 is recovered), and the write-back of e0.
SEARCHED_FRAMES: tuple[FrameKey, ...] = tuple(
    FrameKey(kind.value, bookie, entry)
    for kind, entry in (
        (FrameKind.FENCE_READ, -1),
        (FrameKind.RECOVERY_READ, 0),
        (FrameKind.RECOVERY_READ, 1),
        (FrameKind.RECOVERY_ADD, 0),
    )
    for bookie in BOOKIES
)


@dataclass(frozen=True)
class FrameSchedule:
    decisions: Mapping[FrameKey, Choice] = field(default_factory=dict)

    def choice(self, key: FrameKey) -> Choice:
        return self.decisions.get(key, FORWARD)

    def describe(self) -> list[str]:
        return [
            f"{key.describe()}: {choice.describe()}"
            for key, choice in sorted(self.decisions.items())
            if choice != FORWARD
        ] or ["forward everything"]


#: Issue 8's recipe as a per-frame schedule: the fence read to b3 is lost; the recovery read
#: of e0 to b2 waits until b3's speculative read and its answer have passed.
DEFECT_1_SCHEDULE = FrameSchedule(
    {
        FrameKey(FrameKind.FENCE_READ.value, "b3", -1): DROP,
        FrameKey(FrameKind.RECOVERY_READ.value, "b2", 0): hold(2),
    }
)


def choices(max_after: int = 3) -> st.SearchStrategy[Choice]:
    return st.one_of(st.just(FORWARD), st.just(DROP), st.integers(1, max_after).map(hold))


def frame_schedules(max_after: int = 3) -> st.SearchStrategy[FrameSchedule]:
    """A decision for each of :data:`SEARCHED_FRAMES`."""
    return st.fixed_dictionaries({key: choices(max_after) for key in SEARCHED_FRAMES}).map(
        FrameSchedule
    )


def key_of(record: FrameRecord) -> FrameKey | None:
    info = record.info
    if info.entry_id is None:
        return None
    return FrameKey(frame_kind(record).value, record.proxy, info.entry_id)


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
    ) -> None:
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
            for frame_id, (frame, after, since) in list(self._holding.items()):
                passed = last - frame_id
                if passed >= after or now - since > self.max_hold_s:
                    del self._holding[frame_id]
                    self._release(frame)

    def _decide(self, frame: FrameRecord, now: float) -> None:
        self._decided.add(frame.frame_id)
        key = key_of(frame)
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
        else:
            self._release(frame)

    def _release(self, frame: FrameRecord) -> None:
        with contextlib.suppress(NotHeld):
            self.proxies[frame.proxy].release(frame.frame_id)


@dataclass
class SearchFinding:
    schedule: FrameSchedule
    judgement: Judgement
    decisions: list[tuple[str, str]]


@dataclass
class SearchResult:
    examples: int = 0
    finding: SearchFinding | None = None
    verdicts: dict[str, int] = field(default_factory=dict)
    #: Why examples could not be judged (the schedule was not applied); the search stops.
    errors: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """A finding stands; otherwise clean only when examples ran and none was undecided."""
        if self.finding is not None:
            return self.finding.judgement.outcome.verdict
        if self.errors or self.examples == 0:
            return "undecided"
        return "clean"


class _Found(ConformanceError, AssertionError):
    """Ends the Hypothesis run: the search has decided (an AssertionError, as Hypothesis
    expects of a failing example)."""


class Recoveries(Protocol):
    """What the search needs of a :class:`~.scenario.RecoverySession`."""

    @property
    def group(self) -> ProxyGroup: ...

    @property
    def proxies(self) -> Mapping[str, BookieProxy]: ...

    def recover(self, arrange: Arrangement) -> RecoveryRecord: ...


def search(
    session: Recoveries,
    *,
    max_examples: int = 20,
    seed: int | None = None,
    max_hold_s: float = 2.0,
) -> SearchResult:
    """Run up to ``max_examples`` schedules (Defect 1's recipe first) on ``session``; stop at
    the first violation or divergence."""
    result = SearchResult()

    def run_one(schedule: FrameSchedule) -> None:
        if result.finding is not None:
            # Hypothesis replays a failing example once more: report it, do not run it again.
            raise _Found(result.finding.judgement.outcome.verdict)
        controllers: list[ScheduleController] = []

        @contextlib.contextmanager
        def arranged(ledger_id: int) -> Iterator[object]:
            with ScheduleController(
                session.group, session.proxies, ledger_id, schedule, max_hold_s=max_hold_s
            ) as controller:
                controllers.append(controller)
                yield controller

        if result.errors:
            raise _Found("undecided")
        record = session.recover(arranged)
        result.examples += 1
        unapplied = _unapplied(controllers)
        if unapplied is not None:
            # The schedule was not (or not wholly) applied: judging this run as if it had
            # been would pass a schedule that was never tried.
            described = ", ".join(schedule.describe()) or "every frame forwarded"
            result.errors.append(f"schedule ({described}): {unapplied}")
            result.verdicts["undecided"] = result.verdicts.get("undecided", 0) + 1
            raise _Found("undecided")
        judgement = judge(record)
        verdict = judgement.outcome.verdict
        result.verdicts[verdict] = result.verdicts.get(verdict, 0) + 1
        if Verdict.named(verdict).finding:
            decisions = controllers[0].decisions if controllers else []
            result.finding = SearchFinding(schedule, judgement, decisions)
            raise _Found(verdict)

    property_ = settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )(example(DEFECT_1_SCHEDULE)(given(frame_schedules())(run_one)))
    if seed is not None:
        property_ = hypothesis_seed(seed)(property_)
    with contextlib.suppress(_Found):
        property_()
    return result


def _unapplied(controllers: list[ScheduleController]) -> str | None:
    """Why the schedule was not applied to the run, or None."""
    if not controllers:
        return "the recovery never arranged the schedule (no controller ran)"
    errors = [e for c in controllers for e in c.errors]
    if errors:
        return "the schedule controller failed: " + "; ".join(errors)
    return None


__all__ = [
    "DEFECT_1_SCHEDULE",
    "DROP",
    "FORWARD",
    "SEARCHED_FRAMES",
    "Choice",
    "FrameKey",
    "FrameSchedule",
    "Recoveries",
    "ScheduleController",
    "SearchFinding",
    "SearchResult",
    "frame_schedules",
    "hold",
    "key_of",
    "search",
]
