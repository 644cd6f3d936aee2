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

from collections.abc import Iterable, Mapping
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

    def __post_init__(self) -> None:
        if self.action not in ("forward", "drop", "hold"):
            raise PlanError(f"a frame is forwarded, dropped or held, not {self.action!r}")
        if self.action == "hold" and self.after < 1:
            raise PlanError(f"a hold releases after >= 1 other frames, got {self.after}")

    def describe(self) -> str:
        if self.action == "hold":
            return f"hold until {self.after} other frames passed"
        return self.action


FORWARD = Choice("forward")
DROP = Choice("drop")


def hold(after: int) -> Choice:
    return Choice("hold", after)


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
    decisions: Mapping[FrameKey, Choice] = field(default_factory=dict)

    def choice(self, key: FrameKey) -> Choice:
        return self.decisions.get(key, FORWARD)

    def describe(self) -> list[str]:
        return [
            f"{key.describe()}: {choice.describe()}"
            for key, choice in sorted(self.decisions.items())
            if choice != FORWARD
        ] or ["forward everything"]

    def without_forwards(self) -> FrameSchedule:
        return FrameSchedule({k: c for k, c in self.decisions.items() if c != FORWARD})

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {
                "kind": key.kind,
                "bookie": key.bookie,
                "entry": key.entry_id,
                "action": choice.action,
                **({"after": choice.after} if choice.action == "hold" else {}),
            }
            for key, choice in sorted(self.decisions.items())
            if choice != FORWARD
        ]

    @classmethod
    def from_json(
        cls, data: Iterable[Mapping[str, Any]], bookies: Iterable[str] = BOOKIES
    ) -> FrameSchedule:
        kinds = {kind.value for kind in FrameKind}
        names = set(bookies)
        decisions: dict[FrameKey, Choice] = {}
        try:
            for item in data:
                if item["kind"] not in kinds or item["bookie"] not in names:
                    raise PlanError(f"no such frame: {item!r}")
                key = FrameKey(str(item["kind"]), str(item["bookie"]), int(item["entry"]))
                decisions[key] = Choice(str(item["action"]), int(item.get("after", 0)))
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"not a frame schedule: {exc}") from exc
        return cls(decisions)


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
    "FORWARD",
    "Choice",
    "FrameKey",
    "FrameSchedule",
    "PlanError",
    "RecoveryPlan",
    "WriterAdd",
    "WriterPlan",
    "hold",
    "searched_frames",
    "writer_from_phases",
]
