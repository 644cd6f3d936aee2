"""Gated races: two requests racing at one real bookie, its threads held where they meet.

A race (:mod:`conformance.races`) sends requests together and lets the bookie's thread pools
overlap them, or not: a window of microseconds hit by send offsets drawn over milliseconds is a
rare event. A **gate schedule** decides the overlap instead (issue 49, Deliver 2; Mocket,
EuroSys'23): the request sent first is held at a point of the bookie's code where requests
meet shared state (a :class:`~adapters.cluster.gates.GatePoint`, at its entry or its exit),
the other is sent while it is held and either runs through, or is held too at a point of its
own, and then the two are resumed in the schedule's order. A held thread is one schedule a real
scheduler could produce; the answers are judged as any race's, by the serial orders the model
allows, so what a gated race finds is real.

Each request kind reaches its own points (:data:`POINTS_REACHED`, read in BookieImpl and
ReadEntryProcessor at ``release-4.17.3`` and ``release-4.18.0``: docs/adapters/gates.md).
:func:`schedules` lists every schedule of a pair, for the systematic phase of a gated search
(every pair of stops, in both resume orders); the search draws one from an example's choices
(:func:`conformance.search.program.draw_schedule`), which shrink toward "no gate", then toward
the first points.

What the target did with a schedule is a :class:`GateReport` per raced request: held where the
schedule said, not held (it answered first: its kind does not reach the point on that path,
say an add to a fenced ledger never reaches the storage's write), or blocked (neither held nor
answered while the other was held: it waits for a lock the held thread has). The
:class:`GateTally` counts what the schedules reached, by the kinds of the two requests.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.cluster.gates import At, GatePoint
from model.bookkeeper.records import AddEntryRequest, FenceRequest, Message, ReadRequest


class RequestKind(enum.Enum):
    """What a raced request does at the bookie, for the points it reaches."""

    ADD = "add"
    RECOVERY_ADD = "recovery add"
    FENCE = "fence read"
    FENCING_READ = "fencing read"
    READ = "read"


#: The points each kind of request reaches, in the order it reaches them.
#: An add: ``BookieImpl.addEntry`` looks its handle up, then, inside ``synchronized (handle)``,
#: checks the fence, writes the ledger storage, then queues its journal record (the master
#: key's first, on a ledger's first add at this bookie). A recovery add
#: (``recoveryAddEntry``) skips the fence check. A fencing read (``ReadEntryProcessor``):
#: ``fenceLedger``, its handle, ``fenceAndLogInJournal`` (synchronized) with ``setFenced`` and
#: the fence's journal record, then the read (``BookieImpl.readEntry``, the storage's). A plain
#: read: the read only.
POINTS_REACHED: dict[RequestKind, tuple[GatePoint, ...]] = {
    RequestKind.ADD: (
        GatePoint.LEDGER_HANDLE,
        GatePoint.FENCED_CHECK,
        GatePoint.STORAGE_ADD,
        GatePoint.JOURNAL_ADD,
    ),
    RequestKind.RECOVERY_ADD: (
        GatePoint.LEDGER_HANDLE,
        GatePoint.STORAGE_ADD,
        GatePoint.JOURNAL_ADD,
    ),
    RequestKind.FENCE: (
        GatePoint.FENCE_LEDGER,
        GatePoint.LEDGER_HANDLE,
        GatePoint.FENCE_AND_LOG,
        GatePoint.SET_FENCED,
        GatePoint.JOURNAL_ADD,
        GatePoint.BOOKIE_READ,
        GatePoint.STORAGE_READ,
    ),
    RequestKind.READ: (GatePoint.BOOKIE_READ, GatePoint.STORAGE_READ),
}
POINTS_REACHED[RequestKind.FENCING_READ] = POINTS_REACHED[RequestKind.FENCE]


def kind_of(request: Message) -> RequestKind:
    """The kind of a raced request (ValueError for an answer: only requests race)."""
    if isinstance(request, AddEntryRequest):
        return RequestKind.RECOVERY_ADD if request.recovery else RequestKind.ADD
    if isinstance(request, FenceRequest):
        return RequestKind.FENCE
    if isinstance(request, ReadRequest):
        return RequestKind.FENCING_READ if request.fence else RequestKind.READ
    raise ValueError(f"{request} is no request")


@dataclass(frozen=True, order=True)
class Stop:
    """Where a request's thread is held: the entry or the exit of a point."""

    point: GatePoint
    at: At

    def describe(self) -> str:
        return f"the {self.at.value} of {self.point.value}"

    def as_dict(self) -> dict[str, str]:
        return {"point": self.point.name, "at": self.at.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stop:
        return cls(GatePoint[str(data["point"])], At(str(data["at"])))


def stops_of(kind: RequestKind) -> tuple[Stop, ...]:
    """Every stop a request of ``kind`` reaches: each point's entry, then its exit."""
    return tuple(Stop(point, at) for point in POINTS_REACHED[kind] for at in (At.ENTRY, At.EXIT))


@dataclass(frozen=True)
class GateSchedule:
    """How a race of two requests at one bookie is run: the request ``held`` (0 or 1, its
    place in the race) is sent first and held at ``first``; the other is sent then, and held
    at ``second`` (None: it is not held, it runs through or waits for the first);
    ``second_resumes_first``: the second held is released first (else the first)."""

    held: int
    first: Stop
    second: Stop | None = None
    second_resumes_first: bool = False

    def __post_init__(self) -> None:
        if self.held not in (0, 1):
            raise ValueError(f"a gate schedule holds request 0 or 1 first, not {self.held}")
        if self.second is None and self.second_resumes_first:
            raise ValueError("only a second held request can be resumed first")

    @property
    def other(self) -> int:
        return 1 - self.held

    def describe(self, names: Sequence[str] = ("request 1", "request 2")) -> str:
        first, other = names[self.held], names[self.other]
        text = f"{first} held at {self.first.describe()}"
        if self.second is None:
            return f"{text}, {other} sent meanwhile, then {first} released"
        resumed = (other, first) if self.second_resumes_first else (first, other)
        return (
            f"{text}, {other} held at {self.second.describe()}, released: "
            f"{resumed[0]} first, then {resumed[1]}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "held": self.held,
            "first": self.first.as_dict(),
            "second": None if self.second is None else self.second.as_dict(),
            "second_resumes_first": self.second_resumes_first,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GateSchedule:
        second = data.get("second")
        return cls(
            int(data["held"]),
            Stop.from_dict(data["first"]),
            None if second is None else Stop.from_dict(second),
            bool(data.get("second_resumes_first", False)),
        )


def gateable(pair: Sequence[object]) -> bool:
    """Whether a race can be gated: two requests (no restart) to one bookie."""
    return (
        len(pair) == 2
        and all(isinstance(r, AddEntryRequest | FenceRequest | ReadRequest) for r in pair)
        and getattr(pair[0], "bookie", None) == getattr(pair[1], "bookie", None)
    )


def schedules(pair: tuple[Message, Message]) -> list[GateSchedule]:
    """Every gate schedule of ``pair``, systematically: each request held first at each of
    its stops, the other then running through or held at each of its own, released in both
    orders. Those that hold one request only first (the fewest holds)."""
    kinds = (kind_of(pair[0]), kind_of(pair[1]))
    single: list[GateSchedule] = []
    double: list[GateSchedule] = []
    for held in (0, 1):
        for first in stops_of(kinds[held]):
            single.append(GateSchedule(held, first))
            for second in stops_of(kinds[1 - held]):
                for second_first in (False, True):
                    double.append(GateSchedule(held, first, second, second_first))
    return single + double


class Gated(enum.Enum):
    """What a schedule's gate did to one raced request."""

    #: Held at its stop, then released by the harness.
    HELD = "held"
    #: Not held: it answered before reaching its stop (or had none: it ran through).
    NOT_HELD = "not held"
    #: Neither held nor answered while the other was held: it waited for the held thread.
    BLOCKED = "blocked"


@dataclass(frozen=True)
class GateReport:
    """What a gated race did to one of its requests: ``stop`` its schedule's (None: it had
    none), ``gated`` what happened, ``resumed`` its release's rank (1: released first; None:
    not held)."""

    stop: Stop | None
    gated: Gated
    resumed: int | None = None

    def describe(self) -> str:
        if self.gated is Gated.HELD:
            assert self.stop is not None
            return f"held at {self.stop.describe()}, released {_ordinal(self.resumed)}"
        if self.gated is Gated.BLOCKED:
            return "blocked behind the held request"
        if self.stop is None:
            return "not held (ran through)"
        return f"not held: answered before {self.stop.describe()}"


def _ordinal(rank: int | None) -> str:
    return {1: "first", 2: "second"}.get(rank or 0, "?")


def reached(schedule: GateSchedule, reports: Sequence[GateReport]) -> bool:
    """Whether the race ran as ``schedule`` asked: every stop it names held a thread."""
    wanted = [schedule.held] + ([schedule.other] if schedule.second is not None else [])
    return all(reports[i].gated is Gated.HELD for i in wanted)


@dataclass
class GateTally:
    """What a search's gated races reached, by the kinds of their two requests (``add x
    fence read``: the add held first): schedules run, run as scheduled (every stop named
    held), with a request blocked behind a hold, and the distinct **interleavings** held: the
    first request's stop with what the other did (held at its stop, and which was released
    first; blocked behind the first; or ran through), whether or not that was the schedule's
    plan (a request blocked behind a lock is an interleaving too)."""

    gated: int = 0
    reached: int = 0
    blocked: int = 0
    #: kinds -> the distinct interleavings held (first stop, the other's, second released first)
    pairs: dict[str, set[tuple[str, str, bool]]] = field(default_factory=dict)
    tried: Counter[str] = field(default_factory=Counter)

    def add(
        self, pair: Sequence[Message], schedule: GateSchedule, reports: Sequence[GateReport]
    ) -> None:
        kinds = f"{kind_of(pair[schedule.held]).value} x {kind_of(pair[schedule.other]).value}"
        self.gated += 1
        self.tried[kinds] += 1
        first, other = reports[schedule.held], reports[schedule.other]
        self.blocked += other.gated is Gated.BLOCKED
        self.reached += reached(schedule, reports)
        if first.gated is not Gated.HELD:
            return
        if other.gated is Gated.HELD:
            assert other.stop is not None
            then, second_first = _stop_key(other.stop), other.resumed == 1
        else:
            then, second_first = ("blocked" if other.gated is Gated.BLOCKED else "ran"), False
        self.pairs.setdefault(kinds, set()).add((_stop_key(schedule.first), then, second_first))

    def merge(self, other: GateTally) -> None:
        self.gated += other.gated
        self.reached += other.reached
        self.blocked += other.blocked
        self.tried.update(other.tried)
        for kinds, seen in other.pairs.items():
            self.pairs.setdefault(kinds, set()).update(seen)

    def interleavings(self, kinds: str) -> int:
        return len(self.pairs.get(kinds, ()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "gated": self.gated,
            "reached": self.reached,
            "blocked": self.blocked,
            "by_kinds": {
                kinds: {"tried": self.tried[kinds], "interleavings": self.interleavings(kinds)}
                for kinds in sorted(self.tried)
            },
            # Each: the first's stop, what the other did (its stop, "blocked" or "ran"), and
            # whether the other was released first.
            "interleavings_held": {
                kinds: sorted(list(each) for each in seen)
                for kinds, seen in sorted(self.pairs.items())
            },
        }

    def describe(self) -> str:
        if not self.gated:
            return "no gated race"
        kinds = "; ".join(
            f"{k}: {self.tried[k]} run, {self.interleavings(k)} distinct interleavings held"
            for k in sorted(self.tried)
        )
        return (
            f"{self.gated} gated races, {self.reached} as scheduled, {self.blocked} with a "
            f"request blocked behind a hold ({kinds})"
        )


def _stop_key(stop: Stop) -> str:
    return f"{stop.point.name}:{stop.at.value}"


__all__ = [
    "POINTS_REACHED",
    "GateReport",
    "GateSchedule",
    "GateTally",
    "Gated",
    "RequestKind",
    "Stop",
    "gateable",
    "kind_of",
    "reached",
    "schedules",
    "stops_of",
]
