"""Upgrades and downgrades as faults of the Java-client runs, and the rolling scenarios (fast:
plans, the session's executor on stand-ins, the recorded runs judged offline).

An upgrade is a bookie stopped as an operator stops it and started again with its data from
another release; to the judges it is a restart with data (the release is the bookie's, not the
model's), so the record keeps it among the restarts. The recorded runs are the rolling upgrade
4.17.3 -> 4.18.0 and downgrade 4.18.0 -> 4.17.3 of ``bkconform scenario
rolling-(up|down)grade-java-client`` (``tools/record_rolling_runs.py``)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.engine import Outcome
from conformance.javaclient import UPGRADE_SCENARIOS
from conformance.javaclient.plans import (
    FaultKind,
    FrameKey,
    FrameSchedule,
    PlanError,
    PlannedFault,
    releases_named,
)
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.run import with_violations
from conformance.javaclient.session import RunUndecided, SessionFaults
from conformance.javaclient.upgrades import (
    ROLLING,
    ROLLING_DOWNGRADE,
    ROLLING_UPGRADE,
    SHAPE,
    ReadBack,
    RollingReport,
    rolling_plan,
)
from conformance.javaclient.writer_plans import WriterRunPlan
from conformance.javaclient.writer_role import fault_moments
from conformance.javaclient.writer_story import judge
from conformance.verdict import Verdict

RUNS = Path(__file__).parent / "recorded_runs" / "rolling-upgrade-runs.jsonl.gz"


# The fault kinds -----------------------------------------------------------------------------


def test_an_upgrade_names_its_bookie_and_the_release_it_restarts_from() -> None:
    event = PlannedFault(FaultKind.UPGRADE, FrameKey("add", "b1", 0), "b1", release="4.18.0")
    assert event.describe() == "upgrade b1 to 4.18.0 when add e0 to b1 passes"
    data = event.to_json()
    assert data == {
        "fault": "upgrade",
        "at": {"kind": "add", "bookie": "b1", "entry": 0},
        "bookie": "b1",
        "release": "4.18.0",
    }
    assert PlannedFault.from_json(data, ("b1", "b2")) == event
    down = PlannedFault(FaultKind.DOWNGRADE, None, "b2", release="4.17.3")
    assert PlannedFault.from_json(down.to_json(), ("b2",)) == down
    assert down.describe() == "downgrade b2 to 4.17.3 as the client starts"
    with pytest.raises(PlanError, match="names the release"):
        PlannedFault(FaultKind.UPGRADE, None, "b1")
    with pytest.raises(PlanError, match="names the release"):
        PlannedFault(FaultKind.DOWNGRADE, None, "b1", release=" ")
    with pytest.raises(PlanError, match="names no release"):
        PlannedFault(FaultKind.RESTART, None, "b1", release="4.18.0")
    with pytest.raises(PlanError, match="names a bookie"):
        PlannedFault(FaultKind.UPGRADE, None, None, release="4.18.0")
    with pytest.raises(PlanError, match="no fault 'upgrade to'"):
        PlannedFault.from_json({"fault": "upgrade to", "bookie": "b1"}, ("b1",))


def test_upgrades_downgrades_and_restarts_are_restarts_with_data() -> None:
    with_data = {kind for kind in FaultKind if kind.restarts_with_data}
    assert with_data == {
        FaultKind.RESTART,
        FaultKind.CLEAN_RESTART,
        FaultKind.UPGRADE,
        FaultKind.DOWNGRADE,
    }
    assert {kind for kind in FaultKind if kind.needs_release} == {
        FaultKind.UPGRADE,
        FaultKind.DOWNGRADE,
    }
    assert not FaultKind.UPGRADE.needs_duration and FaultKind.UPGRADE.needs_bookie
    # Awaiting a checkpoint waits the bookies' own interval: no bookie, no duration of its own.
    assert not FaultKind.AWAIT_CHECKPOINT.needs_bookie
    assert not FaultKind.AWAIT_CHECKPOINT.needs_duration
    assert not FaultKind.AWAIT_CHECKPOINT.restarts_with_data


def test_the_record_takes_an_upgrade_among_the_restarts() -> None:
    done = [
        (1.0, PlannedFault(FaultKind.RESTART, None, "b1")),
        (2.0, PlannedFault(FaultKind.UPGRADE, None, "b2", release="4.18.0")),
        (3.0, PlannedFault(FaultKind.DOWNGRADE, None, "b1", release="4.17.3")),
        (4.0, PlannedFault(FaultKind.RESET, None, "b2")),
        (5.0, PlannedFault(FaultKind.RESTART_EMPTY, None, "b3")),
    ]
    ids = {"b1": "bk1", "b2": "bk2", "b3": "bk3"}
    restarts = fault_moments(
        done, [k for k in FaultKind if k.restarts_with_data], lambda name: ids[str(name)]
    )
    assert restarts == {"bk1": (1.0, 3.0), "bk2": (2.0,)}
    assert fault_moments(done, (FaultKind.RESET,), lambda name: ids[str(name)]) == {"bk2": (4.0,)}


def test_a_plan_says_which_releases_it_restarts_bookies_from() -> None:
    plan = ROLLING_UPGRADE.plan()
    events = [*plan.schedule.events, *plan.before_recovery, *plan.after_recovery]
    assert releases_named(events) == ("4.18.0",)
    assert releases_named([PlannedFault(FaultKind.CRASH, None, "b1")]) == ()


# The session's executor ----------------------------------------------------------------------


class _Cluster:
    """A cluster stand-in whose bookies run releases; a release change is recorded."""

    def __init__(self, releases: dict[str, str]) -> None:
        self.releases = releases
        self.calls: list[str] = []

    def bookie_releases(self) -> dict[str, str]:
        return dict(self.releases)

    def restart_with_release(self, node: Any, home: Path) -> Any:
        self.calls.append(f"restart {node.id} from {home}")
        before, self.releases[node.id] = self.releases[node.id], home.name
        return SimpleNamespace(describe=lambda: f"{node.id} {before} -> {home.name}")

    def pause(self, node: Any) -> None:
        self.calls.append(f"pause {node.id}")

    def resume(self, node: Any) -> None:
        self.calls.append(f"resume {node.id}")


def _session(tmp_path: Path, routed: list[set[str]]) -> Any:
    homes = {}
    for version in ("4.17.3", "4.18.0"):
        home = tmp_path / version
        (home / "lib").mkdir(parents=True)
        (home / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").touch()
        homes[version] = home
    return SimpleNamespace(
        proxies={"p1": object(), "p2": object()},
        bookie_ids=["bk1", "bk2"],
        wait_routed=lambda down: routed.append(set(down)),
        release_home=lambda release: homes[release],
    )


def test_an_upgrade_restarts_the_bookie_from_the_newer_release(tmp_path: Path) -> None:
    routed: list[set[str]] = []
    cluster = _Cluster({"bk1": "4.17.3", "bk2": "4.17.3"})
    faults = SessionFaults(_session(tmp_path, routed), cluster, {"p1": "b1", "p2": "b2"})  # type: ignore[arg-type]
    what = faults.execute(PlannedFault(FaultKind.UPGRADE, None, "b2", release="4.18.0"))
    assert what == "upgrade b2: bk2 4.17.3 -> 4.18.0"
    assert cluster.calls == [f"restart bk2 from {tmp_path / '4.18.0'}"]
    assert routed == [set()]  # the client is routed through the proxy again before going on
    # The same bookie back: a downgrade.
    faults.execute(PlannedFault(FaultKind.DOWNGRADE, None, "b2", release="4.17.3"))
    assert cluster.releases == {"bk1": "4.17.3", "bk2": "4.17.3"}


@pytest.mark.parametrize(
    ("kind", "running", "release", "says"),
    [
        (FaultKind.UPGRADE, "4.18.0", "4.17.3", "4.17.3 is not newer"),
        (FaultKind.UPGRADE, "4.18.0", "4.18.0", "4.18.0 is not newer"),
        (FaultKind.DOWNGRADE, "4.17.3", "4.18.0", "4.18.0 is not older"),
    ],
)
def test_an_upgrade_to_an_older_release_is_not_carried_out(
    tmp_path: Path, kind: FaultKind, running: str, release: str, says: str
) -> None:
    cluster = _Cluster({"bk1": running})
    faults = SessionFaults(_session(tmp_path, []), cluster, {"p1": "b1"})  # type: ignore[arg-type]
    with pytest.raises(RunUndecided, match=says):
        faults.execute(PlannedFault(kind, None, "b1", release=release))
    assert cluster.calls == []


def test_an_upgrade_ends_the_pause_of_its_bookie(tmp_path: Path) -> None:
    cluster = _Cluster({"bk1": "4.17.3", "bk2": "4.17.3"})
    faults = SessionFaults(_session(tmp_path, []), cluster, {"p1": "b1"})  # type: ignore[arg-type]
    faults.execute(PlannedFault(FaultKind.PAUSE, None, "b1", 60_000))
    faults.execute(PlannedFault(FaultKind.UPGRADE, None, "b1", release="4.18.0"))
    faults._first_pause = None  # no session timeout to wait for here
    faults.close()
    # Stopped and started again: nothing left to resume.
    assert cluster.calls == ["pause bk1", f"restart bk1 from {tmp_path / '4.18.0'}"]


# The rolling scenarios -----------------------------------------------------------------------


def test_the_rolling_scenarios_restart_every_bookie_once() -> None:
    assert tuple(ROLLING) == UPGRADE_SCENARIOS
    for scenario, release in ((ROLLING_UPGRADE, "4.18.0"), (ROLLING_DOWNGRADE, "4.17.3")):
        plan = scenario.plan()
        assert plan.role == "both" and plan.shape == SHAPE
        events = [*plan.schedule.events, *plan.before_recovery, *plan.after_recovery]
        assert sorted(str(e.bookie) for e in events) == list(SHAPE.names)
        assert {(e.kind, e.release) for e in events} == {(scenario.kind, release)}
        # Two while the writer's adds are in flight, one before the recovery, one after it.
        assert [e.at for e in plan.schedule.events] == [
            FrameKey("add", "b1", 0),
            FrameKey("add", "b2", 4),
        ]
        assert WriterRunPlan.from_json(plan.to_json()) == plan
        assert scenario.role().plan_from_json(plan.to_json()) == plan
    assert "upgrade b3 to 4.18.0; a second client recovers" in ROLLING_UPGRADE.plan().describe()[0]
    with pytest.raises(ValueError, match="upgrades or downgrades"):
        rolling_plan(FaultKind.RESTART, "4.18.0")


def _recorded() -> list[dict[str, Any]]:
    with gzip.open(RUNS, "rt") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("item", _recorded(), ids=lambda item: item["name"])
def test_each_recorded_rolling_run_is_judged_clean(item: dict[str, Any]) -> None:
    role = role_of_plan(item["plan"], item["role_settings"])
    record = role.record_from_json(item["record"])
    # Every bookie was restarted once, and to the judge each was a restart with data.
    assert sorted(record.restarts) == [0, 1, 2, 3]
    assert all(len(moments) == 1 for moments in record.restarts.values())
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome
    # Two ensemble changes: the bookies restarted while the writer's adds were in flight.
    assert len(record.segments) >= 2
    rolling = item["rolling"]
    assert rolling["completed"] and rolling["entries_acknowledged"] == 8
    assert set(rolling["read_back"]) == {"4.17.3", "4.18.0"}
    for read in rolling["read_back"].values():
        assert read["reads"] == {f"e{e}": "OK" for e in range(8)}


def test_the_same_run_without_its_restarts_is_judged_the_same() -> None:
    # An upgrade is nothing to the model: with no restart in the record the story is the
    # same (a restart with data only names the fence a restart may lose).
    import dataclasses

    item = _recorded()[0]
    role = role_of_plan(item["plan"], item["role_settings"])
    record = role.record_from_json(item["record"])
    assert judge(dataclasses.replace(record, restarts={})).verdict is Verdict.CLEAN


# What a rolling run reports ------------------------------------------------------------------


def test_an_entry_a_release_cannot_read_back_is_a_violation() -> None:
    good = ReadBack("4.18.0", {0: "OK", 1: "OK"})
    bad = ReadBack("4.17.3", {0: "OK", 1: "BKReadException"})
    gone = ReadBack("4.17.3", {}, "JvmGone: no JVM")
    assert good.ok and not bad.ok and not gone.ok
    assert good.violations() == []
    assert bad.violations() == [
        "AllAckedEntriesAreReadable (on the real cluster): the BookKeeper 4.17.3 Java client "
        "reading e1 back, acknowledged to the writer: BKReadException"
    ]
    assert "could not read the ledger back: JvmGone" in gone.violations()[0]
    assert bad.as_dict()["read_ok"] == [0]


def _outcome(verdict: Verdict, error: str | None = None) -> Outcome:
    return Outcome(verdict, [], [], error=error)


def test_violations_found_afterwards_make_the_run_a_violation_unless_undecided() -> None:
    clean = _outcome(Verdict.CLEAN)
    assert with_violations(clean, []) is clean
    found = with_violations(clean, ["AllAckedEntriesAreReadable: e1"])
    assert found.verdict is Verdict.VIOLATION and found.violations == [
        "AllAckedEntriesAreReadable: e1"
    ]
    diverged = with_violations(_outcome(Verdict.DIVERGENCE), ["x"])
    assert diverged.verdict is Verdict.VIOLATION
    undecided = with_violations(_outcome(Verdict.UNDECIDED, "boom"), ["x"])
    assert undecided.verdict is Verdict.UNDECIDED and undecided.violations == ["x"]
    incomplete = with_violations(clean, [], undecided="b4 never upgraded")
    assert incomplete.verdict is Verdict.UNDECIDED and incomplete.error == "b4 never upgraded"


def _report(at_end: dict[str, str], untriggered: tuple[str, ...] = ()) -> RollingReport:
    return RollingReport(
        scenario="rolling-upgrade-java-client",
        kind="upgrade",
        start="4.17.3",
        target="4.18.0",
        client="4.17.3",
        bookies_at_start=dict.fromkeys(at_end, "4.17.3"),
        bookies_at_end=at_end,
        steps=((1.5, "upgrade b1: bk1 4.17.3 -> 4.18.0: stopped"),),
        untriggered=untriggered,
        entries_written=8,
        acknowledged=(0, 1),
        recovery=None,
        closed_last_entry=1,
        read_backs=(ReadBack("4.17.3", {0: "OK", 1: "OK"}), ReadBack("4.18.0", {0: "OK"})),
    )


def test_a_rolling_upgrade_that_missed_a_bookie_is_undecided() -> None:
    done = _report({"b1": "4.18.0", "b2": "4.18.0"})
    assert done.completed and done.incomplete_reason() is None
    missed = _report({"b1": "4.18.0", "b2": "4.17.3"}, ("upgrade b2 to 4.18.0 when ...",))
    assert not missed.completed
    reason = missed.incomplete_reason()
    assert reason is not None and "b2 still on another release than 4.18.0" in reason
    assert "never triggered: upgrade b2" in reason
    lines = done.lines()
    assert "entries written: 8; acknowledged: 2 (e0, e1)" in lines
    assert "read back by the 4.17.3 client: 2 of 2 OK (e0 OK, e1 OK)" in lines
    assert "read back by the 4.18.0 client: 1 of 2 OK (e0 OK)" in lines
    data = done.as_dict()
    assert data["entries_acknowledged"] == 2 and data["read_back"]["4.17.3"]["read_ok"] == [0, 1]
    assert data["steps"] == [[1.5, "upgrade b1: bk1 4.17.3 -> 4.18.0: stopped"]]


def test_a_schedule_with_upgrades_round_trips() -> None:
    schedule = FrameSchedule(
        events=(PlannedFault(FaultKind.UPGRADE, FrameKey("add", "b2", 4), "b2", release="4.18.0"),)
    )
    assert FrameSchedule.from_json(schedule.to_json(), SHAPE.names) == schedule
