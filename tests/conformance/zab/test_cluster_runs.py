"""Zab runs against a real ZooKeeper ensemble: the command end to end, Hypothesis-drawn
programs, seed 003's scenarios and a 5-node ensemble. Short runs, so CI stays quick."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from adapters.cluster.network_namespaces import partitions_supported
from conformance.cli import main
from conformance.verdict import Verdict
from conformance.zab.faults import SCENARIOS
from conformance.zab.program import Program, programs, random_program
from conformance.zab.runner import RunSettings, run_program
from model.zab.checkers import check

pytestmark = pytest.mark.cluster


def run_cli(
    argv: list[str], runs_dir: Path, capsys: pytest.CaptureFixture[str], *, relative: bool = False
) -> tuple[int, dict[str, object], str]:
    where = runs_dir.name if relative else str(runs_dir)
    code = main(["zab", "run", *argv, "--runs-dir", where])
    output = capsys.readouterr().out
    (run_dir,) = runs_dir.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert (run_dir / "history.jsonl").stat().st_size > 0
    return code, results, output


def test_command_runs_with_kill_and_pause(
    runs_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A relative --runs-dir, as typed at a shell (servers run in their own directories).
    monkeypatch.chdir(runs_dir.parent)
    code, results, output = run_cli(
        ["--servers", "3", "--faults", "kill,pause", "--ops", "240", "--rate", "80", "--seed", "5"],
        runs_dir,
        capsys,
        relative=True,
    )
    assert code == 0, output
    assert results["verdict"] == "clean"
    history = results["history"]
    assert isinstance(history, dict)
    assert history["client_ops"] == 240 and history["ok"] > 0
    # Faults fire once so many operations have completed (FaultStep.after_ops), not at a time:
    # a slower machine fires the same steps, and the checkers judge order, not duration.
    assert history["leader_samples"] > 0 and history["fault_events"] > 0
    assert all(n > 0 for n in history["server_txns"].values())
    assert "History: 240 client ops" in output and "Verdict: clean" in output


def test_a_run_through_the_quorum_proxy_validates_its_traffic_against_the_spec(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, results, output = run_cli(
        ["--faults", "kill", "--ops", "200", "--rate", "80", "--seed", "3", "--quorum-proxy"],
        runs_dir,
        capsys,
    )
    assert code == 0, output
    trace = results["quorum_trace"]
    assert isinstance(trace, dict) and trace["verdict"] == "clean", trace
    # Every learner synced at least once, and the kills made some sync again.
    assert trace["syncs"] >= 2 and trace["quorum_checked"] > 0 and trace["commits"] > 0
    assert "quorum trace: clean" in output


def test_partitions_cut_and_heal_or_are_skipped_with_the_reason(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, results, output = run_cli(
        ["--faults", "partition", "--ops", "300", "--rate", "40", "--seed", "1"],
        runs_dir,
        capsys,
    )
    (run_dir,) = runs_dir.iterdir()
    history_text = (run_dir / "history.jsonl").read_text()
    reason = partitions_supported()
    if reason is None:
        assert code == 0, output
        assert results["verdict"] == "clean"
        assert '"verb": "isolate"' in history_text and '"verb": "reconnect"' in history_text
        assert "Skipped" not in output
    else:
        # The partitions asked for were not injected: the run did not test what was asked,
        # so it is undecided (exit 2), never clean.
        assert code == 2, output
        assert results["verdict"] == "undecided"
        assert f"Skipped partition: network namespaces not permitted here: {reason}" in output
    assert not [line for line in _netns_list() if line.startswith(f"bkc{os.getpid()}-")]


def test_partitions_asked_for_but_not_injected_make_the_run_undecided(
    runs_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wherever namespaces work, make them not: the run must not end clean.
    monkeypatch.setattr(
        "conformance.zab.runner.partitions_supported", lambda: "EPERM (made so by the test)"
    )
    code, results, output = run_cli(
        ["--faults", "partition", "--ops", "60", "--rate", "60", "--seed", "2"], runs_dir, capsys
    )
    assert code == 2, output
    assert results["verdict"] == "undecided"
    assert "Skipped partition: network namespaces not permitted here: EPERM" in output
    assert "requested fault not injected: partition" in output


def _netns_list() -> list[str]:
    try:
        listed = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, timeout=10, check=False
        )
    except FileNotFoundError:
        return []
    return listed.stdout.splitlines()


@settings(
    max_examples=2,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=programs(max_ops=40, clients=3))
def test_drawn_programs_hold_on_a_real_ensemble(program: Program, runs_dir: Path) -> None:
    work_dir = runs_dir / f"example-{abs(hash(program)) % 10**8}"
    outcome = run_program(program, work_dir, RunSettings(servers=3, rate=40))
    assert not outcome.verdict.finding, outcome.report.to_json()
    assert len(outcome.history.ops) == len(program.ops)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_seed_003_scenarios(
    scenario: str, runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, results, output = run_cli(
        ["--scenario", scenario, "--ops", "240", "--rate", "60", "--seed", "3"],
        runs_dir,
        capsys,
    )
    assert code == 0, output
    config = results["config"]
    assert isinstance(config, dict) and len(config["fault_steps"]) == 3
    # Steps fire as the workload progresses; a step still running when the workload ends
    # keeps later ones from firing, so only the first is certain.
    (run_dir,) = runs_dir.iterdir()
    first_verb = SCENARIOS[scenario][1][0][0]
    assert f'"step": "{scenario} #1", "time"' in (run_dir / "history.jsonl").read_text()
    assert f'"verb": "{first_verb}"' in (run_dir / "history.jsonl").read_text()


def test_five_servers(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, results, output = run_cli(
        ["--servers", "5", "--faults", "kill", "--ops", "160", "--rate", "80"],
        runs_dir,
        capsys,
    )
    assert code == 0, output
    history = results["history"]
    assert isinstance(history, dict) and len(history["server_txns"]) == 5


def test_real_history_mutated_is_flagged(runs_dir: Path) -> None:
    """The checkers are not vacuous on real data: a clean real history, with one acknowledged
    write removed from every log, or two commits swapped on one server, is flagged."""
    program = random_program(11, ops=80, clients=3)
    outcome = run_program(program, runs_dir / "real", RunSettings(servers=3, rate=0))
    history = outcome.history
    assert outcome.verdict is Verdict.CLEAN, outcome.report.to_json()
    acked = next(op for op in history.ops if op.outcome == "ok" and op.kind == "create")
    lost = dataclasses.replace(
        history,
        servers=tuple(
            dataclasses.replace(s, txns=tuple(t for t in s.txns if t.zxid != acked.zxid))
            for s in history.servers
        ),
    )
    assert {r.name for r in check(lost).results if r.valid is False} >= {
        "AcknowledgedWritesDurable"
    }
    first = history.servers[0]
    data_txns = [i for i, t in enumerate(first.txns) if t.changes]
    i, j = data_txns[0], data_txns[1]
    swapped = list(first.txns)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    reordered = dataclasses.replace(
        history,
        servers=(dataclasses.replace(first, txns=tuple(swapped)), *history.servers[1:]),
    )
    assert "TotalOrder" in {r.name for r in check(reordered).results if r.valid is False}
