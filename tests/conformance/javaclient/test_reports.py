"""The scenarios (upstream reports and hypotheses): their plans are valid writer plans; real
4.17.3 runs of #3005's and of the throttle hypothesis (recorded) are judged violations with
their interleavings reached; the same runs altered (the held answer released before the
change, the stale add sent before the change completed) are not those interleavings."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import Outcome
from conformance.javaclient import REPORT_SCENARIOS
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.reports import (
    BK_3005,
    BK_4097,
    BK_4651,
    BK_4812,
    FENCE_LOST,
    FENCE_LOST_AFTER_CHECKPOINT,
    FENCE_LOST_ON_CLEAN_RESTART,
    NOT_DECIDED,
    REACHED_CLEAN,
    REPORTS,
    REPRODUCED,
    THROTTLE,
    Window,
    report_verdict,
    window_of,
)
from conformance.javaclient.role import Example
from conformance.javaclient.roles import role_of_plan
from conformance.javaclient.writer_plans import WriterRunPlan
from conformance.javaclient.writer_role import WriterRole, held_completions
from conformance.javaclient.writer_story import judge
from conformance.verdict import Verdict, run_verdict

RECORDED = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-bk-3005.json"
THROTTLED = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-throttle.json"
BK4097 = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-bk-4097.json"
BK4812 = Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-bk-4812.json"
FENCE_LOST_RUN = (
    Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-fence-lost-on-restart.json"
)
AFTER_CHECKPOINT_RUN = (
    Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-fence-lost-after-checkpoint.json"
)
FENCE_HELD_RUN = (
    Path(__file__).parent
    / "recorded_runs"
    / "bookkeeper-4.14.7-db-fence-held-on-clean-restart.json"
)
CLEAN_RESTART_RUN = (
    Path(__file__).parent / "recorded_runs" / "bookkeeper-4.17.3-fence-lost-on-clean-restart.json"
)


def _recorded(path: Path = RECORDED) -> tuple[dict[str, Any], Example[Any, Any]]:
    item = json.loads(path.read_text())
    # Read as the run's role reads it: its add timeout was the report's, 10 s.
    record = role_of_plan(item["plan"], item["role_settings"]).record_from_json(item["record"])
    plan = WriterRunPlan.from_json(item["plan"])
    faults = tuple((float(at), str(what)) for at, what in item["faults"])
    example: Example[Any, Any] = Example(plan, record, judge(record), [], 0.0, faults=faults)
    return item, example


def test_the_reports_are_the_scenarios_the_command_line_knows() -> None:
    assert tuple(REPORTS) == REPORT_SCENARIOS
    for report in REPORTS.values():
        assert WriterRunPlan.from_json(report.plan.to_json()) == report.plan
        assert report.role().add_entry_timeout_s > 1  # windows made by holds, not timeouts
    assert BK_4097.plan.entries == 7 and BK_3005.shape.key() == "2/1/1"
    assert BK_4812.plan.role == "both" and len(BK_4812.plan.after_recovery) == 2


def test_the_recorded_3005_run_loses_an_acknowledged_entry_in_the_reports_window() -> None:
    item, example = _recorded()
    assert example.judgement is not None
    assert example.judgement.verdict is Verdict.VIOLATION
    (violation,) = example.judgement.outcome.violations
    assert violation.startswith("AllAckedEntriesAreReadable") and "e1" in violation
    window = window_of(BK_3005, example)
    assert window.reached and len(window.evidence) == 4
    # The recorded role settings replay it with the report's long add timeout.
    role = role_of_plan(item["plan"], item["role_settings"])
    assert isinstance(role, WriterRole) and role.add_entry_timeout_s == 10


def test_without_the_held_write_or_with_the_answer_too_late_the_window_is_not_reached() -> None:
    _item, example = _recorded()
    no_hold = dataclasses.replace(example, faults=())
    assert not window_of(BK_3005, no_hold).reached
    (at, what) = example.faults[0]
    much_earlier = dataclasses.replace(example, faults=((at - 10.0, what),))
    assert not window_of(BK_3005, much_earlier).reached  # e0's answer came after the hold


def test_the_recorded_throttle_run_acknowledges_an_entry_sent_to_the_replaced_bookie() -> None:
    item, example = _recorded(THROTTLED)
    assert item["role_settings"]["client_properties"] == {"throttle": "1"}
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.VIOLATION
    (violation,) = judgement.outcome.violations
    assert "acknowledged e3" in violation and "BKNoSuchEntry" in violation
    # The judge also names the step the spec's writer cannot take: e3 to b2 after the change.
    assert any("add e3" in d and "no such add" in d for d in judgement.frame_divergences)
    window = window_of(THROTTLE, example)
    assert window.reached, window.evidence
    assert example.record.client_reads == {0: "OK", 1: "OK", 2: "OK", 3: "BKNoSuchEntry"}


THROTTLE_FIXED = RECORDED.parent / "bookkeeper-4.18.0-throttle-fixed.json"


def test_the_fixed_client_reaches_the_throttle_window_and_is_clean() -> None:
    """The window is the cause (the change completed while e3 waited on the throttle), not the
    symptom: with the candidate fix e3 goes to b3, and the run is reached and clean, not
    undecided."""
    item, example = _recorded(THROTTLE_FIXED)
    assert "candidate fix" in item["source"]
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.CLEAN, judgement
    window = window_of(THROTTLE, example)
    assert window.reached, window.evidence
    assert "e3 went to the new ensemble only" in window.evidence
    assert example.record.client_reads == {0: "OK", 1: "OK", 2: "OK", 3: "OK"}
    # e3 sent before the change completed: not the window, fixed or not
    (at, what) = example.faults[0]
    later = dataclasses.replace(example, faults=((at + 10.0, what),))
    assert not window_of(THROTTLE, later).reached
    # a change that completed before e2 went out: e3 took the new ensemble, no wait crossed it
    earlier = dataclasses.replace(example, faults=((at - 10.0, what),))
    assert not window_of(THROTTLE, earlier).reached


def test_a_stale_add_sent_before_the_change_completed_is_not_the_hypothesis() -> None:
    _item, example = _recorded(THROTTLED)
    (at, what) = example.faults[0]
    # Had the held metadata write been released 10 s later, e3 went out during the change.
    later = dataclasses.replace(example, faults=((at + 10.0, what),))
    assert not window_of(THROTTLE, later).reached


def test_the_recorded_4097_run_leaves_an_acknowledged_entry_on_bookies_the_metadata_drops() -> None:
    item, example = _recorded(BK4097)
    assert item["role_settings"]["shape"] == "4/2/2+2"
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.VIOLATION
    unreadable, under_replicated = _split(judgement.outcome.violations)
    # e2 is on b3 and b4 only, which the metadata no longer names: unreadable.
    (violation,) = unreadable
    assert "acknowledged e2" in violation and "BKNoSuchEntry" in violation
    # e1 and e3 have one copy each in their write sets: acknowledged with AQ=2, not durable.
    assert len(under_replicated) == 2
    assert {"e1" in v or "e3" in v for v in under_replicated} == {True}
    window = window_of(BK_4097, example)
    assert window.reached, window.evidence
    # The change replaced the first ensemble in place (from e0): no second segment, two
    # bookies brought in.
    assert len(example.record.segments) == 1
    assert any("2 bookie(s) brought in" in line for line in window.evidence)
    # Without b3's crash (the first change's trigger) the window is not the report's.
    no_crash = dataclasses.replace(
        example, faults=tuple(f for f in example.faults if not f[1].startswith("crash b3"))
    )
    assert not window_of(BK_4097, no_crash).reached


def test_the_recorded_4812_run_acknowledges_an_add_beyond_the_recovered_end() -> None:
    item, example = _recorded(BK4812)
    role = role_of_plan(item["plan"], item["role_settings"])
    assert isinstance(role, FailoverRole) and isinstance(BK_4812.role(), FailoverRole)
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.VIOLATION
    on_the_cluster = [v for v in judgement.outcome.violations if "(on the real cluster)" in v]
    (violation,) = on_the_cluster
    assert violation.startswith("NoDivergenceBetweenClientAndMetaData (on the real cluster)")
    assert "acknowledged e1" in violation and "closed the ledger at e0" in violation
    # The model, its bookies restarted empty as the plan's were, breaks the same invariant
    # itself: every step the client and the bookies took is one of the spec's.
    assert "NoDivergenceBetweenClientAndMetaData" in judgement.outcome.violations
    assert not judgement.outcome.divergences
    steps = [step.action for step in judgement.outcome.steps]
    assert steps.count("BookieRestartsEmpty") == 2
    # e0 went with the wiped bookies, by the plan: a note on the cluster's side and the
    # model's, not a violation of either.
    assert "wiped by the plan" in (judgement.outcome.note or "")
    assert "AllAckedEntriesAreReadable does not count e0" in (judgement.outcome.note or "")
    assert "AllAckedEntriesAreReadable" not in judgement.outcome.violations
    window = window_of(BK_4812, example)
    assert window.reached, window.evidence
    assert any("callback: add 1 (e1): OK" in line for line in window.evidence)
    assert any("BKMetadataVersion" in line for line in window.evidence)
    # With one bookie wiped only, the add does not reach two fresh bookies: not the report's.
    one_wipe = dataclasses.replace(
        example, faults=tuple(f for f in example.faults if f[1] != "restart empty b2")
    )
    assert not window_of(BK_4812, one_wipe).reached
    # Nor with the wipes before the recovery's close.
    takeover = example.record.takeover
    assert takeover is not None
    late = dataclasses.replace(takeover, returned_at=takeover.returned_at + 60.0)
    late_record = dataclasses.replace(example.record, takeover=late)
    assert not window_of(BK_4812, dataclasses.replace(example, record=late_record)).reached


def test_the_recorded_fence_lost_run_acknowledges_an_add_beyond_the_end_with_no_bookie_wiped() -> (
    None
):
    item, example = _recorded(FENCE_LOST_RUN)
    assert not item["record"].get("wiped")  # restarts with their data only
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.VIOLATION
    on_the_cluster = [v for v in judgement.outcome.violations if "(on the real cluster)" in v]
    assert any(
        v.startswith("NoDivergenceBetweenClientAndMetaData") and "acknowledged e1" in v
        for v in on_the_cluster
    )
    # The model's b3 keeps the fence the recovery gave it: its EOK to e1 is no step of the
    # spec's (no action of the spec loses a fence but a restart without data).
    assert any("from b3: ADD_ENTRY" in d for d in judgement.outcome.divergences)
    window = window_of(FENCE_LOST, example)
    assert window.reached, window.evidence
    assert any("READ_ENTRY" in line and "ENOENTRY" in line for line in window.evidence)
    assert any("callback: add 1 (e1): OK" in line for line in window.evidence)
    # Without b3's restart the window is not this one (b3 would still be fenced).
    no_restart = dataclasses.replace(
        example, faults=tuple(f for f in example.faults if f[1] != "restart b3")
    )
    assert not window_of(FENCE_LOST, no_restart).reached
    # The window of each variant needs its own restart of b3: a clean restart is not a crash.
    assert window_of(FENCE_LOST_AFTER_CHECKPOINT, example).reached
    assert not window_of(FENCE_LOST_ON_CLEAN_RESTART, example).reached
    stopped = dataclasses.replace(
        example,
        faults=tuple(
            (at, "clean restart b3: stopped (SIGTERM)" if what == "restart b3" else what)
            for at, what in example.faults
        ),
    )
    assert window_of(FENCE_LOST_ON_CLEAN_RESTART, stopped).reached
    assert not window_of(FENCE_LOST, stopped).reached


@pytest.mark.parametrize(
    ("path", "variant", "restart"),
    [
        (AFTER_CHECKPOINT_RUN, FENCE_LOST_AFTER_CHECKPOINT, "restart b3"),
        (CLEAN_RESTART_RUN, FENCE_LOST_ON_CLEAN_RESTART, "clean restart b3: "),
    ],
)
def test_on_4_17_3_sorted_the_fence_is_lost_after_a_checkpoint_and_on_a_clean_restart(
    path: Path, variant: Any, restart: str
) -> None:
    # SortedLedgerStorage never writes the index of a ledger without entries, so neither its
    # checkpoint nor its clean shutdown keeps the fence (docs/findings/fence-lost-on-restart.md).
    _item, example = _recorded(path)
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.VIOLATION
    assert any(
        v.startswith("NoDivergenceBetweenClientAndMetaData") and "acknowledged e1" in v
        for v in judgement.outcome.violations
    )
    window = window_of(variant, example)
    assert window.reached, window.evidence
    assert any(f"fault: {restart}" in line for line in window.evidence)
    faults = [what for _at, what in example.faults]
    if variant is FENCE_LOST_AFTER_CHECKPOINT:
        waited = faults.index("await checkpoint: 10000 ms (flushInterval) + 2 s waited")
        assert waited < faults.index("restart b3")
    else:
        assert "stopped (SIGTERM)" in faults[1] and "exit 143" in faults[1]


def test_a_fence_that_held_reaches_the_window_and_is_clean() -> None:
    # 4.14.7 on DbLedgerStorage, stopped cleanly: b3 refused the old writer's e1 (EFENCED).
    # The interleaving happened and the bug did not show: reached and clean (exit 0), not
    # "not reached" (exit 2), which would say nothing of the fence.
    _item, example = _recorded(FENCE_HELD_RUN)
    judgement = example.judgement
    assert judgement is not None and judgement.verdict is Verdict.CLEAN
    window = window_of(FENCE_LOST_ON_CLEAN_RESTART, example)
    assert window.reached, window.evidence
    assert any("ADD_ENTRY 0/1 -> EFENCED" in line for line in window.evidence)
    said = report_verdict(FENCE_LOST_ON_CLEAN_RESTART, judgement.outcome, window)
    assert said.exit_code == REACHED_CLEAN


def test_the_lost_fence_variants_differ_only_in_b3_s_restart() -> None:
    def b3_and_before(plan: WriterRunPlan) -> list[str]:
        return [e.describe() for e in plan.after_recovery]

    assert b3_and_before(FENCE_LOST.plan) == ["restart b3 as the client starts", _B2_BACK]
    assert b3_and_before(FENCE_LOST_AFTER_CHECKPOINT.plan) == [
        "await checkpoint as the client starts",
        "restart b3 as the client starts",
        _B2_BACK,
    ]
    assert b3_and_before(FENCE_LOST_ON_CLEAN_RESTART.plan) == [
        "clean restart b3 as the client starts",
        _B2_BACK,
    ]
    for variant in (FENCE_LOST_AFTER_CHECKPOINT, FENCE_LOST_ON_CLEAN_RESTART):
        assert variant.plan.before_recovery == FENCE_LOST.plan.before_recovery
        assert variant.plan.recover_after == FENCE_LOST.plan.recover_after


_B2_BACK = "restart b2 as the client starts"


def _split(violations: list[str]) -> tuple[list[str], list[str]]:
    readable = [v for v in violations if v.startswith("AllAckedEntriesAreReadable")]
    quorum = [v for v in violations if v.startswith("AllCommittedEntriesReachAckQuorum")]
    assert len(readable) + len(quorum) == len(violations), violations
    return readable, quorum


def test_the_writers_search_is_steered_towards_the_3005_window() -> None:
    _item, example = _recorded()
    steering = WriterRole(BK_3005.shape).steering(example)
    # e1 (acknowledged by b2 at once) and e2 waited for e0's held answer and the change.
    assert steering["completions held back"] >= 2
    assert steering["pending adds moved by ensemble changes"] >= 1
    assert set(steering) == {
        "pending adds moved by ensemble changes",
        "answers released after an ensemble change",
        "completions held back",
    }
    assert held_completions(dataclasses.replace(example.record, outcomes=[])) == 0


# The exit code of a report scenario says what happened to the report's bug (issue 46).


def _outcome(
    violations: tuple[str, ...] = (), divergences: tuple[str, ...] = (), error: str | None = None
) -> Outcome:
    verdict = run_verdict(
        violations=bool(violations), divergences=bool(divergences), error=bool(error)
    )
    return Outcome(verdict, [], [], list(violations), list(divergences), error)


REACHED = Window(True, ("b1 answered e5 after the change",))
NOT_REACHED = Window(False, ("no frame of the stalled connections reached the proxies",))


def test_a_report_reproduced_is_the_window_reached_and_an_invariant_broken() -> None:
    said = report_verdict(BK_4651, _outcome(violations=("AckedEntriesAreReadable",)), REACHED)
    assert said.exit_code == REPRODUCED == 1
    assert said.says.startswith("reproduced:") and "AckedEntriesAreReadable" in said.says


def test_the_window_reached_and_clean_exits_0() -> None:
    said = report_verdict(BK_4651, _outcome(), REACHED)
    assert said.exit_code == REACHED_CLEAN == 0 and said.says.startswith("reached and clean")


def test_a_divergence_outside_the_window_is_not_the_report_s_bug() -> None:
    said = report_verdict(BK_4651, _outcome(divergences=("the model allows no step",)), NOT_REACHED)
    assert said.exit_code == NOT_DECIDED == 2
    assert said.says.startswith("not reached:") and BK_4651.source in said.says


def test_a_violation_outside_the_window_is_not_the_report_s_bug_either() -> None:
    said = report_verdict(BK_4651, _outcome(violations=("X",)), NOT_REACHED)
    assert said.exit_code == NOT_DECIDED


def test_a_run_that_reached_the_window_then_diverged_decides_nothing_of_the_report() -> None:
    said = report_verdict(BK_4651, _outcome(divergences=("d",)), REACHED)
    assert said.exit_code == NOT_DECIDED and "diverged from the model" in said.says
    failed = report_verdict(BK_4651, _outcome(error="the JVM died"), REACHED)
    assert failed.exit_code == NOT_DECIDED and "could not be judged" in failed.says


def test_a_run_with_no_example_says_why() -> None:
    said = report_verdict(BK_4651, _outcome(error="the cluster did not start"), None)
    assert said.exit_code == NOT_DECIDED and "the cluster did not start" in said.says
    assert "the run left no example" in report_verdict(BK_4651, _outcome(), None).says
