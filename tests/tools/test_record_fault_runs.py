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
    assert kinds == set(FaultKind)


def test_an_unknown_plan_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        record_fault_runs.main(["--out", "/nonexistent/x.jsonl", "--only", "no such plan"])
    assert raised.value.code == 2
    assert "no plan named ['no such plan']" in capsys.readouterr().err
