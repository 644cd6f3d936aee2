"""The model-check commands' shared runs (conformance/commands/model_check.py) on a toy spec
given as a ``CheckedModel`` value: the breadth-first search and the simulation, what they
print, ``--minimise`` only where the command has it, and the exit codes."""

from __future__ import annotations

import argparse
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from conformance.commands.model_check import (
    EXIT_OK,
    EXIT_UNDECIDED,
    EXIT_VIOLATION,
    CheckedModel,
    run_model_check,
)
from model.search.bfs import Step
from model.search.explorable import Explorable
from tests.model.search.toy_spec import State, toy


@dataclass(frozen=True)
class ToyConfig:
    def describe(self) -> str:
        return "two counters to 3"


def explorable(cfg: ToyConfig) -> Explorable[State, str]:
    return toy()


def numbered(cfg: ToyConfig, trace: Sequence[Step[State, str]]) -> str:
    return "TRACE " + " ".join(str(s.label) for s in trace[1:])


def diagram(
    cfg: ToyConfig,
    trace: Sequence[Step[State, str]],
    *,
    title: str | None = None,
    final_note: str | None = None,
) -> str:
    return f"DIAGRAM {title} / {final_note}"


def model(*, minimise_option: bool) -> CheckedModel[ToyConfig, State, str]:
    return CheckedModel(
        command="toy check",
        explorable=explorable,
        symmetry_over=" over counters",
        numbered_trace=numbered,
        sequence_diagram=diagram,
        minimise_option=minimise_option,
    )


def options(**given: Any) -> argparse.Namespace:
    chosen: dict[str, Any] = {
        "simulate": False,
        "workers": 1,
        "symmetry": False,
        "max_states": 0,
        "quiet": True,
        "strategy": "uniform",
        "seed": 0,
        "depth": 40,
        "walks": 50,
        "seconds": None,
    }
    return argparse.Namespace(**{**chosen, **given})


def test_the_breadth_first_search_prints_its_figures_and_the_violation() -> None:
    out = io.StringIO()
    code = run_model_check(model(minimise_option=False), ToyConfig(), options(symmetry=True), out)
    text = out.getvalue()
    assert code == EXIT_VIOLATION
    assert "Breadth-first search (with symmetry reduction over counters)." in text
    assert "Invariant violated: NotBothAtTop" in text
    assert "Trace (6 steps, 7 states):" in text
    (trace,) = [line for line in text.splitlines() if line.startswith("TRACE ")]
    assert sorted(trace.split()[1:]) == ["incA"] * 3 + ["incB"] * 3
    assert "DIAGRAM NotBothAtTop (two counters to 3) / VIOLATED: NotBothAtTop" in text


def test_a_search_stopped_by_the_state_limit_decides_nothing() -> None:
    out = io.StringIO()
    code = run_model_check(model(minimise_option=False), ToyConfig(), options(max_states=5), out)
    assert code == EXIT_UNDECIDED
    assert "Not exhaustive" in out.getvalue()


def test_the_simulation_minimises_only_where_the_command_has_the_option() -> None:
    out = io.StringIO()
    wanted = options(simulate=True, minimise=True)
    code = run_model_check(model(minimise_option=True), ToyConfig(), wanted, out)
    text = out.getvalue()
    assert code == EXIT_VIOLATION
    assert "Random simulation (uniform): seed 0, depth 40, walks 50, budget 300 s." in text
    assert "Minimised from" in text and "to 6 steps." in text
    assert "Trace (6 steps, 7 states):" in text
    out = io.StringIO()
    without = options(simulate=True)  # a command without --minimise has no such option
    assert run_model_check(model(minimise_option=False), ToyConfig(), without, out) == 1
    assert "Minimised" not in out.getvalue()


def test_a_simulation_on_several_workers_is_refused() -> None:
    out = io.StringIO()
    wanted = options(simulate=True, workers=2)
    assert run_model_check(model(minimise_option=False), ToyConfig(), wanted, out) == 2
    assert out.getvalue() == ""


def test_a_clean_search_exits_clean() -> None:
    out = io.StringIO()
    clean = options(simulate=True, depth=3)  # 2 steps: the counters cannot both reach 3
    assert run_model_check(model(minimise_option=False), ToyConfig(), clean, out) == EXIT_OK
    assert "No invariant violated in the walks run." in out.getvalue()
