"""tools/record_fault_runs.py: its plans are valid writer plans covering every fault kind, and
a plan name it does not know is refused before anything starts."""

from __future__ import annotations

import pytest

from conformance.javaclient.plans import FaultKind
from conformance.javaclient.writer_plans import WriterRunPlan
from tools import record_fault_runs


def test_every_plan_is_a_valid_writer_plan_and_every_fault_kind_is_planned() -> None:
    kinds = set()
    for name, schedule in record_fault_runs.PLANS.items():
        plan = WriterRunPlan(record_fault_runs.SHAPE, record_fault_runs.ENTRIES, schedule)
        assert WriterRunPlan.from_json(plan.to_json()) == plan, name
        kinds.update(event.kind for event in schedule.events)
    # Upgrades and downgrades name a release to restart from, which depends on the one the
    # tool records with: the rolling scenarios record them (tools/record_rolling_runs.py).
    assert kinds == {kind for kind in FaultKind if not kind.needs_release}


def test_an_unknown_plan_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        record_fault_runs.main(["--out", "/nonexistent/x.jsonl", "--only", "no such plan"])
    assert raised.value.code == 2
    assert "no plan named ['no such plan']" in capsys.readouterr().err


def test_the_fail_over_plans_are_valid_plans_of_role_both() -> None:
    plans = record_fault_runs._plans("both")
    assert set(plans) == set(record_fault_runs.FAILOVER_PLANS)
    for name, plan in plans.items():
        assert plan.role == "both" and plan.recover_after is not None, name
        assert WriterRunPlan.from_json(plan.to_json()) == plan, name
    assert all(plan.role == "writer" for plan in record_fault_runs._plans("writer").values())


def test_a_writer_plan_name_is_not_a_fail_over_plan(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        record_fault_runs.main(
            ["--out", "/nonexistent/x.jsonl", "--role", "both", "--only", "drop request"]
        )
    assert raised.value.code == 2
    assert "no plan named ['drop request']" in capsys.readouterr().err
