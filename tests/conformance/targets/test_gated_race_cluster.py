"""Gated races on real bookies (4.17.3 and 4.18.0): the local target started with gates runs a
race of a writer's add and a recovery's fence read at one bookie by a gate schedule, and the
engine judges the answers by the serial orders the model allows.

c1 has e1 on b1..b3 and its LAC at 1 and sends e2 (LAC 1); c2 starts recovering: at b1, c1's
add of e2 and c2's fence read both wait (tests/conformance/test_races.py's prefix)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.cluster.gates import At, GatePoint
from adapters.installations.system import BookieChoice
from conformance.engine import Execution
from conformance.gated_races import Gated, GateSchedule, Stop
from conformance.races import raceable
from conformance.targets.local_target import LocalTarget
from conformance.verdict import Verdict
from model.bookkeeper.actions import successors
from model.bookkeeper.config import ModelConfig
from model.bookkeeper.records import AddEntryRequest, FenceRequest
from model.bookkeeper.scripted import take
from tests.bookkeeper_fixtures import installed_home
from tests.conformance.racing_prefix import ADD_AND_FENCE_WAIT_AT_B1

pytestmark = pytest.mark.cluster

CFG = ModelConfig(
    bookies=3,
    clients=2,
    write_quorum=3,
    ack_quorum=2,
    send_limit=2,
    inflight_limit=2,
    lac_of_highest_entry=True,
    first_copy_kept=True,  # SortedLedgerStorage, the suite's default
)
PREFIX_STEPS = ADD_AND_FENCE_WAIT_AT_B1


@pytest.fixture(params=["4.17.3", "4.18.0"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalTarget]:
    home = installed_home(str(request.param))
    local = LocalTarget(
        bookies=BookieChoice.bookkeeper(home), work_dir=tmp_path / "cluster", gates=True
    )
    local.open(CFG)
    try:
        yield local
    finally:
        local.close()


def _at_the_race(target: LocalTarget) -> tuple[Execution, list[object]]:
    execution = Execution(CFG, target)
    assert execution.begin()
    for scripted in PREFIX_STEPS:
        record = execution.apply(take(CFG, execution.state, scripted))
        assert not record.divergence, record
    racing = [t for t in raceable(successors(CFG, execution.state)) if t.label.bookie == 0]
    add = next(t for t in racing if isinstance(t.label.received, AddEntryRequest))
    fence = next(t for t in racing if isinstance(t.label.received, FenceRequest))
    return execution, [add, fence]


def test_a_fence_held_inside_its_lock_blocks_the_add_which_is_then_fenced(
    target: LocalTarget,
) -> None:
    execution, race = _at_the_race(target)
    # The fence held at setFenced, inside the handle's synchronized fenceAndLogInJournal: the
    # add waits on the handle (BookieImpl.addEntry's synchronized (handle)).
    schedule = GateSchedule(1, Stop(GatePoint.SET_FENCED, At.ENTRY))
    records = execution.apply_race(race, [0.0, 0.0], schedule)  # type: ignore[arg-type]
    assert execution.error is None, execution.error
    gates = {r.action: r.race["gate"] for r in records}  # type: ignore[index]
    assert gates == {
        "BookieSendsFencingReadLacResponse": "held at the entry of "
        "LedgerDescriptorImpl.setFenced, released first",
        "BookieSendsAddFencedResponse": "blocked behind the held request",
    }
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome
    assert outcome.races is not None and outcome.races.gates.blocked == 1


def test_an_add_held_with_its_handle_before_the_lock_lets_the_fence_through_first(
    target: LocalTarget,
) -> None:
    execution, race = _at_the_race(target)
    # The add held at the exit of getHandle, before BookieImpl.addEntry's synchronized
    # (handle) (its fence check, storage and journal writes are all inside): the fence goes
    # through and answers while the add is held; the add is then refused EFENCED.
    schedule = GateSchedule(0, Stop(GatePoint.LEDGER_HANDLE, At.EXIT))
    records = execution.apply_race(race, [0.0, 0.0], schedule)  # type: ignore[arg-type]
    assert execution.error is None, execution.error
    assert [r.action for r in records] == [
        "BookieSendsFencingReadLacResponse",
        "BookieSendsAddFencedResponse",
    ]
    fence, add = (r.race for r in records)
    assert fence is not None and add is not None
    assert fence["gate"] == "not held (ran through)"
    assert add["gate"] == "held at the exit of HandleFactoryImpl.getHandle, released first"
    assert fence["answered_ms"] < add["answered_ms"]
    outcome = execution.finish()
    assert outcome.verdict is Verdict.CLEAN, outcome
    races = outcome.races
    assert races is not None and races.gates.reached == 1
    assert races.gates.pairs["add x fence read"] == {("LEDGER_HANDLE:exit", "ran", False)}


def test_a_stop_the_request_does_not_reach_leaves_the_race_unheld(target: LocalTarget) -> None:
    execution, race = _at_the_race(target)
    # A fence read never checks the fence an add checks.
    schedule = GateSchedule(1, Stop(GatePoint.FENCED_CHECK, At.ENTRY))
    records = execution.apply_race(race, [0.0, 0.0], schedule)  # type: ignore[arg-type]
    assert execution.error is None, execution.error
    assert all(r.race is not None and r.race["gate"].startswith("not held") for r in records)
    assert [r.action for r in records] == [
        "BookieSendsFencingReadLacResponse",
        "BookieSendsAddFencedResponse",
    ]
    assert execution.finish().verdict is Verdict.CLEAN
    assert Gated.NOT_HELD.value == "not held"
