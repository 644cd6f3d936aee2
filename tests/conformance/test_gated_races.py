"""Gate schedules of a race (:mod:`conformance.gated_races`): the points each request kind
reaches, every schedule of a pair, their encoding as choices, and what a search reached."""

from __future__ import annotations

import pytest

from adapters.cluster.gates import At, GatePoint
from conformance.gated_races import (
    POINTS_REACHED,
    Gated,
    GateReport,
    GateSchedule,
    GateTally,
    RequestKind,
    Stop,
    gateable,
    kind_of,
    reached,
    schedules,
    stops_of,
)
from conformance.races import Restart
from conformance.search.choices import ReplayChooser
from conformance.search.program import draw_schedule, encode_schedule
from model.bookkeeper.records import (
    ADD_ENTRY_REQUEST,
    FENCE_REQUEST,
    READ_REQUEST,
    AddEntryRequest,
    Entry,
    FenceRequest,
    ReadRequest,
)

ADD = AddEntryRequest(ADD_ENTRY_REQUEST, 0, 0, Entry(1, 0), 0, False)
RECOVERY_ADD = ADD._replace(recovery=True, cid=1)
FENCE = FenceRequest(FENCE_REQUEST, 0, 1)
READ = ReadRequest(READ_REQUEST, 0, 1, 1, False)
FENCING_READ = READ._replace(fence=True)


def test_each_request_has_its_kind_and_the_points_it_reaches() -> None:
    assert [kind_of(r) for r in (ADD, RECOVERY_ADD, FENCE, READ, FENCING_READ)] == [
        RequestKind.ADD,
        RequestKind.RECOVERY_ADD,
        RequestKind.FENCE,
        RequestKind.READ,
        RequestKind.FENCING_READ,
    ]
    # Only an add checks the fence; only a fencing request sets it; every kind has points.
    assert GatePoint.FENCED_CHECK in POINTS_REACHED[RequestKind.ADD]
    assert GatePoint.FENCED_CHECK not in POINTS_REACHED[RequestKind.RECOVERY_ADD]
    assert GatePoint.SET_FENCED in POINTS_REACHED[RequestKind.FENCING_READ]
    assert GatePoint.SET_FENCED not in POINTS_REACHED[RequestKind.READ]
    assert set(POINTS_REACHED) == set(RequestKind)
    assert stops_of(RequestKind.READ) == (
        Stop(GatePoint.BOOKIE_READ, At.ENTRY),
        Stop(GatePoint.BOOKIE_READ, At.EXIT),
        Stop(GatePoint.STORAGE_READ, At.ENTRY),
        Stop(GatePoint.STORAGE_READ, At.EXIT),
    )
    with pytest.raises(ValueError, match="no request"):
        kind_of(Restart(0))  # type: ignore[arg-type]


def test_every_schedule_of_a_pair_is_listed_once_single_holds_first() -> None:
    listed = schedules((ADD, FENCE))
    adds, fences = len(stops_of(RequestKind.ADD)), len(stops_of(RequestKind.FENCE))
    assert (adds, fences) == (8, 14)
    # Each held first at each stop: alone, or with the other held at each of its stops, in
    # both resume orders.
    assert len(listed) == (adds + fences) + 2 * (adds * fences * 2)
    assert len(set(listed)) == len(listed)
    assert all(s.second is None for s in listed[: adds + fences])
    assert listed[0] == GateSchedule(0, Stop(GatePoint.LEDGER_HANDLE, At.ENTRY))
    assert (
        GateSchedule(
            1, Stop(GatePoint.SET_FENCED, At.EXIT), Stop(GatePoint.STORAGE_ADD, At.ENTRY), True
        )
        in listed
    )


@pytest.mark.parametrize("pair", [(ADD, FENCE), (FENCE, ADD), (READ, RECOVERY_ADD)])
def test_a_schedule_is_drawn_back_from_its_encoding(pair: tuple[object, object]) -> None:
    for schedule in [None, *schedules(pair)]:  # type: ignore[arg-type]
        chooser = ReplayChooser(encode_schedule(pair, schedule))  # type: ignore[arg-type]
        assert draw_schedule(pair, chooser) == schedule  # type: ignore[arg-type]


def test_the_simplest_choices_are_no_gate_then_the_first_stop_alone() -> None:
    assert draw_schedule((ADD, FENCE), ReplayChooser([0])) is None
    assert draw_schedule((ADD, FENCE), ReplayChooser([1, 0, 0, 0])) == GateSchedule(
        0, Stop(GatePoint.LEDGER_HANDLE, At.ENTRY)
    )


def test_a_schedule_is_checked_described_and_stored() -> None:
    with pytest.raises(ValueError, match="request 0 or 1"):
        GateSchedule(2, Stop(GatePoint.SET_FENCED, At.ENTRY))
    with pytest.raises(ValueError, match="second held"):
        GateSchedule(0, Stop(GatePoint.SET_FENCED, At.ENTRY), None, True)
    both = GateSchedule(
        1, Stop(GatePoint.SET_FENCED, At.EXIT), Stop(GatePoint.STORAGE_ADD, At.ENTRY), True
    )
    assert both.describe(("the add", "the fence")) == (
        "the fence held at the exit of LedgerDescriptorImpl.setFenced, the add held at the "
        "entry of LedgerDescriptorImpl.addEntry, released: the add first, then the fence"
    )
    alone = GateSchedule(0, Stop(GatePoint.STORAGE_ADD, At.ENTRY))
    assert alone.describe() == (
        "request 1 held at the entry of LedgerDescriptorImpl.addEntry, request 2 sent "
        "meanwhile, then request 1 released"
    )
    for schedule in (both, alone):
        assert GateSchedule.from_dict(schedule.as_dict()) == schedule


def test_only_two_requests_to_one_bookie_are_gateable() -> None:
    assert gateable((ADD, FENCE))
    assert not gateable((ADD, FENCE._replace(bookie=1)))
    assert not gateable((ADD, FENCE, READ))
    assert not gateable((ADD, Restart(0)))


def test_a_schedule_is_reached_when_every_stop_it_names_held() -> None:
    alone = GateSchedule(0, Stop(GatePoint.STORAGE_ADD, At.ENTRY))
    both = GateSchedule(
        0, Stop(GatePoint.STORAGE_ADD, At.ENTRY), Stop(GatePoint.SET_FENCED, At.ENTRY)
    )
    held = GateReport(alone.first, Gated.HELD, 1)
    through = GateReport(None, Gated.NOT_HELD)
    blocked = GateReport(both.second, Gated.BLOCKED)
    assert reached(alone, [held, through])
    assert not reached(alone, [GateReport(alone.first, Gated.NOT_HELD), through])
    assert not reached(both, [held, blocked])
    assert reached(both, [held, GateReport(both.second, Gated.HELD, 2)])


def test_the_tally_counts_schedules_by_kinds_and_distinct_stops_reached() -> None:
    both = GateSchedule(
        0, Stop(GatePoint.STORAGE_ADD, At.ENTRY), Stop(GatePoint.SET_FENCED, At.ENTRY)
    )
    held = [GateReport(both.first, Gated.HELD, 1), GateReport(both.second, Gated.HELD, 2)]
    blocked = [GateReport(both.first, Gated.HELD, 1), GateReport(both.second, Gated.BLOCKED)]
    tally = GateTally()
    tally.add((ADD, FENCE), both, held)
    tally.add((ADD, FENCE), both, held)  # the same schedule again: one distinct
    tally.add((ADD, FENCE), both, blocked)  # not as scheduled, but an interleaving held
    assert (tally.gated, tally.reached, tally.blocked) == (3, 2, 1)
    assert tally.as_dict()["by_kinds"] == {"add x fence read": {"tried": 3, "interleavings": 2}}
    assert tally.pairs["add x fence read"] == {
        ("STORAGE_ADD:entry", "SET_FENCED:entry", False),
        ("STORAGE_ADD:entry", "blocked", False),
    }
    not_held = [GateReport(both.first, Gated.NOT_HELD), GateReport(both.second, Gated.NOT_HELD)]
    tally.add((FENCE, ADD), GateSchedule(1, both.first), not_held)
    assert tally.interleavings("add x fence read") == 2 and tally.tried["add x fence read"] == 4
    other = GateTally()
    other.merge(tally)
    assert other.as_dict() == tally.as_dict()
    assert "4 gated races, 2 as scheduled, 1 with a request blocked" in tally.describe()
    assert GateTally().describe() == "no gated race"
    assert (
        held[0].describe() == "held at the entry of LedgerDescriptorImpl.addEntry, released first"
    )
    assert blocked[1].describe() == "blocked behind the held request"
    assert GateReport(None, Gated.NOT_HELD).describe() == "not held (ran through)"
    assert GateReport(both.first, Gated.NOT_HELD).describe().startswith("not held: answered before")
