"""A role the real Java client plays: one value of :class:`Role`.

Everything a Java-client run does is the same for every role (the session of
:mod:`.session`, the frame controller of :mod:`.controller`, the search and shrinking of
the kernel, :mod:`conformance.live.search`, through :mod:`.search`, the run directory of
:mod:`.run`) except what a role says here: the session it needs (a
:class:`~.session.SessionLayout`), the plans Hypothesis draws and the model proposes, how a
plan is carried out on a session (what the client is asked to do, and what is read back
afterwards), how the record of a run is judged, how a plan is made smaller, and how its record
is written and told (with every fault the run injected: :meth:`Role.with_faults`). The
recovering client (:mod:`.recovery_role`) and the writer (:mod:`.writer_role`) are the two
roles today; :mod:`.roles` names them.

Plans and records are plain data (Jepsen's operations): a plan can be generated, shrunk,
recorded in a run directory and replayed; a record can be judged again offline.
"""

from __future__ import annotations

import contextlib
import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from hypothesis import strategies as st

from adapters.javaclient import BookKeeperVersion
from adapters.netproxy import DeliveryRecord, FrameRecord
from conformance.javaclient.coverage import NewCoverage
from conformance.javaclient.metadata_writes import MetadataWrite
from conformance.javaclient.model_replay import Judgement
from conformance.javaclient.plans import FrameSchedule
from conformance.javaclient.recording import RecordFormat
from conformance.javaclient.session import (
    ClientSession,
    SessionLayout,
    model_bookie_names,
    routing_refusal,
)
from conformance.live.faults import FaultEvent
from conformance.verdict import Verdict
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import Reading


class Plan(Protocol):
    """What a role's plans have in common: the proxies' schedule and where it came from."""

    @property
    def schedule(self) -> FrameSchedule: ...

    @property
    def origin(self) -> str: ...

    @property
    def has_fault_events(self) -> bool: ...

    def describe(self) -> list[str]: ...

    def to_json(self) -> dict[str, Any]: ...


class Record(Protocol):
    """What a role's records have in common: the frames of the run and who saw them."""

    @property
    def ledger_id(self) -> int: ...

    @property
    def bookie_of_proxy(self) -> Mapping[str, int]: ...

    @property
    def frames(self) -> Sequence[FrameRecord]: ...

    @property
    def deliveries(self) -> Mapping[int, DeliveryRecord]: ...

    @property
    def faults(self) -> tuple[FaultEvent, ...]: ...

    @property
    def metadata_writes(self) -> tuple[MetadataWrite, ...]: ...


PlanT = TypeVar("PlanT", bound=Plan)
RecordT = TypeVar("RecordT", bound=Record)

#: What a run's proxies do: given the ledger id and ``proxy -> the model's bookie name``, a
#: context in which they do it (the :class:`~.controller.ScheduleController`).
Arrangement = Callable[[int, Mapping[str, str]], contextlib.AbstractContextManager[object]]


@dataclass
class Example(Generic[PlanT, RecordT]):
    """One plan carried out on a session and judged (``judgement`` None: not judged)."""

    plan: PlanT
    record: RecordT
    judgement: Judgement | None
    #: ``(frame, what the controller did)`` in the order decided.
    decisions: list[tuple[str, str]]
    seconds: float
    #: Why the schedule was not (wholly) applied: the example is undecided, never clean.
    unapplied: str | None = None
    #: The client's code it covered first in its session (None: not measured).
    new_coverage: NewCoverage | None = None
    #: ``(when, what)`` of each fault carried out (``time.monotonic()``, the frames' clock).
    faults: tuple[tuple[float, str], ...] = ()
    #: The plan's fault events whose frame never came: they did nothing in this run.
    untriggered: tuple[str, ...] = ()

    @property
    def verdict(self) -> Verdict:
        if self.unapplied is not None or self.judgement is None:
            return Verdict.UNDECIDED
        return self.judgement.verdict

    @property
    def finding(self) -> bool:
        return self.verdict.finding


class Role(ABC, Generic[PlanT, RecordT]):
    """What one role of the Java client is (see the module docstring)."""

    #: The role's name on the command line and in every artifact.
    name: str
    #: How long the model's explorer may look for plans (in a process of its own).
    guidance_budget_s: float = 30.0
    #: How the role's records are written and read back.
    records: RecordFormat[RecordT]
    #: How the model reads the spec for this role (:mod:`model.bookkeeper.readings`): its
    #: guidance proposes plans from it and its judge judges under it, the same object.
    reading: Reading

    # -- the session -------------------------------------------------------------------------

    @abstractmethod
    def layout(self) -> SessionLayout:
        """The session this role needs."""

    def refusal(self, version: BookKeeperVersion) -> str | None:
        """Why a release cannot play this role (None: it can)."""
        return routing_refusal(version, self.layout())

    @abstractmethod
    def config(self) -> ModelConfig:
        """The model's configuration of the role's runs (what a run directory records)."""

    def settings(self) -> dict[str, Any]:
        """What a run directory records of the role's own settings."""
        return {"role": self.name}

    def describe(self) -> str:
        """The role in a line, for the command's header."""
        return self.name

    @property
    def max_hold_s(self) -> float:
        """A held frame is released after this long at the latest."""
        return 1.5

    # -- plans -------------------------------------------------------------------------------

    @abstractmethod
    def plans(self) -> st.SearchStrategy[PlanT]:
        """Hypothesis' plans."""

    @abstractmethod
    def guided_plans(self, seed: int, budget_s: float) -> list[PlanT]:
        """The plans the model's explorer proposes, best first."""

    @abstractmethod
    def smaller_plans(self, plan: PlanT) -> Iterator[PlanT]:
        """Each plan one simplification away from ``plan``."""

    @abstractmethod
    def plan_from_json(self, data: Mapping[str, Any]) -> PlanT:
        """A recorded plan back (:class:`~.plans.PlanError` if it is not one of this role's)."""

    # -- a run -------------------------------------------------------------------------------

    @abstractmethod
    def perform(self, session: ClientSession, plan: PlanT, arrange: Arrangement) -> RecordT:
        """Carry out ``plan`` once on a fresh ledger, the proxies ``arrange``d around the
        client's part; what was observed."""

    @abstractmethod
    def judge(self, record: RecordT) -> Judgement:
        """The model's story of ``record`` and its verdict."""

    def with_faults(self, record: RecordT, faults: Sequence[FaultEvent]) -> RecordT:
        """``record`` with the faults its run injected and healed (the fault injector's
        record of them, :class:`~conformance.live.faults.FaultEvent`)."""
        return dataclasses.replace(record, faults=tuple(faults))  # type: ignore[type-var]

    def with_metadata_writes(self, record: RecordT, writes: Sequence[MetadataWrite]) -> RecordT:
        """``record`` with its ledger's metadata writes as the ZooKeeper proxy saw them."""
        return dataclasses.replace(record, metadata_writes=tuple(writes))  # type: ignore[type-var]

    def record_to_json(self, record: RecordT) -> dict[str, Any]:
        return self.records.to_json(record)

    def record_from_json(self, data: dict[str, Any]) -> RecordT:
        """A recorded run back (:class:`~.recording.RecordingError` if it is not one)."""
        return self.records.from_json(data)

    @abstractmethod
    def story_lines(self, record: RecordT) -> list[str]:
        """What the client did besides its frames (callbacks, errors, the metadata read back):
        the lines after the frames in ``frames.txt``."""

    def names(self, record: RecordT) -> Mapping[str, str]:
        """Proxy -> the model's bookie name in ``record``."""
        return model_bookie_names(record.bookie_of_proxy)

    def frame_lines(self, record: RecordT) -> str:
        """``frames.txt``: the run's frames as the proxies saw them, what became of each, and
        the rest of the client's story."""
        names = self.names(record)
        lines = [f"bookies: {', '.join(f'{p} = {n}' for p, n in sorted(names.items()))}"]
        for frame in record.frames:
            delivery = record.deliveries.get(frame.frame_id)
            fate = (
                "never delivered"
                if delivery is None or not delivery.delivered
                else f"delivered +{delivery.at - frame.at:.3f} s"
            )
            bookie = names.get(frame.proxy, "?")
            lines.append(f"{frame.at:.3f} [{bookie}] {frame.describe()} ({fate})")
        return "\n".join([*lines, *self.story_lines(record)]) + "\n"

    def tallies(self, example: Example[PlanT, RecordT]) -> Mapping[str, Sequence[str] | int]:
        """What the search's coverage counts of an example besides the model's actions: names
        in a category (each counted), or a number (summed)."""
        return {}

    def steering(self, example: Example[PlanT, RecordT]) -> Mapping[str, float]:
        """Hypothesis' targets of an example besides the client's new coverage and its
        ensemble changes: the dangers the role's open upstream bugs need, by name."""
        return {}

    def example_facts(self, example: Example[PlanT, RecordT]) -> dict[str, Any]:
        """What ``examples.jsonl`` keeps of an example besides its plan and verdict."""
        return {}

    def finding_facts(self, judgement: Judgement) -> dict[str, Any]:
        """What ``results.json`` keeps of a finding's judgement besides its outcome."""
        return {}


def violated_invariants(judgement: Judgement) -> frozenset[str]:
    """The names of the invariants a judgement found broken (each finding starts with one)."""
    return frozenset(v.split(" ")[0] for v in judgement.outcome.violations)


def same_failure(a: Example[Any, Any], b: Example[Any, Any]) -> bool:
    """Whether ``b`` fails as ``a`` did: the same verdict, and for a violation the same
    invariants broken (the details, which name entries and bookies, may differ once the plan
    is smaller)."""
    if a.judgement is None or b.judgement is None or a.verdict is not b.verdict:
        return False
    if a.verdict is Verdict.VIOLATION:
        return violated_invariants(a.judgement) == violated_invariants(b.judgement)
    return True


__all__ = [
    "Arrangement",
    "Example",
    "Plan",
    "PlanT",
    "Record",
    "RecordT",
    "Role",
    "same_failure",
    "violated_invariants",
]
