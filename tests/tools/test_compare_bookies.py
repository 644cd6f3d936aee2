"""The pure part of tools/compare_bookies.py: answers of a run, the step-by-step comparison,
the grouping of differences and the corpus ranking. No cluster."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tools.compare_bookies import (
    CorpusItem,
    Difference,
    Replayed,
    StepAnswer,
    answer_histogram,
    answers_of,
    build_corpus,
    compare,
    group_differences,
    interleave,
    normalise_error,
    rank_examples,
    render_markdown,
    render_observed,
    request_kind,
)


def record(index: int, action: str, **fields: Any) -> SimpleNamespace:
    base: dict[str, Any] = {
        "index": index,
        "action": action,
        "description": f"{action} #{index}",
        "request": None,
        "observed": None,
        "error": None,
    }
    return SimpleNamespace(**{**base, **fields})


def step(index: int, answer: str | None, action: str = "BookieSendsAddConfirmed") -> StepAnswer:
    return StepAnswer(index, action, "add", answer)


def test_answers_of_renders_observed_errors_and_silent_steps() -> None:
    records = [
        record(
            1, "ClientCreatesLedger", observed={"kind": "metadata", "status": "OK", "success": True}
        ),
        record(2, "ClientSendsAdd"),
        record(
            3,
            "BookieSendsAddConfirmed",
            request="add e1 (lac=0)",
            observed={"kind": "add", "status": "EOK", "success": True},
        ),
        record(
            4,
            "BookieSendsReadResponse",
            request="recovery read e2, fence",
            error="bookie 127.0.0.1:40123: timed out\nmore",
        ),
    ]
    answers = answers_of(records)
    assert [a.answer for a in answers] == [
        "metadata OK success=True",
        None,
        "add EOK success=True",
        "error: bookie HOST:PORT: timed out",
    ]
    assert [a.request for a in answers] == ["metadata", "-", "add", "recovery read, fence"]


def test_render_observed_is_stable_and_complete() -> None:
    observed = {"lac": 1, "code": "OK", "kind": "fence", "status": "EOK"}
    assert render_observed(observed) == "fence EOK code=OK lac=1"
    assert render_observed({"kind": "read", "status": "ENOLEDGER", "code": "NoSuchEntry"}) != (
        render_observed({"kind": "read", "status": "ENOENTRY", "code": "NoSuchEntry"})
    )


def test_request_kind_drops_entry_numbers() -> None:
    assert request_kind("X", "recovery add e3 (lac=2)") == "recovery add"
    assert request_kind("X", "fence (read LAC)") == "fence (read LAC)"
    assert request_kind("ClientClosesLedgerSuccess", None) == "metadata"
    assert request_kind("ClientSendsAdd", None) == "-"


def test_normalise_error_hides_endpoints_and_ledger_ids() -> None:
    a = normalise_error("cannot connect to bookie 127.0.0.1:3181 for ledger 17: refused")
    b = normalise_error("cannot connect to bookie 127.0.0.1:4242 for ledger 3: refused")
    assert a == b == "cannot connect to bookie HOST:PORT for ledger N: refused"
    assert normalise_error("") == "(empty)"


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


def test_rank_prefers_crashes_then_answers_and_drops_duplicate_stories() -> None:
    candidates = [
        (("a",), False, 9, 9),
        (("b",), True, 0, 1),
        (("a",), True, 9, 9),  # the same story as the first: dropped
        (("c",), True, 0, 5),
        (("d",), False, 9, 9),
    ]
    assert rank_examples(candidates) == [3, 1, 0, 4]


def test_interleave_alternates_and_fills_from_the_longer_source() -> None:
    h = [CorpusItem("h", (i,), 60) for i in range(4)]
    e = [CorpusItem("e", (10,), 60), CorpusItem("e", (0,), 60)]  # (0,) duplicates h[0]
    out = interleave(h, e, 5)
    assert [(c.source, c.choices) for c in out] == [
        ("h", (0,)),
        ("e", (10,)),
        ("h", (1,)),
        ("h", (2,)),
        ("h", (3,)),
    ]
    assert interleave(h, e, 2) == [h[0], e[0]]


def test_markdown_report_lists_counts_and_groups() -> None:
    groups = group_differences(
        [Difference("limbo-crash", 2, "hypothesis", 5, "Act", "add", "a|b", "c", "desc")]
    )
    report: dict[str, Any] = {
        "command": "tools/compare_bookies.py --out x.md",
        "systems": {"real": "bookies: BookKeeper 4.17.3", "reference": "reference"},
        "seed": 0,
        "per_config": 2,
        "max_steps": 60,
        "elapsed": 12.0,
        "partial": False,
        "configurations": [
            {
                "name": "limbo-crash",
                "corpus": 2,
                "sources": "hypothesis 2",
                "sequences": 2,
                "steps": 20,
                "answers": 9,
                "differences": 1,
                "verdicts": {"real": "clean 2", "reference": "clean 2"},
            }
        ],
        "totals": {"corpus": 2, "sequences": 2, "steps": 20, "answers": 9, "differences": 1},
        "groups": [vars(g) for g in groups],
        "errors": [],
    }
    text = render_markdown(report)
    assert "| limbo-crash | 2 (hypothesis 2) | 2 | 20 | 9 | 1 |" in text
    assert "| a\\|b | c | 1 |" in text  # a pipe in an answer does not break the table
    report["groups"] = []
    assert "No difference" in render_markdown(report)


def test_answer_histogram_counts_request_and_answer() -> None:
    runs = [
        Replayed([step(1, "add EOK success=True"), step(2, None)], "clean"),
        Replayed([step(1, "add EOK success=True"), step(2, "add EFENCED success=False")], "clean"),
    ]
    assert answer_histogram(runs) == {
        "add: add EFENCED success=False": 1,
        "add: add EOK success=True": 2,
    }


def test_the_limbo_corpus_leaves_out_traces_with_the_bookies_own_steps() -> None:
    # The explorer reaches the bookies' own recovery of a limbo ledger (4.18.0 runs it as a
    # bookie restarts): no example can make a bookie act, and encoding such a trace failed
    # with a KeyError before any bookie was compared.
    corpus = build_corpus(
        "limbo-crash",
        seed=0,
        per_config=15,
        max_steps=60,
        hypothesis_examples=5,
        explorer_rounds=300,
        database=None,
    )
    assert any(item.source == "explorer archive" for item in corpus)
