"""The writer's judge on one recorded real run per fault kind (4.17.3, E=3 WQ=2 AQ=2 on four
bookies; ``tools/record_fault_runs.py`` records them): each judged clean, and what each reading
of the judge rests on shown to matter (the run altered one thing at a time fails)."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from adapters.javaclient.pipelined_adds import AddOutcome
from adapters.netproxy import DeliveryRecord, FrameRecord
from conformance.javaclient import writer_story
from conformance.javaclient.observed import FORGED, Phase, java_events
from conformance.javaclient.plans import FORGEABLE, FaultKind
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape
from conformance.javaclient.writer_role import WriterRole
from conformance.javaclient.writer_story import (
    CONCURRENT_AT_CLIENT_S,
    AddFate,
    WriterRecord,
    _failures_first,
    _Kind,
    _story,
    add_fates,
    forged_failures,
    judge,
    timeout_check_interval_s,
)
from conformance.verdict import Verdict

RUNS = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-fault-runs.jsonl.gz"
ROLLING_RUNS = Path(__file__).parent / "recorded_runs" / "rolling-upgrade-runs.jsonl.gz"
#: The lost fence's variants: a clean restart, a checkpoint awaited (judged in test_reports.py).
FENCE_LOST_VARIANTS = tuple(
    Path(__file__).parent / "recorded_runs" / f"bookkeeper-4.17.3-fence-lost-{variant}.json"
    for variant in ("after-checkpoint", "on-clean-restart")
)


def _load() -> dict[str, tuple[WriterRunPlan, WriterRecord]]:
    runs = {}
    with gzip.open(RUNS, "rt") as f:
        for line in f:
            item: dict[str, Any] = json.loads(line)
            role = role_of_plan(item["plan"], item["role_settings"])
            plan = WriterRunPlan.from_json(item["plan"])
            runs[item["name"]] = (plan, role.record_from_json(item["record"]))
    return runs


RUNS_BY_NAME = _load()


def _record(name: str) -> WriterRecord:
    return RUNS_BY_NAME[name][1]


def test_every_fault_kind_has_a_recorded_run() -> None:
    kinds: set[str] = set()
    for plan, _record in RUNS_BY_NAME.values():
        kinds.update(event.kind.value for event in plan.schedule.events)
        for key, choice in plan.schedule.decisions.items():
            side = "answer" if key.answer else "request"
            if choice.action == "hold":
                kinds.add(f"{side} hold {'for a time' if choice.for_ms else 'by frames'}")
            else:
                kinds.add(f"{side} {choice.action}")
            if choice.status is not None:
                kinds.add(choice.status)
    # Upgrades and downgrades: the rolling scenarios' runs (judged in test_upgrades.py).
    with gzip.open(ROLLING_RUNS, "rt") as f:
        for line in f:
            plan = WriterRunPlan.from_json(json.loads(line)["plan"])
            events = (*plan.schedule.events, *plan.before_recovery, *plan.after_recovery)
            kinds.update(event.kind.value for event in events)
    for path in FENCE_LOST_VARIANTS:
        plan = WriterRunPlan.from_json(json.loads(path.read_text())["plan"])
        kinds.update(e.kind.value for e in (*plan.before_recovery, *plan.after_recovery))
    assert {kind.value for kind in FaultKind} <= kinds
    assert set(FORGEABLE) <= kinds
    assert {"request drop", "answer drop", "request forge", "answer forge"} <= kinds
    assert {"request hold for a time", "answer hold for a time", "request hold by frames"} <= kinds


@pytest.mark.parametrize("name", sorted(RUNS_BY_NAME))
def test_each_recorded_fault_run_is_judged_clean(name: str) -> None:
    judgement = judge(_record(name))
    assert judgement.verdict is Verdict.CLEAN, (name, judgement.outcome)


def test_the_client_replaced_the_bookie_in_the_runs_that_time_out_or_fail_it() -> None:
    for name in (
        "hold request past the timeout",
        "hold answer past the timeout",
        "pause from the start",
        "stall from the start",
        "forge EIO answer",
        "crash at the start",
    ):
        assert judge(_record(name)).ensemble_changes >= 1, name


def test_an_answer_held_past_the_timeout_is_the_specs_lost_answer() -> None:
    record = _record("hold answer past the timeout")
    judgement = judge(record)
    assert "answer timed out" in (judgement.outcome.note or "")
    # Read with a 10 s add timeout the late answer was on time: then nothing explains the
    # client's ensemble change, and the judge says so.
    patient = dataclasses.replace(record, add_timeout_s=10.0)
    assert judge(patient).verdict is Verdict.DIVERGENCE


def test_a_request_held_past_the_timeout_is_stored_late_by_its_bookie() -> None:
    record = _record("hold request past the timeout")
    judgement = judge(record)
    assert "request timed out" in (judgement.outcome.note or "")
    # b2 (model bookie 1) stored e0 after the client had replaced it: the model's LATE add.
    assert 1 in record.stored[0]
    assert judgement.actions["BookieSendsAddConfirmedResponse"] >= 1
    assert judge(dataclasses.replace(record, add_timeout_s=10.0)).verdict is Verdict.DIVERGENCE


def test_the_change_the_metadata_shows_comes_before_the_lac_moves_past_it() -> None:
    # Nothing was confirmed when the error came, so the client's new ensemble starts at e0;
    # the resends show only after b1's and b2's answers to e0 came in.
    record = _record("forge EIO in place of the request")
    assert record.segments[0][0] == 0 and len(record.segments) == 1
    (failure,) = forged_failures(record)
    assert judge(record).verdict is Verdict.CLEAN
    # Had the error reached the client only after those answers, the change is still placed
    # where the metadata has it: before e0 is confirmed (the client learnt of the failure in
    # time to start its change from e0; when exactly, the frames do not say).
    first_resend = max(f.at for f in record.frames)
    late = {
        **record.deliveries,
        failure.frame.frame_id: DeliveryRecord(
            failure.frame.frame_id, first_resend + 0.001, True, FORGED
        ),
    }
    assert judge(dataclasses.replace(record, deliveries=late)).verdict is Verdict.CLEAN


def test_fenced_and_unauthorized_answers_start_no_ensemble_change() -> None:
    for name in ("forge EFENCED answer", "forge EUA answer"):
        record = _record(name)
        assert forged_failures(record) == []
        assert len(record.segments) == 1


# -- add_fates on a frame log of one add -------------------------------------------------------


def _one_add(request_after: float | None, answer_after: float | None) -> WriterRecord:
    """e0 sent to b1 at t=100; the request reaches it ``request_after`` s later (None: never),
    its answer reaches the client ``answer_after`` s after the send (None: never)."""
    record = _record("drop request")
    frames: list[FrameRecord] = []
    deliveries: dict[int, DeliveryRecord] = {}
    request = next(f for f in record.frames if f.info.direction.value == "request")
    answer = next(
        f
        for f in record.frames
        if f.info.direction.value == "response"
        and f.proxy == request.proxy
        and f.info.entry_id == request.info.entry_id
    )
    frames.append(dataclasses.replace(request, frame_id=1, at=100.0))
    if request_after is None:
        deliveries[1] = DeliveryRecord(1, 100.0, False, "drop")
    else:
        deliveries[1] = DeliveryRecord(1, 100.0 + request_after, True, "forward")
        reached = 100.0 + request_after + 0.001
        frames.append(dataclasses.replace(answer, frame_id=2, at=reached))
        if answer_after is None:
            deliveries[2] = DeliveryRecord(2, reached, False, "drop")
        else:
            deliveries[2] = DeliveryRecord(2, 100.0 + answer_after, True, "forward")
    return dataclasses.replace(record, frames=frames, deliveries=deliveries)


def _fates(request_after: float | None, answer_after: float | None) -> tuple[AddFate, ...]:
    record = _one_add(request_after, answer_after)
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    return add_fates(record, events)[1]


def test_an_add_answered_within_the_timeout_is_on_time() -> None:
    assert _fates(0.01, 0.5) == (AddFate.ON_TIME,)


def test_an_answer_while_the_clients_check_may_fire_has_both_readings() -> None:
    # Timeout 1 s, checked every 1 s: the add timed out somewhere between 1 s and 2 s.
    assert _fates(0.01, 1.2) == (AddFate.ON_TIME, AddFate.ANSWER_TIMED_OUT)
    assert _fates(0.01, 1.8) == (AddFate.ANSWER_TIMED_OUT, AddFate.ON_TIME)


def test_an_answer_after_every_check_timed_out() -> None:
    assert _fates(0.01, 3.0) == (AddFate.ANSWER_TIMED_OUT,)
    assert _fates(0.01, None) == (AddFate.ANSWER_TIMED_OUT,)  # dropped, or forged over


def test_a_request_that_came_late_or_never_timed_out_before_its_bookie_had_it() -> None:
    assert _fates(3.0, 3.01) == (AddFate.REQUEST_TIMED_OUT,)
    assert _fates(None, None) == (AddFate.REQUEST_TIMED_OUT,)
    assert _fates(1.6, 1.61)[0] is AddFate.REQUEST_TIMED_OUT


def test_the_clients_timeout_check_interval_is_its_configurations() -> None:
    # The add-quorum timeout is off (-1) by default, which makes the interval 1 s whatever
    # the add and read timeouts are.
    assert timeout_check_interval_s(1) == 1
    assert timeout_check_interval_s(10, 5) == 1
    assert timeout_check_interval_s(60, 60) == 1


WIPED = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-wiped-aq1.json"


def test_an_entry_lost_with_the_one_bookie_a_plan_wiped_is_no_violation() -> None:
    # E=2 WQ=AQ=1: b2 acknowledged e1, then the plan restarted b2 without its data. The entry
    # is gone by design (one copy, wiped); the client lost nothing.
    item = json.loads(WIPED.read_text())
    record = role_of_plan(item["plan"], item["role_settings"]).record_from_json(item["record"])
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome
    assert "wiped by the plan afterwards" in (judgement.outcome.note or "")
    # Had the wipe come before e1 reached b2, the loss would be the client's.
    (first_add,) = [f.at for f in record.frames if f.info.entry_id == 1][:1]
    early = dataclasses.replace(record, wiped={1: first_add - 1.0})
    assert judge(early).verdict is Verdict.VIOLATION
    # And without the wipe known, it is a violation too.
    assert judge(dataclasses.replace(record, wiped={})).verdict is Verdict.VIOLATION


UNDER_REPLICATED = (
    Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-search-4-2-2-ack-quorum.json"
)


def test_an_entry_acknowledged_with_one_copy_in_its_write_set_breaks_the_ack_quorum() -> None:
    # Found by the 4/2/2 search: a forged EIO on e2 at b3 starts a change from e0 (nothing
    # confirmed yet) that puts b5 in b3's place; e1, acknowledged by b2 and b3, has one copy in
    # its new write set (b2, b5). Readable, but acknowledged as durable (AQ=2) and not.
    item = json.loads(UNDER_REPLICATED.read_text())
    record = role_of_plan(item["plan"], item["role_settings"]).record_from_json(item["record"])
    judgement = judge(record)
    assert judgement.verdict is Verdict.VIOLATION
    (violation,) = judgement.outcome.violations
    assert violation.startswith("AllCommittedEntriesReachAckQuorum") and "e1 (AQ=2)" in violation
    assert any("acknowledged e1 to its caller" in d for d in judgement.outcome.divergences)
    # Had b5 got e1 too, both copies would be in the write set: no violation.
    stored = {**record.stored, 1: (*record.stored[1], 4)}
    fixed = judge(dataclasses.replace(record, stored=stored))
    assert not any(v.startswith("AllCommitted") for v in fixed.outcome.violations)
    # A wipe of a write-set bookie may explain a missing copy: a note, not a violation.
    wiped = judge(dataclasses.replace(record, wiped={4: record.frames[-1].at}))
    assert not wiped.outcome.violations


SEARCH_EXAMPLES = (
    Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-search-examples.jsonl.gz"
)


def _search_examples() -> dict[str, WriterRecord]:
    with gzip.open(SEARCH_EXAMPLES, "rt") as f:
        items = [json.loads(line) for line in f]
    return {
        item["name"]: WriterRole(WriterShape.parse(item["record"]["shape"])).record_from_json(
            item["record"]
        )
        for item in items
    }


@pytest.mark.parametrize("name", sorted(_search_examples()))
def test_search_examples_the_judge_once_called_divergences_are_clean(name: str) -> None:
    # Each was a divergence of the judge's in a 30-minute search, not of the client's.
    judgement = judge(_search_examples()[name])
    assert judgement.verdict is Verdict.CLEAN, (name, judgement.outcome)


def test_a_request_the_client_gave_up_on_stored_later_is_a_note() -> None:
    record = _search_examples()[
        "a request stored after the client timed it out and gave up (4/2/2)"
    ]
    assert "no step of the spec's; ignored" in (judge(record).outcome.note or "")


def test_resends_whose_first_adds_never_reached_a_proxy_follow_the_metadatas_change() -> None:
    record = _search_examples()[
        "a bookie down from the start: the first frames are resends (2/1/1)"
    ]
    judgement = judge(record)
    assert judgement.ensemble_changes == 1
    # Without the metadata showing that change, the same frames are an add to a bookie
    # outside the write set.
    first, bookies = record.segments[0]
    other = dataclasses.replace(record, segments=[(first, tuple(reversed(bookies)))])
    assert judge(other).verdict is not Verdict.CLEAN


def test_an_e_equals_wq_ensemble_is_compared_as_a_set() -> None:
    record = _search_examples()["a bookie replaced in position 0 of an E=WQ ensemble (2/2/2)"]
    assert record.segments[0][1] != tuple(sorted(record.segments[0][1]))  # b3 in position 0
    # The same run striped (E=2 WQ=1): positions matter, and the model's differ.
    striped = dataclasses.replace(record, shape=WriterShape(2, 1, 1))
    assert judge(striped).verdict is not Verdict.CLEAN


def test_a_client_that_gave_up_on_confirmed_adds_closes_below_them_and_loses_nothing() -> None:
    name = "the client gave up on adds whose ack quorum had answered, and closed below them (4/2/2)"
    record = _search_examples()[name]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    # The answers to the adds it failed count for nothing (the client processed them after it
    # had failed the adds, or they completed nothing it acknowledged).
    assert "was processed after the client had failed e" in (judgement.outcome.note or "")
    # Had the client acknowledged the entry it closed below, the close would lose it.
    last = record.closed_last_entry
    assert last is not None
    acknowledged = [
        AddOutcome(o.index, 0, o.index, o.at) if o.index == last + 1 else o for o in record.outcomes
    ]
    lost = judge(dataclasses.replace(record, outcomes=acknowledged))
    assert lost.verdict is not Verdict.CLEAN


def test_an_answer_of_a_bookie_that_came_back_counts_when_the_callback_needs_it() -> None:
    name = (
        "an answer delivered while its bookie was out counts after a change brought it back (2/2/2)"
    )
    judgement = judge(_search_examples()[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert any("after a change brought it back to the same place" in r for r in requests)


def test_a_frame_read_at_a_stalls_end_may_have_timed_out_before_its_bookie_had_it() -> None:
    # Read 0.01 s before its bookie had it, but the proxy had stopped reading 1.8 s before:
    # the client may have sent it then, and timed it out before the bookie got it.
    record = _one_add(0.01, 0.02)
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    bookie = events[0].bookie
    assert add_fates(record, events)[1] == (AddFate.ON_TIME,)
    stalled = dataclasses.replace(record, stalled={bookie: ((98.2, 100.0),)})
    assert AddFate.REQUEST_TIMED_OUT in add_fates(stalled, events)[1]
    # A stall of another bookie, or one that ended long before the frame was read, says
    # nothing of it.
    other = dataclasses.replace(record, stalled={bookie + 1: ((98.2, 100.0),)})
    assert add_fates(other, events)[1] == (AddFate.ON_TIME,)
    earlier = dataclasses.replace(record, stalled={bookie: ((90.0, 91.0),)})
    assert add_fates(earlier, events)[1] == (AddFate.ON_TIME,)


@pytest.mark.parametrize(
    "name",
    [
        "a stalled bookie's resend read at the stall's end, after the client timed it out (2/2/2)",
        "two ledgers' adds to a stalled bookie, read at the stall's end (2/2/2)",
    ],
)
def test_without_its_stall_the_run_is_a_divergence(name: str) -> None:
    record = _search_examples()[name]
    assert record.stalled
    unstalled = dataclasses.replace(
        record,
        stalled={},
        others=tuple(dataclasses.replace(o, stalled={}) for o in record.others),
    )
    assert judge(unstalled).verdict is Verdict.DIVERGENCE


def test_a_dropped_copy_ahead_of_a_counted_one_is_taken_first() -> None:
    # b1 left the ensemble and came back: its answers to its first adds (dropped by the
    # client: another bookie holds their position now) and to the resends are the same
    # messages of the spec's bag, and the spec takes a bookie's answers earliest entry first.
    name = "a bookie's dropped copies ahead of its counted resends in the spec's bag (2/2/2)"
    judgement = judge(_search_examples()[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert sum("a copy the client dropped, the same message" in r for r in requests) == 2


@pytest.mark.parametrize(
    "name",
    [
        "a forged failure processed before another bookie's answer delivered just before it "
        "(2/2/2)",
        "a forged failure processed before another bookie's answer, its own bookie's kept "
        "before it (2/2/2)",
    ],
)
def test_a_failure_may_be_processed_before_answers_delivered_just_before_it(name: str) -> None:
    record = _search_examples()[name]
    assert judge(record).verdict is Verdict.CLEAN
    # In delivery order the client's change (from e0, as its resends show) cannot be told.
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    likeliest = {request: fates[0] for request, fates in add_fates(record, events).items()}
    in_delivery_order, _options, _chosen = _story(record, events, likeliest, ())
    assert in_delivery_order.verdict is Verdict.DIVERGENCE
    failure_first, _options, _chosen = _story(record, events, likeliest, (), failures_first=True)
    assert failure_first.verdict is Verdict.CLEAN


def test_only_other_connections_answers_just_before_a_failure_move_after_it() -> None:
    record = _search_examples()[
        "a forged failure processed before another bookie's answer, its own bookie's kept "
        "before it (2/2/2)"
    ]
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    failure = forged_failures(record)[0]
    delivered = [e for e in events if e.phase is Phase.RECEIVED and e.at < failure.at]
    own = next(e for e in delivered if e.bookie == failure.bookie)
    other = next(e for e in delivered if e.bookie != failure.bookie)
    long_before = dataclasses.replace(other, at=failure.at - 10 * CONCURRENT_AT_CLIENT_S)
    just_before = dataclasses.replace(other, at=failure.at - CONCURRENT_AT_CLIENT_S / 2)
    own = dataclasses.replace(own, at=failure.at - CONCURRENT_AT_CLIENT_S / 4)
    merged = [
        (long_before.at, _Kind.FRAME, 0, long_before),
        (just_before.at, _Kind.FRAME, 1, just_before),
        (own.at, _Kind.FRAME, 2, own),
        (failure.at, _Kind.FAILURE, 0, failure),
    ]
    reordered = [item[3] for item in _failures_first(merged)]
    assert reordered == [long_before, own, failure, just_before]


def test_a_later_entry_may_reach_a_replacement_before_an_earlier_ones_resend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An add made as the change completed took the new ensemble before the change's resends
    # (LedgerHandle: getCurrentEnsemble() at the add, the resends a later executor task):
    # the replacement took e1 before e0.
    name = (
        "a later entry reaches a replacement before the resend of an earlier one "
        "(2/2/2, two ledgers)"
    )
    record = _search_examples()[name]
    assert judge(record).verdict is Verdict.CLEAN
    configs = writer_story.story_configs

    def in_entry_order(*args: Any) -> Any:
        cfg, spec_cfg = configs(*args)
        return dataclasses.replace(cfg, adds_in_arrival_order=False), spec_cfg

    monkeypatch.setattr(writer_story, "story_configs", in_entry_order)
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_an_add_handed_to_its_bookie_and_never_answered_may_have_been_stored() -> None:
    record = _one_add(0.01, 0.02)
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    request = next(e for e in events if e.phase is Phase.SENT)
    unanswered = [dataclasses.replace(e, answered=False) if e is request else e for e in events]
    assert add_fates(record, unanswered)[1] == (AddFate.REQUEST_TIMED_OUT, AddFate.ANSWER_TIMED_OUT)


def test_an_answer_delivered_just_before_a_reset_may_never_have_been_read() -> None:
    record = _one_add(0.01, 0.02)
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    bookie = events[0].bookie
    assert add_fates(record, events)[1] == (AddFate.ON_TIME,)
    just_after = dataclasses.replace(record, resets={bookie: (100.03,)})
    assert AddFate.ANSWER_TIMED_OUT in add_fates(just_after, events)[1]
    for later in ({bookie: (100.5,)}, {bookie + 1: (100.03,)}, {bookie: (99.0,)}):
        assert add_fates(dataclasses.replace(record, resets=later), events)[1] == (AddFate.ON_TIME,)


def test_the_answers_nearest_a_reset_are_told_both_ways_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Six answers reached the client within 50 ms before resets of their bookies' connections;
    # the one nearest its reset went unread (the client changed the ensemble from that
    # entry). Only four uncertain adds are told both ways: the nearest first.
    name = (
        "a reset of two bookies' connections: the answer nearest the reset went unread "
        "(2/2/2, two ledgers)"
    )
    record = _search_examples()[name]
    assert record.resets
    assert judge(record).verdict is Verdict.CLEAN
    monkeypatch.setattr(
        writer_story, "_likeliest_to_matter_first", lambda _record, _events, uncertain: uncertain
    )
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_an_add_created_before_the_change_completed_goes_to_the_old_ensemble_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # b2's connection was reset at the start: the client replaced b2 by b3 from e0, and e1,
    # created while that change was being written, went to b1 and b2 (the old ensemble) as
    # well as, resent by the change, to b3.
    name = "an add created before the change completed goes to the replaced bookie too (2/2/2)"
    record = _search_examples()[name]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "created before the ensemble change replacing" in (judgement.outcome.note or "")
    monkeypatch.setattr(
        writer_story._WriterReplay, "_created_before_the_change", lambda *_args: False
    )
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_a_story_of_many_changes_is_found_within_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Eight ensemble changes (E=4, one spare) swapped b1's and b2's positions: among the
    # model's alternative changes the story that explains the client's frames is beyond the
    # first 64 told.
    record = _search_examples()["eight ensemble changes that swap two bookies' positions (4/2/2)"]
    assert judge(record).verdict is Verdict.CLEAN
    monkeypatch.setattr(writer_story, "MAX_STORIES", 64)
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_a_dropped_answer_ahead_of_a_counted_one_is_taken_when_a_callback_needs_it() -> None:
    # b2 was replaced at position 1 (e0's write set), then brought back at position 2 (e1's):
    # the client dropped its answer to e0 and counted its answer to e1's resend. In the spec's
    # bag the e0 answer is ahead; the callback of e1 shows the client counted the e1 answer.
    name = "a bookie back at another position: its dropped answer ahead of its counted one (4/2/2)"
    judgement = judge(_search_examples()[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert any("(stale, dropped: ahead of frame" in r for r in requests)


def test_a_change_started_before_a_callback_is_taken_at_the_callback() -> None:
    # b5's forged EIO started a change bringing b2 back to position 1; the client called e1
    # back before the change's resend to b2 reached the proxy, with b3's answer and b2's
    # first one (read by the client after the change: it counts at b2's old position).
    name = (
        "a change completed before a callback its resend frame follows; an answer read after "
        "it (4/2/2)"
    )
    judgement = judge(_search_examples()[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert any("the change it started had completed" in r for r in requests)


STALLED_4651 = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-bk-4651-stalled.json"


def _stalled_4651() -> WriterRecord:
    data = json.loads(STALLED_4651.read_text())
    return WriterRole(WriterShape.parse(data["shape"])).record_from_json(data)


def test_adds_a_stall_hid_are_undecided_not_a_divergence() -> None:
    # The bk-4651 scenario on 4.17.3: the client moved the failed positions back and forth
    # between the two stalled bookies; each change's resends waited in the stalled
    # connection's buffer and reached the proxies when the stall ended, to bookies the
    # model's writer had replaced. Nothing contradicts the model: it cannot place them.
    judgement = judge(_stalled_4651())
    assert judgement.verdict is Verdict.UNDECIDED, judgement.outcome
    assert not judgement.outcome.divergences
    assert "sent at moments the stall hid" in (judgement.outcome.error or "")


def test_the_same_adds_without_the_stall_are_a_divergence() -> None:
    # Read outside any stall, an add to a bookie outside the write set is the client's.
    record = dataclasses.replace(_stalled_4651(), stalled={})
    judgement = judge(record)
    assert judgement.verdict is Verdict.DIVERGENCE
    assert any(
        "the spec's writer sends no such add here" in d for d in judgement.outcome.divergences
    )


def test_divergences_after_changes_a_stall_hid_are_not_decided() -> None:
    # The bk-4651 scenario on 4.17.3, another run: the changes the stall hid swapped b3 and
    # b4 from e1 (through the stalled b1, b2), so the model's writer, which saw none of them,
    # confirms less than the client: those divergences follow from what it could not see.
    data = json.loads(
        (
            Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-bk-4651-stalled-swap.json"
        ).read_text()
    )
    record = WriterRole(WriterShape.parse(data["shape"])).record_from_json(data)
    judgement = judge(record)
    assert judgement.verdict is Verdict.UNDECIDED, judgement.outcome
    assert "may follow from the changes the stall hid" in (judgement.outcome.error or "")
    assert judge(dataclasses.replace(record, stalled={})).verdict is Verdict.DIVERGENCE
