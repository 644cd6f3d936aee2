"""What the engine needs from a target: carry out operations, and show its final state."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from adapters.installations.system import SystemUnderTest
from conformance.errors import ConformanceError
from conformance.gated_races import GateSchedule
from conformance.observations import Observation
from conformance.operations import Crash, Deliver, Operation
from conformance.races import Timed
from model.bookkeeper.config import ModelConfig


class TargetError(ConformanceError):
    """The target could not be reached or did not answer: the run cannot decide.

    ``cause``: the error it stands for (an adapter's, typically); when raised ``from`` it, the
    cause is also its ``__cause__``, and either is the :attr:`cause`. ``retriable``: whether
    trying again could help (a connection refused or lost, a timeout, a ZooKeeper session lost,
    a cluster that crashed or did not start) or not (a bad configuration, a malformed answer,
    metadata written outside the model). Whoever raises it decides, usually from the adapter's
    error (``retriable=exc.retriable``); the shards retry on the flag alone.
    """

    def __init__(
        self, message: str, *, cause: BaseException | None = None, retriable: bool = False
    ) -> None:
        super().__init__(message)
        self.retriable = retriable
        self._cause = cause
        if cause is not None:
            self.__cause__ = cause

    @property
    def cause(self) -> BaseException | None:
        """The error this one stands for: the one given, else the one it was raised from."""
        return self._cause if self._cause is not None else self.__cause__


class UnsupportedConfiguration(TargetError):
    """The target cannot run this model configuration (say which switch, and why). Never
    retriable: the configuration is no more runnable on a second attempt."""

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message, cause=cause, retriable=False)


@dataclass(frozen=True)
class MetadataSeen:
    """The ledger's metadata as read, in the model's terms: status (the spec's name), znode
    version as the model counts it (``meta_version``), fragments as (first entry, bookies),
    and the last entry (a CLOSED ledger's; else None)."""

    status: str
    version: int
    fragments: tuple[tuple[int, tuple[int, ...]], ...]
    last_entry: int | None


class MetadataChangedOutside(TargetError):
    """Someone other than the model's clients wrote the ledger's metadata (``seen``): on real
    bookies with limbo, their data-integrity service recovering the ledger by itself. Not
    retriable; an engine that models that writer explains it, else the run cannot decide."""

    def __init__(self, message: str, seen: MetadataSeen) -> None:
        super().__init__(message, retriable=False)
        self.seen = seen


@dataclass
class TargetSnapshot:
    """A target's state at the end of a run, in the model's terms."""

    entries: dict[int, set[int]] = field(default_factory=dict)  # bookie -> spec entry ids held
    meta_status: str | None = None
    meta_last_entry: int | None = None
    meta_fragments: list[tuple[int, list[int]]] = field(default_factory=list)  # (first, bookies)


class Target(Protocol):
    """A system the engine runs model steps on: one entry point for steps (``invoke``), the
    final state for the end-of-run comparison, and its lifecycle."""

    name: str

    def open(self, cfg: ModelConfig) -> None:
        """Prepare the target (start or reach the cluster) and a fresh ledger for ``cfg``."""

    def invoke(self, op: Operation) -> Observation:
        """Carry out one operation (:mod:`conformance.operations`) and say what happened.
        Raise ``TargetError`` when the target did not answer (the step decides nothing)."""

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        """The target's bookies and metadata now (None: nothing to compare). Read by an
        observer that changes nothing: it is not a step of the history."""

    def describe(self) -> dict[str, str]:
        """Versions and endpoints, for the run's results."""

    def system_under_test(self) -> SystemUnderTest:
        """What the target runs against: bookies, client, ZooKeeper, with versions. Known
        without opening the target."""

    def close(self) -> None: ...


class ConcurrentTarget(Target, Protocol):
    """A target that can put several requests in flight at once (races:
    :mod:`conformance.races`)."""

    def invoke_concurrently(
        self,
        ops: Sequence[Deliver | Crash],
        offsets_s: Sequence[float],
        gates: GateSchedule | None = None,
    ) -> list[Timed]:
        """Send each request of ``ops`` on a connection of its own, ``offsets_s[i]`` seconds
        after the race starts, and await every answer; each with when it was sent and
        answered. A ``Crash`` among them restarts its bookie meanwhile: a request to that
        bookie whose connection closed under the restart has no answer (``None``). Raise
        ``TargetError`` when anything else did not answer (the race decides nothing).
        ``gates`` (a target with ``gates`` true only): two requests to one bookie run by the
        schedule, its threads held where it says (:mod:`conformance.gated_races`), each
        answer with its :class:`~conformance.gated_races.GateReport`; the offsets are then
        not used. A gate that did not hold or release as asked is a ``TargetError``."""


def invoke_concurrently(
    target: Target,
    ops: Sequence[Deliver | Crash],
    offsets_s: Sequence[float],
    gates: GateSchedule | None = None,
) -> list[Timed]:
    """Race ``ops`` on ``target`` (by the gate schedule ``gates``, when given); an error
    (never a sequential stand-in) when it cannot."""
    if not supports_races(target):
        raise UnsupportedConfiguration(
            f"the {target.name} target cannot put requests in flight together (no races)"
        )
    if len(offsets_s) != len(ops):
        raise ValueError(f"{len(ops)} requests, {len(offsets_s)} send offsets")
    if gates is None:
        answers = target.invoke_concurrently(ops, offsets_s)  # type: ignore[attr-defined]
    else:
        if not supports_gates(target):
            raise UnsupportedConfiguration(
                f"the {target.name} target cannot hold a bookie's threads (no gates: real "
                "BookKeeper bookies of --target local, started with --gates)"
            )
        if len(ops) != 2:
            raise ValueError(f"a gated race holds two requests, not {len(ops)}")
        answers = target.invoke_concurrently(ops, offsets_s, gates)  # type: ignore[attr-defined]
    if len(answers) != len(ops):
        raise TargetError(f"{len(ops)} requests raced, {len(answers)} answers came back")
    return list(answers)


def supports_races(target: Target) -> bool:
    """Whether ``target`` can race requests (:class:`ConcurrentTarget`); a wrapper that
    forwards races says with ``races`` whether what it wraps can."""
    return callable(getattr(target, "invoke_concurrently", None)) and bool(
        getattr(target, "races", True)
    )


def supports_gates(target: Target) -> bool:
    """Whether ``target`` can run a race by a gate schedule (its bookies' JVMs load the gate
    agent): it says so with ``gates``."""
    return supports_races(target) and bool(getattr(target, "gates", False))


def system_under_test(target: Target) -> SystemUnderTest:
    """What ``target`` runs against, computed without opening it."""
    return target.system_under_test()
