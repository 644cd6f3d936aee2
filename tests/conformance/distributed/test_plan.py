from __future__ import annotations

import pytest

from conformance.distributed.plan import (
    CONFIGURATIONS,
    RELEASE_CONFIGURATIONS,
    Plan,
    PlanError,
    make_plan,
    shard_seed,
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
