"""What the engine needs from a target: carry out operations, and show its final state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from adapters.installations.system import SystemUnderTest
from conformance.observations import Observation
from conformance.operations import Operation
from model.bookkeeper.config import ModelConfig


class TargetError(Exception):
    """The target could not be reached or did not answer: the run cannot decide."""


class UnsupportedConfiguration(TargetError):
    """The target cannot run this model configuration (say which switch, and why)."""


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


def system_under_test(target: Target) -> SystemUnderTest:
    """What ``target`` runs against, computed without opening it."""
    return target.system_under_test()
