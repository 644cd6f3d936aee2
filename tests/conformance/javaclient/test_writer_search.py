"""The writer search's verdicts, coverage and shrinking, on a stand-in session that answers
every plan with a recorded real run (the plumbing, not the Java client)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from hypothesis import given, settings

from adapters.netproxy import BookieProxy, ProxyGroup
from conformance.javaclient.plans import DROP, FrameSchedule, hold
from conformance.javaclient.writer_guidance import writer_guided_plans
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_search import (
    WriterCoverage,
    smaller_writer_plans,
    writer_run_plans,
    writer_search,
)
from conformance.javaclient.writer_session import WriterExample, WriterSessionOptions
from conformance.javaclient.writer_story import WriterRecord
from tests.conformance.javaclient.test_writer_story import RECORDED

SHAPE = WriterShape(3, 2, 2)


class RecordedWriter:
    """Every plan gets one recorded run (optionally made to lose an acknowledged entry)."""

    def __init__(self, group: ProxyGroup, record: WriterRecord, *, arrange: bool = True) -> None:
        self.group = group
        self.proxies: dict[str, BookieProxy] = {}
        self.options = WriterSessionOptions(Any, Any, SHAPE)  # type: ignore[arg-type]
        self.record = record
        self.arrange = arrange
        self.entries: list[int] = []

    def write(self, entries: int, arrange: Any, **_delays: Any) -> WriterRecord:
        self.entries.append(entries)
        if not self.arrange:
            return self.record
        names: Mapping[str, str] = {}
        with arrange(self.record.ledger_id, names):
            pass
        return self.record


def _record(*, lose_e0: bool = False) -> WriterRecord:
    record = next(r for p, r in RECORDED if p.shape == SHAPE and len(r.segments) > 1)
    return dataclasses.replace(record, stored={**record.stored, 0: ()}) if lose_e0 else record


@contextlib.contextmanager
def _session(**kwargs: Any) -> Iterator[RecordedWriter]:
    with ProxyGroup(call_timeout=5.0) as group:
        yield RecordedWriter(group, _record(**kwargs))


def test_clean_runs_give_a_clean_verdict_and_their_coverage() -> None:
    with _session() as session:
        result = writer_search(session, max_examples=4, seed=1)  # type: ignore[arg-type]
    assert result.verdict == "clean" and result.examples == 4 and result.finding is None
    coverage = result.coverage.as_dict()
    assert coverage["examples"] == 4
    assert coverage["examples_with_an_ensemble_change"] == 4
    assert coverage["model_actions"]["ClientChangesEnsemble"] >= 4
    assert coverage["callbacks"] == {"OK": 4 * len(session.record.outcomes)}


def test_an_unreadable_acknowledged_entry_stops_the_search_and_is_shrunk() -> None:
    with _session(lose_e0=True) as session:
        result = writer_search(session, max_examples=10, seed=2)  # type: ignore[arg-type]
    assert result.stopped == "finding" and result.verdict == "violation"
    assert result.finding is not None and result.finding.example == 1
    # The recorded run fails whatever the plan: shrinking takes everything away it can.
    assert result.finding.shrunk.plan.schedule.decisions == {}
    assert result.finding.shrunk.plan.entries == 1


def test_guided_plans_come_every_other_example() -> None:
    guided = [WriterRunPlan(SHAPE, 2, FrameSchedule({add_key("b2", 0): DROP}), origin="model")]
    with _session() as session:
        result = writer_search(  # type: ignore[arg-type]
            session, max_examples=4, seed=3, guided=guided
        )
    assert result.guided_examples == 1 and session.entries[0] == 2


def test_nothing_run_or_a_schedule_never_applied_is_undecided() -> None:
    with _session() as session:
        spent = writer_search(session, max_examples=3, seconds=0.0)  # type: ignore[arg-type]
    assert spent.examples == 0 and spent.verdict == "undecided"
    with ProxyGroup(call_timeout=5.0) as group:
        unarranged = RecordedWriter(group, _record(), arrange=False)
        result = writer_search(unarranged, max_examples=3, seed=1)  # type: ignore[arg-type]
    assert result.verdict == "undecided" and result.stopped == "undecided"
    assert "never arranged" in result.errors[0]


def test_smaller_plans_take_one_thing_away() -> None:
    plan = WriterRunPlan(
        SHAPE, 3, FrameSchedule({add_key("b2", 0): DROP, add_key("b1", 2): hold(3)})
    )
    smaller = list(smaller_writer_plans(plan))
    assert all(p.faults() <= plan.faults() and p.entries <= plan.entries for p in smaller)
    assert any(p.faults() == 1 and p.entries == 3 for p in smaller)
    assert any(p.choice("b1", 2) == hold(2) for p in smaller)
    assert any(p.entries == 2 and p.faults() == 1 for p in smaller)
    delayed = dataclasses.replace(plan, delayed=1, delay_ms=1000)
    assert any(p == plan for p in smaller_writer_plans(delayed))  # the delay goes


@settings(max_examples=50, deadline=None)
@given(writer_run_plans(SHAPE))
def test_drawn_plans_are_valid_and_round_trip(plan: WriterRunPlan) -> None:
    assert WriterRunPlan.from_json(plan.to_json()) == plan
    assert plan.faults() <= 3


def test_the_model_guides_towards_ensemble_changes_with_entries_in_flight() -> None:
    plans = writer_guided_plans(SHAPE, budget_s=2.0, entries=(2,))
    assert plans and all(p.entries == 2 and p.faults() >= 1 for p in plans)
    assert all(p.origin.startswith("the model's writer") for p in plans)
    # Highest danger first: two changes (a bookie lost, then its replacement).
    assert plans[0].faults() == 2


def test_coverage_counts_a_bookie_coming_back() -> None:
    coverage = WriterCoverage()
    record = next(r for _p, r in RECORDED if r.segments == [(0, (1, 3, 2))])
    back = dataclasses.replace(record, segments=[(0, (0, 1, 2)), (1, (3, 1, 2)), (2, (0, 1, 2))])
    coverage.add(WriterExample(RECORDED[0][0], back, None, [], 0.1))
    assert coverage.as_dict()["examples_where_a_bookie_came_back"] == 1
