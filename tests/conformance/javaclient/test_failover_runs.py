"""The fail-over judge (``--role both``) on recorded real runs of 4.17.3: a writer and a second
client recovering its ledger, E=3 WQ=2 AQ=2 on four bookies.

``bookkeeper-4.17.3-failover-runs.jsonl.gz`` holds one run per plan of
``tools/record_fault_runs.py --role both`` (the recovery at several points of the writer's
adds, with and without a fault); ``...-failover-examples.jsonl.gz`` holds examples of the first
fail-over searches, each showing one reading the judge rests on. Each is judged clean, and each
reading is shown to matter: without it, or with the run altered, the judgement fails.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.bookkeeper.status import StatusCode
from adapters.javaclient.pipelined_adds import AddOutcome
from conformance.javaclient import story as recovery_story
from conformance.javaclient import writer_story
from conformance.javaclient.divergences import classify
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.observed import FrameKind, Phase, java_events
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.writer_plans import WriterRunPlan
from conformance.javaclient.writer_story import WriterRecord, judge
from conformance.verdict import Verdict

RECORDED = Path(__file__).parent / "recorded_runs"
RUNS = RECORDED / "bookkeeper-4.17.3-failover-runs.jsonl.gz"
EXAMPLES = RECORDED / "bookkeeper-4.17.3-failover-examples.jsonl.gz"


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt") as f:
        for line in f:
            yield json.loads(line)


def _load_runs() -> dict[str, tuple[WriterRunPlan, WriterRecord]]:
    runs = {}
    for row in _rows(RUNS):
        role = role_of_plan(row["plan"], row["role_settings"])
        assert isinstance(role, FailoverRole)
        runs[row["name"]] = (role.plan_from_json(row["plan"]), role.record_from_json(row["record"]))
    return runs


RUNS_BY_NAME = _load_runs()
EXAMPLES_BY_NAME = {
    row["name"]: FailoverRole.records.from_json(row["record"]) for row in _rows(EXAMPLES)
}
EVERY_RUN = {**{name: record for name, (_plan, record) in RUNS_BY_NAME.items()}, **EXAMPLES_BY_NAME}


def _judge_without(monkeypatch: pytest.MonkeyPatch, record: WriterRecord, **off: bool) -> Any:
    """``record`` judged with the fail-over judge's configuration but the switches ``off``."""
    spec_configs = writer_story.story_configs

    def without(*args: Any) -> Any:
        cfg, spec_cfg = spec_configs(*args)
        return dataclasses.replace(cfg, **off), spec_cfg

    monkeypatch.setattr(writer_story, "story_configs", without)
    return judge(record)


@pytest.mark.parametrize("name", sorted(EVERY_RUN))
def test_every_recorded_fail_over_is_one_clean_story_of_both_clients(name: str) -> None:
    record = EVERY_RUN[name]
    assert record.takeover is not None
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert judgement.cfg.clients == 2 and judgement.cfg.fenced_writer_closes
    actions = [step.action for step in judgement.outcome.steps]
    # Both clients' steps: the writer's creation and adds, the recovery's start and end.
    assert actions[0] == "ClientCreatesLedger"
    assert "ClientSendsAddEntryRequests" in actions
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    if any(e.kind is FrameKind.FENCE_READ for e in events):
        assert "ClientStartsRecovery" in actions
        # The recovery closes the ledger, unless the writer gave up (a forged EFENCED or EUA)
        # and closed it below the recovery's end first, or the recovery failed and the fenced
        # writer closed it.
        note = judgement.outcome.note or ""
        assert (
            "RecoveryClientClosesLedger" in actions
            or "over the recovery: it failed" in note
            or "the second client's recovery failed" in note
        )
    else:  # it found the ledger closed
        assert "RecoveryClientClosesLedger" not in actions


def test_the_runs_cover_the_recovery_before_during_and_after_the_writer_s_adds() -> None:
    points = {
        (plan.recover_after == plan.entries, plan.recover_delay_ms > 0)
        for plan, _record in RUNS_BY_NAME.values()
    }
    assert points >= {(True, False), (True, True), (False, True), (False, False)}
    # The writer's adds after the recovery were refused: fenced, never acknowledged.
    _plan, middle = RUNS_BY_NAME["recovery in the middle"]
    assert [o.describe().split(": ")[1] for o in middle.outcomes[2:]] == ["LedgerFenced"] * 2


def test_an_entry_acknowledged_beyond_the_recovery_s_end_is_a_violation() -> None:
    # #4812's symptom: the writer's add succeeds after the recovery closed the ledger below it.
    _plan, record = RUNS_BY_NAME["recovery in the middle"]
    assert record.closed_last_entry == 1
    acknowledged = [
        AddOutcome(o.index, 0, o.index, o.at) if o.index == 2 else o for o in record.outcomes
    ]
    judgement = judge(dataclasses.replace(record, outcomes=acknowledged))
    assert judgement.verdict is Verdict.VIOLATION
    assert any(
        v.startswith("NoDivergenceBetweenClientAndMetaData (on the real cluster)")
        and "acknowledged e2" in v
        and "second client's recovery closed the ledger at e1" in v
        for v in judgement.outcome.violations
    )


def test_a_recovery_that_ends_elsewhere_than_the_model_s_is_a_divergence() -> None:
    _plan, record = RUNS_BY_NAME["recovery after every add"]
    assert record.takeover is not None and record.takeover.last_entry == 3
    elsewhere = dataclasses.replace(record.takeover, last_entry=2)
    judgement = judge(dataclasses.replace(record, takeover=elsewhere))
    assert judgement.verdict is not Verdict.CLEAN
    assert any("recovery" in d for d in judgement.outcome.divergences)


def test_the_fenced_writer_closing_over_the_recovery_needs_the_switch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = EXAMPLES_BY_NAME["the fenced writer closes the ledger over the recovery"]
    judgement = judge(record)
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert any("before the recovery's close" in r for r in requests)
    without = _judge_without(
        monkeypatch, record, fenced_writer_closes=False, closing_writer_takes_answers=False
    )
    assert without.verdict is not Verdict.CLEAN


def test_a_fence_and_an_add_racing_at_a_bookie_are_ordered_by_the_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = EXAMPLES_BY_NAME["an add fenced before its fence read's answer passed"]
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    placed = writer_story.fencing_order(events)
    assert placed != events
    monkeypatch.setattr(writer_story, "fencing_order", lambda events: list(events))
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_an_add_answered_efenced_long_before_any_fence_is_not_reordered() -> None:
    record = EXAMPLES_BY_NAME["an add fenced before its fence read's answer passed"]
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    fenced = next(
        e
        for e in events
        if e.kind is FrameKind.ADD
        and e.status is not None
        and e.status.name == "EFENCED"
        and e.phase.name == "ANSWERED"
    )
    # Handed to the bookie and answered a second earlier: no fence read reached the bookie
    # before the answer left it.
    early = dataclasses.replace(
        fenced,
        at=fenced.at - 1.0,
        frame=dataclasses.replace(fenced.frame, at=fenced.frame.at - 1.0),
    )
    others = [e for e in events if e is not fenced]
    placed = writer_story.fencing_order([early, *others])
    assert early in placed  # kept where it was: no fence read explains it
    # Answered where it was (after the fence reads reached the bookie): placed after the
    # first, as a paused bookie handles what waited for it in any order.
    handed_early = dataclasses.replace(fenced, at=fenced.at - 1.0)
    placed = writer_story.fencing_order([handed_early, *others])
    assert handed_early not in placed


def test_the_recovering_client_s_ensemble_change_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "a crash: the recovery replaces a bookie",
        "a stall: the recovery replaces a bookie",
    ):
        record = EXAMPLES_BY_NAME[name]
        actions = [step.action for step in judge(record).outcome.steps]
        assert "RecoveryClientChangesEnsemble" in actions
        assert "RecoveryClientSendsPendingAddOp" in actions
    monkeypatch.setattr(
        recovery_story.RecoverySteps, "change_ensemble_for", lambda self, event: False
    )
    assert (
        judge(EXAMPLES_BY_NAME["a crash: the recovery replaces a bookie"]).verdict
        is Verdict.DIVERGENCE
    )


class _Forgetful(set[int]):
    """A set that keeps nothing: the judge without its record of late requests."""

    def add(self, element: int) -> None:
        pass


def test_adds_that_reach_a_bookie_after_the_writer_s_close_are_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = EXAMPLES_BY_NAME["adds sent after the writer's close"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN
    assert "after the writer's close returned" in (judgement.outcome.note or "")
    # Read as the writer's steps, the bookie stores adds the model's writer had lost.
    original = writer_story._WriterReplay.__init__

    def forgetting(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.sent_after_close = _Forgetful()

    monkeypatch.setattr(writer_story._WriterReplay, "__init__", forgetting)
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_a_writer_that_gave_up_before_the_recovery_is_a_note() -> None:
    record = EXAMPLES_BY_NAME["a forged EUA: the writer gives up and closes before the recovery"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN
    assert "found the ledger closed by the writer" in (judgement.outcome.note or "")
    # An acknowledged entry among those it gave up on: no longer a writer that gave up.
    acknowledged = [
        AddOutcome(o.index, 0, o.index, o.at) if o.index == 1 else o for o in record.outcomes
    ]
    assert judge(dataclasses.replace(record, outcomes=acknowledged)).verdict is not Verdict.CLEAN


def test_an_entry_whose_every_copy_the_plan_wiped_is_the_plan_s_loss(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The writer adds e0 (b1, b2), a second client recovers the ledger at e0, then the plan
    # restarts b2 and b1 without their data: e0 is gone by the plan's design.
    record = EXAMPLES_BY_NAME["the plan wipes every copy of an acknowledged entry"]
    assert set(record.wiped) == {0, 1}
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.violations
    assert [s.action for s in judgement.outcome.steps].count("BookieRestartsEmpty") == 2
    note = judgement.outcome.note or ""
    assert "AllAckedEntriesAreReadable does not count e0" in note
    # The spec's invariant as it is counts the plan's wipes against BookKeeper.
    monkeypatch.setattr(writer_story.ReadabilityBeyondWipes, "replacing", lambda self, i: i)
    judgement = judge(record)
    assert judgement.verdict is Verdict.VIOLATION
    assert "AllAckedEntriesAreReadable" in judgement.outcome.violations


def test_an_answer_queued_before_the_fenced_writer_s_close_completes_its_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # b3's EFENCED to e1 and b2's EOK to e0 reached the writer in one millisecond: it
    # acknowledged e0, then closed the ledger at e0 over the recovery.
    record = EXAMPLES_BY_NAME["an answer queued before the fenced writer's close completes its add"]
    assert [o.describe().split(": ")[1] for o in record.outcomes][:2] == ["OK", "LedgerFenced"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert judgement.cfg.closing_writer_takes_answers
    without = _judge_without(monkeypatch, record, closing_writer_takes_answers=False)
    assert without.verdict is Verdict.DIVERGENCE


def test_an_efenced_answer_to_an_add_with_its_ack_quorum_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # b1 and b3 confirmed e0..e2 (AQ=2) before b2's EFENCED answers to them reached the
    # writer: PendingAddOp ignores them (completed), and the client then sent e3.
    record = EXAMPLES_BY_NAME["an EFENCED answer to an add that had its ack quorum changes nothing"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert judgement.cfg.completed_adds_ignore_fence
    diverged = _judge_without(monkeypatch, record, completed_adds_ignore_fence=False)
    assert diverged.verdict is Verdict.DIVERGENCE
    assert "frame #3097 to b1: add e3" in diverged.outcome.divergences[0]


def test_a_fenced_writer_s_close_fails_the_adds_it_drained_and_their_answers_count_no_more() -> (
    None
):
    name = "the fenced writer's close fails the adds it drains: their later answers raise no LAC"
    judgement = judge(EXAMPLES_BY_NAME[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "after the client had failed e0 to the caller" in (judgement.outcome.note or "")


def test_a_write_back_stalled_past_the_add_timeout_is_stored_late_when_no_bookie_is_replaced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = (
        "a write-back stalled past the add timeout, no bookie replaced: the bookie stores it late"
    )
    record = EXAMPLES_BY_NAME[name]
    assert judge(record).verdict is Verdict.CLEAN
    # Read as the spec's lost message (the client timed it out), b2's late answer has no step.
    monkeypatch.setattr(recovery_story.RecoverySteps, "replaced_for", lambda *args: True)
    assert judge(record).verdict is Verdict.DIVERGENCE


def test_a_second_failure_during_a_change_replaces_its_ensemble_in_place() -> None:
    name = (
        "two forged failures: the second change replaces the first in place, resends carry "
        "the first LAC"
    )
    record = EXAMPLES_BY_NAME[name]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    # Both changes start at e0: the LAC did not move while the first was in progress.
    changes = [s for s in judgement.outcome.steps if s.action == "ClientChangesEnsemble"]
    assert len(changes) == 2
    assert all("first_entry_id 1" in s.description for s in changes)
    assert record.segments == [(0, record.segments[0][1])]


def test_a_writer_that_fails_its_adds_on_a_forged_efenced_closes_over_the_recovery() -> None:
    record = EXAMPLES_BY_NAME["a forged EFENCED: the writer gives up and closes over the recovery"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    # The acks of e0 and e1 count for nothing: the client failed both (LedgerFenced), so the
    # writer's LAC stays e-1 and its close over the recovery is at e-1.
    assert "after the client had failed e1 to the caller" in (judgement.outcome.note or "")
    acknowledged = [AddOutcome(o.index, 0, o.index, o.at) for o in record.outcomes]
    assert judge(dataclasses.replace(record, outcomes=acknowledged)).verdict is not Verdict.CLEAN


def test_a_fence_answer_s_lac_other_than_the_model_bookie_s_is_a_divergence() -> None:
    name = "an EFENCED answer to an add that had its ack quorum changes nothing"
    record = EXAMPLES_BY_NAME[name]
    assert judge(record).verdict is Verdict.CLEAN  # recorded before frames carried the LAC

    def with_fence_lac(lac: int) -> WriterRecord:
        frames = [
            dataclasses.replace(f, info=dataclasses.replace(f.info, lac=lac))
            if f.info.entry_id == -1 and f.info.status is StatusCode.EOK
            else f
            for f in record.frames
        ]
        return dataclasses.replace(record, frames=frames)

    # The writer sent e0..e2 pipelined, each packaged with LAC e-1: what b1 and b3 answer.
    assert judge(with_fence_lac(-1)).verdict is Verdict.CLEAN
    wrong = judge(with_fence_lac(7))
    assert wrong.verdict is Verdict.DIVERGENCE
    assert any("answered the fence read with LAC e7" in d for d in wrong.outcome.divergences)


def test_an_add_packaged_before_the_client_processed_answers_carries_the_lower_lac() -> None:
    record = EXAMPLES_BY_NAME["an add packaged with LAC e-1 before the client processed e0's acks"]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [step.request or "" for step in judgement.outcome.steps]
    assert any("packaged before the answer below was processed" in r for r in requests)
    # Without the LAC the frames carry, the add is sent where its frame shows, after e0's
    # acks: the model's bookies then answer the fence with LAC e0, the real ones said e-1.
    unknown = dataclasses.replace(
        record,
        frames=[dataclasses.replace(f, info=dataclasses.replace(f.info, lac=None))
                if f.info.direction.value == "request" else f for f in record.frames],
    )  # fmt: skip
    assert judge(unknown).verdict is Verdict.DIVERGENCE


def test_a_replacement_may_take_later_adds_before_the_resends_of_earlier_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = EXAMPLES_BY_NAME[
        "a replacement takes the writer's later adds before the resends of earlier ones"
    ]
    assert judge(record).verdict is Verdict.CLEAN
    assert _judge_without(monkeypatch, record, adds_in_arrival_order=False).verdict is (
        Verdict.DIVERGENCE
    )


def test_a_committed_change_only_the_metadata_shows_is_taken_at_the_failed_callback() -> None:
    record = EXAMPLES_BY_NAME[
        "a committed change only the metadata shows: the next found no bookie (NotEnoughBookies)"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    (change,) = [s for s in judgement.outcome.steps if s.action == "ClientChangesEnsemble"]
    assert "the metadata shows an ensemble change it made before" in (change.request or "")


def test_a_fenced_handle_that_stayed_open_may_send_adds_it_fails() -> None:
    name = "a handle the recovery fenced fails its adds, stays open, and sends a later add"
    record = EXAMPLES_BY_NAME[name]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "sent by a handle the recovery had fenced" in (judgement.outcome.note or "")
    # Had the client acknowledged that add, nothing explains it.
    last = max(o.index for o in record.outcomes)
    acknowledged = [
        AddOutcome(o.index, 0, o.index, o.at) if o.index == last else o for o in record.outcomes
    ]
    assert judge(dataclasses.replace(record, outcomes=acknowledged)).verdict is not Verdict.CLEAN


@pytest.mark.parametrize(
    "name",
    [
        "the recovery's replacement in the metadata is not a change of the writer's",
        "the recovery's replacement, and a fence read to a restarted bookie",
    ],
)
def test_the_recovery_s_replacement_is_not_read_as_the_writer_s_change(name: str) -> None:
    judgement = judge(EXAMPLES_BY_NAME[name])
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    actions = [s.action for s in judgement.outcome.steps]
    assert "RecoveryClientChangesEnsemble" in actions
    assert "ClientChangesEnsemble" not in actions


def test_a_writer_s_change_the_recovery_s_fence_reads_show_comes_before_the_recovery() -> None:
    record = EXAMPLES_BY_NAME[
        "the writer's change committed before the recovery read the metadata (its fence reads "
        "name the replacement)"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    actions = [s.action for s in judgement.outcome.steps]
    change = actions.index("ClientChangesEnsemble")
    assert change < actions.index("ClientStartsRecovery")
    assert "the writer's change to that ensemble came before" in (
        judgement.outcome.steps[change].request or ""
    )


def test_a_reset_connection_loses_an_answer_and_hides_what_its_bookie_stored() -> None:
    # The plan reset the client's connections to a bookie just as its answers to both ledgers'
    # adds reached the client's socket: the client never read them (it failed the adds,
    # "Bookie handle is not available", and changed the other ledger's ensemble), and the
    # recovery then read an entry that bookie had stored with its answer lost.
    record = EXAMPLES_BY_NAME[
        "a reset connection: an answer the client never read, and an add stored with its "
        "answer lost"
    ]
    assert record.resets and all(o.resets for o in record.others)
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    requests = [s.request or "" for s in judgement.outcome.steps]
    assert any("it had stored the writer's add, whose answer never reached" in r for r in requests)
    without = dataclasses.replace(
        record,
        resets={},
        others=tuple(dataclasses.replace(o, resets={}) for o in record.others),
    )
    assert judge(without).verdict is Verdict.DIVERGENCE


def test_a_failed_recovery_closes_nothing_the_fenced_writer_closes_the_ledger() -> None:
    record = EXAMPLES_BY_NAME[
        "a recovery that failed (its replacement crashed): the fenced writer closed the ledger"
    ]
    assert record.takeover is not None and record.takeover.error
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    actions = [s.action for s in judgement.outcome.steps]
    assert "ClientClosesLedgerSuccess" in actions and "RecoveryClientClosesLedger" not in actions
    # Closed where the model's writer cannot have closed it: nothing explains it.
    elsewhere = dataclasses.replace(
        record, takeover=dataclasses.replace(record.takeover, last_entry=1)
    )
    assert judge(elsewhere).verdict is Verdict.DIVERGENCE


def test_a_write_back_sent_twice_as_the_add_was_initiated_is_one_message() -> None:
    # PendingAddOp.initiate packages the add, handles the write failure noted meanwhile (the
    # replacement is sent every pending add, this one too), then sends to its write set.
    record = EXAMPLES_BY_NAME[
        "a write-back sent twice to the replacement as the add was initiated (a delayed write "
        "failure)"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "again, as the add was initiated" in (judgement.outcome.note or "")


def test_answers_wait_for_the_change_the_metadata_shows_from_the_entry_after_the_lac() -> None:
    # The metadata's second ensemble starts at e2: the client's LAC was e1 when it changed,
    # so the answers that would complete e2 earlier were counted only after the change.
    record = EXAMPLES_BY_NAME[
        "answers counted only after the change the metadata shows from the entry after the LAC"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "counted after the ensemble change the metadata shows" in (judgement.outcome.note or "")
    changes = [s for s in judgement.outcome.steps if s.action == "ClientChangesEnsemble"]
    assert "first_entry_id 3" in changes[-1].description  # the spec's e3 is BookKeeper's e2


def test_an_add_that_waited_for_a_new_connection_may_leave_after_the_handle_closed() -> None:
    # b2 restarted empty: the writer's e1 to b2 waited for the new connection
    # (connectIfNeededAndDoOp) and left after the recovery fenced the writer; the client
    # failed it (LedgerClosed).
    record = EXAMPLES_BY_NAME[
        "an add issued before the fenced handle closed waits for its bookie's new connection"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "the add waited for its bookie's connection" in (judgement.outcome.note or "")
    # Had the client acknowledged it, nothing explains it.
    acknowledged = [
        AddOutcome(o.index, 0, o.index, o.at) if o.index == 1 else o for o in record.outcomes
    ]
    assert judge(dataclasses.replace(record, outcomes=acknowledged)).verdict is not Verdict.CLEAN


FINDING_EXAMPLES = {
    row["name"]: FailoverRole.records.from_json(row["record"])
    for row in _rows(RECORDED / "bookkeeper-4.17.3-finding-examples.jsonl.gz")
}


@pytest.mark.parametrize("name", sorted(FINDING_EXAMPLES))
def test_a_fence_lost_on_a_restart_is_named_as_the_finding(name: str) -> None:
    # The search met docs/findings/fence-lost-on-restart.md again: a bookie that answered the
    # fence read ENOENTRY, then got the recovery's write-back, was restarted with its data
    # and accepted the old writer's add. The judge names the finding, not a gap of its own.
    record = FINDING_EXAMPLES[name]
    judgement = judge(record)
    assert judgement.verdict is Verdict.DIVERGENCE
    classes = [classify(d) for d in judgement.outcome.divergences]
    assert "fence-lost-on-restart" in classes, judgement.outcome.divergences
    # Without the restart the model's bookie is fenced and nothing explains the answer.
    unrestarted = dataclasses.replace(
        record,
        restarts={},
        others=tuple(dataclasses.replace(o, restarts={}) for o in record.others),
    )
    plain = [classify(d) for d in judge(unrestarted).outcome.divergences]
    assert "fence-lost-on-restart" not in plain and "no-model-step" in plain


def test_a_fence_read_waiting_with_adds_at_a_paused_bookie_may_come_after_them() -> None:
    record = EXAMPLES_BY_NAME[
        "a paused bookie answers adds handed after a fence read before it (EOK) and then the fence"
    ]
    judgement = judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    # In the order the proxy handed them over, the adds come after the fence: EOK then
    # needs an unfenced bookie.
    events = java_events(record.frames, record.deliveries, record.bookie_of_proxy, record.ledger_id)
    fence = next(e for e in events if e.kind is FrameKind.FENCE_READ and e.phase is Phase.ANSWERED)
    adds = [
        e
        for e in events
        if e.kind is FrameKind.ADD and e.phase is Phase.ANSWERED and e.bookie == fence.bookie
    ]
    assert any(a.at > fence.at for a in adds)
    ordered = {e.frame.frame_id: e.at for e in writer_story.fencing_order(events)}
    assert all(ordered[a.frame.frame_id] < ordered[fence.frame.frame_id] for a in adds)


def test_a_write_back_answered_after_its_timeout_is_the_specs_lost_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # b2 stored e0's write-back at once; its answer was held 1.7 s; at 1.17 s the client
    # (add timeout 1 s) wrote e0 back to b4 instead. The answer reached the client too late:
    # to the spec it is lost, which lets the recovering client change its ensemble.
    record = EXAMPLES_BY_NAME[
        "a write-back answered after the client timed it out and wrote it to a replacement"
    ]
    judgement = writer_story.judge(record)
    assert judgement.verdict is Verdict.CLEAN, judgement.outcome.divergences
    assert "after it had timed the write-back out" in (judgement.outcome.note or "")
    monkeypatch.setattr(recovery_story.RecoverySteps, "answer_timed_out", lambda _s, _a: False)
    assert writer_story.judge(record).verdict is Verdict.DIVERGENCE
