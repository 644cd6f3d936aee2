from __future__ import annotations

import json
import math

import pytest

from conformance.distributed.plan import (
    CONFIGURATIONS,
    CRASH_TIME_SHARE,
    RELEASE_CONFIGURATIONS,
    Plan,
    PlanError,
    make_plan,
    shard_seed,
    time_share,
)
from conformance.search.runner import SearchSettings


def test_a_plan_is_deterministic_from_its_master_seed() -> None:
    first = make_plan(master_seed=7, shards=12, target="local")
    again = make_plan(master_seed=7, shards=12, target="local")
    other = make_plan(master_seed=8, shards=12, target="local")
    assert first == again
    assert [s.seed for s in first.shards] != [s.seed for s in other.shards]
    assert len({s.seed for s in first.shards}) == 12
    assert all(s.target == "local" for s in first.shards)


def test_every_configuration_gets_its_share_of_shards() -> None:
    plan = make_plan(master_seed=0, shards=7)
    names = [s.configuration for s in plan.shards]
    assert names[:3] == list(RELEASE_CONFIGURATIONS)
    assert {name: names.count(name) for name in RELEASE_CONFIGURATIONS} == {
        "fenced-recovery": 3,
        "fragment-recovery": 2,
        "limbo-crash": 2,
    }


def test_shards_carry_the_budget_and_their_own_seed() -> None:
    budget = SearchSettings(max_examples=5, max_steps=9, time_budget=2.5, explore=False)
    plan = make_plan(master_seed=3, shards=2, configurations=("no-limbo",), budget=budget)
    shard = plan.shards[1]
    assert shard.settings == SearchSettings(5, 9, shard_seed(3, 1), 2.5, False)
    assert shard.config == CONFIGURATIONS["no-limbo"]


def test_a_plan_survives_its_json() -> None:
    plan = make_plan(master_seed=11, shards=5, configurations=("no-recovery-read-fence",))
    assert Plan.from_json(plan.to_json()) == plan


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"shards": 0}, "at least one shard"),
        ({"configurations": ()}, "at least one configuration"),
        ({"configurations": ("fenced-recovery", "bogus")}, "unknown configuration"),
        ({"budget": SearchSettings(max_examples=0)}, "at least one example"),
        ({"budget": SearchSettings(time_budget=0)}, "time budget must be positive"),
    ],
)
def test_bad_plans_are_refused_with_a_reason(changes: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"master_seed": 0, "shards": 2, **changes}
    with pytest.raises(PlanError, match=message):
        make_plan(**arguments)  # type: ignore[arg-type]


CRASHING_AND_NOT = ("fenced-recovery", "limbo-crash", "no-limbo", "fragment-recovery")


def crash_plan(target: str, time_budget: float | None = 20.0, **share: float) -> Plan:
    budget = SearchSettings(time_budget=time_budget)
    return make_plan(
        master_seed=1, shards=5, configurations=CRASHING_AND_NOT, target=target, budget=budget,
        **share,
    )  # fmt: skip


def test_on_a_cluster_the_shards_of_configurations_that_crash_bookies_get_the_crash_share() -> None:
    assert CONFIGURATIONS["limbo-crash"].max_crashes > 0 and CONFIGURATIONS["no-limbo"].max_crashes
    local = crash_plan("local")
    assert local.crash_time_share == CRASH_TIME_SHARE == 3.0
    assert [s.time_budget for s in local.shards] == [20.0, 60.0, 60.0, 20.0, 20.0]
    shares = [time_share(CONFIGURATIONS[name], "local", 3.0) for name in CRASHING_AND_NOT]
    assert shares == [1.0, 3.0, 3.0, 1.0]
    assert local.shards[1].settings.time_budget == 60.0
    assert local.describe_time_shares() == (
        " (3x where bookies crash: limbo-crash 60 s; no-limbo 60 s)"
    )
    halved = crash_plan("external", crash_time_share=0.5)
    assert [s.time_budget for s in halved.shards] == [20.0, 10.0, 10.0, 20.0, 20.0]
    # No share: on the model (a crash costs what any step does), without a time budget, at 1.
    for plan in (crash_plan("model"), crash_plan("local", crash_time_share=1.0)):
        assert {s.time_budget for s in plan.shards} == {20.0}
        assert plan.describe_time_shares() == ""
    untimed = crash_plan("local", time_budget=None)
    assert {s.time_budget for s in untimed.shards} == {None}
    assert untimed.describe_time_shares() == ""


def test_the_crash_share_survives_the_plans_json_and_an_older_plan_has_none() -> None:
    plan = make_plan(master_seed=4, shards=3, target="local", crash_time_share=2.5)
    assert json.loads(plan.to_json())["crash_time_share"] == 2.5
    assert Plan.from_json(plan.to_json()) == plan
    older = json.loads(plan.to_json())
    del older["crash_time_share"]
    read = Plan.from_json(json.dumps(older))
    assert read.crash_time_share == 1.0
    assert read == make_plan(master_seed=4, shards=3, target="local", crash_time_share=1.0)


@pytest.mark.parametrize("share", [0.0, -1.0, math.nan, math.inf])
def test_a_crash_share_that_is_not_a_positive_number_is_refused(share: float) -> None:
    with pytest.raises(PlanError, match="crash time share must be a positive number"):
        make_plan(master_seed=0, shards=1, target="local", crash_time_share=share)
