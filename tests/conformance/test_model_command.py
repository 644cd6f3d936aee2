"""``bkconform model check`` as a user sees it: output, exit codes, bad input."""

from __future__ import annotations

import pytest

from conformance.cli import main


def test_exhaustive_check_prints_tlc_style_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "model",
            "check",
            "--bookies",
            "3",
            "--clients",
            "1",
            "--wq",
            "2",
            "--aq",
            "1",
            "--send-limit",
            "2",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "21147 distinct states" in out and "depth 19" in out
    assert "No invariant is violated." in out


def test_violation_prints_trace_and_sequence_diagram(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["model", "check", "--aq", "2", "--no-recovery-read-fence", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Invariant violated: NoDivergenceBetweenClientAndMetaData" in out
    assert "  1. ClientCreatesLedger(c1)" in out
    assert "participant w1" in out and "participant zk" in out
    assert "--x" in out  # a lost message, drawn as in the seeds
    assert "note over w1,zk: VIOLATED: NoDivergenceBetweenClientAndMetaData" in out


def test_state_limit_is_undecided(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["model", "check", "--max-states", "1000", "--quiet"])
    assert code == 2
    assert "Not exhaustive: state limit 1000 reached" in capsys.readouterr().out


def test_simulation_finds_seed_001_and_names_the_walk(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "model",
            "check",
            "--aq",
            "2",
            "--crash",
            "open,recovery",
            "--no-limbo",
            "--simulate",
            "--seconds",
            "60",
            "--seed",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "Found by walk" in out and "rerun with --seed 1" in out


@pytest.mark.slow
def test_simulation_finds_defect_1_where_exhaustive_search_is_out_of_reach(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Bookies=3, WQ=3, AQ=2: TLC needs 2.2 M distinct states (with symmetry) to reach this.
    argv = ["model", "check", "--bookies", "3", "--wq", "3", "--aq", "2"]
    code = main(
        [*argv, "--no-recovery-read-fence", "--simulate", "--seed", "1", "--seconds", "300"]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    assert "Invariant violated: NoDivergenceBetweenClientAndMetaData" in out
    # Deterministic for a seed (10551 since BookieLeavesLimbo joined the swarm's action kinds).
    assert "Found by walk 10551 (rerun with --seed 1)" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--wq", "1", "--aq", "2"], "WriteQuorum >= AckQuorum"),
        (["--crash", "sometimes"], "unknown: sometimes"),
        (["--ensemble-size", "5"], "exceeds the number of bookies"),
    ],
)
def test_bad_configuration_is_a_clear_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["model", "check", *argv]) == 2
    assert message in capsys.readouterr().err


SECOND = ["--bookies", "3", "--clients", "1", "--wq", "2", "--aq", "1", "--send-limit", "2"]


def test_two_workers_give_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "check", *SECOND, "--workers", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "no symmetry reduction, 2 worker processes" in out
    assert "21147 distinct states" in out and "depth 19" in out


def test_workers_with_a_simulation_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "check", *SECOND, "--simulate", "--workers", "2"]) == 2
    assert "--workers is for the breadth-first search" in capsys.readouterr().err


def test_workers_below_one_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["model", "check", *SECOND, "--workers", "0"])
    assert stopped.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err
