"""A qualification in this process (``--master none``): results, resume, report, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.distributed.plan import make_plan
from conformance.distributed.qualification import PlanMismatch, run_qualification
from conformance.distributed.shard import ExecutionOptions, parse_faults
from conformance.distributed.store import read_dataset
from conformance.search.runner import SearchSettings
from conformance.targets.spec import TargetSpec

QUICK = SearchSettings(max_examples=3, max_steps=15, time_budget=None, explore=False)


def test_an_in_process_run_writes_results_and_resumes_without_rerunning(tmp_path: Path) -> None:
    plan = make_plan(master_seed=2, shards=3, budget=QUICK)
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@1"))
    seen: list[tuple[int, int, int]] = []
    first = run_qualification(
        plan,
        tmp_path,
        master="none",
        options=options,
        progress=lambda row, done, total: seen.append((row["shard"], done, total)),
    )
    assert seen == [(0, 1, 3), (1, 2, 3), (2, 3, 3)]
    assert first.ran == 3
    assert [r["status"] for r in first.shards] == ["done", "error", "done"]
    assert first.verdict == "undecided" and first.exit_code == 2  # shard 1 decided nothing
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["shard_errors"] == [1] and results["verdict"] == "undecided"
    report = (tmp_path / "report.html").read_text()
    assert "Shards in error (1)" in report and "InjectedCrash" in report
    assert "Steps and restarts per configuration" in report
    done = [r for r in first.shards if r["status"] == "done"]
    assert all(isinstance(r["restarts"], int) and r["restart_seconds"] >= 0 for r in done)
    steps_before = read_dataset(tmp_path, "steps").num_rows
    shard_files = {p: p.stat().st_mtime_ns for p in (tmp_path / "shards").iterdir()}

    again = run_qualification(plan, tmp_path, master="none", options=options)
    assert again.ran == 0
    assert again.aggregates == first.aggregates
    assert read_dataset(tmp_path, "steps").num_rows == steps_before
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "shards").iterdir()} == shard_files


def test_a_half_done_run_resumes_the_missing_shards_only(tmp_path: Path) -> None:
    plan = make_plan(master_seed=2, shards=3, budget=QUICK)
    options = ExecutionOptions(run_dir=str(tmp_path))
    run_qualification(plan, tmp_path, master="none", options=options)
    (tmp_path / "shards" / "part-00001.parquet").unlink()  # as if interrupted before its row
    ran: list[int] = []
    result = run_qualification(
        plan,
        tmp_path,
        master="none",
        options=options,
        progress=lambda r, d, t: ran.append(r["shard"]),
    )
    assert ran == [1] and result.ran == 1
    assert sorted(r["shard"] for r in result.shards) == [0, 1, 2]


def test_resuming_with_another_plan_is_refused(tmp_path: Path) -> None:
    options = ExecutionOptions(run_dir=str(tmp_path))
    run_qualification(
        make_plan(master_seed=2, shards=1, budget=QUICK), tmp_path, master="none", options=options
    )
    with pytest.raises(PlanMismatch, match="different plan"):
        run_qualification(
            make_plan(master_seed=3, shards=1, budget=QUICK),
            tmp_path,
            master="none",
            options=options,
        )


def test_the_command_runs_in_process_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    arguments = [
        "qualify", "--master", "none", "--shards", "2", "--configs", "fenced-recovery,no-limbo",
        "--max-examples", "3", "--steps", "15", "--seconds", "1", "--no-explore",
        "--run-dir", str(run_dir),
    ]  # fmt: skip
    assert main(arguments) == 0
    out = capsys.readouterr().out
    assert "[2/2] shard 1 no-limbo: clean" in out
    assert "Verdict: clean" in out
    html = (run_dir / "report.html").read_text()
    assert "Verdict per configuration" in html and "data:image/png;base64," in html
    assert main(arguments) == 0
    assert "0 shards run" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--configs", "nonsense"], "unknown configuration"),
        (["--shards", "0"], "at least one shard"),
        (["--inject-fault", "boom@1"], "KIND@SHARD"),
        (["--target", "external"], "needs --zk"),
    ],
)
def test_the_command_refuses_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    code = main(["qualify", "--master", "none", "--runs-dir", str(tmp_path), *arguments])
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.cluster
def test_shards_share_an_external_cluster_each_with_ledgers_of_its_own(tmp_path: Path) -> None:
    from adapters.cluster import LocalCluster, LocalClusterOptions

    plan = make_plan(
        master_seed=0,
        shards=2,
        configurations=("fenced-recovery",),
        target="external",
        # Clean needs one example: the budget is read before each example only, so the first
        # runs to its end however slow the machine (3 s caps the rest).
        budget=SearchSettings(max_examples=3, max_steps=30, time_budget=3.0, explore=False),
    )
    with LocalCluster(LocalClusterOptions(bookies=3, work_dir=tmp_path / "cluster")) as cluster:
        options = ExecutionOptions(
            run_dir=str(tmp_path / "run"),
            target=TargetSpec(kind="external", zookeeper=cluster.endpoints().zookeeper_connect),
        )
        result = run_qualification(plan, tmp_path / "run", master="none", options=options)
    assert [r["status"] for r in result.shards] == ["done", "done"]
    first, second = (set(r["ledgers"]) for r in result.shards)
    assert first and second and not first & second
    assert result.verdict == "clean"
