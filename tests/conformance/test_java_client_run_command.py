"""``bkconform run --client java`` and the replay of its findings: refusals (fast), a search
on a stand-in session (fast: the command's run directory and verdicts), and the real search
against real BookKeeper 4.11.1 and the default version (cluster, slow)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.installations.errors import ZooKeeperNotFound
from adapters.installations.system import SystemUnderTest
from adapters.netproxy import BookieProxy, ProxyGroup
from conformance.cli import main
from conformance.commands import java_client_run as command
from conformance.commands.java_client_scenario import CannotRun
from conformance.javaclient import roles, run
from conformance.javaclient.delivery_order import delivery_order
from conformance.javaclient.failover_role import FailoverRole
from conformance.javaclient.recording import load_record
from conformance.javaclient.recovery_role import RecoveryRole
from conformance.javaclient.role import Arrangement
from conformance.javaclient.story import RecoveryRecord, judge
from conformance.javaclient.writer_plans import WriterShape
from conformance.javaclient.writer_role import FaultSet
from conformance.rundir import read_results
from tests.bookkeeper_fixtures import installed_home
from tests.conformance.javaclient.recorded import defect1_record

RUN = ["run", "--client", "java"]
#: The stand-in runs: no model guidance (its explorer would run 30 s in a process of its own).
STAND_IN = [*RUN, "--no-explore"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--target", "model"], "runs on --target local only"),
        (["--target", "local", "--role", "both", "--wq", "2", "--aq", "3"], "E >= WQ >= AQ"),
        (["--target", "local", "--role", "writer", "--wq", "2", "--aq", "3"], "E >= WQ >= AQ"),
        (["--target", "local", "--role", "writer", "--no-limbo"], "takes no model switches"),
        (["--target", "local", "--ensemble", "3", "--wq", "2"], "runs E=WQ=3, AQ=2"),
        (["--target", "local", "--no-recovery-read-fence"], "takes no model switches"),
        (["--target", "local", "--bookie-kind", "reference"], "--bookie-kind reference has none"),
    ],
)
def test_what_the_search_cannot_do_is_refused_with_exit_2(
    extra: list[str], says: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    assert main([*RUN, *extra, "--runs-dir", str(runs)]) == 2
    assert says in capsys.readouterr().err
    assert not runs.exists()


def test_the_writer_role_needs_a_client_that_resolves_bookie_ids(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = tmp_path / "bk"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "org.apache.bookkeeper-bookkeeper-server-4.11.1.jar").write_bytes(b"")
    (home / "bin").mkdir()
    (home / "bin" / "bookkeeper").write_text("#!/bin/sh\n")
    (home / "bin" / "bookkeeper").chmod(0o755)
    runs = tmp_path / "runs"
    argv = [*RUN, "--target", "local", "--role", "writer", "--bookkeeper-home", str(home)]
    assert main([*argv, "--runs-dir", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "(BookKeeper >= 4.12.0)" in err and "--role recovery" in err
    assert not runs.exists()


def _args(**given: Any) -> argparse.Namespace:
    defaults = {"role": "recovery", "ensemble_size": None, "wq": 3, "aq": 2, "bookies": 3}
    return argparse.Namespace(**{**defaults, "clients": 2, "java_faults": None, **given})


def test_the_role_is_built_by_its_class_from_the_command_s_settings() -> None:
    both = command.role_from_args(_args(role="both", ensemble_size=4, wq=2, java_faults="requests"))
    assert isinstance(both, FailoverRole) and both.shape == WriterShape(4, 2, 2)
    assert both.faults is FaultSet.REQUESTS
    assert command.role_settings_from_args(_args(role="both", wq=2, aq=1)) == {
        "role": "both",
        "shape": "2/2/1",
        "bookies": 3,
        "clients": 2,
    }
    assert isinstance(command.role_from_args(_args()), RecoveryRole)
    with pytest.raises(CannotRun, match=r"--role recovery: .*requests only"):
        command.role_from_args(_args(java_faults="extended"))
    with pytest.raises(CannotRun, match="--role reader: no role 'reader'"):
        command.role_from_args(_args(role="reader"))


def test_role_needs_the_java_client(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--role", "writer"]) == 2
    assert "--role needs --client java" in capsys.readouterr().err


class _Session:
    """Stands in for a ClientSession: its proxy group only (the role below starts nothing)."""

    def __init__(self, options: Any) -> None:
        self.group = ProxyGroup(call_timeout=5.0)
        self.proxies: dict[str, BookieProxy] = {}

    def __enter__(self) -> _Session:
        self.group.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.group.__exit__(None, None, None)

    def describe(self) -> dict[str, str]:
        return {"routing": "stand-in"}

    coverage = None

    def measure_coverage(self) -> None:
        return None

    def ledger_writes(self, ledger_id: int) -> None:
        return None  # no ZooKeeper proxy in this layout


class _RecordedRecovery(RecoveryRole):
    """Every plan gets the recorded 4.11-like (or 4.14+-like) run. Checks the command's
    plumbing, not the Java client."""

    reads_fence = False

    def perform(self, session: Any, plan: Any, arrange: Arrangement) -> RecoveryRecord:
        with arrange(11, {}):
            pass
        return defect1_record(reads_fence=_RecordedRecovery.reads_fence)


def _system(home: Path, version: str, zookeeper: object = None, **_: object) -> SystemUnderTest:
    return SystemUnderTest("stand-in bookies", f"stand-in client {version}", "stand-in")


def _no_zookeeper(*args: object, **kwargs: object) -> object:
    raise ZooKeeperNotFound("no ZooKeeper in a stand-in run")


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "bk"
    monkeypatch.setattr(run, "ClientSession", _Session)
    monkeypatch.setitem(roles.ROLE_CLASSES, "recovery", _RecordedRecovery)
    for module in (command, run):
        monkeypatch.setattr(module, "distribution_version", lambda home: "4.11.1")
        monkeypatch.setattr(module, "java_client_system", _system)
    monkeypatch.setattr(command, "check_run_arguments", lambda args: home)
    monkeypatch.setattr(run, "locate_zookeeper", _no_zookeeper)  # nothing installed
    yield tmp_path / "runs"


def test_a_finding_is_written_as_a_replayable_run_directory(
    stand_in: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _RecordedRecovery.reads_fence = False
    argv = [*STAND_IN, "--target", "local", "--max-examples", "3", "--runs-dir", str(stand_in)]
    assert main([*argv, "--quiet"]) == 1
    (run_dir,) = stand_in.iterdir()
    results = read_results(run_dir)
    assert results["verdict"] == "violation" and results["target"]["client"] == "java"
    search = results["java_search"]
    assert search["first_finding_example"] == 1 and search["stopped"] == "finding"
    assert search["seconds_to_first_finding_from_start"] >= search["seconds_to_first_finding"]
    for name in ("plan.json", "record.json", "frames.txt", "sequence.txt", "examples.jsonl"):
        assert (run_dir / name).exists(), name
    assert judge(load_record(run_dir / "record.json")).outcome.verdict == "violation"
    assert json.loads((run_dir / "plan.json").read_text()) == results["finding_plan"]
    out = capsys.readouterr().out
    assert f"Replay: bkconform replay {run_dir}" in out


def test_a_clean_search_exits_0_and_nothing_run_is_undecided(stand_in: Path) -> None:
    _RecordedRecovery.reads_fence = True
    argv = [*STAND_IN, "--target", "local", "--runs-dir", str(stand_in), "--quiet"]
    assert main([*argv, "--max-examples", "3"]) == 0
    assert main([*argv, "--seconds", "0"]) == 2
    verdicts = sorted(read_results(d)["verdict"] for d in stand_in.iterdir())
    assert verdicts == ["clean", "undecided"]


def test_replay_refuses_a_run_with_no_finding(
    stand_in: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _RecordedRecovery.reads_fence = True
    assert (
        main([*STAND_IN, "--target", "local", "--max-examples", "1", "--runs-dir", str(stand_in)])
        == 0
    )
    (run_dir,) = stand_in.iterdir()
    assert main(["replay", str(run_dir), "--runs-dir", str(stand_in)]) == 2
    assert "holds no finding to replay" in capsys.readouterr().err


@pytest.mark.cluster
@pytest.mark.slow
def test_the_search_finds_defect_1_in_4_11_1_and_replays_it(tmp_path: Path) -> None:
    """From scratch (no example database, no built-in plan): Defect 1 in the first example,
    shrunk, replayed. The default version's clean search runs in the version matrix's test
    (tests/conformance/distributed/test_java_matrix.py)."""
    runs = tmp_path / "runs"
    home = installed_home("4.11.1")
    argv = [*RUN, "--target", "local", "--bookkeeper-home", str(home)]
    code = main([*argv, "--max-examples", "3", "--runs-dir", str(runs), "--quiet"])
    (run_dir,) = runs.iterdir()
    results = read_results(run_dir)
    assert "4.11.1" in results["system_under_test"]["client"]
    assert code == 1, results
    assert results["violations"] == ["NoDivergenceBetweenClientAndMetaData"]
    assert results["java_search"]["first_finding_example"] == 1
    replay = ["replay", str(run_dir), "--runs-dir", str(tmp_path / "replays")]
    assert main(replay) == 1


def test_a_finding_records_its_delivery_order_and_its_replay_enforces_it(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 49: the order the answers reached the client in goes into the finding's plan, and
    # the replay gives it to the controller (which holds frames to keep it).
    _RecordedRecovery.reads_fence = False
    argv = [*STAND_IN, "--target", "local", "--max-examples", "3", "--runs-dir", str(stand_in)]
    assert main([*argv, "--quiet"]) == 1
    (run_dir,) = stand_in.iterdir()
    recorded = delivery_order(defect1_record(reads_fence=False))
    assert recorded  # the fence reads' and recovery reads' answers
    finding = read_results(run_dir)["finding_plan"]
    assert finding["schedule"][-1] == {"order": [key.to_json() for key in recorded]}
    assert json.loads((run_dir / "plan.json").read_text()) == finding
    performed: list[Any] = []
    perform = _RecordedRecovery.perform

    def recording(self: Any, session: Any, plan: Any, arrange: Arrangement) -> RecoveryRecord:
        performed.append(plan)
        return perform(self, session, plan, arrange)

    monkeypatch.setattr(_RecordedRecovery, "perform", recording)
    monkeypatch.setattr(command, "bookkeeper_home", lambda args: stand_in.parent / "bk")
    replays = stand_in.parent / "replays"
    assert main(["replay", str(run_dir), "--runs-dir", str(replays)]) == 1
    (plan,) = performed
    assert plan.schedule.order == recorded
    assert "the recorded delivery order of" in capsys.readouterr().out


@pytest.mark.cluster
@pytest.mark.slow
def test_searches_side_by_side_find_3005_and_stop_together(
    tmp_path: Path, bookkeeper_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two searches at once on the default release (E=2 WQ=1 AQ=1, where the explorer's first
    plan is #3005's window): a violation, the finder's run directory replays, the other search
    stopped by the finding (or found it too), every job's cluster stopped (the session's
    process check)."""
    runs = tmp_path / "runs"
    argv = [*RUN, "--role", "writer", "--target", "local", "--bookkeeper-home"]
    argv += [str(bookkeeper_home), "--ensemble", "2", "--wq", "1", "--aq", "1", "--seed", "7"]
    argv += ["--side-by-side", "2", "--seconds", "120", "--runs-dir", str(runs), "--quiet"]
    assert main(argv) == 1
    (run_dir,) = runs.iterdir()
    summary = json.loads((run_dir / "side_by_side.json").read_text())
    assert summary["verdict"] == "violation", summary
    jobs = summary["jobs"]
    assert [job["seed"] for job in jobs] == [7, 8]
    assert {job["stopped"] for job in jobs} <= {"finding", "halted"}
    finder = next(job for job in jobs if job["verdict"] == "violation")
    assert read_results(Path(finder["run_dir"]))["finding_plan"]
    out = capsys.readouterr().out
    assert f"replay: bkconform replay {finder['run_dir']}" in out
    replay = ["replay", finder["run_dir"], "--runs-dir", str(tmp_path / "replays")]
    assert main(replay) == 1
