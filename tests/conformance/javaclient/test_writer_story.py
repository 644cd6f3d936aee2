"""The writer's story: real 4.17.3 writer runs judge clean, and each way a client could go
wrong that the judge must catch is caught (recorded runs, altered one thing at a time)."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from adapters.javaclient.pipelined_adds import AddOutcome
from conformance.javaclient.plans import DROP, FaultKind, FrameSchedule, PlanError, PlannedFault
from conformance.javaclient.recording import (
    RecordingError,
    writer_record_from_json,
    writer_record_to_json,
)
from conformance.javaclient.writer_plans import WriterRunPlan, WriterShape, add_key
from conformance.javaclient.writer_story import WriterRecord, judge, writer_config

RUNS = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-writer-runs.jsonl.gz"


def _runs() -> list[tuple[WriterRunPlan, WriterRecord]]:
    with gzip.open(RUNS, "rt") as f:
        items = [json.loads(line) for line in f]
    return [
        (WriterRunPlan.from_json(i["plan"]), writer_record_from_json(i["record"])) for i in items
    ]


RECORDED = _runs()


def _with_changes(shape: str) -> WriterRecord:
    return next(r for p, r in RECORDED if p.shape.key() == shape and len(r.segments) > 1)


def test_real_writer_runs_are_judged_clean_with_their_ensemble_changes() -> None:
    changes = []
    for plan, record in RECORDED:
        judgement = judge(record)
        assert judgement.outcome.verdict == "clean", (plan.describe(), judgement.outcome)
        changes.append(judgement.ensemble_changes)
        assert judgement.actions["ClientClosesLedgerSuccess"] == 1
    assert {p.shape.key() for p, _ in RECORDED} == {"3/2/2", "2/1/1"}
    assert max(changes) == 2 and changes.count(0) >= 2


def test_a_callback_before_the_ack_quorum_is_a_divergence() -> None:
    # #3005's symptom: the client acknowledges an entry the model's writer has not confirmed.
    record = _with_changes("3/2/2")
    first = min(f.at for f in record.frames)
    early = [dataclasses.replace(o, at=first) if o.index == 0 else o for o in record.outcomes]
    judgement = judge(dataclasses.replace(record, outcomes=early))
    assert judgement.outcome.verdict == "divergence"
    assert any("acknowledged e0 to its caller" in d for d in judgement.outcome.divergences)


def test_an_acknowledged_entry_no_bookie_of_its_write_set_returns_is_a_violation() -> None:
    # #4097's symptom: the metadata names bookies that do not have the entry.
    record = _with_changes("3/2/2")
    stored = {**record.stored, 0: ()}
    judgement = judge(dataclasses.replace(record, stored=stored))
    assert judgement.outcome.verdict == "violation"
    assert any("acknowledged e0" in v for v in judgement.outcome.violations)


def test_metadata_the_model_does_not_reach_is_a_divergence() -> None:
    record = _with_changes("2/1/1")
    first, bookies = record.segments[-1]
    wrong = [*record.segments[:-1], (first, tuple(reversed(bookies)))]
    reordered = judge(dataclasses.replace(record, segments=wrong)).outcome
    # The positions moved, so the entries' write sets did too: unreadable as well.
    assert reordered.verdict == "violation"
    assert any("the ledger's ensembles are" in d for d in reordered.divergences)
    assert record.closed_last_entry is not None
    short = dataclasses.replace(record, closed_last_entry=record.closed_last_entry - 1)
    verdict = judge(short)
    assert any("closed the ledger at" in d for d in verdict.outcome.divergences)
    # Its last entry was acknowledged: beyond the end, lost to every reader.
    assert verdict.outcome.verdict == "violation"
    (lost,) = verdict.outcome.violations
    assert lost.startswith("NoDivergenceBetweenClientAndMetaData (on the real cluster)")
    assert f"acknowledged e{record.closed_last_entry}" in lost


def test_an_add_to_a_bookie_outside_the_write_set_is_a_divergence() -> None:
    plan, record = RECORDED[0]  # forward everything, 3/2/2
    assert plan.faults() == 0
    # Rename b3's proxy as the spare b4: its adds now go to a bookie outside the ensemble.
    proxy = next(p for p, b in record.bookie_of_proxy.items() if b == 2)
    spare = next(p for p, b in record.bookie_of_proxy.items() if b == 3)
    renamed = {**record.bookie_of_proxy, proxy: 3, spare: 2}
    judgement = judge(dataclasses.replace(record, bookie_of_proxy=renamed))
    assert judgement.outcome.verdict == "divergence"


def test_a_failed_add_is_a_note_never_a_finding() -> None:
    _plan, record = RECORDED[0]
    failed = [
        AddOutcome(o.index, -6, -1, o.at) if o.index == len(record.outcomes) - 1 else o
        for o in record.outcomes
    ]
    judgement = judge(dataclasses.replace(record, outcomes=failed))
    assert judgement.outcome.verdict == "clean"
    assert "NotEnoughBookies" in (judgement.outcome.note or "")


def test_records_and_plans_round_trip() -> None:
    for plan, record in RECORDED:
        assert WriterRunPlan.from_json(plan.to_json()) == plan
        again = writer_record_from_json(json.loads(json.dumps(writer_record_to_json(record))))
        assert again == record
    # The plan's stalls too (two windows of one bookie, one of another).
    stalled = dataclasses.replace(
        record,
        stalled={0: ((1.0, 2.5), (4.0, 4.5)), 2: ((3.0, 3.2),)},
        resets={1: (2.0, 5.0)},
    )
    again = writer_record_from_json(json.loads(json.dumps(writer_record_to_json(stalled))))
    assert again.stalled == stalled.stalled and again.resets == stalled.resets
    with pytest.raises(RecordingError):
        writer_record_from_json({"format": 1})


def test_plans_refuse_what_no_run_can_do() -> None:
    shape = WriterShape(3, 2, 2)
    with pytest.raises(PlanError, match="has b1, b2, b3, b4"):
        WriterRunPlan(shape, 2, FrameSchedule({add_key("b5", 0): DROP}))
    with pytest.raises(PlanError, match=r"adds e0\.\.e1"):
        WriterRunPlan(shape, 2, FrameSchedule({add_key("b1", 2): DROP}))
    with pytest.raises(PlanError, match=r"1\.\.8"):
        WriterRunPlan(shape, 9)
    with pytest.raises(PlanError, match="has b1, b2, b3, b4"):
        WriterRunPlan(shape, 2, FrameSchedule(events=(PlannedFault(FaultKind.CRASH, None, "b7"),)))
    with pytest.raises(PlanError, match=r"adds e0\.\.e1"):
        trigger = add_key("b1", 3)
        WriterRunPlan(
            shape, 2, FrameSchedule(events=(PlannedFault(FaultKind.CRASH, trigger, "b1"),))
        )
    with pytest.raises(PlanError, match="E >= WQ >= AQ"):
        WriterShape(2, 3, 1)
    with pytest.raises(PlanError, match="E/WQ/AQ"):
        WriterShape.parse("3-2-2")
    with pytest.raises(PlanError, match="spare bookies"):
        WriterShape(4, 2, 2, spares=0)
    assert WriterShape.parse("4/2/2+2") == WriterShape(4, 2, 2, spares=2)
    assert (
        WriterShape(4, 2, 2, spares=2).key() == "4/2/2+2" and WriterShape(3, 2, 2).key() == "3/2/2"
    )
    assert WriterShape(4, 2, 2, spares=2).bookies == 6
    with pytest.raises(PlanError, match="not a writer plan"):
        WriterRunPlan.from_json({"role": "recovery"})
    with pytest.raises(PlanError, match="at most 1 of 2"):
        WriterRunPlan(shape, 2, delayed=2, delay_ms=100)
    with pytest.raises(PlanError, match="goes with delayed entries"):
        WriterRunPlan(shape, 2, delayed=1)
    waves = WriterRunPlan(shape, 3, delayed=1, delay_ms=1050)
    assert WriterRunPlan.from_json(waves.to_json()) == waves
    assert "e2..e2 1050 ms later" in waves.describe()[0]


def test_the_writer_runs_model_is_the_shape_with_one_spare() -> None:
    cfg = writer_config(WriterShape(3, 2, 2), 4)
    assert (cfg.bookies, cfg.clients, cfg.effective_ensemble_size) == (4, 1, 3)
    assert cfg.striped and cfg.ensembles_may_repeat and cfg.send_limit == 4


def test_two_bookies_failing_together_are_replaced_a_change_at_a_time() -> None:
    # Real 4.17.3, E=3 WQ=2 AQ=2: e0 lost to b1 and e1 to b2, both time out together; the
    # client replaced b2 by the spare b4, then b1 by b2 (the bookie it had just dropped). The
    # spec's writer replaces both at once and, with one spare, cannot: the judge finds the
    # model's story that replaces one at a time (partial_ensemble_changes).
    record = next(r for _p, r in RECORDED if r.segments == [(0, (1, 3, 2))])
    judgement = judge(record)
    assert judgement.outcome.verdict == "clean"
    assert judgement.ensemble_changes == 2
    strict = dataclasses.replace(judgement.cfg, partial_ensemble_changes=False)
    assert not strict.partial_ensemble_changes  # the switch is what makes it a behaviour


def test_a_run_the_client_did_not_finish_is_undecided_never_clean() -> None:
    _plan, record = RECORDED[0]
    silent = [AddOutcome(o.index, None, None, None) if o.index == 0 else o for o in record.outcomes]
    judgement = judge(dataclasses.replace(record, outcomes=silent))
    assert judgement.outcome.verdict == "undecided"
    assert "never called back add 0" in (judgement.outcome.error or "")
    unclosed = dataclasses.replace(
        record, closed_last_entry=None, closed_at=None, close_error="BKTimeout: x"
    )
    judgement = judge(unclosed)
    assert judgement.outcome.verdict == "undecided"
    assert "not closed (BKTimeout: x)" in (judgement.outcome.error or "")


def test_a_client_that_gives_up_with_not_enough_bookies_loses_nothing() -> None:
    # Real 4.17.3, E=3 WQ=2 AQ=2: e0 lost to b2, e1 lost to b2 and b3. The client replaced b2
    # by the spare b4 in the metadata, then found no bookie for b3 (b2, the only one left,
    # had failed), failed every add with NotEnoughBookies and closed the ledger empty: the
    # model's writer, whose change shows only in the metadata, explains it.
    runs = [r for _p, r in RECORDED if all(o.code == -6 for o in r.outcomes)]
    assert {r.shape.key() for r in runs} == {"3/2/2", "2/1/1"}
    for record in runs:
        judgement = judge(record)
        assert judgement.outcome.verdict == "clean", judgement.outcome.divergences
        assert record.closed_last_entry == -1 and judgement.ensemble_changes == 1


def test_an_answer_ignored_while_its_bookie_was_out_does_not_block_the_next() -> None:
    # b2's late answer to e1 reached the client after b2 left the ensemble (ignored); b2 came
    # back and answered e1's resend: the same answer, sent again while the first still lingers.
    record = next(
        r
        for _p, r in RECORDED
        if r.segments == [(0, (0, 1, 2))] and len(r.frames) > 12 and r.shape.ensemble == 3
    )
    judgement = judge(record)
    assert judgement.outcome.verdict == "clean" and judgement.ensemble_changes == 2


def test_every_ledger_written_together_is_judged_and_the_worst_verdict_is_the_run_s() -> None:
    _plan, record = RECORDED[0]
    assert judge(record).verdict.value == "clean"
    # A second writer's ledger (here the same run's, e0 lost on the cluster) beside a clean one.
    lost = dataclasses.replace(record, stored={**record.stored, 0: ()})
    together = judge(dataclasses.replace(record, others=(lost,)))
    assert together.verdict.value == "violation"
    (violation,) = together.outcome.violations
    assert violation.startswith(f"ledger {record.ledger_id} (written with {record.ledger_id}): ")
    assert "AllAckedEntriesAreReadable" in violation
    # The first ledger's story is the judgement's.
    assert together.outcome.steps == judge(record).outcome.steps
