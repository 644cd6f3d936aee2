"""``bkconform qualify`` with lists of BookKeeper and ZooKeeper releases: a qualification per
release pair of the cross product, each in its own directory, then one matrix; lists refused
when they name a release twice or the target is not local. ``_qualify_once`` is replaced, so
nothing runs (fast)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.commands import qualify

LOCAL = ["qualify", "--target", "local", "--master", "none", "--shards", "1"]


class FakeQualifications:
    """Stands for ``_qualify_once``: records each call and leaves the results.json a real
    qualification would, a violation for the pairs named in ``violating``."""

    def __init__(self, violating: frozenset[tuple[str, str]] = frozenset()) -> None:
        self.violating = violating
        self.calls: list[tuple[str | None, str | None, Path | None]] = []

    def __call__(self, args: argparse.Namespace, run_dir: Path | None) -> int:
        self.calls.append((args.bookkeeper, args.zookeeper, run_dir))
        verdict = "violation" if (args.bookkeeper, args.zookeeper) in self.violating else "clean"
        if run_dir is not None:
            run_dir.mkdir(parents=True)
            system = f"bookies: BookKeeper {args.bookkeeper}; zookeeper: ZooKeeper {args.zookeeper}"
            results = {
                "verdict": verdict,
                "configurations": {"fenced-recovery": verdict},
                "ledger_storages": {"db": {"fenced-recovery": verdict}},
                "system_under_test": [{"summary": system}],
            }
            (run_dir / "results.json").write_text(json.dumps(results))
        return 1 if verdict == "violation" else 0


@pytest.fixture
def qualifications(monkeypatch: pytest.MonkeyPatch) -> FakeQualifications:
    fake = FakeQualifications(frozenset({("4.18.0", "3.8.4")}))
    monkeypatch.setattr(qualify, "_qualify_once", fake)
    return fake


def test_both_lists_run_their_cross_product_into_a_directory_per_pair(
    qualifications: FakeQualifications, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "q"
    argv = [*LOCAL, "--run-dir", str(run_dir), "--ledger-storage", "sorted,db"]
    assert main([*argv, "--bookkeeper", "4.17.3,4.18.0", "--zookeeper", "3.8.4,3.9.3"]) == 1
    assert qualifications.calls == [
        ("4.17.3", "3.8.4", run_dir / "bookkeeper-4.17.3-zookeeper-3.8.4"),
        ("4.17.3", "3.9.3", run_dir / "bookkeeper-4.17.3-zookeeper-3.9.3"),
        ("4.18.0", "3.8.4", run_dir / "bookkeeper-4.18.0-zookeeper-3.8.4"),
        ("4.18.0", "3.9.3", run_dir / "bookkeeper-4.18.0-zookeeper-3.9.3"),
    ]
    out = capsys.readouterr().out
    assert "== BookKeeper 4.17.3, ZooKeeper 3.8.4" in out
    assert f"Release matrix: violation. Report: {run_dir / 'report.html'}" in out
    results = json.loads((run_dir / "results.json").read_text())
    assert results["name"] == "qualify-release-matrix" and results["exit_code"] == 1
    assert results["bookkeeper_releases"] == ["4.17.3", "4.18.0"]
    assert results["zookeeper_releases"] == ["3.8.4", "3.9.3"]
    assert "fenced-recovery on db" in (run_dir / "report.html").read_text()


def test_a_bookkeeper_list_alone_keeps_the_zookeeper_given(
    qualifications: FakeQualifications, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "q"
    argv = [*LOCAL, "--run-dir", str(run_dir), "--zookeeper", "3.9.3"]
    assert main([*argv, "--bookkeeper", "4.17.3,4.18.0"]) == 0
    assert qualifications.calls == [
        ("4.17.3", "3.9.3", run_dir / "bookkeeper-4.17.3"),
        ("4.18.0", "3.9.3", run_dir / "bookkeeper-4.18.0"),
    ]
    assert "== BookKeeper 4.18.0\n" in capsys.readouterr().out
    results = json.loads((run_dir / "results.json").read_text())
    assert results["zookeeper_releases"] == []
    assert [row["zookeeper"] for row in results["rows"]] == [None, None]


def test_a_zookeeper_directory_names_its_row_by_its_last_component(
    qualifications: FakeQualifications, tmp_path: Path
) -> None:
    run_dir = tmp_path / "q"
    home = tmp_path / "apache-zookeeper-3.9.5-bin"
    assert main([*LOCAL, "--run-dir", str(run_dir), "--zookeeper", f"3.8.4,{home}"]) == 0
    assert [call[2] for call in qualifications.calls] == [
        run_dir / "zookeeper-3.8.4",
        run_dir / "zookeeper-apache-zookeeper-3.9.5-bin",
    ]


def test_a_single_release_is_one_qualification_without_a_matrix(
    qualifications: FakeQualifications, tmp_path: Path
) -> None:
    run_dir = tmp_path / "q"
    argv = [*LOCAL, "--run-dir", str(run_dir), "--bookkeeper", "4.17.3", "--zookeeper", "3.9.3"]
    assert main(argv) == 0
    assert qualifications.calls == [("4.17.3", "3.9.3", run_dir)]


@pytest.mark.parametrize(
    ("option", "releases", "why"),
    [
        ("--bookkeeper", "4.17.3,4.18.0,4.17.3", "names a release twice"),
        ("--zookeeper", "3.8.4, 3.8.4", "names a release twice"),
        (
            "--bookkeeper",
            "4.17.3,/opt/other/4.17.3",
            "names 4.17.3 and /opt/other/4.17.3, which would share the directory of a row",
        ),
    ],
)
def test_a_list_naming_a_release_twice_is_refused(
    qualifications: FakeQualifications,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    releases: str,
    why: str,
) -> None:
    run_dir = tmp_path / "q"
    assert main([*LOCAL, "--run-dir", str(run_dir), option, releases]) == 2
    assert f"{option} {releases} {why}" in capsys.readouterr().err
    assert qualifications.calls == [] and not run_dir.exists()


def test_lists_need_the_local_target_and_good_options_before_anything_runs(
    qualifications: FakeQualifications, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "q"
    argv = ["qualify", "--target", "model", "--run-dir", str(run_dir)]
    assert main([*argv, "--bookkeeper", "4.17.3,4.18.0"]) == 2
    assert "a list of BookKeeper releases needs --target local" in capsys.readouterr().err
    assert main([*argv, "--bookkeeper", "4.17.3,4.18.0", "--zookeeper", "3.8.4,3.9.3"]) == 2
    assert "a list of BookKeeper and ZooKeeper releases needs --target local" in (
        capsys.readouterr().err
    )
    argv = [*LOCAL, "--run-dir", str(run_dir), "--configs", "no-such-configuration"]
    assert main([*argv, "--bookkeeper", "4.17.3,4.18.0"]) == 2
    assert "no-such-configuration" in capsys.readouterr().err
    assert qualifications.calls == [] and not run_dir.exists()
