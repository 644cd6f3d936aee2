"""What the engine needs from a target: deliver a request, apply a metadata step, break a
bookie, and show its state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from adapters.installations.system import SystemUnderTest
from conformance.observations import Observation
from model.bookkeeper.actions import Label
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import Message, State


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
    name: str

    def open(self, cfg: ModelConfig) -> None:
        """Prepare the target (start or reach the cluster) and a fresh ledger for ``cfg``."""

    def new_ledger(self) -> None:
        """A fresh ledger for the next example, on the same cluster."""

    def deliver(self, request: Message, predicted_reply: Message) -> Observation:
        """The bookie processes ``request``; return what it answered."""

    def metadata(self, label: Label, before: State, after: State) -> Observation | None:
        """Carry out a client step's metadata write, if it has one."""

    def crash(self, bookie: int, state_after: State) -> None:
        """The bookie crashes and restarts with this ledger's data lost."""

    def snapshot(self, cfg: ModelConfig) -> TargetSnapshot | None:
        """The target's bookies and metadata now (None: nothing to compare)."""

    def describe(self) -> dict[str, str]:
        """Versions and endpoints, for the run's results."""

    def close(self) -> None: ...


def system_under_test(target: Target) -> SystemUnderTest:
    """What ``target`` runs against (its ``system_under_test()``; targets that cannot tell,
    such as test stand-ins, are named as such). Computed without opening the target."""
    tell = getattr(target, "system_under_test", None)
    if callable(tell):
        system = tell()
        if isinstance(system, SystemUnderTest):
            return system
    name = getattr(target, "name", "unknown")
    return SystemUnderTest(f"{name} target (not identified)", "unknown", "unknown")
