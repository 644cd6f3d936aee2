"""``bkconform zab model check`` as a user sees it: figures, traces, exit codes, bad input."""

from __future__ import annotations

import pytest

from conformance.cli import main

SMALL = ["zab", "model", "check", "--max-timeouts", "0", "--max-epoch", "2", "--quiet"]


def test_exhaustive_check_prints_distinct_states_and_depth(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(SMALL)
    out = capsys.readouterr().out
    assert code == 0
    assert "21871 distinct states found" in out and "depth 32" in out
    assert "No invariant is violated." in out


def test_symmetry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL, "--symmetry"]) == 0
    assert "3656 distinct states found" in capsys.readouterr().out


@pytest.mark.parametrize("issue", ["1", "2", "3"])
def test_each_naive_reading_prints_trace_and_diagram(
    issue: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*SMALL, "--naive", issue])
    out = capsys.readouterr().out
    assert code == 1
    assert f"Naive reading {issue}: " in out
    assert "Invariant violated: ShouldNotBeTriggered" in out
    assert "  1. UpdateLeader(s" in out
    assert "participant s1" in out and "participant s3" in out
    assert "note over s1,s3: VIOLATED: ShouldNotBeTriggered" in out


def test_simulation_finds_an_issue_and_names_the_walk(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["zab", "model", "check", "--naive", "2", "--simulate", "--seconds", "30"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Random simulation (uniform): seed 0, depth 100" in out
    assert "Found by walk" in out and "walk seed" in out


def test_state_limit_is_undecided(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL, "--max-states", "1000"]) == 2
    assert "Not exhaustive: state limit 1000 reached" in capsys.readouterr().out


def test_bad_configuration_is_undecided(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zab", "model", "check", "--max-epoch", "11"]) == 2
    assert "bad configuration" in capsys.readouterr().err


def test_unknown_naive_reading_is_a_usage_error() -> None:
    with pytest.raises(SystemExit):
        main(["zab", "model", "check", "--naive", "4"])


def test_zab_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["zab", "--help"])
    assert stopped.value.code == 0
    assert "{run,scenarios,bug,search,model}" in capsys.readouterr().out


def test_two_workers_give_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL, "--symmetry", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "with symmetry reduction over servers, 2 worker processes" in out
    assert "3656 distinct states found" in out and "depth 32" in out


def test_workers_with_a_simulation_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*SMALL, "--simulate", "--workers", "2"]) == 2
    assert "zab model check: --workers is for the breadth-first search" in capsys.readouterr().err
