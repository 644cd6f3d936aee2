"""Every run says what it ran against: the console header of run, replay, scenario and qualify
names the system under test, and results.json, the qualification's Parquet rows and
report.html record it. The options that choose the bookies are read by one function."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from adapters.installations import bookkeeper as installs
from adapters.installations.system import MODEL_SYSTEM, BookieChoice
from conformance.cli import build_parser, main
from conformance.commands.options import (
    bookie_choice_from_args,
    target_spec_from_args,
    zookeeper_from_args,
)
from conformance.targets.base import TargetError
from conformance.targets.cluster_target import ClusterTarget
from tests.adapters.installations.fake_zookeeper import zookeeper_distribution
from tests.adapters.installations.test_system import distribution

QUICK = ["--max-examples", "2", "--steps", "10", "--seconds", "2", "--no-explore"]
MODEL_HEADER = f"System under test: {MODEL_SYSTEM.render()}"


def _only(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir() and p.name[0].isdigit()]
    return run_dir


def _recorded(run_dir: Path) -> dict[str, str]:
    system: dict[str, str] = json.loads((run_dir / "results.json").read_text())["system_under_test"]
    return system


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_run_names_the_model_in_its_header_and_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--runs-dir", str(tmp_path), "--quiet", "--fresh", *QUICK]) == 0
    assert MODEL_HEADER in capsys.readouterr().out.splitlines()
    system = _recorded(_only(tmp_path))
    assert system == {**MODEL_SYSTEM.as_dict(), "summary": MODEL_SYSTEM.render()}


def test_scenario_and_replay_name_it_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "scenario"
    assert main(["scenario", "defect1-fencing", "--runs-dir", str(runs)]) == 0
    assert MODEL_HEADER in capsys.readouterr().out.splitlines()
    assert _recorded(_only(runs))["bookies"] == "model (no bookies)"
    replays = tmp_path / "replay"
    assert main(["replay", "AA==", "--runs-dir", str(replays)]) == 0
    assert MODEL_HEADER in capsys.readouterr().out.splitlines()
    assert _recorded(_only(replays))["client"] == "model client (bkconform)"


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ([], "bookies: BookKeeper 4.17.3 (BOOKKEEPER_HOME, {home})"),
        (["--bookie-kind", "reference"], "bookies: reference bookie (test double, bkconform "),
    ],
)
def test_a_local_run_names_its_bookies_before_it_starts_them(
    options: list[str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home = distribution(tmp_path / "bk")
    monkeypatch.setenv("BOOKKEEPER_HOME", str(home))

    def unreachable(self: ClusterTarget, cfg: object) -> None:
        raise TargetError("not started in a fast test")

    monkeypatch.setattr(ClusterTarget, "open", unreachable)
    argv = ["run", "--target", "local", "--runs-dir", str(tmp_path / "runs"), "--quiet"]
    assert main([*argv, *options]) == 2
    (header,) = [line for line in capsys.readouterr().out.splitlines() if "under test" in line]
    assert header.startswith("System under test: " + expected.format(home=home))
    assert "client: model client (bkconform); zookeeper: ZooKeeper " in header


def test_one_function_turns_the_options_into_the_bookies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = distribution(tmp_path / "bk")
    monkeypatch.delenv("BOOKKEEPER_HOME", raising=False)
    monkeypatch.setattr(
        installs,
        "install",
        lambda version, **kw: installs.Installation(version, home, 1, "now"),
    )
    for command in (
        ["run", "--target", "local"],
        ["replay", "AA==", "--target", "local"],
        ["scenario", "defect1-fencing", "--target", "local"],
        ["qualify", "--target", "local"],
        ["cluster", "up"],
    ):
        assert bookie_choice_from_args(_parse(*command)) == BookieChoice.bookkeeper(home)
        reference = _parse(*command, "--bookie-kind", "reference")
        assert bookie_choice_from_args(reference) == BookieChoice.reference()
        both = _parse(*command, "--bookie-kind", "reference", "--bookkeeper-home", str(home))
        with pytest.raises(ValueError, match="takes no --bookkeeper"):
            bookie_choice_from_args(both)
    # A qualification resolves the bookies once, on the driver: the shards get the home.
    options = target_spec_from_args(_parse("qualify", "--target", "local")).resolved()
    assert (options.kind, options.bookie_kind, options.bookkeeper_home) == (
        "local",
        "bookkeeper",
        str(home),
    )
    assert options.bookie_choice() == BookieChoice.bookkeeper(home)
    reference = target_spec_from_args(
        _parse("qualify", "--target", "local", "--bookie-kind", "reference")
    ).resolved()
    assert reference.bookie_choice() == BookieChoice.reference()


def test_every_command_that_starts_zookeeper_takes_the_release_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    zookeeper = zookeeper_distribution(tmp_path / "zk", "3.8.4")
    for command in (
        ["run", "--target", "local"],
        ["replay", "AA==", "--target", "local"],
        ["scenario", "defect1-fencing", "--target", "local"],
        ["qualify", "--target", "local"],
        ["cluster", "up"],
        ["zab", "run"],
    ):
        args = _parse(*command, "--zookeeper", str(zookeeper))
        assert zookeeper_from_args(args).classpath == (
            str(zookeeper / "lib" / "zookeeper-3.8.4.jar"),
        )
        if command[0] not in ("cluster", "zab"):
            spec = target_spec_from_args(args)
            assert spec.zookeeper_install() == zookeeper_from_args(args)
    # `cluster up` reads its bookies as a local target's, which may name a ZooKeeper release
    # (it was read as the model target's, which refused --zookeeper).
    up = _parse("cluster", "up", "--zookeeper", str(zookeeper), "--bookie-kind", "reference")
    assert bookie_choice_from_args(up) == BookieChoice.reference()

    # A local run says which, before it starts anything.
    def unreachable(self: ClusterTarget, cfg: object) -> None:
        raise TargetError("not started in a fast test")

    monkeypatch.setattr(ClusterTarget, "open", unreachable)
    argv = ["run", "--target", "local", "--bookie-kind", "reference", "--quiet"]
    assert main([*argv, "--zookeeper", str(zookeeper), "--runs-dir", str(tmp_path / "runs")]) == 2
    (header,) = [line for line in capsys.readouterr().out.splitlines() if "under test" in line]
    assert header.endswith(f"zookeeper: ZooKeeper 3.8.4 (--zookeeper {zookeeper})")
    # A ZooKeeper that is none is refused before anything starts; so is a list of releases
    # where no ZooKeeper is started, or a release named twice.
    assert main([*argv, "--zookeeper", str(tmp_path), "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "no zookeeper jar with" in capsys.readouterr().err
    runs = ["--runs-dir", str(tmp_path / "q")]
    assert main(["qualify", "--target", "model", "--zookeeper", "3.8.4,3.9.3", *runs]) == 2
    assert "a list of ZooKeeper releases needs --target local" in capsys.readouterr().err
    assert main(["qualify", "--target", "local", "--zookeeper", "3.9.3,3.9.3", *runs]) == 2
    assert "names a release twice" in capsys.readouterr().err
    bad = ["qualify", "--target", "local", "--zookeeper", "3.8.4,3.9.3", "--shards", "0", *runs]
    assert main(bad) == 2 and not (tmp_path / "q").exists()


def test_qualify_names_it_in_header_results_parquet_and_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "q"
    argv = ["qualify", "--master", "none", "--shards", "2", "--run-dir", str(run_dir), *QUICK]
    assert main([*argv, "--configs", "fenced-recovery"]) == 0
    assert MODEL_HEADER in capsys.readouterr().out.splitlines()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["system_under_test"] == [
        {**MODEL_SYSTEM.as_dict(), "summary": MODEL_SYSTEM.render()}
    ]
    rows = pq.read_table(run_dir / "shards").to_pylist()
    assert {(r["bookies"], r["client"], r["zookeeper"]) for r in rows} == {
        (MODEL_SYSTEM.bookies, MODEL_SYSTEM.client, MODEL_SYSTEM.zookeeper)
    }
    report = (run_dir / "report.html").read_text()
    assert "<h2>System under test</h2>" in report and MODEL_SYSTEM.bookies in report


def test_crashes_restart_real_bookies_inside_their_jvm_unless_told_otherwise() -> None:
    from conformance.commands.options import target_from_args
    from conformance.targets.local_target import LocalTarget

    for command in (["run"], ["scenario", "limbo-crash"]):
        default = target_from_args(
            _parse(*command, "--target", "local", "--bookie-kind", "reference")
        )
        assert isinstance(default, LocalTarget) and default.in_jvm_restarts
        told = target_from_args(
            _parse(
                *command, "--target", "local", "--bookie-kind", "reference", "--process-restarts"
            )
        )
        assert isinstance(told, LocalTarget) and not told.in_jvm_restarts
    base = ["qualify", "--target", "local", "--bookie-kind", "reference"]
    assert target_spec_from_args(_parse(*base)).resolved().in_jvm_restarts
    options = target_spec_from_args(_parse(*base, "--process-restarts")).resolved()
    assert not options.in_jvm_restarts
    built = options.build()
    assert isinstance(built, LocalTarget) and not built.in_jvm_restarts


@pytest.mark.cluster
def test_a_qualification_over_two_zookeeper_releases_is_a_matrix_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "q"
    argv = ["qualify", "--target", "local", "--bookie-kind", "reference", "--master", "none"]
    # QUICK's 2 s budget is read before each example only: the first runs to its end however
    # slow the machine, and clean needs no more.
    argv += ["--shards", "1", "--configs", "fenced-recovery", "--run-dir", str(run_dir), *QUICK]
    assert main([*argv, "--zookeeper", "3.8.4,3.9.3"]) == 0
    out = capsys.readouterr().out
    assert "== ZooKeeper 3.8.4" in out and "Release matrix: clean" in out
    report = (run_dir / "report.html").read_text()
    for release in ("3.8.4", "3.9.3"):
        assert f"zookeeper: ZooKeeper {release}" in report
        assert (run_dir / f"zookeeper-{release}" / "report.html").exists()
