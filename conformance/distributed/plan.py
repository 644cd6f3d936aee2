"""The qualification plan: shards of seeds x configurations x target, each with a budget.

A plan is a pure value, deterministic from its master seed: the same master seed, shard count,
configurations, target and budget give the same shards with the same seeds, on any machine.
Shard ``i`` runs configuration ``i mod len(configurations)`` (so every configuration gets its
share) with a seed derived from ``(master seed, i)``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from conformance.errors import ConformanceError
from conformance.search.runner import SearchSettings
from model.bookkeeper import interleavings
from model.bookkeeper.config import ModelConfig


class PlanError(ConformanceError, ValueError):
    """A plan that cannot be made (unknown configuration, empty budget, no shards)."""


#: Named configurations a qualification can cover: the constants, the switches (known defects
#: on or off) and the fault budget. The protected ones are what a release must pass; the
#: unprotected ones reproduce known defects (the report must then show a finding).
CONFIGURATIONS: dict[str, ModelConfig] = {
    "fenced-recovery": interleavings.DEFECT_1.protected,
    "fragment-recovery": interleavings.DEFECT_2.protected,
    "limbo-crash": interleavings.SEED_001.protected,
    "no-recovery-read-fence": interleavings.DEFECT_1.unprotected,
    "no-recovery-fragment-fix": interleavings.DEFECT_2.unprotected,
    "no-limbo": interleavings.SEED_001.unprotected,
}
#: What ``bkconform qualify`` covers by default: every protection on.
RELEASE_CONFIGURATIONS = ("fenced-recovery", "fragment-recovery", "limbo-crash")

#: The default per-shard budget of a qualification: many short shards rather than few long ones
#: (the search's own ``ci`` profile, with 30 s for finding instead of 120 s).
SHARD_BUDGET = SearchSettings(max_examples=50, max_steps=60, time_budget=30.0)


@dataclass(frozen=True)
class Shard:
    """One unit of work: search one configuration on one target with one seed."""

    shard: int
    configuration: str
    target: str
    seed: int
    max_examples: int
    max_steps: int
    time_budget: float | None
    explore: bool

    @property
    def config(self) -> ModelConfig:
        return CONFIGURATIONS[self.configuration]

    @property
    def settings(self) -> SearchSettings:
        return SearchSettings(
            max_examples=self.max_examples,
            max_steps=self.max_steps,
            seed=self.seed,
            time_budget=self.time_budget,
            explore=self.explore,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Plan:
    master_seed: int
    target: str
    configurations: tuple[str, ...]
    budget: SearchSettings
    shards: tuple[Shard, ...]

    def as_dict(self) -> dict[str, Any]:
        budget = self.budget.as_dict()
        budget.pop("seed")  # each shard has its own
        return {
            "master_seed": self.master_seed,
            "target": self.target,
            "configurations": list(self.configurations),
            "budget": budget,
            "shards": len(self.shards),
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        budget = SearchSettings(**{**data["budget"], "seed": 0})
        return make_plan(
            master_seed=int(data["master_seed"]),
            shards=int(data["shards"]),
            configurations=tuple(data["configurations"]),
            target=str(data["target"]),
            budget=budget,
        )


def shard_seed(master_seed: int, shard: int) -> int:
    """A 32-bit seed for shard ``shard``, independent of every other shard's."""
    digest = hashlib.sha256(f"bkconform-shard:{master_seed}:{shard}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def make_plan(
    *,
    master_seed: int,
    shards: int,
    configurations: tuple[str, ...] = RELEASE_CONFIGURATIONS,
    target: str = "model",
    budget: SearchSettings = SHARD_BUDGET,
) -> Plan:
    if shards < 1:
        raise PlanError(f"a plan needs at least one shard, got {shards}")
    if not configurations:
        raise PlanError("a plan needs at least one configuration")
    unknown = [name for name in configurations if name not in CONFIGURATIONS]
    if unknown:
        raise PlanError(
            f"unknown configuration(s) {', '.join(unknown)}; known: {', '.join(CONFIGURATIONS)}"
        )
    if budget.max_examples < 1 or budget.max_steps < 1:
        raise PlanError("a shard's budget needs at least one example of at least one step")
    if budget.time_budget is not None and budget.time_budget <= 0:
        raise PlanError(f"a shard's time budget must be positive, got {budget.time_budget}")
    planned = tuple(
        Shard(
            shard=index,
            configuration=configurations[index % len(configurations)],
            target=target,
            seed=shard_seed(master_seed, index),
            max_examples=budget.max_examples,
            max_steps=budget.max_steps,
            time_budget=budget.time_budget,
            explore=budget.explore,
        )
        for index in range(shards)
    )
    return Plan(master_seed, target, tuple(configurations), budget, planned)
