"""The Java-client version matrix: the plan, the cells and their changes, the report, the
command (fast: shards stood in for), and the real matrix on 4.11.1 and the default version
(cluster, slow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.distributed import java_matrix
from conformance.distributed.java_matrix import (
    JavaShard,
    MatrixError,
    matrix,
    matrix_verdict,
    not_applicable,
    plan_matrix,
    render_matrix_report,
    run_matrix,
)
from conformance.distributed.schema import RowStatus
from conformance.javaclient.writer_plans import WriterShape
from tests.adapters.installations.fake_zookeeper import zookeeper_distribution
from tests.bookkeeper_fixtures import default_home, installed_home


def _row(version: str, verdict: str, **more: Any) -> dict[str, Any]:
    return {
        "index": more.pop("index", 0),
        "version": version,
        "configuration": "E3-WQ3-AQ2",
        "role": "recovery",
        "verdict": verdict,
        "status": more.pop("status", RowStatus.DONE),
        "examples": more.pop("examples", 5),
        **more,
    }


def test_one_shard_per_release_and_seed() -> None:
    shards = plan_matrix(
        {"4.11.1": Path("/a"), "4.17.3": Path("/b")}, seeds_per_release=2, seed=7, seconds=60
    )
    assert [(s.index, s.version, s.seed) for s in shards] == [
        (0, "4.11.1", 7),
        (1, "4.11.1", 8),
        (2, "4.17.3", 7),
        (3, "4.17.3", 8),
    ]
    assert {s.role for s in shards} == {"recovery"}
    with pytest.raises(MatrixError, match="at least one"):
        plan_matrix({}, seeds_per_release=1, seed=0, seconds=60)
    with pytest.raises(MatrixError, match=">= 1 shard"):
        plan_matrix({"4.11.1": Path("/a")}, seeds_per_release=0, seed=0, seconds=60)


def test_a_cell_is_the_worst_of_its_shards_and_changes_are_marked() -> None:
    rows = [
        _row("4.11.1", "violation", violations=["NoDivergenceBetweenClientAndMetaData"]),
        _row("4.11.1", "clean"),
        _row("4.16.6", "clean"),
        _row("4.17.3", "clean"),
        _row("4.17.3", "undecided", status=RowStatus.ERROR, error="boom"),
        _row("4.9.2", "clean"),
    ]
    cells = {c["version"]: c for c in matrix(rows)}
    # Releases in version order (4.9.2 before 4.11.1, not after: numbers, not text).
    assert [c["version"] for c in matrix(rows)] == ["4.9.2", "4.11.1", "4.16.6", "4.17.3"]
    assert cells["4.11.1"]["verdict"] == "violation" and cells["4.11.1"]["shards"] == 2
    assert cells["4.11.1"]["change"] == "regression"  # worse than 4.9.2
    assert cells["4.16.6"]["change"] == "fix"
    assert cells["4.17.3"]["verdict"] == "undecided" and cells["4.17.3"]["errors"] == 1
    assert cells["4.17.3"]["change"] == "regression"  # undecided is worse than clean
    assert matrix_verdict(cells.values()) == "violation"
    assert matrix_verdict([]) == "undecided"  # nothing checked


def test_the_report_shows_each_release_and_the_regressions() -> None:
    rows = [_row("4.11.1", "clean"), _row("4.17.3", "violation", index=1)]
    cells = matrix(rows)
    page = render_matrix_report(cells, rows, master="none", elapsed=12.0, systems=["x"])
    assert "<th>4.11.1</th>" in page and "<th>4.17.3</th>" in page
    assert 'class="violation regression"' in page
    assert 'Verdict: <b class="violation">violation</b>' in page


def test_the_report_shows_each_shards_coverage_of_the_client() -> None:
    measured = {
        "units": {
            "LedgerHandle": {
                "lines": {"covered": 157, "missed": 675},
                "branches": {"covered": 32, "missed": 290},
            }
        },
        "total": {
            "lines": {"covered": 243, "missed": 978},
            "branches": {"covered": 54, "missed": 446},
        },
    }
    rows = [{**_row("4.17.3", "clean"), "client_coverage": measured}]
    page = render_matrix_report(matrix(rows), rows, master="none", elapsed=1.0, systems=["x"])
    assert "Coverage of the real client" in page and "<th>LedgerHandle</th>" in page
    assert "lines 157/832 (19%)" in page and "branches 54/500 (11%)" in page
    unmeasured = [_row("4.17.3", "clean")]
    page = render_matrix_report(
        matrix(unmeasured), unmeasured, master="none", elapsed=1.0, systems=["x"]
    )
    assert "Not measured" in page


def _fake(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
    verdict = "violation" if shard.version == "4.11.1" else "clean"
    return {
        **shard.__dict__,
        "status": RowStatus.DONE,
        "verdict": verdict,
        "examples": 3,
        "system": "s",
    }


def test_the_shards_run_here_and_their_rows_are_written(tmp_path: Path) -> None:
    shards = plan_matrix(
        {"4.17.3": Path("/b"), "4.11.1": Path("/a")}, seeds_per_release=1, seed=0, seconds=1
    )
    rows = run_matrix(shards, tmp_path, master="none", executor=_fake)
    assert [r["index"] for r in rows] == [0, 1]
    lines = (tmp_path / "java_shards.jsonl").read_text().splitlines()
    written = [json.loads(line) for line in lines]
    assert written == rows


def _fake_on_zookeeper(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
    """4.11.1 has Defect 1 whatever the ZooKeeper; 4.17.3 fails on ZooKeeper 3.8.4 only."""
    row = _fake(shard, run_dir)
    if shard.version == "4.17.3" and shard.zookeeper_version == "3.8.4":
        row["verdict"] = "violation"
    return row


def test_the_command_writes_the_bookkeeper_by_zookeeper_matrix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(java_matrix, "execute_java_shard", _fake_on_zookeeper)
    from conformance.commands import java_client_qualify

    monkeypatch.setattr(
        java_client_qualify,
        "releases_from_args",
        lambda args: {"4.11.1": Path("/a"), "4.17.3": Path("/b")},
    )
    older = zookeeper_distribution(tmp_path / "zk-old", "3.8.4")
    newer = zookeeper_distribution(tmp_path / "zk-new", "3.9.3")
    run_dir = tmp_path / "q"
    argv = ["qualify", "--client", "java", "--target", "local", "--master", "none"]
    argv += ["--zookeeper", f"{newer},{older}", "--shards", "1"]
    assert main([*argv, "--run-dir", str(run_dir)]) == 1
    results = json.loads((run_dir / "results.json").read_text())
    assert results["zookeepers"] == {"3.9.3": str(newer), "3.8.4": str(older)}
    cells = {(c["version"], c["zookeeper_version"]): c for c in results["cells"]}
    assert {k: c["verdict"] for k, c in cells.items()} == {
        ("4.11.1", "3.8.4"): "violation",
        ("4.11.1", "3.9.3"): "violation",
        ("4.17.3", "3.8.4"): "violation",
        ("4.17.3", "3.9.3"): "clean",
    }
    # Along BookKeeper on one ZooKeeper, and along ZooKeeper on one BookKeeper.
    assert cells[("4.17.3", "3.9.3")]["change"] == "fix"
    assert cells[("4.17.3", "3.8.4")]["change"] is None
    assert cells[("4.17.3", "3.9.3")]["zookeeper_change"] == "fix"
    assert cells[("4.11.1", "3.9.3")]["zookeeper_change"] is None
    page = (run_dir / "report.html").read_text()
    assert "4.17.3<br>ZooKeeper 3.8.4" in page and "4.17.3<br>ZooKeeper 3.9.3" in page
    assert (run_dir / "matrix.json").exists()
    out = capsys.readouterr().out
    assert "releases 4.11.1, 4.17.3 on ZooKeeper 3.9.3, 3.8.4" in out
    assert "4.17.3 on ZooKeeper 3.9.3 E3-WQ3-AQ2 recovery: clean (fix) (fix on ZooKeeper)" in out


def test_the_command_refuses_what_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["qualify", "--client", "java", "--bookkeeper", "4.11.1"]) == 2
    assert "runs on --target local only" in capsys.readouterr().err
    assert main(["qualify", "--client", "java", "--target", "local"]) == 2
    assert "needs the releases to compare: --bookkeeper 4.11.1,4.17.3" in capsys.readouterr().err
    argv = ["qualify", "--client", "java", "--target", "local", "--crash-time-share", "2"]
    assert main(argv) == 2
    assert "--crash-time-share weighs the model client's configurations" in (
        capsys.readouterr().err
    )


@pytest.mark.cluster
@pytest.mark.slow
def test_the_matrix_of_4_11_1_and_the_default_version(tmp_path: Path) -> None:
    """The same search, one shard of 3 examples per release, in this process: Defect 1 on
    4.11.1, clean on the default version (a fix, not a regression)."""
    old, new = installed_home("4.11.1"), default_home()
    run_dir = tmp_path / "q"
    argv = ["qualify", "--client", "java", "--target", "local", "--master", "none", "--shards", "1"]
    argv += ["--bookkeeper", f"{old},{new}"]  # a release's version or its directory
    assert main([*argv, "--max-examples", "3", "--run-dir", str(run_dir)]) == 1
    cells = json.loads((run_dir / "matrix.json").read_text())
    verdicts = {c["version"]: (c["verdict"], c["change"]) for c in cells}
    assert verdicts["4.11.1"] == ("violation", None)
    (newest,) = [v for v in verdicts if v != "4.11.1"]
    assert verdicts[newest] == ("clean", "fix")


def test_the_writer_role_gets_a_column_per_shape_from_4_12_on() -> None:
    releases = {"4.11.1": Path("/a"), "4.17.3": Path("/b")}
    shapes = [WriterShape(3, 2, 2), WriterShape(2, 1, 1)]
    shards = plan_matrix(
        releases,
        seeds_per_release=1,
        seed=0,
        seconds=60,
        roles=["recovery", "writer"],
        writer_shapes=shapes,
    )
    assert [(s.version, s.role, s.configuration) for s in shards] == [
        ("4.11.1", "recovery", "E3-WQ3-AQ2"),
        ("4.17.3", "recovery", "E3-WQ3-AQ2"),
        ("4.17.3", "writer", "E3-WQ2-AQ2"),
        ("4.17.3", "writer", "E2-WQ1-AQ1"),
    ]
    assert [s.role_settings for s in shards][2:] == [
        {"role": "writer", "shape": "3/2/2"},
        {"role": "writer", "shape": "2/1/1"},
    ]
    skipped = not_applicable(releases, roles=["writer"], writer_shapes=shapes)
    assert set(skipped) == {("4.11.1", "E3-WQ2-AQ2", "writer"), ("4.11.1", "E2-WQ1-AQ1", "writer")}
    rows = [{**_fake(s, Path("/x")), "index": s.index} for s in shards]
    page = render_matrix_report(
        matrix(rows), rows, master="none", elapsed=1.0, systems=[], inapplicable=skipped
    )
    assert "not applicable: BookKeeper 4.11.1: this role needs a client" in page
    assert "(BookKeeper &gt;= 4.12.0)" in page
    with pytest.raises(MatrixError, match="no role 'reader'"):
        plan_matrix(releases, seeds_per_release=1, seed=0, seconds=1, roles=["reader"])
    with pytest.raises(MatrixError, match="no release can run"):
        plan_matrix(
            {"4.11.1": Path("/a")}, seeds_per_release=1, seed=0, seconds=1, roles=["writer"]
        )


def test_both_roles_at_once_get_the_writer_s_columns_spares_included(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``qualify --client java --role both`` (``--role``: ``--roles`` as ``run`` spells it):
    the fail-over runs each writer shape, its spares named in the column and
    carried to the shard's role; a release whose client cannot write is not applicable."""
    shards = plan_matrix(
        {"4.11.1": Path("/a"), "4.17.3": Path("/b")},
        seeds_per_release=1,
        seed=0,
        seconds=1,
        roles=["both"],
        writer_shapes=[WriterShape(3, 2, 2), WriterShape(4, 2, 2, spares=2)],
    )
    assert [(s.version, s.role, s.configuration, s.role_settings) for s in shards] == [
        ("4.17.3", "both", "E3-WQ2-AQ2", {"role": "both", "shape": "3/2/2"}),
        ("4.17.3", "both", "E4-WQ2-AQ2+2", {"role": "both", "shape": "4/2/2+2"}),
    ]
    ran: list[JavaShard] = []

    def fake(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
        ran.append(shard)
        return _fake(shard, run_dir)

    monkeypatch.setattr(java_matrix, "execute_java_shard", fake)
    from conformance.commands import java_client_qualify

    monkeypatch.setattr(
        java_client_qualify,
        "releases_from_args",
        lambda args: {"4.11.1": Path("/a"), "4.17.3": Path("/b")},
    )
    monkeypatch.setattr(java_client_qualify, "zookeepers_from_args", lambda args: {})
    run_dir = tmp_path / "q"
    argv = ["qualify", "--client", "java", "--target", "local", "--master", "none"]
    argv += ["--role", "both", "--writer-shapes", "3/2/2", "--shards", "1"]
    assert main([*argv, "--run-dir", str(run_dir)]) == 0
    assert [(s.version, s.role, s.role_settings) for s in ran] == [
        ("4.17.3", "both", {"role": "both", "shape": "3/2/2"})
    ]
    results = json.loads((run_dir / "results.json").read_text())
    assert [(c["version"], c["configuration"], c["role"]) for c in results["cells"]] == [
        ("4.17.3", "E3-WQ2-AQ2", "both")
    ]
    (skipped,) = results["not_applicable"]
    assert (skipped["version"], skipped["configuration"], skipped["role"]) == (
        "4.11.1",
        "E3-WQ2-AQ2",
        "both",
    )
    assert "(BookKeeper >= 4.12.0)" in skipped["why"]
    out = capsys.readouterr().out
    assert "roles both." in out and "E3-WQ2-AQ2 both: clean" in out


def test_roles_need_the_java_client(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["qualify", "--roles", "writer"]) == 2
    assert "need --client java" in capsys.readouterr().err
