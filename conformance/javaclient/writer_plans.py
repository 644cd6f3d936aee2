"""What one writer example does, as plain data: the ledger's shape, how many entries the Java
client adds (pipelined), and what the proxies do with each add.

The Java client is the spec's writer ``c1``: it creates a ledger of ``shape`` (E, WQ, AQ) on a
cluster of E + 1 bookies (one spare, so every ensemble change has exactly one replacement,
the model's and the client's alike; a shape may have more spares), sends ``entries`` adds
without waiting, then closes the ledger. Each add frame is forwarded, dropped (the spec's lost
message: the client's add timeout fires and it changes its ensemble), or held until ``k`` other
frames passed.

Bookies are named by the ledger's first ensemble, as the model's ``ClientCreatesLedger``
chooses it: b1..bE are its positions 0..E-1, b{E+1} the spare. The real client picks its
ensemble at random; naming by position makes "drop e0 to b2" mean the same bookie role on
every run. Entries are BookKeeper's ids (the model's entry 1 is e0).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.javaclient.observed import FrameKind
from conformance.javaclient.plans import (
    FORWARD,
    Choice,
    FrameKey,
    FrameSchedule,
    PlanError,
    PlannedFault,
)

#: At most this many entries in the examples the search draws and the model proposes: enough
#: for a pipeline across an ensemble change (an entry before, one caught in it, one after).
SEARCHED_ENTRIES = 4
#: At most this many entries in any writer plan (the upstream reports' scenarios pipeline up to
#: seven: #4097's).
MAX_ENTRIES = 8
#: The longest wait before the delayed entries (the add timeout is 1 s).
MAX_DELAY_MS = 3000


#: At most this many spare bookies beside the ensemble.
MAX_SPARES = 3
#: At most this many ledgers written together in one example.
MAX_LEDGERS = 3


@dataclass(frozen=True, order=True)
class WriterShape:
    """A ledger's ensemble size, write quorum and ack quorum, and the spare bookies of its
    cluster (one by default: every ensemble change then has exactly one replacement)."""

    ensemble: int
    write_quorum: int
    ack_quorum: int
    spares: int = 1

    def __post_init__(self) -> None:
        if not self.ensemble >= self.write_quorum >= self.ack_quorum >= 1:
            raise PlanError(
                f"need E >= WQ >= AQ >= 1, got E={self.ensemble} WQ={self.write_quorum} "
                f"AQ={self.ack_quorum}"
            )
        if self.ensemble > 8:
            raise PlanError(f"E={self.ensemble}: at most 8 bookies per ensemble here")
        if not 1 <= self.spares <= MAX_SPARES:
            raise PlanError(f"1..{MAX_SPARES} spare bookies, not {self.spares}")

    @property
    def bookies(self) -> int:
        """The cluster: the ensemble and the spares."""
        return self.ensemble + self.spares

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f"b{i + 1}" for i in range(self.bookies))

    def describe(self) -> str:
        return f"E={self.ensemble} WQ={self.write_quorum} AQ={self.ack_quorum}"

    def key(self) -> str:
        spares = "" if self.spares == 1 else f"+{self.spares}"
        return f"{self.ensemble}/{self.write_quorum}/{self.ack_quorum}{spares}"

    @classmethod
    def parse(cls, text: str) -> WriterShape:
        """``"3/2/2"`` (E/WQ/AQ, one spare) or ``"4/2/2+2"`` (two spares)."""
        try:
            quorums, _plus, spares = text.partition("+")
            ensemble, write_quorum, ack_quorum = (int(part) for part in quorums.split("/"))
            extra = int(spares) if spares else 1
        except ValueError as exc:
            raise PlanError(
                f"a ledger shape is E/WQ/AQ[+SPARES], e.g. 3/2/2 or 4/2/2+2; got {text!r}"
            ) from exc
        # Outside the try: a shape that is no ledger's says why (E >= WQ >= AQ...).
        return cls(ensemble, write_quorum, ack_quorum, extra)

    def writeset(self, entry: int) -> tuple[int, ...]:
        """The positions of the first ensemble that entry ``entry`` (BookKeeper's id) goes to."""
        return tuple((entry + i) % self.ensemble for i in range(self.write_quorum))


#: The shapes the issue names: striping with WQ=AQ, and E=2 WQ=AQ=1 (#3005's).
DEFAULT_SHAPES = (WriterShape(3, 2, 2), WriterShape(2, 1, 1))


def _bare(event: PlannedFault) -> str:
    """A fault around the recovery, said without its moment (it has none but that)."""
    return event.describe().removesuffix(" as the client starts")


def _span(first: int, last: int) -> str:
    return f"e{first}" if first == last else f"e{first}..e{last}"


def add_key(bookie: str, entry: int) -> FrameKey:
    return FrameKey(FrameKind.ADD.value, bookie, entry)


@dataclass(frozen=True)
class WriterRunPlan:
    """One writer example (see the module docstring); ``origin`` says where it came from."""

    shape: WriterShape
    entries: int
    schedule: FrameSchedule = field(default_factory=FrameSchedule)
    origin: str = "generated"
    #: The last ``delayed`` entries are added ``delay_ms`` after the others: around the add
    #: timeout they are sent while the client changes its ensemble (#4097's window).
    delayed: int = 0
    delay_ms: int = 0
    #: A broker fail-over (``--role both``): once the first ``recover_after`` adds are sent
    #: and ``recover_delay_ms`` later (their answers and timeouts still to come), a second
    #: Java client recovers the ledger (``openLedger``: fences it, closes it); the writer
    #: sends its other adds after that, then closes. None: no recovery (the writer role).
    recover_after: int | None = None
    recover_delay_ms: int = 0
    #: Faults carried out once the recovery has returned, before the writer's next add (their
    #: ``at`` is None): an operator replacing the recovered ledger's bookies while the writer
    #: is idle, e.g. each restarted without its data at its address (apache/bookkeeper#4812).
    after_recovery: tuple[PlannedFault, ...] = ()
    #: Faults carried out just before the recovery starts (their ``at`` is None): a bookie
    #: the new owner's recovery finds crashed or paused.
    before_recovery: tuple[PlannedFault, ...] = ()
    #: Ledgers written together, add by add in turn (by ``writers`` clients): the schedule's
    #: frames are the first ledger's, its faults hit the bookies of all.
    ledgers: int = 1
    #: How many writer clients write them: ledger ``i`` is client ``i mod writers``'s (1: the
    #: one client writes them all, on its shared connections).
    writers: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.entries <= MAX_ENTRIES:
            raise PlanError(f"a writer example adds 1..{MAX_ENTRIES} entries, got {self.entries}")
        if self.recover_after is None:
            if self.recover_delay_ms:
                raise PlanError("a recovery delay goes with a recovery (recover_after)")
        elif not 1 <= self.recover_after <= self.entries:
            raise PlanError(
                f"the recovering client starts after 1..{self.entries} of the writer's adds, "
                f"not {self.recover_after}"
            )
        elif not 0 <= self.recover_delay_ms <= MAX_DELAY_MS:
            raise PlanError(
                f"a recovery delay of 0..{MAX_DELAY_MS} ms, not {self.recover_delay_ms}"
            )
        if not 1 <= self.ledgers <= MAX_LEDGERS:
            raise PlanError(f"a writer example writes 1..{MAX_LEDGERS} ledgers, not {self.ledgers}")
        if not 1 <= self.writers <= self.ledgers:
            raise PlanError(
                f"{self.writers} writer clients for {self.ledgers} ledger(s): 1..{self.ledgers}"
            )
        if (self.after_recovery or self.before_recovery) and self.recover_after is None:
            raise PlanError("faults around the recovery go with a recovery (recover_after)")
        for event in (*self.before_recovery, *self.after_recovery):
            if event.at is not None:
                raise PlanError(
                    f"{event.describe()}: a fault around the recovery happens then, at no frame"
                )
            if event.bookie is not None and event.bookie not in self.shape.names:
                raise PlanError(
                    f"{event.describe()}: the cluster of {self.shape.describe()} has "
                    f"{', '.join(self.shape.names)}"
                )
        if not 0 <= self.delayed < self.entries:
            raise PlanError(
                f"{self.delayed} delayed entries: at most {self.entries - 1} of {self.entries} "
                "(the first is sent at once)"
            )
        if not 0 <= self.delay_ms <= MAX_DELAY_MS or (self.delay_ms > 0) != (self.delayed > 0):
            raise PlanError(
                f"a delay of 1..{MAX_DELAY_MS} ms goes with delayed entries (got "
                f"{self.delayed} entries, {self.delay_ms} ms)"
            )
        names = set(self.shape.names)
        triggers = [event.at for event in self.schedule.events if event.at is not None]
        for event in self.schedule.events:
            if event.bookie is not None and event.bookie not in names:
                raise PlanError(
                    f"{event.describe()}: the cluster of {self.shape.describe()} has "
                    f"{', '.join(sorted(names))}"
                )
        for key in [*self.schedule.decisions, *triggers]:
            if key.kind != FrameKind.ADD.value:
                raise PlanError(f"a writer example schedules adds only, not {key.describe()}")
            if key.bookie not in names:
                raise PlanError(
                    f"{key.describe()}: the cluster of {self.shape.describe()} has "
                    f"{', '.join(sorted(names))}"
                )
            if not 0 <= key.entry_id < self.entries:
                raise PlanError(f"{key.describe()}: the writer adds e0..e{self.entries - 1}")

    @property
    def role(self) -> str:
        """The role the plan is for: ``both`` with a recovery, else ``writer``."""
        return "writer" if self.recover_after is None else "both"

    @property
    def has_fault_events(self) -> bool:
        """Whether a fault executor must carry out events of this plan (at frames, or after
        the recovery)."""
        return bool(self.schedule.events or self.after_recovery or self.before_recovery)

    def choice(self, bookie: str, entry: int) -> Choice:
        return self.schedule.choice(add_key(bookie, entry))

    def faults(self) -> int:
        decided = sum(1 for choice in self.schedule.decisions.values() if choice != FORWARD)
        return (
            decided
            + len(self.schedule.events)
            + len(self.after_recovery)
            + len(self.before_recovery)
        )

    def describe(self) -> list[str]:
        lines = self._describe()
        if self.ledgers > 1:
            by = "one client" if self.writers == 1 else f"{self.writers} writer clients"
            lines[0] += (
                f" ({self.ledgers} ledgers written together by {by}; the frames named are the "
                "first's)"
            )
        return lines

    def _describe(self) -> list[str]:
        later = (
            f" (e{self.entries - self.delayed}..e{self.entries - 1} {self.delay_ms} ms later)"
            if self.delayed
            else ""
        )
        if self.recover_after is not None:
            sent = self.recover_after
            rest = f" {_span(sent, self.entries - 1)}" if sent < self.entries else " nothing more"
            before = "".join(f"{_bare(event)}; " for event in self.before_recovery)
            then = "".join(f"; then {_bare(event)}" for event in self.after_recovery)
            return [
                f"{self.shape.describe()} on {self.shape.bookies} bookies; the writer adds "
                f"{_span(0, sent - 1)} pipelined{later}; {self.recover_delay_ms} ms later "
                f"{before}a "
                f"second client recovers the ledger{then}; the writer adds{rest}, then closes",
                *self.schedule.describe(),
            ]
        return [
            f"{self.shape.describe()} on {self.shape.bookies} bookies; the Java client adds "
            f"e0..e{self.entries - 1} pipelined{later}, then closes",
            *self.schedule.describe(),
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "shape": self.shape.key(),
            "entries": self.entries,
            "schedule": self.schedule.to_json(),
            "origin": self.origin,
            **({"delayed": self.delayed, "delay_ms": self.delay_ms} if self.delayed else {}),
            **(
                {"recover_after": self.recover_after, "recover_delay_ms": self.recover_delay_ms}
                if self.recover_after is not None
                else {}
            ),
            **(
                {"after_recovery": [event.to_json() for event in self.after_recovery]}
                if self.after_recovery
                else {}
            ),
            **(
                {"before_recovery": [event.to_json() for event in self.before_recovery]}
                if self.before_recovery
                else {}
            ),
            **({"ledgers": self.ledgers} if self.ledgers > 1 else {}),
            **({"writers": self.writers} if self.writers > 1 else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WriterRunPlan:
        if not isinstance(data, Mapping) or data.get("role") not in ("writer", "both"):
            raise PlanError(f"not a writer plan (needs role 'writer' or 'both'): {data!r}")
        if (data["role"] == "both") != ("recover_after" in data):
            raise PlanError(
                f"a plan of role {data['role']!r} "
                + ("needs" if data["role"] == "both" else "has no")
                + " recover_after"
            )
        try:
            shape = WriterShape.parse(str(data["shape"]))
            recover_after = data.get("recover_after")
            return cls(
                shape,
                int(data["entries"]),
                FrameSchedule.from_json(data["schedule"], shape.names),
                str(data.get("origin", "recorded")),
                delayed=int(data.get("delayed", 0)),
                delay_ms=int(data.get("delay_ms", 0)),
                recover_after=None if recover_after is None else int(recover_after),
                recover_delay_ms=int(data.get("recover_delay_ms", 0)),
                after_recovery=tuple(
                    PlannedFault.from_json(event, shape.names)
                    for event in data.get("after_recovery", ())
                ),
                before_recovery=tuple(
                    PlannedFault.from_json(event, shape.names)
                    for event in data.get("before_recovery", ())
                ),
                ledgers=int(data.get("ledgers", 1)),
                writers=int(data.get("writers", 1)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, PlanError):
                raise
            raise PlanError(f"not a writer plan: {exc!r}") from exc


__all__ = [
    "DEFAULT_SHAPES",
    "MAX_DELAY_MS",
    "MAX_ENTRIES",
    "MAX_LEDGERS",
    "SEARCHED_ENTRIES",
    "WriterRunPlan",
    "WriterShape",
    "add_key",
]
