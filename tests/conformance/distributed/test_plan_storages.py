"""A qualification's ledger storages: the same shards planned once per storage, none for limbo
on SortedLedgerStorage, and a plan that reads back as written (and as it did without them)."""

from __future__ import annotations

import json

import pytest

from conformance.distributed.plan import Plan, PlanError, make_plan, storage_refusal

CONFIGS = ("fenced-recovery", "fragment-recovery", "limbo-crash")


def test_each_storage_gets_the_same_searches_but_limbo_only_on_db() -> None:
    plan = make_plan(master_seed=7, shards=4, configurations=CONFIGS, target="local")
    stored = make_plan(
        master_seed=7,
        shards=4,
        configurations=CONFIGS,
        target="local",
        ledger_storages=("sorted", "db"),
    )
    alone = [(s.configuration, s.seed, s.time_budget) for s in plan.shards]
    on_db = [
        (s.configuration, s.seed, s.time_budget) for s in stored.shards if s.ledger_storage == "db"
    ]
    on_sorted = [(s.configuration, s.seed) for s in stored.shards if s.ledger_storage == "sorted"]
    assert on_db == alone  # db runs every configuration: the plan without storages, again
    assert on_sorted == [(c, seed) for c, seed, _ in alone if c != "limbo-crash"]
    assert [s.shard for s in stored.shards] == list(range(7))  # numbered across storages
    assert [s.ledger_storage for s in stored.shards] == ["sorted"] * 3 + ["db"] * 4
    assert stored.not_applicable() == {
        ("limbo-crash", "sorted"): (
            "not applicable: limbo (data integrity checking) needs DbLedgerStorage"
        )
    }
    assert storage_refusal("no-limbo", "sorted") is None  # crashes, but no data integrity
    assert all(s.ledger_storage is None for s in plan.shards) and plan.not_applicable() == {}


def test_a_plan_with_storages_reads_back_and_one_without_reads_as_before() -> None:
    stored = make_plan(master_seed=1, shards=3, target="docker", ledger_storages=("db", "sorted"))
    assert Plan.from_json(stored.to_json()) == stored
    data = json.loads(stored.to_json())
    assert data["ledger_storages"] == ["db", "sorted"] and data["shards_per_storage"] == 3
    plain = make_plan(master_seed=1, shards=3, target="local")
    assert set(json.loads(plain.to_json())) == {
        "budget",
        "configurations",
        "crash_time_share",
        "master_seed",
        "shards",
        "target",
    }
    assert Plan.from_json(plain.to_json()) == plain


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(target="model", ledger_storages=("db",)), "--target local or docker, not model"),
        (dict(target="local", ledger_storages=("interleaved",)), "unknown ledger storage"),
        (dict(target="local", ledger_storages=("db", "db")), "named twice"),
        (
            dict(target="local", ledger_storages=("sorted",), configurations=("limbo-crash",)),
            "no configuration of limbo-crash can run on sorted",
        ),
    ],
)
def test_plans_that_cannot_be_made(options: dict[str, object], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        make_plan(master_seed=0, shards=2, **options)  # type: ignore[arg-type]
