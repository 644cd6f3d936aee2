"""The one Java-client session: a release it cannot route is refused before anything starts
(unless the role writes the metadata itself), and a record keeps its own frames' deliveries."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.cluster.local import ReleaseRestart
from adapters.javaclient import BookKeeperVersion
from adapters.zkproxy import ExpiryOutcome, ExpiryRecord, SessionRecord
from conformance.javaclient import session as session_module
from conformance.javaclient.plans import FaultKind, PlannedFault
from conformance.javaclient.session import (
    ClientSession,
    RunUndecided,
    SessionFaults,
    SessionLayout,
    SessionOptions,
    SessionRefused,
    await_new_session,
    deliveries_of,
    model_bookie_names,
    routing_refusal,
)


def _home_of(tmp_path: Path, version: str) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    return tmp_path


def test_a_client_that_cannot_be_routed_through_the_proxies_is_refused(tmp_path: Path) -> None:
    home = _home_of(tmp_path, "4.11.1")
    layout = SessionLayout(bookies=4, refusal_hint="try the other role")
    with pytest.raises(SessionRefused, match=r"BookKeeper >= 4\.12\.0.*try the other role"):
        ClientSession(SessionOptions(home, tmp_path, layout))


def test_a_role_that_writes_the_metadata_may_route_any_release() -> None:
    old, new = BookKeeperVersion(4, 11, 1), BookKeeperVersion(4, 12, 0)
    assert routing_refusal(old, SessionLayout(bookies=3, metadata_may_name_proxies=True)) is None
    assert routing_refusal(new, SessionLayout(bookies=3)) is None
    assert routing_refusal(old, SessionLayout(bookies=3)) is not None


def test_a_layout_needs_a_bookie() -> None:
    with pytest.raises(SessionRefused, match="at least one bookie"):
        SessionLayout(bookies=0)


def test_a_record_keeps_the_deliveries_of_its_own_frames_only() -> None:
    class Group:
        def deliveries(self) -> dict[int, Any]:
            return {1: "old example", 7: "this one", 8: "this one too"}

    frames = [SimpleNamespace(frame_id=7), SimpleNamespace(frame_id=8)]
    kept = deliveries_of(Group(), frames)  # type: ignore[arg-type]
    assert kept == {7: "this one", 8: "this one too"}


def test_proxies_are_named_by_the_roles_model_bookies() -> None:
    assert model_bookie_names({"p1": 2, "p2": 0}) == {"p1": "b3", "p2": "b1"}


class _FakeZooKeeper:
    def __init__(self) -> None:
        self.rules: set[int] = set()
        self._next = 0

    def add_rule(self, match: object, action: object) -> int:
        self._next += 1
        self.rules.add(self._next)
        return self._next

    def remove_rule(self, rule: int) -> None:
        self.rules.discard(rule)

    def release_all(self) -> None:
        pass


def test_each_timed_fault_is_undone_even_when_a_plan_repeats_it() -> None:
    # A generated plan held the metadata writes twice from the start, with the same duration:
    # one shared undo released only the second hold, and the first held every later run's
    # createLedger.
    zookeeper = _FakeZooKeeper()
    session: Any = SimpleNamespace(proxies={}, bookie_ids=[], zookeeper_proxy=zookeeper)
    faults = SessionFaults(session, cluster=None, names={})  # type: ignore[arg-type]
    hold = PlannedFault(FaultKind.HOLD_METADATA, None, None, 60_000)
    faults.execute(hold)
    faults.execute(hold)
    assert len(zookeeper.rules) == 2
    faults.close()
    assert zookeeper.rules == set()


class _FakeCluster:
    def __init__(self, session_timeout_ms: int = 10) -> None:
        self.calls: list[str] = []
        self.options = SimpleNamespace(
            bookie_settings=SimpleNamespace(session_timeout_ms=session_timeout_ms)
        )

    def crash(self, node: Any) -> None:
        self.calls.append(f"crash {node.id}")

    def pause(self, node: Any) -> None:
        self.calls.append(f"pause {node.id}")

    def restart(self, node: Any) -> None:
        self.calls.append(f"restart {node.id}")

    def resume(self, node: Any) -> None:
        self.calls.append(f"resume {node.id}")


def test_a_bookie_crashed_by_the_plan_is_not_paused_later() -> None:
    # A generated plan crashed b4 as the client started and paused it at a later frame: the
    # pause failed ("it is not running") and the search stopped undecided.
    cluster = _FakeCluster()
    session: Any = SimpleNamespace(
        proxies={"p4": object()}, bookie_ids=["bk4"], wait_routed=lambda down: None
    )
    faults = SessionFaults(session, cluster=cluster, names={"p4": "b4"})  # type: ignore[arg-type]
    assert faults.execute(PlannedFault(FaultKind.CRASH, None, "b4")) == "crash b4"
    paused = faults.execute(PlannedFault(FaultKind.PAUSE, None, "b4", 500))
    assert paused == "pause b4: down (crashed before), nothing to pause"
    assert cluster.calls == ["crash bk4"]
    faults.close()  # the crashed bookie is started again when the run ends
    assert cluster.calls == ["crash bk4", "restart bk4"]


def test_a_paused_bookie_the_plan_crashes_is_not_resumed() -> None:
    # A generated plan paused b2 as the client started and crashed it before the recovery:
    # resuming the crashed bookie failed ("it is not running") and the search stopped undecided.
    cluster = _FakeCluster()
    session: Any = SimpleNamespace(
        proxies={"p2": object()}, bookie_ids=["bk2"], wait_routed=lambda down: None
    )
    faults = SessionFaults(session, cluster=cluster, names={"p2": "b2"})  # type: ignore[arg-type]
    faults.execute(PlannedFault(FaultKind.PAUSE, None, "b2", 60_000))
    faults.execute(PlannedFault(FaultKind.CRASH, None, "b2"))
    faults.close()
    assert cluster.calls == ["pause bk2", "crash bk2", "restart bk2"]


def test_a_pause_of_another_bookie_is_still_undone() -> None:
    cluster = _FakeCluster()
    session: Any = SimpleNamespace(
        proxies={"p1": object(), "p2": object()},
        bookie_ids=["bk1", "bk2"],
        wait_routed=lambda down: None,
    )
    names = {"p1": "b1", "p2": "b2"}
    faults = SessionFaults(session, cluster=cluster, names=names)  # type: ignore[arg-type]
    faults.execute(PlannedFault(FaultKind.PAUSE, None, "b1", 60_000))
    faults.execute(PlannedFault(FaultKind.RESTART, None, "b2"))
    faults.close()
    assert cluster.calls == ["pause bk1", "crash bk2", "restart bk2", "resume bk1"]


class _ReleaseRestarts(_FakeCluster):
    """A cluster whose bookies stop on SIGTERM with ``exit_code`` (-9: killed after it)."""

    def __init__(self, exit_code: int) -> None:
        super().__init__()
        self.exit_code = exit_code
        self.options.bookie_settings.checkpoint_interval_ms = 10

    def bookie(self, bookie_id: str) -> Any:
        return SimpleNamespace(bookkeeper_home=Path(f"/homes/{bookie_id}"))

    def restart_with_release(self, node: Any, home: Path) -> ReleaseRestart:
        self.calls.append(f"restart {node.id} from {home}")
        return ReleaseRestart(node.id, "4.17.3", "4.17.3", True, self.exit_code, 0.3, 1.0)


def _faults_on(cluster: _FakeCluster) -> SessionFaults:
    session: Any = SimpleNamespace(
        proxies={"p3": object()}, bookie_ids=["bk3"], wait_routed=lambda down: None
    )
    return SessionFaults(session, cluster=cluster, names={"p3": "b3"})  # type: ignore[arg-type]


def test_a_clean_restart_stops_the_bookie_as_an_operator_does_and_says_how_it_stopped() -> None:
    cluster = _ReleaseRestarts(exit_code=143)
    done = _faults_on(cluster).execute(PlannedFault(FaultKind.CLEAN_RESTART, None, "b3"))
    # Its own release again, never a kill first (the fence must be flushed, if ever, here).
    assert cluster.calls == ["restart bk3 from /homes/bk3"]
    assert done.startswith("clean restart b3: bk3 4.17.3 -> 4.17.3: stopped (SIGTERM)")


def test_a_clean_restart_that_had_to_kill_the_bookie_leaves_the_run_undecided() -> None:
    faults = _faults_on(_ReleaseRestarts(exit_code=-9))
    with pytest.raises(RunUndecided, match="killed, so not a clean restart"):
        faults.execute(PlannedFault(FaultKind.CLEAN_RESTART, None, "b3"))


def test_awaiting_a_checkpoint_waits_the_bookies_flush_interval_and_a_margin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(session_module.time, "sleep", slept.append)
    cluster = _ReleaseRestarts(exit_code=143)
    cluster.options.bookie_settings.checkpoint_interval_ms = 60_000
    done = _faults_on(cluster).execute(PlannedFault(FaultKind.AWAIT_CHECKPOINT))
    assert slept == [60.0 + session_module.CHECKPOINT_MARGIN_S]
    assert done.startswith("await checkpoint: 60000 ms (flushInterval)")
    assert cluster.calls == []


class _SessionsOf:
    """A ZooKeeper proxy whose latest granted session is ``granted`` (None: none yet)."""

    def __init__(self, granted: SessionRecord | None) -> None:
        self.granted = granted
        self.expired: list[int] = []

    def session(self) -> SessionRecord | None:
        return self.granted

    def expire_session(self) -> ExpiryRecord:
        assert self.granted is not None
        self.expired.append(self.granted.session_id)
        return ExpiryRecord(self.granted.session_id, 10.0, 10.5, ExpiryOutcome.EXPIRED, (1,))


def _granted(session_id: int, at: float) -> SessionRecord:
    return SessionRecord(session_id, b"", 10_000, 1, at)


def test_a_run_that_expired_the_session_ends_once_the_client_has_a_new_one() -> None:
    zookeeper = _SessionsOf(_granted(7, 1.0))
    session: Any = SimpleNamespace(proxies={}, bookie_ids=[], zookeeper_proxy=zookeeper)
    faults = SessionFaults(session, cluster=None, names={})  # type: ignore[arg-type]
    faults.execute(PlannedFault(FaultKind.EXPIRE_SESSION))
    assert zookeeper.expired == [7]
    threading.Timer(0.2, lambda: setattr(zookeeper, "granted", _granted(8, 11.0))).start()
    started = time.monotonic()
    faults.close()
    assert time.monotonic() - started >= 0.15  # it waited for session 8


@pytest.mark.parametrize(
    "granted",
    [None, _granted(7, 9.0), _granted(7, 12.0), _granted(6, 5.0)],
    ids=["none", "the-expired-one", "the-expired-one-resumed", "an-older-one"],
)
def test_no_session_granted_after_the_expiry_leaves_the_run_undecided(
    granted: SessionRecord | None,
) -> None:
    zookeeper = _SessionsOf(granted)
    expiry = ExpiryRecord(7, 10.0, 10.5, ExpiryOutcome.EXPIRED, ())
    with pytest.raises(RunUndecided, match="no new ZooKeeper session within 0 s"):
        await_new_session(zookeeper, expiry, timeout=0.1)  # type: ignore[arg-type]


def test_a_session_granted_after_the_expiry_ends_the_wait_at_once() -> None:
    zookeeper = _SessionsOf(_granted(8, 10.2))
    expiry = ExpiryRecord(7, 10.0, 10.5, ExpiryOutcome.EXPIRED, ())
    await_new_session(zookeeper, expiry, timeout=0.0)  # type: ignore[arg-type]


def test_a_run_that_paused_a_bookie_ends_after_its_session_could_expire(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A bookie paused near its ZooKeeper session timeout lost its session after the run had
    # ended, and with it its registration: three runs later the client found no spare.
    monkeypatch.setattr("conformance.javaclient.session.PAUSE_EXPIRY_MARGIN_S", 0.05)
    cluster = _FakeCluster(session_timeout_ms=200)
    routed: list[set[str]] = []
    session: Any = SimpleNamespace(
        proxies={"p1": object()},
        bookie_ids=["bk1"],
        wait_routed=lambda down: routed.append(set(down)),
    )
    faults = SessionFaults(session, cluster=cluster, names={"p1": "b1"})  # type: ignore[arg-type]
    started = time.monotonic()
    faults.execute(PlannedFault(FaultKind.PAUSE, None, "b1", 60_000))
    faults.close()
    assert time.monotonic() - started >= 0.25  # the session timeout and the margin
    assert cluster.calls == ["pause bk1", "resume bk1"] and routed == [set()]
    # Without a pause the run ends at once.
    quick = SessionFaults(session, cluster=cluster, names={"p1": "b1"})  # type: ignore[arg-type]
    started = time.monotonic()
    quick.close()
    assert time.monotonic() - started < 0.2 and routed == [set()]


class _HeardCluster(_FakeCluster):
    """ZooKeeper's count of packets from the paused bookie's session, look after look (the
    last repeats)."""

    def __init__(self, looks: list[tuple[int, int] | None], session_timeout_ms: int) -> None:
        super().__init__(session_timeout_ms=session_timeout_ms)
        self.looks = looks

    def bookie_session_packets(self, node: Any) -> tuple[int, int] | None:
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]


def _paused_and_closed(cluster: _FakeCluster) -> float:
    session: Any = SimpleNamespace(
        proxies={"p1": object()}, bookie_ids=["bk1"], wait_routed=lambda down: None
    )
    faults = SessionFaults(session, cluster=cluster, names={"p1": "b1"})  # type: ignore[arg-type]
    started = time.monotonic()
    faults.execute(PlannedFault(FaultKind.PAUSE, None, "b1", 60_000))
    faults.close()
    return time.monotonic() - started


def test_a_paused_bookie_heard_from_since_its_resume_ends_the_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # ZooKeeper received a packet on the bookie's session after the resume: it touched the
    # session, which cannot expire before a session timeout from then: no need to wait.
    monkeypatch.setattr("conformance.javaclient.session.PAUSE_EXPIRY_MARGIN_S", 0.05)
    heard = _HeardCluster([(7, 10), (7, 10), (7, 11)], session_timeout_ms=5_000)
    assert _paused_and_closed(heard) < 1.0
    assert heard.calls == ["pause bk1", "resume bk1"]


@pytest.mark.parametrize(
    "looks",
    [
        [(7, 10)],  # nothing heard since the resume
        [(7, 10), (8, 1)],  # another session: the old one expired, the bookie registered again
        [None, (7, 11)],  # not known at the resume
        [(7, 10), None],  # not known since
    ],
)
def test_a_paused_bookie_not_heard_from_is_waited_for_until_its_session_could_expire(
    monkeypatch: pytest.MonkeyPatch, looks: list[tuple[int, int] | None]
) -> None:
    monkeypatch.setattr("conformance.javaclient.session.PAUSE_EXPIRY_MARGIN_S", 0.05)
    assert _paused_and_closed(_HeardCluster(looks, session_timeout_ms=300)) >= 0.35
