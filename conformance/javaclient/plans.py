"""What one recovery example does, as plain data: w1's adds and the proxies' schedule.

A :class:`RecoveryPlan` is everything the harness decides in one Java-client recovery run, so
that a search can generate it, a run directory can record it, and ``bkconform replay`` can run
it again:

- :class:`WriterPlan`: what w1 (the model's ``c1``, our Python wire client, talking to the
  bookies directly) did before and after the Java client's recovery: how many entries it had
  confirmed by every bookie first (``acked``: their LAC rides on the later adds), then for each
  of its ``entries`` unconfirmed entries which bookie received it before the recovery, which
  after, and which never (the spec's lost message);
- :class:`FrameSchedule`: for each frame the Java client sends (named by meaning: the fence
  read to b3, the recovery read of e0 to b2...), forward it, drop it, or hold it until ``k``
  other frames have passed the proxies.

Bookies are named b1..b3 as in the model (b1 = the lowest bookie id); entries are BookKeeper's
ids (the model's entry 1 is e0).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.errors import ConformanceError
from conformance.javaclient.observed import FrameKind

BOOKIES = ("b1", "b2", "b3")


class PlanError(ConformanceError, ValueError):
    """A plan that no run can carry out (the message says which part)."""


# The writer ---------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class WriterAdd:
    """w1's add of ``entry`` (BookKeeper's id) reaching ``bookie``, before or after the recovery."""

    entry: int
    bookie: str
    after_recovery: bool

    def describe(self) -> str:
        when = "after" if self.after_recovery else "before"
        return f"e{self.entry} to {self.bookie} {when} the recovery"


@dataclass(frozen=True)
class WriterPlan:
    """w1's part of a run. A bookie no add names for an entry never receives it (lost)."""

    #: Unconfirmed entries w1 sends (entry ids ``acked`` .. ``acked + entries - 1``).
    entries: int = 1
    adds: tuple[WriterAdd, ...] = ()
    #: Entries w1 had confirmed by every bookie first (e0 .. e{acked-1}).
    acked: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "adds", tuple(sorted(self.adds)))
        if self.entries < 1 or self.acked < 0:
            raise PlanError(f"w1 sends >= 1 unconfirmed entries after >= 0 acked: {self}")
        seen: set[tuple[int, str]] = set()
        for add in self.adds:
            if add.bookie not in BOOKIES:
                raise PlanError(f"w1's add names bookie {add.bookie!r}; the run has {BOOKIES}")
            if not self.acked <= add.entry < self.acked + self.entries:
                raise PlanError(
                    f"w1's add of e{add.entry} is not one of its unconfirmed entries "
                    f"e{self.acked}..e{self.acked + self.entries - 1}"
                )
            if (add.entry, add.bookie) in seen:
                raise PlanError(f"w1 adds e{add.entry} to {add.bookie} twice")
            seen.add((add.entry, add.bookie))
        for bookie in BOOKIES:
            # A bookie takes w1's adds in the order sent (the spec's FIFO channel): once one
            # entry reaches it after the recovery, no later entry reaches it before.
            phases = [a.after_recovery for a in self.adds if a.bookie == bookie]
            if phases != sorted(phases):
                raise PlanError(
                    f"w1's adds to {bookie} arrive out of order: an entry after the recovery, "
                    "a later one before it"
                )

    @property
    def entry_ids(self) -> range:
        return range(self.acked, self.acked + self.entries)

    def before(self) -> tuple[WriterAdd, ...]:
        return tuple(a for a in self.adds if not a.after_recovery)

    def after(self) -> tuple[WriterAdd, ...]:
        return tuple(a for a in self.adds if a.after_recovery)

    def lost(self, entry: int) -> frozenset[str]:
        """The bookies that never receive ``entry``."""
        return frozenset(BOOKIES) - {a.bookie for a in self.adds if a.entry == entry}

    def describe(self) -> list[str]:
        lines = [f"e0..e{self.acked - 1} confirmed by every bookie"] if self.acked else []
        for entry in self.entry_ids:
            parts = [a.describe() for a in self.adds if a.entry == entry]
            lost = sorted(self.lost(entry))
            if lost:
                parts.append(f"lost to {','.join(lost)}")
            lines.append(f"w1 e{entry}: " + "; ".join(parts))
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "acked": self.acked,
            "entries": self.entries,
            "adds": [
                [a.entry, a.bookie, "after" if a.after_recovery else "before"] for a in self.adds
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WriterPlan:
        try:
            adds = tuple(
                WriterAdd(int(entry), str(bookie), _phase(when))
                for entry, bookie, when in data["adds"]
            )
            return cls(entries=int(data["entries"]), adds=adds, acked=int(data.get("acked", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"not a writer plan: {data!r} ({exc})") from exc


def _phase(when: object) -> bool:
    if when not in ("before", "after"):
        raise PlanError(f"an add is 'before' or 'after' the recovery, not {when!r}")
    return when == "after"


#: Defect 1's writer (issue 8): e0 lost to b1, at b2 before the recovery, at b3 after it.
DEFECT_1_WRITER = WriterPlan(entries=1, adds=(WriterAdd(0, "b2", False), WriterAdd(0, "b3", True)))


# The schedule -------------------------------------------------------------------------------


#: A recorded delivery order's keys for the client's writes of the ledger's metadata (its
#: n-th write sent, or answered: ``metadata_writes.write_key``), at ZooKeeper, not a bookie.
METADATA_WRITE = "metadata write"
ZOOKEEPER = "zookeeper"


@dataclass(frozen=True, order=True)
class FrameKey:
    """What a frame is: its kind, its bookie, and its entry (BookKeeper's ids); with
    ``answer``, the bookie's answer to that request instead of the request."""

    kind: str
    bookie: str
    entry_id: int
    answer: bool = False

    def describe(self) -> str:
        if self.kind == METADATA_WRITE:
            write = f"the client's metadata write {self.entry_id + 1}"
            return f"ZooKeeper's answer to {write}" if self.answer else f"{write} sent"
        request = self.kind if self.entry_id < 0 else f"{self.kind} e{self.entry_id}"
        if self.answer:
            return f"{self.bookie}'s answer to {request}"
        return f"{request} to {self.bookie}"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "bookie": self.bookie,
            "entry": self.entry_id,
            **({"answer": True} if self.answer else {}),
        }

    @classmethod
    def from_json(cls, item: Mapping[str, Any], bookies: Iterable[str]) -> FrameKey:
        kinds = {kind.value for kind in FrameKind}
        metadata = item["kind"] == METADATA_WRITE and item["bookie"] == ZOOKEEPER
        if not metadata and (item["kind"] not in kinds or item["bookie"] not in set(bookies)):
            raise PlanError(f"no such frame: {dict(item)!r}")
        return cls(
            str(item["kind"]), str(item["bookie"]), int(item["entry"]), bool(item.get("answer"))
        )


#: The statuses a forged answer may carry: each makes the client react differently (an
#: ensemble change for EIO and ETOOMANYREQUESTS, a failed handle for EFENCED and EUA; ENOLEDGER
#: as a bookie that lost the ledger answers).
FORGEABLE = ("EIO", "ETOOMANYREQUESTS", "EUA", "EFENCED", "ENOLEDGER")


@dataclass(frozen=True)
class Choice:
    """What the proxies do with one frame: ``forward`` it; ``drop`` it (a lost message);
    ``hold`` it until ``after`` other frames have passed (a reordering, released at the run's
    longest hold at the latest) or for ``for_ms`` milliseconds whatever passes (which may be
    past the client's timeouts); or ``forge`` an error answer with ``status`` in its place (a
    request is then never forwarded; an answer reaches the client with that status instead of
    the bookie's)."""

    action: str
    after: int = 0
    for_ms: int = 0
    status: str | None = None

    def __post_init__(self) -> None:
        if self.action not in ("forward", "drop", "hold", "forge"):
            raise PlanError(
                f"a frame is forwarded, dropped, held or answered by a forgery, not {self.action!r}"
            )
        if self.action == "hold" and (self.after >= 1) == (self.for_ms >= 1):
            raise PlanError(
                "a hold releases after >= 1 other frames or after >= 1 ms, one of them; got "
                f"after={self.after}, for_ms={self.for_ms}"
            )
        if self.action != "hold" and (self.after or self.for_ms):
            raise PlanError(f"only a hold has a release, not {self.action}")
        if (self.action == "forge") != (self.status is not None):
            raise PlanError("a forged answer, and only it, has a status")
        if self.status is not None and self.status not in FORGEABLE:
            raise PlanError(f"a forged answer is one of {', '.join(FORGEABLE)}, not {self.status}")

    def describe(self) -> str:
        if self.action == "hold" and self.for_ms:
            return f"hold for {self.for_ms} ms"
        if self.action == "hold":
            return f"hold until {self.after} other frames passed"
        if self.action == "forge":
            return f"answer {self.status} in its place"
        return self.action

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            **({"after": self.after} if self.after else {}),
            **({"for_ms": self.for_ms} if self.for_ms else {}),
            **({"status": self.status} if self.status else {}),
        }

    @classmethod
    def from_json(cls, item: Mapping[str, Any]) -> Choice:
        status = item.get("status")
        return cls(
            str(item["action"]),
            int(item.get("after", 0)),
            int(item.get("for_ms", 0)),
            None if status is None else str(status),
        )


FORWARD = Choice("forward")
DROP = Choice("drop")


def hold(after: int) -> Choice:
    return Choice("hold", after)


def hold_for(ms: int) -> Choice:
    return Choice("hold", for_ms=ms)


def forge(status: str) -> Choice:
    return Choice("forge", status=status)


class FaultKind(enum.Enum):
    """What can happen to a bookie, a connection or ZooKeeper during a run, besides frames."""

    CRASH = "crash"  # the bookie is killed (kill -9) and stays down
    PAUSE = "pause"  # the bookie is stopped (SIGSTOP) for ``duration_ms``, then resumed
    RESTART = "restart"  # killed and started again with its data (journal and ledgers)
    RESTART_EMPTY = "restart empty"  # killed, wiped, started again: a fresh bookie, same address
    RESET = "reset"  # the client's connections to the bookie's proxy are closed
    REFUSE = "refuse"  # the bookie's proxy refuses new connections for ``duration_ms``
    STALL = "stall"  # the proxy stops reading from the client for ``duration_ms``
    HOLD_METADATA = "hold metadata"  # the client's ZooKeeper writes are held ``duration_ms``
    EXPIRE_SESSION = "expire session"  # the client's ZooKeeper session is expired
    #: An operator's upgrade step: the bookie stopped (SIGTERM) and started again with its
    #: data from a newer release (the event's ``release``); to the model, a restart with data.
    UPGRADE = "upgrade"
    #: The same step back to an older release.
    DOWNGRADE = "downgrade"
    #: The bookie stopped as an operator stops it (SIGTERM: BookKeeper's shutdown closes the
    #: journal and flushes the ledger storage) and started again with its data, same release.
    CLEAN_RESTART = "clean restart"
    #: Nothing is done for one checkpoint interval of the bookies (``flushInterval``) and a
    #: margin. A DbLedgerStorage bookie's SyncThread checkpoints every ``flushInterval``, so
    #: it has checkpointed since; SortedLedgerStorage has no periodic checkpoint (its
    #: SyncThread is started only for DbLedgerStorage or entryLogPerLedger: BookieImpl at
    #: release-4.17.3, lines 460-481), only when its memtable fills. What a crash after it
    #: may lose differs from a crash before it (the lost fence, issue 47).
    AWAIT_CHECKPOINT = "await checkpoint"

    @property
    def needs_bookie(self) -> bool:
        return self not in (
            FaultKind.HOLD_METADATA,
            FaultKind.EXPIRE_SESSION,
            FaultKind.AWAIT_CHECKPOINT,
        )

    @property
    def needs_release(self) -> bool:
        """The bookie restarts from another release, which the event names."""
        return self in (FaultKind.UPGRADE, FaultKind.DOWNGRADE)

    @property
    def restarts_with_data(self) -> bool:
        """The bookie stops and starts again with its journal and ledgers: a restart (killed or
        stopped cleanly), an upgrade or a downgrade. The judges take them alike (the release
        and the way it stopped are the bookie's, not the model's: the spec's restart keeps
        what the bookie made durable)."""
        return self in (
            FaultKind.RESTART,
            FaultKind.CLEAN_RESTART,
            FaultKind.UPGRADE,
            FaultKind.DOWNGRADE,
        )

    @property
    def needs_duration(self) -> bool:
        return self in (
            FaultKind.PAUSE,
            FaultKind.REFUSE,
            FaultKind.STALL,
            FaultKind.HOLD_METADATA,
        )


@dataclass(frozen=True)
class PlannedFault:
    """One fault at a chosen point of the run: when the frame ``at`` has reached a proxy (a
    request from the client, or with ``at.answer`` the bookie's answer leaving the bookie), or
    with ``at`` None as the client starts its part. An upgrade or a downgrade names the
    ``release`` the bookie restarts from: a version (``4.18.0``, installed on first use) or a
    distribution directory."""

    kind: FaultKind
    at: FrameKey | None = None
    bookie: str | None = None
    duration_ms: int = 0
    release: str | None = None

    def sort_key(self) -> tuple[bool, FrameKey, str, str, int, str]:
        """Events as the run meets them (at the start first), then by what they are."""
        at = self.at or FrameKey("", "", 0)
        return (
            self.at is not None,
            at,
            self.kind.value,
            self.bookie or "",
            self.duration_ms,
            self.release or "",
        )

    def __post_init__(self) -> None:
        if self.kind.needs_bookie != (self.bookie is not None):
            which = "names a bookie" if self.kind.needs_bookie else "names no bookie"
            raise PlanError(f"a {self.kind.value} fault {which}")
        if self.kind.needs_duration != (self.duration_ms > 0):
            which = "lasts >= 1 ms" if self.kind.needs_duration else "has no duration"
            raise PlanError(f"a {self.kind.value} fault {which}, got {self.duration_ms} ms")
        if self.kind.needs_release != bool(self.release and self.release.strip()):
            which = (
                "names the release the bookie restarts from (e.g. 4.18.0)"
                if self.kind.needs_release
                else "names no release"
            )
            raise PlanError(f"a {self.kind.value} fault {which}")

    def describe(self) -> str:
        target = f" {self.bookie}" if self.bookie else ""
        release = f" to {self.release}" if self.release else ""
        lasting = f" for {self.duration_ms} ms" if self.duration_ms else ""
        when = "as the client starts" if self.at is None else f"when {self.at.describe()} passes"
        return f"{self.kind.value}{target}{release}{lasting} {when}"

    def to_json(self) -> dict[str, Any]:
        return {
            "fault": self.kind.value,
            "at": None if self.at is None else self.at.to_json(),
            **({"bookie": self.bookie} if self.bookie else {}),
            **({"duration_ms": self.duration_ms} if self.duration_ms else {}),
            **({"release": self.release} if self.release else {}),
        }

    @classmethod
    def from_json(cls, item: Mapping[str, Any], bookies: Iterable[str]) -> PlannedFault:
        names = set(bookies)
        try:
            kind = FaultKind(item["fault"])
        except ValueError:
            known = ", ".join(k.value for k in FaultKind)
            raise PlanError(f"no fault {item['fault']!r} (the faults: {known})") from None
        bookie = item.get("bookie")
        if bookie is not None and bookie not in names:
            raise PlanError(f"the fault names bookie {bookie!r}; the run has {sorted(names)}")
        at = item.get("at")
        release = item.get("release")
        return cls(
            kind,
            None if at is None else FrameKey.from_json(at, names),
            None if bookie is None else str(bookie),
            int(item.get("duration_ms", 0)),
            None if release is None else str(release),
        )


def releases_named(events: Iterable[PlannedFault]) -> tuple[str, ...]:
    """The releases ``events`` restart bookies from (upgrades and downgrades), each once, in
    order: what a run installs before it starts."""
    named: dict[str, None] = {}
    for event in events:
        if event.release:
            named[event.release] = None
    return tuple(named)


def searched_frames(writer: WriterPlan) -> tuple[FrameKey, ...]:
    """The frames a recovery of ``writer``'s ledger may send: the fence reads, the recovery
    reads of its unconfirmed entries and of the one after them, and their write-backs."""
    reads = (*writer.entry_ids, writer.acked + writer.entries)
    kinds = [(FrameKind.FENCE_READ, -1)]
    kinds += [(FrameKind.RECOVERY_READ, entry) for entry in reads]
    kinds += [(FrameKind.RECOVERY_ADD, entry) for entry in writer.entry_ids]
    return tuple(FrameKey(kind.value, bookie, entry) for kind, entry in kinds for bookie in BOOKIES)


@dataclass(frozen=True)
class FrameSchedule:
    """What the proxies and the harness do during the client's part of a run: a decision per
    frame (named by meaning), and the faults at chosen points (:class:`PlannedFault`)."""

    decisions: Mapping[FrameKey, Choice] = field(default_factory=dict)
    events: tuple[PlannedFault, ...] = ()
    #: The recorded delivery order to enforce (a finding's, read from its run: see
    #: ``delivery_order.py``): the first frame of each key goes on only once the nearest key
    #: before it at another bookie went on (``controller.py``). Empty: frames go on as they
    #: come (every search example; old run directories).
    order: tuple[FrameKey, ...] = ()
    #: For each fault the run carries out at a moment of its own (a writer's faults before and
    #: after the recovery, in the order carried out): how many keys of ``order`` the recorded
    #: run had delivered before it, which go on first in a replay (a fault timed by a sleep
    #: would otherwise overtake an answer a slow bookie sends later this time, and the order
    #: could not be kept: the lost fence's crash of b2 before its answer to e0).
    faults_after: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(sorted(self.events, key=PlannedFault.sort_key)))

    def choice(self, key: FrameKey) -> Choice:
        return self.decisions.get(key, FORWARD)

    def describe(self) -> list[str]:
        lines = [
            f"{key.describe()}: {choice.describe()}"
            for key, choice in sorted(self.decisions.items())
            if choice != FORWARD
        ]
        lines += [event.describe() for event in self.events]
        if self.order:
            placed = (
                f", the faults carried out at moments of their own placed in it (after "
                f"{', '.join(map(str, self.faults_after))} of them)"
                if self.faults_after
                else ""
            )
            lines.append(
                f"the recorded delivery order of {len(self.order)} frames enforced{placed}"
            )
        return lines or ["forward everything"]

    def with_order(
        self, order: Sequence[FrameKey], faults_after: Sequence[int] = ()
    ) -> FrameSchedule:
        """The same decisions and events, with ``order`` enforced (and the faults carried out
        at moments of their own after ``faults_after`` keys of it)."""
        return FrameSchedule(self.decisions, self.events, tuple(order), tuple(faults_after))

    def without_forwards(self) -> FrameSchedule:
        return FrameSchedule({k: c for k, c in self.decisions.items() if c != FORWARD}, self.events)

    def with_decisions(self, decisions: Mapping[FrameKey, Choice]) -> FrameSchedule:
        """The same events with other frame decisions."""
        return FrameSchedule(dict(decisions), self.events)

    def without_events(self, *gone: PlannedFault) -> FrameSchedule:
        return FrameSchedule(self.decisions, tuple(e for e in self.events if e not in gone))

    def restricted(self, keep: Callable[[FrameKey], bool]) -> FrameSchedule:
        """Only the decisions and events whose frames ``keep`` keeps (the start's events stay)."""
        return FrameSchedule(
            {k: c for k, c in self.decisions.items() if keep(k)},
            tuple(e for e in self.events if e.at is None or keep(e.at)),
        )

    def smaller(self) -> Iterator[FrameSchedule]:
        """Each schedule one thing away: a decision back to forward, a hold by frames made
        shorter, a fault left out."""
        decisions = dict(self.without_forwards().decisions)
        for key, choice in sorted(decisions.items()):
            yield self.with_decisions({k: c for k, c in decisions.items() if k != key})
            if choice.action == "hold" and choice.after > 1:
                yield self.with_decisions({**decisions, key: hold(choice.after - 1)})
        for event in self.events:
            yield self.without_events(event)

    def watches_answers(self) -> bool:
        """Whether anything is decided or triggered on a bookie's answer (the proxies then hold
        the answers of the run's ledger too, each until it is decided)."""
        return (
            any(key.answer for key in self.decisions)
            or any(event.at is not None and event.at.answer for event in self.events)
            or any(key.answer for key in self.order)
        )

    def to_json(self) -> list[dict[str, Any]]:
        decided = [
            {**key.to_json(), **choice.to_json()}
            for key, choice in sorted(self.decisions.items())
            if choice != FORWARD
        ]
        # The order is one more item, written only when there is one, so that a plan without
        # it reads as before.
        order: list[dict[str, Any]] = (
            [{"order": [key.to_json() for key in self.order]}] if self.order else []
        )
        if self.faults_after:
            order[0]["faults_after"] = list(self.faults_after)
        return decided + [event.to_json() for event in self.events] + order

    @classmethod
    def from_json(
        cls, data: Iterable[Mapping[str, Any]], bookies: Iterable[str] = BOOKIES
    ) -> FrameSchedule:
        names = tuple(bookies)
        decisions: dict[FrameKey, Choice] = {}
        events: list[PlannedFault] = []
        order: tuple[FrameKey, ...] = ()
        faults_after: tuple[int, ...] = ()
        try:
            for item in data:
                if "order" in item:
                    order = tuple(FrameKey.from_json(key, names) for key in item["order"])
                    faults_after = tuple(int(n) for n in item.get("faults_after", ()))
                elif "fault" in item:
                    events.append(PlannedFault.from_json(item, names))
                else:
                    key = FrameKey.from_json(item, names)
                    decisions[key] = Choice.from_json(item)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"not a frame schedule: {exc!r}") from exc
        return cls(decisions, tuple(events), order, faults_after)


#: Issue 8's recipe as a per-frame schedule: the fence read to b3 is lost; the recovery read
#: of e0 to b2 waits until b3's speculative read and its answer have passed. (A test fixture
#: and the scenario's recipe: the search never starts from it.)
DEFECT_1_SCHEDULE = FrameSchedule(
    {
        FrameKey(FrameKind.FENCE_READ.value, "b3", -1): DROP,
        FrameKey(FrameKind.RECOVERY_READ.value, "b2", 0): hold(2),
    }
)


# One example --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecoveryPlan:
    """One example: w1's adds and the proxies' schedule; ``origin`` says where it came from
    (the model's explorer, with the trace it was read from, or Hypothesis' generator)."""

    writer: WriterPlan
    schedule: FrameSchedule
    origin: str = "generated"

    @property
    def has_fault_events(self) -> bool:
        """Whether a fault executor must carry out events of this plan."""
        return bool(self.schedule.events)

    def describe(self) -> list[str]:
        return [*self.writer.describe(), *self.schedule.describe()]

    def to_json(self) -> dict[str, Any]:
        return {
            "role": "recovery",
            "writer": self.writer.to_json(),
            "schedule": self.schedule.to_json(),
            "origin": self.origin,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecoveryPlan:
        if (
            not isinstance(data, Mapping)
            or data.get("role", "recovery") != "recovery"
            or "writer" not in data
            or "schedule" not in data
        ):
            raise PlanError(
                f"not a recovery plan (needs 'writer' and 'schedule', role 'recovery'): {data!r}"
            )
        return cls(
            WriterPlan.from_json(data["writer"]),
            FrameSchedule.from_json(data["schedule"]),
            str(data.get("origin", "recorded")),
        )


DEFECT_1_PLAN = RecoveryPlan(DEFECT_1_WRITER, DEFECT_1_SCHEDULE, origin="issue 8's recipe")


def writer_from_phases(
    phases: Mapping[tuple[int, str], str], entries: int, acked: int = 0
) -> WriterPlan:
    """A writer plan from ``(entry, bookie) -> 'before' | 'after' | 'lost'``, made FIFO: an
    entry that would reach a bookie before the recovery after an earlier one reached it after,
    reaches it after too."""
    adds: list[WriterAdd] = []
    for bookie in BOOKIES:
        late = False
        for entry in range(acked, acked + entries):
            when = phases.get((entry, bookie), "lost")
            if when == "lost":
                continue
            late = late or when == "after"
            adds.append(WriterAdd(entry, bookie, late))
    return WriterPlan(entries=entries, adds=tuple(adds), acked=acked)


__all__ = [
    "BOOKIES",
    "DEFECT_1_PLAN",
    "DEFECT_1_SCHEDULE",
    "DEFECT_1_WRITER",
    "DROP",
    "FORGEABLE",
    "FORWARD",
    "METADATA_WRITE",
    "ZOOKEEPER",
    "Choice",
    "FaultKind",
    "FrameKey",
    "FrameSchedule",
    "PlanError",
    "PlannedFault",
    "RecoveryPlan",
    "WriterAdd",
    "WriterPlan",
    "forge",
    "hold",
    "hold_for",
    "releases_named",
    "searched_frames",
    "writer_from_phases",
]
