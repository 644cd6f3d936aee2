"""The report's steps and restarts per configuration (what crashes cost a configuration)."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.distributed.report import configuration_efforts
from conformance.verdict import Verdict
from tests.conformance.distributed.rows import shard_row


def row(shard: int, configuration: str, steps: int, **extra: Any) -> dict[str, Any]:
    return {
        **shard_row(shard, Verdict.CLEAN),
        "configuration": configuration,
        "steps": steps,
        **extra,
    }


def test_steps_per_shard_are_compared_with_the_deepest_configuration() -> None:
    efforts = configuration_efforts(
        [
            row(0, "fenced-recovery", 1600, elapsed=20.0),
            row(1, "limbo-crash", 500, restarts=40, restart_seconds=16.0, elapsed=30.0),
            row(2, "fenced-recovery", 1800, elapsed=20.0),
            row(3, "limbo-crash", 700, restarts=60, restart_seconds=24.0, elapsed=30.0),
        ]
    )
    fenced, limbo = efforts
    assert (fenced.configuration, fenced.shards, fenced.steps_per_shard) == (
        "fenced-recovery",
        2,
        1700.0,
    )
    assert fenced.share_of_most == 1.0
    assert (fenced.restarts, fenced.mean_restart, fenced.restart_share) == (0, None, None)
    assert limbo.steps_per_shard == 600.0
    assert limbo.share_of_most == pytest.approx(600 / 1700)
    assert limbo.restarts == 100
    assert limbo.mean_restart == pytest.approx(0.4)
    assert limbo.restart_share == pytest.approx(40.0 / 60.0)


def test_rows_from_before_restarts_were_recorded_say_so() -> None:
    (effort,) = configuration_efforts(
        [row(0, "limbo-crash", 10, restarts=None, restart_seconds=None)]
    )
    assert (effort.restarts, effort.mean_restart, effort.restart_share) == (None, None, None)


def test_no_shards_no_efforts() -> None:
    assert configuration_efforts([]) == []


def test_a_configuration_with_no_steps_at_all_is_zero_of_the_most() -> None:
    (effort,) = configuration_efforts([row(0, "limbo-crash", 0)])
    assert effort.share_of_most == 0.0


def test_what_the_bookies_did_on_their_own_is_summed_per_configuration() -> None:
    own = '{"examples": 2, "explained": 3, "recoveries": 2, "left_limbo": 1, "steps": 30}'
    other = '{"examples": 1, "explained": 1, "recoveries": 1, "left_limbo": 0, "steps": 12}'
    fenced, limbo = configuration_efforts(
        [
            row(0, "fenced-recovery", 10),
            row(1, "limbo-crash", 10, bookies_own=own),
            row(2, "limbo-crash", 10, bookies_own=other),
            row(3, "limbo-crash", 10, bookies_own='{"examples": 0, "explained": 0}'),
        ]
    )
    assert fenced.bookies_own is None  # no such actor in that configuration
    assert limbo.bookies_own == {
        "examples": 3,
        "explained": 4,
        "recoveries": 3,
        "left_limbo": 1,
        "steps": 42,
    }
