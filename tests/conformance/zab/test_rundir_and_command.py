"""The run directory and the command's report, from histories built by hand (no cluster)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.commands.zab import list_scenarios, parse_faults, report
from conformance.live.faults import FaultEvent
from conformance.rundir import new_run_dir
from conformance.verdict import Verdict
from conformance.zab.rundir import write_run
from conformance.zab.runner import RunOutcome, run_verdict, shortfalls
from model.zab.checkers import check
from model.zab.history import Change, ClientOp, History, LeaderSample, ServerLog, Txn

E1 = 1 << 32


def outcome(*, lose_a_write: bool = False, empty: bool = False) -> RunOutcome:
    txns = (Txn(E1 | 1, "d1", "create2", 9, (Change("create", "/zab/k0", b"w0", 0),)),)
    ops: tuple[ClientOp, ...] = (
        ClientOp(0, 0, "create", "/zab/k0", "ok", 1.0, 1.1, 9, "w0", b"w0", zxid=E1 | 1),
        ClientOp(1, 0, "read", "/zab/k0", "ok", 1.2, 1.3, 9, value=b"w0", mzxid=E1 | 1),
    )
    if lose_a_write:
        ops = (*ops, ClientOp(2, 1, "set", "/zab/k0", "ok", 1.4, 1.5, 8, "w2", b"w2"))
    servers = tuple(ServerLog(f"zk{i}", () if empty else txns) for i in (1, 2, 3))
    history = History(servers, (LeaderSample(1.0, "zk1", E1),), () if empty else ops)
    events = [FaultEvent(1.25, "kill follower", "kill", "zk2")]
    report = check(history)
    verdict = Verdict.of_validity(report.valid)
    return RunOutcome(history, report, verdict, events, {"workload_s": 1.0}, zookeeper="test")


def test_run_directory_holds_results_and_history(tmp_path: Path) -> None:
    run_dir = new_run_dir(tmp_path, "zab")
    assert run_dir.name.endswith("-zab")
    assert new_run_dir(tmp_path, "zab") != run_dir  # same second: a suffix keeps both
    write_run(run_dir, outcome(), {"seed": 3, "servers": 3})
    results = json.loads((run_dir / "results.json").read_text())
    assert results["state"] == "finished"
    assert results["verdict"] == "clean" and results["exit_code"] == 0
    assert results["valid"] is True and results["seed"] == 3
    assert results["history"]["client_ops"] == 2
    assert set(results["checkers"]) >= {"Leadership", "AcknowledgedWritesDurable"}
    rows = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    types = [row["type"] for row in rows]
    assert types[:6] == ["invoke", "leader", "ok", "invoke", "fault", "ok"]
    assert types.count("txn") == 3
    assert rows[2]["zxid"] == "0x100000001"


@pytest.mark.parametrize(
    ("case", "code", "verdict"),
    [({}, 0, "clean"), ({"lose_a_write": True}, 1, "violation"), ({"empty": True}, 2, "undecided")],
)
def test_report_exit_codes(case: dict[str, bool], code: int, verdict: str) -> None:
    out = io.StringIO()
    assert report(outcome(**case), Path("runs/x"), out) == code
    text = out.getvalue()
    assert f"Verdict: {verdict}" in text
    assert "History: " in text and "client ops" in text


def test_faults_option() -> None:
    assert parse_faults("kill,pause") == ("kill", "pause")
    assert parse_faults("none") == ()
    with pytest.raises(ValueError, match="unknown"):
        parse_faults("kill,flood")


@pytest.mark.parametrize(
    "argv",
    [
        ["zab", "run", "--faults", "flood"],
        ["zab", "run", "--servers", "4"],
        ["zab", "run", "--ops", "0"],
        ["zab", "run", "--quorum-proxy", "--faults", "kill,partition"],
        ["zab", "run", "--quorum-proxy", "--scenario", "rejoin-after-partition"],
    ],
)
def test_bad_options_cannot_decide(argv: list[str], tmp_path: Path) -> None:
    assert main([*argv, "--runs-dir", str(tmp_path)]) == 2
    assert list(tmp_path.iterdir()) == []


def test_scenarios_are_listed() -> None:
    out = io.StringIO()
    assert list_scenarios(None, out) == 0  # type: ignore[arg-type]
    text = out.getvalue()
    for name in ("join-during-broadcast", "commit-before-entry", "commit-ld-zxid"):
        assert name in text


def test_harness_errors_turn_a_clean_verdict_undecided_but_keep_findings() -> None:
    clean = outcome().report
    assert run_verdict(clean, []) is Verdict.CLEAN
    assert run_verdict(clean, ["client crashed: KeyError"]) is Verdict.UNDECIDED
    finding = outcome(lose_a_write=True).report
    assert run_verdict(finding, ["client crashed: KeyError"]) is Verdict.VIOLATION
    nothing = outcome(empty=True).report
    assert run_verdict(nothing, []) is Verdict.UNDECIDED


def test_skipped_faults_and_non_convergence_make_a_clean_run_undecided() -> None:
    clean = outcome().report
    skipped = shortfalls([], [], ["partition: network namespaces not permitted here: EPERM"])
    assert skipped == [
        "requested fault not injected: partition: network namespaces not permitted here: EPERM"
    ]
    assert run_verdict(clean, skipped) is Verdict.UNDECIDED
    stuck = shortfalls(["servers did not converge within 60s: zk1=down"], [], [])
    assert run_verdict(clean, stuck) is Verdict.UNDECIDED
    healing = shortfalls([], ["resume zk1 while healing: gone"], [])
    assert run_verdict(clean, healing) is Verdict.UNDECIDED
    assert shortfalls([], [], []) == []
