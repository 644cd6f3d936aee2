"""The one verdict vocabulary and its one precedence rule, used by every engine."""

from __future__ import annotations

import pytest

from conformance.distributed.diff import configuration_verdict
from conformance.distributed.qualification import overall_verdict
from conformance.verdict import SEVERITY, Verdict, exit_code_for, run_verdict, worst
from conformance.zab.rundir import exit_code as zab_exit_code
from conformance.zab.rundir import verdict_name as zab_verdict


def test_each_verdict_is_jepsens_valid_with_its_exit_code() -> None:
    assert [(v.value, v.valid, v.exit_code) for v in Verdict] == [
        ("clean", True, 0),
        ("violation", False, 1),
        ("divergence", False, 1),
        ("undecided", None, 2),
    ]
    assert [v for v in Verdict if v.finding] == [Verdict.VIOLATION, Verdict.DIVERGENCE]


def test_anything_that_is_no_verdict_is_undecided() -> None:
    for name in ("error", "", "CLEAN", None, 0):
        assert Verdict.named(name) is Verdict.UNDECIDED
        assert exit_code_for(str(name)) == 2


def test_independent_results_compose_worst_first() -> None:
    assert SEVERITY == (Verdict.VIOLATION, Verdict.DIVERGENCE, Verdict.UNDECIDED, Verdict.CLEAN)
    assert worst(["clean", "divergence", "violation"]) is Verdict.VIOLATION
    assert worst(["clean", "undecided", "divergence"]) is Verdict.DIVERGENCE  # false > unknown
    assert worst(["clean", "error"]) is Verdict.UNDECIDED  # unknown > true
    assert worst(["clean", "clean"]) is Verdict.CLEAN
    assert worst([]) is Verdict.UNDECIDED  # nothing was checked


@pytest.mark.parametrize(
    ("violations", "divergences", "error", "verdict"),
    [
        (False, False, False, Verdict.CLEAN),
        (True, False, False, Verdict.VIOLATION),
        (False, True, False, Verdict.DIVERGENCE),
        (True, True, False, Verdict.VIOLATION),
        (True, True, True, Verdict.UNDECIDED),
        (False, False, True, Verdict.UNDECIDED),
    ],
)
def test_one_run_by_the_same_rule_and_an_error_decides_nothing(
    violations: bool, divergences: bool, error: bool, verdict: Verdict
) -> None:
    assert run_verdict(violations=violations, divergences=divergences, error=error) is verdict


def test_the_qualification_and_zab_speak_the_same_vocabulary() -> None:
    shards = ["clean", "divergence", "error"]
    assert configuration_verdict(shards) == worst(shards).value == "divergence"
    rows = {"by_configuration": [{"verdict": "clean"}, {"verdict": "undecided"}]}
    assert overall_verdict(rows) == "undecided"
    assert [zab_verdict(v) for v in (True, False, "unknown")] == [
        "clean",
        "violation",
        "undecided",
    ]
    assert [zab_exit_code(v) for v in (True, False, "unknown")] == [0, 1, 2]
