"""``bkconform scenario defect1-java-client``: refusals without a distribution (here), and the
real run against real BookKeeper 4.11.1 and the default version (installed from Maven Central)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.javaclient import BookKeeperVersion, distribution_version
from adapters.netproxy.routing import RoutingMethod
from adapters.processes import processes_matching
from conformance.cli import main
from conformance.commands import java_client_scenario as command
from conformance.javaclient.scenario import (
    JavaScenarioOptions,
    JavaScenarioRun,
    expected_verdict,
    run_recovery,
)
from conformance.javaclient.schedule import defect1_schedule
from conformance.javaclient.session import RunUndecided
from conformance.rundir import read_history, read_results, story_steps
from tests.conformance.javaclient.recorded import defect1_record


def test_on_reference_bookies_the_command_says_why(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    assert main([*argv, "--bookie-kind", "reference"]) == 2
    err = capsys.readouterr().err
    assert "defect1-java-client drives the real BookKeeper Java client" in err
    assert "--bookie-kind reference has none" in err
    assert not runs.exists()


def test_other_targets_and_switches_are_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("BOOKKEEPER_HOME", raising=False)
    assert main(["scenario", "defect1-java-client"]) == 2
    assert "runs on --target local only" in capsys.readouterr().err
    argv = ["scenario", "defect1-java-client", "--target", "local", "--no-recovery-read-fence"]
    assert main(argv) == 2
    assert "takes no switches" in capsys.readouterr().err


def test_a_directory_that_is_no_distribution_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "lib").mkdir()
    argv = ["scenario", "defect1-java-client", "--target", "local"]
    assert main([*argv, "--bookkeeper-home", str(tmp_path)]) == 2
    assert "has no executable bin/bookkeeper" in capsys.readouterr().err
    _launcher(tmp_path)
    assert main([*argv, "--bookkeeper-home", str(tmp_path)]) == 2
    assert "no bookkeeper-server jar in lib/" in capsys.readouterr().err


def test_the_expected_verdict_follows_the_fix_release() -> None:
    assert expected_verdict(BookKeeperVersion(4, 11, 1)) == "violation"
    assert expected_verdict(BookKeeperVersion(4, 13, 0)) == "violation"
    assert expected_verdict(BookKeeperVersion(4, 14, 0)) == "clean"
    assert expected_verdict(BookKeeperVersion(4, 17, 4)) == "clean"


def test_the_other_scenarios_are_still_offered(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["scenario", "no-such-scenario"])
    err = capsys.readouterr().err
    assert "defect1-java-client" in err and "defect1-fencing" in err


def _distribution(root: Path, version: str, *, launcher: bool = True) -> Path:
    """A directory shaped like a distribution (the version is read from the jar's name only)."""
    (root / "lib").mkdir(parents=True)
    (root / "lib" / f"org.apache.bookkeeper-bookkeeper-server-{version}.jar").write_bytes(b"")
    if launcher:
        _launcher(root)
    return root


def _launcher(root: Path) -> None:
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "bin" / "bookkeeper").write_text("#!/bin/sh\n")
    (root / "bin" / "bookkeeper").chmod(0o755)


@pytest.mark.parametrize(("version", "code"), [("4.11.1", 1), ("4.17.4", 0)])
def test_the_command_reports_a_recorded_run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    version: str,
    code: int,
) -> None:
    # The live run needs a real distribution; here a recorded one stands in for it, so that
    # what the command prints and writes is checked.
    home = _distribution(tmp_path / "bk", version)
    fenced = code == 0

    def recorded_run(options: JavaScenarioOptions) -> JavaScenarioRun:
        assert options.bookkeeper_home == home
        record = defect1_record(reads_fence=fenced)
        return JavaScenarioRun(
            record,
            BookKeeperVersion.parse(version),
            RoutingMethod.PROXY_ENSEMBLE,
            tuple(defect1_schedule(record.ledger_id, 300)),
            ["127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"],
        )

    monkeypatch.setattr(command, "run_recovery", recorded_run)
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    assert main([*argv, "--bookkeeper-home", str(home)]) == code
    out = capsys.readouterr().out
    (run_dir,) = runs.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["expected_verdict"] == results["verdict"]
    assert results["target"]["bookkeeper"] == version
    system = results["system_under_test"]
    assert system["bookies"] == f"BookKeeper {version} (BOOKKEEPER_HOME, {home})"
    assert system["client"] == f"BookKeeper Java client {version}"
    assert f"System under test: {system['summary']}" in out
    assert results["recovery_reads_fence"] is fenced
    assert results["schedule"][0] == "b3: request READ_ENTRY entry -1 +FENCE_LEDGER -> Drop()"
    frames = (run_dir / "frames.txt").read_text().splitlines()
    assert frames[0] == "#1 b1 c1 request READ_ENTRY 7/-1 [FENCE_LEDGER] (forward)"
    assert f"Verdict: {results['verdict']} (as expected)" in out
    if fenced:
        assert "VIOLATION" not in out and "Sequence diagram" not in out
    else:
        assert "VIOLATION NoDivergenceBetweenClientAndMetaData" in out
        assert out.count("(a recovery read without FENCE_LEDGER)") == 3
        assert "Sequence diagram" in out and (run_dir / "sequence.svg").exists()


@pytest.mark.cluster
def test_the_real_java_client_against_real_bookies(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, java_client_home: Path
) -> None:
    """4.11.1: Defect 1, exit 1; the default version: exit 0 (``java_client_home``)."""
    # The recipe holds b2's answer past the 300 ms speculative read timeout by HOLD_MARGIN_S
    # (0.5 s, conformance/javaclient/schedule.py says why): b3's answer comes first.
    version = distribution_version(java_client_home)
    expected = expected_verdict(version)
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    code = main([*argv, "--bookkeeper", str(java_client_home)])
    out = capsys.readouterr().out
    assert code == (1 if expected == "violation" else 0), out
    (run_dir,) = runs.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["verdict"] == expected
    assert results["target"]["bookkeeper"] == str(version)
    frames = (run_dir / "frames.txt").read_text()
    assert "READ_ENTRY" in frames and "(drop)" in frames and "(hold)" in frames
    if expected == "violation":
        assert results["violations"] == ["NoDivergenceBetweenClientAndMetaData"]
        assert results["recovery_reads_fence"] is False
        assert (run_dir / "sequence.txt").exists() and "Sequence diagram" in out
    else:
        assert results["recovery_reads_fence"] is True
        assert results["writer_adds"]["e0 to b3 after the recovery"] == "EFENCED"


def test_a_run_that_cannot_start_is_undecided(tmp_path: Path) -> None:
    options = JavaScenarioOptions(bookkeeper_home=tmp_path / "nothing", log_dir=tmp_path)
    with pytest.raises(RunUndecided, match=r"DistributionError: .* no bookkeeper-server jar"):
        run_recovery(options)


@pytest.mark.cluster
def test_a_distribution_that_cannot_run_bookies_leaves_nothing_behind(tmp_path: Path) -> None:
    # Shaped like a distribution but without bin/bookkeeper: ZooKeeper starts, the bookies
    # cannot, and everything started is stopped (tests/conftest.py checks for leftovers).
    home = _distribution(tmp_path / "bk", "4.11.1", launcher=False)
    work = tmp_path / "cluster"
    options = JavaScenarioOptions(bookkeeper_home=home, log_dir=tmp_path, work_dir=work)
    with pytest.raises(RunUndecided, match=r"BookKeeperNotFound: .*no executable bin/bookkeeper"):
        run_recovery(options)
    assert processes_matching(f"{work}/") == []


def _recorded_run(version: str, *, fenced: bool) -> JavaScenarioRun:
    record = defect1_record(reads_fence=fenced)
    return JavaScenarioRun(
        record,
        BookKeeperVersion.parse(version),
        RoutingMethod.PROXY_ENSEMBLE,
        tuple(defect1_schedule(record.ledger_id, 300)),
        ["127.0.0.1:3181", "127.0.0.1:3182", "127.0.0.1:3183"],
    )


def test_the_run_directory_says_running_from_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A kill during the run (the JVM, the cluster: minutes) must leave a results.json that reads
    # as undecided: it is written before the run starts, and finalised at the end.
    home = _distribution(tmp_path / "bk", "4.11.1")
    seen: dict[str, Any] = {}

    def run_midway(options: JavaScenarioOptions) -> JavaScenarioRun:
        results = read_results(options.log_dir)
        seen.update(results)
        assert read_history(options.log_dir) == []
        return _recorded_run("4.11.1", fenced=False)

    monkeypatch.setattr(command, "run_recovery", run_midway)
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    assert main([*argv, "--bookkeeper-home", str(home)]) == 1
    assert seen["state"] == "running" and seen["verdict"] == "undecided"
    assert seen["exit_code"] == 2 and seen["started"]
    assert seen["expected_verdict"] == "violation"
    # The bookies' release and the client's (the same here), with the bookies' settings.
    started_on = {"target": "local", "bookkeeper": "4.11.1", "client_bookkeeper": "4.11.1"}
    assert started_on.items() <= seen["target"].items()
    assert seen["system_under_test"]["client"] == "BookKeeper Java client 4.11.1"
    (run_dir,) = runs.iterdir()
    results = read_results(run_dir)
    assert results["state"] == "finished" and results["verdict"] == "violation"
    assert results["started"] == seen["started"] and results["finished"]
    assert results["config"]["recovery_reads_fence"] is False  # the judged configuration
    lines = read_history(run_dir)
    assert len(lines) == results["steps"] > 0 and {line["example"] for line in lines} == {1}
    assert results["history"] == {"lines": len(lines), "examples": 1, "story": 1}
    assert story_steps(run_dir) == lines


def test_a_run_that_could_not_decide_leaves_an_undecided_run_directory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    home = _distribution(tmp_path / "bk", "4.17.4")

    def cannot_run(options: JavaScenarioOptions) -> JavaScenarioRun:
        raise RunUndecided("BookKeeperNotFound: no bookies")

    monkeypatch.setattr(command, "run_recovery", cannot_run)
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    assert main([*argv, "--bookkeeper-home", str(home)]) == 2
    assert "could not decide: BookKeeperNotFound: no bookies" in capsys.readouterr().err
    (run_dir,) = runs.iterdir()
    results = read_results(run_dir)
    assert results["state"] == "finished" and results["verdict"] == "undecided"
    assert results["exit_code"] == 2 and results["error"] == "BookKeeperNotFound: no bookies"
    assert results["expected_verdict"] == "clean" and read_history(run_dir) == []


def test_an_interrupted_run_reads_as_interrupted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    home = _distribution(tmp_path / "bk", "4.11.1")

    def interrupted(options: JavaScenarioOptions) -> JavaScenarioRun:
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "run_recovery", interrupted)
    runs = tmp_path / "runs"
    argv = ["scenario", "defect1-java-client", "--target", "local", "--runs-dir", str(runs)]
    assert main([*argv, "--bookkeeper-home", str(home)]) == 130
    (run_dir,) = runs.iterdir()
    results = read_results(run_dir)
    assert results["state"] == "interrupted" and results["verdict"] == "undecided"
    assert "interrupted" in results["error"]
