"""The Java-client matrix with the client's release as a dimension of its own
(``qualify --client java --client-bookkeeper 4.17.3,4.18.0``): a row per bookies' release and
client release, changes along the bookies' releases for one client, the report and the command
(fast: shards stood in for)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.distributed import java_matrix
from conformance.distributed.java_matrix import (
    JavaShard,
    matrix,
    not_applicable,
    plan_matrix,
    render_matrix_report,
)
from conformance.distributed.schema import RowStatus
from conformance.javaclient.writer_plans import WriterShape

RELEASES = {"4.17.3": Path("/bk/4.17.3"), "4.18.0": Path("/bk/4.18.0")}


def test_each_release_runs_each_client() -> None:
    shards = plan_matrix(RELEASES, seeds_per_release=1, seed=3, seconds=60, clients=RELEASES)
    assert [(s.version, s.client_version, s.client_home) for s in shards] == [
        ("4.17.3", "4.17.3", "/bk/4.17.3"),
        ("4.17.3", "4.18.0", "/bk/4.18.0"),
        ("4.18.0", "4.17.3", "/bk/4.17.3"),
        ("4.18.0", "4.18.0", "/bk/4.18.0"),
    ]
    assert {s.seed for s in shards} == {3}
    # Without clients, each release runs its own: nothing changes for the plans of before.
    alone = plan_matrix(RELEASES, seeds_per_release=1, seed=3, seconds=60)
    assert [(s.version, s.client_version, s.client_home) for s in alone] == [
        ("4.17.3", "", None),
        ("4.18.0", "", None),
    ]
    assert alone[0].cell() == ("4.17.3", "", "", "", "E3-WQ3-AQ2", "recovery")


def test_a_writer_needs_a_client_that_can_be_routed() -> None:
    clients = {"4.11.1": Path("/bk/4.11.1"), "4.18.0": Path("/bk/4.18.0")}
    shards = plan_matrix(
        RELEASES,
        seeds_per_release=1,
        seed=0,
        seconds=60,
        roles=["writer"],
        writer_shapes=[WriterShape(3, 2, 2)],
        clients=clients,
    )
    # 4.11.1's client cannot be routed through the proxies: its writer cells have no shard,
    # whatever the bookies' release.
    assert [(s.version, s.client_version) for s in shards] == [
        ("4.17.3", "4.18.0"),
        ("4.18.0", "4.18.0"),
    ]
    why = not_applicable(
        RELEASES, roles=["writer"], writer_shapes=[WriterShape(3, 2, 2)], clients=clients
    )
    assert why[("4.17.3", "E3-WQ2-AQ2", "writer")].startswith("not applicable (client 4.11.1)")


def _row(version: str, client: str, verdict: str, index: int) -> dict[str, Any]:
    return {
        "index": index,
        "version": version,
        "client_version": client,
        "configuration": "E3-WQ3-AQ2",
        "role": "recovery",
        "verdict": verdict,
        "status": RowStatus.DONE,
        "examples": 4,
    }


def test_a_cell_per_bookies_and_client_release_and_changes_for_one_client() -> None:
    rows = [
        _row("4.17.3", "4.17.3", "clean", 0),
        _row("4.17.3", "4.18.0", "clean", 1),
        _row("4.18.0", "4.17.3", "violation", 2),
        _row("4.18.0", "4.18.0", "clean", 3),
    ]
    cells = {(c["version"], c["client_version"]): c for c in matrix(rows)}
    assert len(cells) == 4
    # The 4.17.3 client got worse on 4.18.0's bookies; the 4.18.0 client did not.
    assert cells[("4.18.0", "4.17.3")]["change"] == "regression"
    assert cells[("4.18.0", "4.18.0")]["change"] is None
    page = render_matrix_report(matrix(rows), rows, master="none", elapsed=1.0, systems=[])
    assert "<th>4.18.0<br>client 4.17.3</th>" in page
    assert "release x client x ZooKeeper" in page


def _fake(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
    bad = shard.version == "4.18.0" and shard.client_version == "4.17.3"
    return {
        **shard.__dict__,
        "status": RowStatus.DONE,
        "verdict": "violation" if bad else "clean",
        "examples": 2,
        "system": f"bookies {shard.version}; client {shard.client_version}",
    }


def test_the_command_writes_a_row_per_bookies_and_client_release(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.commands import java_client_qualify

    monkeypatch.setattr(java_matrix, "execute_java_shard", _fake)
    monkeypatch.setattr(java_client_qualify, "releases_from_args", lambda args: RELEASES)
    seen: list[str] = []

    def clients(args: Any) -> dict[str, Path]:
        seen.append(args.client_bookkeeper)
        return dict(RELEASES)

    monkeypatch.setattr(java_client_qualify, "clients_from_args", clients)
    run_dir = tmp_path / "q"
    argv = ["qualify", "--client", "java", "--target", "local", "--master", "none"]
    argv += ["--client-bookkeeper", "4.17.3,4.18.0", "--shards", "1"]
    assert main([*argv, "--run-dir", str(run_dir)]) == 1
    assert seen == ["4.17.3,4.18.0"]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["clients"] == {v: str(h) for v, h in RELEASES.items()}
    verdicts = {(c["version"], c["client_version"]): c["verdict"] for c in results["cells"]}
    assert verdicts == {
        ("4.17.3", "4.17.3"): "clean",
        ("4.17.3", "4.18.0"): "clean",
        ("4.18.0", "4.17.3"): "violation",
        ("4.18.0", "4.18.0"): "clean",
    }
    out = capsys.readouterr().out
    assert "with the clients 4.17.3, 4.18.0" in out
    assert "4.18.0 with client 4.17.3 on ZooKeeper" in out


def test_the_client_release_is_for_the_java_client_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["qualify", "--client-bookkeeper", "4.18.0"]) == 2
    assert "--client-bookkeeper needs --client java" in capsys.readouterr().err
