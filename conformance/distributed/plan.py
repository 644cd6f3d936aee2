"""The qualification plan: shards of seeds x configurations x target, each with a budget.

A plan is a pure value, deterministic from its master seed: the same master seed, shard count,
configurations, target and budget give the same shards with the same seeds, on any machine.
Shard ``i`` runs configuration ``i mod len(configurations)`` (so every configuration gets its
share) with a seed derived from ``(master seed, i)``. On a cluster target the shards of a
configuration that crashes bookies get ``crash_time_share`` times the time budget
(:data:`CRASH_TIME_SHARE`).

With ledger storages (``--ledger-storage sorted,db``) the same shards are planned once per
storage, as the Java-client matrix plans its shards once per release: the storage's ``n``-th
shard runs the configuration and seed of shard ``n`` of a plan without storages, so a
configuration meets the same searches on every storage. A configuration with limbo gets no
shard on a storage other than DbLedgerStorage (data integrity checking needs it:
:meth:`Plan.not_applicable` says so, and the report shows the cell as not applicable).
Shards are numbered across the storages, in the order given.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from typing import Any

from conformance.errors import ConformanceError
from conformance.search.runner import SearchSettings
from conformance.targets.bookie_settings import has_limbo
from model.bookkeeper import interleavings
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.readings import BOOKIE_AS_IMPLEMENTED


class PlanError(ConformanceError, ValueError):
    """A plan that cannot be made (unknown configuration, empty budget, no shards)."""


#: The ledger storages a plan may name (as ``--ledger-storage`` names them).
LEDGER_STORAGES = ("sorted", "db")


def storage_refusal(configuration: str, storage: str) -> str | None:
    """Why ``configuration`` has no shard on ``storage`` (None: it has)."""
    if storage != "db" and has_limbo(CONFIGURATIONS[configuration]):
        return "not applicable: limbo (data integrity checking) needs DbLedgerStorage"
    return None


def as_real_bookies_run(cfg: ModelConfig) -> ModelConfig:
    """A seed's configuration as real bookies run it (:data:`~.readings.BOOKIE_AS_IMPLEMENTED`,
    as ``bkconform run``'s default): a bookie's LAC is its highest entry's
    (``lac_of_highest_entry``: a write-back of an older entry leaves it, issue 30), and with
    limbo the bookies' own recovery client (``bookie_recovers_limbo``, issue 46). The model
    target's bookie follows both switches."""
    return BOOKIE_AS_IMPLEMENTED.apply(cfg)


#: Named configurations a qualification can cover: the constants, the switches (known defects
#: on or off) and the fault budget. The protected ones are what a release must pass; the
#: unprotected ones reproduce known defects (the report must then show a finding).
CONFIGURATIONS: dict[str, ModelConfig] = {
    name: as_real_bookies_run(cfg)
    for name, cfg in {
        "fenced-recovery": interleavings.DEFECT_1.protected,
        "fragment-recovery": interleavings.DEFECT_2.protected,
        "limbo-crash": interleavings.SEED_001.protected,
        "no-recovery-read-fence": interleavings.DEFECT_1.unprotected,
        "no-recovery-fragment-fix": interleavings.DEFECT_2.unprotected,
        "no-limbo": interleavings.SEED_001.unprotected,
    }.items()
}
#: What ``bkconform qualify`` covers by default: every protection on.
RELEASE_CONFIGURATIONS = ("fenced-recovery", "fragment-recovery", "limbo-crash")

#: The default per-shard budget of a qualification: many short shards rather than few long ones
#: (the search's own ``ci`` profile, with 30 s for finding instead of 120 s).
SHARD_BUDGET = SearchSettings(max_examples=50, max_steps=60, time_budget=30.0)

#: How many times the time budget a shard gets on a cluster target when its configuration
#: crashes bookies (``max_crashes`` > 0). Why: there a crash rebuilds a real bookie (its
#: storage, its ZooKeeper sessions, its threads) and costs the time of about 75 ordinary steps
#: (0.09 s against 1.2 ms with another shard beside it, 4.17.3 on 2 cores:
#: benchmarks/profiles/real-bookie-steps-2026-11-27.md), and a limbo trace crashes about once
#: in 19 steps, so with the same time such a shard checked a sixth of the steps of the others.
#: With three times the time its shards checked 61% of the steps of the busiest other shard in
#: two runs of ``make run``: the configuration whose defect loses data after a crash is no
#: longer the one checked least. On the model a crash costs what any step does: no share there.
CRASH_TIME_SHARE = 3.0


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
    #: The bookies' ledger storage (``sorted``, ``db``); None: the target's (a plan without
    #: storages).
    ledger_storage: str | None = None

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

    #: The time share asked for configurations that crash bookies (:data:`CRASH_TIME_SHARE`);
    #: :func:`time_share` says where it applies.
    crash_time_share: float = CRASH_TIME_SHARE
    #: The ledger storages the shards were planned on, in order (empty: the target's), and
    #: the shards asked of each (a configuration with limbo has none on sorted).
    ledger_storages: tuple[str, ...] = ()
    shards_per_storage: int = 0

    def not_applicable(self) -> dict[tuple[str, str], str]:
        """(configuration, storage) -> why it has no shard."""
        return {
            (configuration, storage): why
            for storage in self.ledger_storages
            for configuration in self.configurations
            if (why := storage_refusal(configuration, storage)) is not None
        }

    def describe_time_shares(self) -> str:
        """The configurations whose shards were planned with another time than the budget's,
        in words ("" when none was)."""
        longer = {
            shard.configuration: shard.time_budget
            for shard in self.shards
            if shard.time_budget != self.budget.time_budget
        }
        if not longer:
            return ""
        shares = "; ".join(f"{name} {seconds:g} s" for name, seconds in longer.items())
        return f" ({self.crash_time_share:g}x where bookies crash: {shares})"

    def as_dict(self) -> dict[str, Any]:
        budget = self.budget.as_dict()
        budget.pop("seed")  # each shard has its own
        planned: dict[str, Any] = {
            "master_seed": self.master_seed,
            "target": self.target,
            "configurations": list(self.configurations),
            "budget": budget,
            "crash_time_share": self.crash_time_share,
            "shards": len(self.shards),
        }
        if self.ledger_storages:
            # Only then: a plan without storages reads as it always did (a run directory of
            # before resumes).
            planned["ledger_storages"] = list(self.ledger_storages)
            planned["shards_per_storage"] = self.shards_per_storage
        return planned

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Plan:
        data = json.loads(text)
        budget = SearchSettings(**{**data["budget"], "seed": 0})
        storages = tuple(data.get("ledger_storages", ()))
        return make_plan(
            master_seed=int(data["master_seed"]),
            shards=int(data["shards_per_storage"] if storages else data["shards"]),
            configurations=tuple(data["configurations"]),
            target=str(data["target"]),
            budget=budget,
            # A plan written before the share existed gave every shard the budget's time.
            crash_time_share=float(data.get("crash_time_share", 1.0)),
            ledger_storages=storages,
        )


def shard_seed(master_seed: int, shard: int) -> int:
    """A 32-bit seed for shard ``shard``, independent of every other shard's."""
    digest = hashlib.sha256(f"bkconform-shard:{master_seed}:{shard}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def time_share(config: ModelConfig, target: str, crash_time_share: float) -> float:
    """How many times the budget's time a shard of ``config`` gets on ``target``: the crash
    share where a crash restarts a bookie (every target but the model), 1 elsewhere."""
    return crash_time_share if target != "model" and config.max_crashes > 0 else 1.0


def make_plan(
    *,
    master_seed: int,
    shards: int,
    configurations: tuple[str, ...] = RELEASE_CONFIGURATIONS,
    target: str = "model",
    budget: SearchSettings = SHARD_BUDGET,
    crash_time_share: float = CRASH_TIME_SHARE,
    ledger_storages: tuple[str, ...] = (),
) -> Plan:
    """The plan; with ``ledger_storages``, ``shards`` per storage (see the module docstring)."""
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
    if not math.isfinite(crash_time_share) or crash_time_share <= 0:
        raise PlanError(f"the crash time share must be a positive number, got {crash_time_share}")
    if ledger_storages:
        return _plan_per_storage(
            master_seed=master_seed,
            shards=shards,
            configurations=tuple(configurations),
            target=target,
            budget=budget,
            crash_time_share=crash_time_share,
            ledger_storages=tuple(ledger_storages),
        )
    planned = tuple(
        Shard(
            shard=index,
            configuration=configurations[index % len(configurations)],
            target=target,
            seed=shard_seed(master_seed, index),
            max_examples=budget.max_examples,
            max_steps=budget.max_steps,
            time_budget=_shard_time(
                budget, configurations[index % len(configurations)], target, crash_time_share
            ),
            explore=budget.explore,
        )
        for index in range(shards)
    )
    return Plan(
        master_seed, target, tuple(configurations), budget, planned, float(crash_time_share)
    )


def _plan_per_storage(
    *,
    master_seed: int,
    shards: int,
    configurations: tuple[str, ...],
    target: str,
    budget: SearchSettings,
    crash_time_share: float,
    ledger_storages: tuple[str, ...],
) -> Plan:
    unknown = [name for name in ledger_storages if name not in LEDGER_STORAGES]
    if unknown:
        raise PlanError(
            f"unknown ledger storage(s) {', '.join(unknown)}; known: {', '.join(LEDGER_STORAGES)}"
        )
    if len(set(ledger_storages)) != len(ledger_storages):
        raise PlanError(f"a ledger storage is named twice: {','.join(ledger_storages)}")
    if target not in ("local", "docker"):
        raise PlanError(
            f"ledger storages are the real bookies' of --target local or docker, not {target}"
        )
    planned: list[Shard] = []
    for storage in ledger_storages:
        for n in range(shards):
            configuration = configurations[n % len(configurations)]
            if storage_refusal(configuration, storage) is not None:
                continue
            planned.append(
                Shard(
                    shard=len(planned),
                    configuration=configuration,
                    target=target,
                    # The n-th shard of every storage searches alike: same seed, same
                    # configuration.
                    seed=shard_seed(master_seed, n),
                    max_examples=budget.max_examples,
                    max_steps=budget.max_steps,
                    time_budget=_shard_time(budget, configuration, target, crash_time_share),
                    explore=budget.explore,
                    ledger_storage=storage,
                )
            )
    if not planned:
        raise PlanError(
            f"no configuration of {', '.join(configurations)} can run on "
            f"{', '.join(ledger_storages)}: limbo (data integrity checking) needs DbLedgerStorage"
        )
    return Plan(
        master_seed,
        target,
        configurations,
        budget,
        tuple(planned),
        float(crash_time_share),
        ledger_storages,
        shards,
    )


def _shard_time(
    budget: SearchSettings, configuration: str, target: str, crash_time_share: float
) -> float | None:
    if budget.time_budget is None:
        return None
    return budget.time_budget * time_share(CONFIGURATIONS[configuration], target, crash_time_share)
