"""The step-by-step comparison of two replays and the grouping of differences. No cluster."""

from __future__ import annotations

from conformance.bookie_comparison.answers import Replayed
from conformance.bookie_comparison.differences import Difference, compare, group_differences
from tests.conformance.bookie_comparison.replays import step


def test_same_answers_make_no_difference_and_are_counted() -> None:
    run = Replayed([step(1, "add EOK success=True"), step(2, None, "ClientSendsAdd")], "clean")
    result = compare("cfg", 1, "hypothesis", run, run)
    assert (result.sequences, result.steps, result.answers) == (1, 2, 2)  # one answer + end
    assert result.differences == []


def test_a_different_answer_is_a_difference_at_its_step() -> None:
    real = Replayed([step(1, "add EOK success=True"), step(2, "add EOK success=True")], "clean")
    ref = Replayed([step(1, "add EOK success=True"), step(2, "add EFENCED success=False")], "clean")
    result = compare("cfg", 4, "explorer archive", real, ref)
    (d,) = result.differences
    assert (d.step, d.real, d.reference, d.sequence, d.source) == (
        2,
        "add EOK success=True",
        "add EFENCED success=False",
        4,
        "explorer archive",
    )


def test_a_run_that_stops_early_is_one_difference() -> None:
    real = Replayed(
        [step(1, "add EOK success=True")], "divergence", stop="divergence from the model"
    )
    ref = Replayed(
        [step(1, "add EOK success=True"), step(2, "add EOK success=True"), step(3, None)], "clean"
    )
    result = compare("cfg", 1, "s", real, ref)
    (d,) = result.differences
    assert d.step == 2
    assert d.real == "(stopped: divergence from the model)"
    assert d.reference == "add EOK success=True"
    assert result.steps == 1
    # ... and the other way round
    (d,) = compare("cfg", 1, "s", ref, real).differences
    assert (d.real, d.reference) == ("add EOK success=True", "(stopped: divergence from the model)")


def test_a_stop_caused_by_a_differing_step_is_not_counted_twice() -> None:
    real = Replayed([step(1, "error: timed out")], "undecided", stop="error: timed out")
    ref = Replayed([step(1, "add EOK success=True"), step(2, "add EOK success=True")], "clean")
    (d,) = compare("cfg", 1, "s", real, ref).differences
    assert (d.step, d.real) == (1, "error: timed out")


def test_a_raised_replay_differs_from_the_first_step() -> None:
    raised = Replayed([], "raised X", stop="raised X", verdict="raised")
    ref = Replayed([step(1, None, "ClientCreatesLedger")], "clean")
    (d,) = compare("cfg", 1, "s", raised, ref).differences
    assert (d.step, d.real, d.reference) == (1, "(stopped: raised X)", "(no answer)")
    # both raised alike: no difference
    assert compare("cfg", 1, "s", raised, raised).differences == []


def test_final_states_are_compared_when_both_ran_every_step() -> None:
    real = Replayed([step(1, None)], "divergence; final state: bookie b1 holds [], model [1]")
    ref = Replayed([step(1, None)], "clean")
    (d,) = compare("cfg", 1, "s", real, ref).differences
    assert (d.action, d.request, d.step) == ("(end of run)", "final state", 2)


def test_different_actions_at_a_step_are_a_difference() -> None:
    real = Replayed([step(1, None, "A")], "clean")
    ref = Replayed([step(1, None, "B")], "clean")
    (d,) = compare("cfg", 1, "s", real, ref).differences
    assert d.action == "A | B"


def test_grouping_counts_and_keeps_the_first_example() -> None:
    def diff(seq: int, real: str, cfg: str = "c") -> Difference:
        return Difference(cfg, seq, "src", 3, "Act", "add", real, "ref", f"step of {seq}")

    groups = group_differences([diff(1, "x"), diff(2, "y"), diff(3, "x"), diff(4, "x", "b")])
    assert [(g.configuration, g.real, g.count) for g in groups] == [
        ("b", "x", 1),
        ("c", "x", 2),
        ("c", "y", 1),
    ]
    assert groups[1].example["sequence"] == 1
    assert groups[1].example["detail"] == "step of 1"
