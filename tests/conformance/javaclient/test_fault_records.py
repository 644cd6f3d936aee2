"""Every fault a Java-client run injected is in its judged record and in ``record.json``, and
reads back: a stand-in session (the controller's proxies and the cluster record the calls; no
JVM, no bookie) runs a writer plan with a crash, a pause and a stall through the real
``run_plan``, ``SessionFaults`` and the kernel's fault injector."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.netproxy import ProxyGroup
from conformance.javaclient.plans import FaultKind, FrameSchedule, PlannedFault
from conformance.javaclient.recording import record_from_json, record_to_json
from conformance.javaclient.role import Arrangement
from conformance.javaclient.run import write_example
from conformance.javaclient.search import run_plan
from conformance.javaclient.session import SessionFaults
from conformance.javaclient.story import judge
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.javaclient.writer_role import FaultSet, WriterRole
from conformance.javaclient.writer_story import WriterRecord
from conformance.live.faults import HEAL_STEP, FaultEvent
from tests.conformance.javaclient.recorded import defect1_record
from tests.conformance.javaclient.test_writer_story import RECORDED

SHAPE = WriterShape(3, 2, 2)
NAMES = {"p1": "b1", "p2": "b2", "p3": "b3"}


class _Proxy:
    """What the controller and a stall ask of a bookie's proxy, recorded."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._rules = 0

    def add_rule(self, match: object, action: object) -> int:
        self._rules += 1
        return self._rules

    def remove_rule(self, rule: int) -> None:
        pass

    def held(self) -> list[Any]:
        return []

    def release_all(self) -> None:
        pass

    def stall(self, stalled: bool) -> None:
        self.calls.append(f"stall {stalled}")


class _Cluster:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.options = SimpleNamespace(bookie_settings=SimpleNamespace(session_timeout_ms=10))

    def __getattr__(self, verb: str) -> Any:
        if verb not in ("crash", "pause", "resume", "restart"):
            raise AttributeError(verb)
        return lambda node: self.calls.append(f"{verb} {node.id}")


class StandInSession:
    """A session whose faults are carried out by the real :class:`SessionFaults` on a cluster
    and proxies that record the calls."""

    def __init__(self, group: ProxyGroup) -> None:
        self.group = group
        self.proxies = {name: _Proxy() for name in NAMES}
        self.bookie_ids = ["bk1", "bk2", "bk3"]
        self.cluster = _Cluster()

    def faults(self, names: Mapping[str, str]) -> SessionFaults:
        return SessionFaults(self, self.cluster, names)  # type: ignore[arg-type]

    def wait_routed(self, down: object) -> None:
        pass

    def measure_coverage(self) -> None:
        return None

    def ledger_writes(self, ledger_id: int) -> None:
        return None  # no ZooKeeper proxy in this layout


class RecordedWriter(WriterRole):
    """The writer role whose client's part is a recorded run: the plan's faults are carried
    out for real (by the session's injector) around it."""

    def __init__(self, record: WriterRecord) -> None:
        super().__init__(SHAPE, faults=FaultSet.REQUESTS)
        self.record = record

    def perform(self, session: Any, plan: WriterRunPlan, arrange: Arrangement) -> WriterRecord:
        with arrange(self.record.ledger_id, NAMES):
            pass
        return self.record


@contextlib.contextmanager
def _session(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandInSession]:
    # A paused bookie's session could expire after the run: no wait for it here.
    monkeypatch.setattr("conformance.javaclient.session.PAUSE_EXPIRY_MARGIN_S", 0.0)
    with ProxyGroup(call_timeout=5.0) as group:
        yield StandInSession(group)


def _recorded() -> WriterRecord:
    return next(r for p, r in RECORDED if p.shape == SHAPE)


FAULTS = (
    PlannedFault(FaultKind.CRASH, None, "b1"),
    PlannedFault(FaultKind.PAUSE, None, "b2", 60_000),
    PlannedFault(FaultKind.STALL, None, "b3", 60_000),
)


def test_a_runs_crash_pause_and_stall_are_in_its_record_json_and_read_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recorded = _recorded()
    role = RecordedWriter(recorded)
    plan = WriterRunPlan(SHAPE, recorded.entries, FrameSchedule({}, FAULTS))
    with _session(monkeypatch) as session:
        example = run_plan(session, role, plan)  # type: ignore[arg-type]
    assert example.unapplied is None
    # Carried out for real, and healed at the run's end (the crashed bookie started again).
    assert session.cluster.calls == ["crash bk1", "pause bk2", "restart bk1", "resume bk2"]
    assert session.proxies["p3"].calls == ["stall True", "stall False"]
    faults = example.record.faults
    injected = [(e.verb, e.server, e.detail) for e in faults if e.step != HEAL_STEP]
    assert injected == [
        ("crash", "b1", "crash b1"),
        ("pause", "b2", "pause b2 for 60000 ms"),
        ("stall", "b3", "stall b3 for 60000 ms"),
    ]
    assert [e.step for e in faults[:3]] == [f.describe() for f in FAULTS]
    healed = {(e.verb, e.server) for e in faults if e.step == HEAL_STEP}
    assert healed == {("restart", "b1"), ("resume", "b2"), ("read again", "b3")}
    assert [e.time for e in faults] == sorted(e.time for e in faults)

    # record.json, as a run directory writes it, keeps them; the replay's reading has them.
    write_example(tmp_path, role, example, "record")
    data = json.loads((tmp_path / "record.json").read_text())
    assert [(f["verb"], f["server"]) for f in data["faults"]] == [
        (e.verb, e.server) for e in faults
    ]
    back = role.record_from_json(data)
    assert back.faults == faults
    # The faults are the record's: its judgement is the one of the run without them.
    assert role.judge(back).verdict is role.judge(recorded).verdict
    assert role.judge(back).outcome == role.judge(recorded).outcome


def test_a_run_without_faults_writes_and_reads_the_record_it_always_did() -> None:
    recorded = _recorded()
    role = RecordedWriter(recorded)
    data = role.record_to_json(recorded)
    assert "faults" not in data  # a record.json written before faults were kept
    assert role.record_from_json(data) == recorded


def test_a_recovery_records_faults_read_back_and_old_ones_without_them_still_load() -> None:
    record = defect1_record(reads_fence=False)
    assert "faults" not in record_to_json(record)
    assert record_from_json(record_to_json(record)) == record
    crash = FaultEvent(1.5, "crash b2 as the client starts", "crash", "b2", "crash b2")
    with_faults = dataclasses.replace(record, faults=(crash,))
    back = record_from_json(json.loads(json.dumps(record_to_json(with_faults))))
    assert back.faults == with_faults.faults
    assert judge(back).verdict is judge(record).verdict
