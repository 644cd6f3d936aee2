"""Typed rows: a row's verdict is a Verdict and its status a RowStatus in Python, their words on
disk (Parquet, the Java matrix's JSON lines), converted in one place (schema.to_storage and
from_storage); rows of old runs (an ``error`` verdict, the matrix's ``ok``) still read."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any, get_type_hints

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.distributed import java_matrix
from conformance.distributed.diff import aggregate
from conformance.distributed.java_matrix import JavaShard, matrix, run_matrix
from conformance.distributed.plan import make_plan
from conformance.distributed.schema import (
    DATASETS,
    ROW_TYPES,
    SHARDS,
    RowStatus,
    from_storage,
    to_storage,
)
from conformance.distributed.shard import ExecutionOptions, execute_shard, parse_faults
from conformance.distributed.store import part_name, read_rows, read_shard_rows, write_part
from conformance.search.runner import SearchSettings
from conformance.verdict import Verdict
from tests.conformance.distributed import rows

MODULES = Path(__file__).resolve().parents[3] / "conformance" / "distributed"
VERDICT_WORDS = {v.value for v in Verdict}
STATUS_WORDS = {"done", "error", "ok"}


def test_the_typed_rows_have_exactly_the_parquet_columns() -> None:
    assert set(ROW_TYPES) == set(DATASETS)
    for dataset, schema in DATASETS.items():
        assert list(get_type_hints(ROW_TYPES[dataset])) == schema.names, dataset


def test_the_status_vocabulary_and_the_words_of_old_rows() -> None:
    assert [s.value for s in RowStatus] == ["done", "error"]
    assert RowStatus.named("done") is RowStatus.DONE
    assert RowStatus.named("error") is RowStatus.ERROR
    # The Java matrix's words before the one vocabulary.
    assert RowStatus.named("ok") is RowStatus.DONE
    assert RowStatus.named("undecided") is RowStatus.ERROR
    # Anything else is never done.
    for other in ("", "DONE", None, 1):
        assert RowStatus.named(other) is RowStatus.ERROR


def test_every_verdict_and_status_round_trips_through_parquet_typed(tmp_path: Path) -> None:
    written = [
        rows.shard_row(n, verdict, status=status)
        for n, (verdict, status) in enumerate(
            [(v, RowStatus.DONE) for v in Verdict] + [(Verdict.UNDECIDED, RowStatus.ERROR)]
        )
    ]
    for row in written:
        write_part(tmp_path, "shards", row["shard"], [row])
    # On disk: the words.
    stored = pq.read_table(tmp_path / "shards").to_pylist()
    assert sorted((r["shard"], r["verdict"], r["status"]) for r in stored) == [
        (0, "clean", "done"),
        (1, "violation", "done"),
        (2, "divergence", "done"),
        (3, "undecided", "done"),
        (4, "undecided", "error"),
    ]
    assert all(type(r["verdict"]) is str and type(r["status"]) is str for r in stored)
    # Read back: the enums, the same rows.
    back = read_shard_rows(tmp_path)
    assert back == written
    assert [r["verdict"] for r in back] == [*Verdict, Verdict.UNDECIDED]
    assert all(type(r["verdict"]) is Verdict and type(r["status"]) is RowStatus for r in back)
    assert [r["status"] for r in back] == [RowStatus.DONE] * 4 + [RowStatus.ERROR]


def test_a_finding_rows_verdict_round_trips(tmp_path: Path) -> None:
    write_part(tmp_path, "findings", 1, [rows.finding_row(1, "k")])
    assert pq.read_table(tmp_path / "findings").column("verdict").to_pylist() == ["violation"]
    (back,) = read_rows(tmp_path, "findings")
    assert back["verdict"] is Verdict.VIOLATION and back == rows.finding_row(1, "k")


def old_shard_row(shard: int, verdict: str, status: str) -> dict[str, Any]:
    """A row as a run before typed rows wrote it: words, ``error`` as a verdict."""
    return {
        **to_storage(rows.shard_row(shard, Verdict.CLEAN)),
        "verdict": verdict,
        "status": status,
    }


def test_an_old_error_row_reads_as_undecided_with_its_error(tmp_path: Path) -> None:
    # Written with pyarrow alone, as an old run's shard in error was.
    old = {**old_shard_row(0, "error", "error"), "error": "InjectedCrash: boom", "attempts": 2}
    pq.write_table(pa.Table.from_pylist([old], schema=SHARDS), tmp_path / "x.parquet")
    (tmp_path / "shards").mkdir()
    (tmp_path / "x.parquet").rename(tmp_path / "shards" / part_name(0))
    write_part(tmp_path, "shards", 2, [rows.shard_row(2, Verdict.CLEAN)])  # same configuration
    first, second = read_shard_rows(tmp_path)
    assert first["verdict"] is Verdict.UNDECIDED and first["status"] is RowStatus.ERROR
    assert (first["error"], first["attempts"]) == ("InjectedCrash: boom", 2)
    assert second["verdict"] is Verdict.CLEAN and second["status"] is RowStatus.DONE
    # Counted as undecided: no fifth verdict in the aggregates.
    (config,) = aggregate([], [first, second], [])["by_configuration"]
    assert config["verdicts"] == {Verdict.CLEAN: 1, Verdict.UNDECIDED: 1}
    assert all(type(k) is Verdict for k in config["verdicts"])
    assert config["verdict"] is Verdict.UNDECIDED and config["errors"] == 1
    # The same from the stored words themselves (the recount the Spark tests compare with).
    raw = pq.read_table(tmp_path / "shards").to_pylist()
    assert [r["verdict"] for r in raw] == ["error", "clean"]
    (config,) = aggregate([], raw, [])["by_configuration"]
    assert config["verdicts"] == {Verdict.CLEAN: 1, Verdict.UNDECIDED: 1}
    assert all(type(k) is Verdict for k in config["verdicts"])


def test_the_conversion_changes_only_the_enum_columns() -> None:
    typed = rows.shard_row(2, Verdict.UNDECIDED, status=RowStatus.ERROR)
    stored = to_storage(typed)
    assert (stored["verdict"], stored["status"]) == ("undecided", "error")
    assert type(stored["verdict"]) is str and type(stored["status"]) is str
    assert {k: v for k, v in stored.items() if k not in ("verdict", "status")} == {
        k: v for k, v in typed.items() if k not in ("verdict", "status")
    }
    back = from_storage(stored)
    assert back == typed and back["verdict"] is Verdict.UNDECIDED
    assert from_storage({"verdict": "error", "status": "ok"}) == {
        "verdict": Verdict.UNDECIDED,
        "status": RowStatus.DONE,
    }


QUICK = SearchSettings(max_examples=2, max_steps=10, time_budget=None, explore=False)


def test_a_shard_writes_and_returns_enums_and_an_error_is_undecided(tmp_path: Path) -> None:
    plan = make_plan(master_seed=5, shards=2, budget=QUICK)
    options = ExecutionOptions(run_dir=str(tmp_path), faults=parse_faults("crash@1"))
    done, failed = (execute_shard(shard, options) for shard in plan.shards)
    assert type(done["verdict"]) is Verdict and done["status"] is RowStatus.DONE
    assert failed["verdict"] is Verdict.UNDECIDED and failed["status"] is RowStatus.ERROR
    assert failed["error"] is not None and failed["error"].startswith("InjectedCrash")
    stored = pq.read_table(tmp_path / "shards").to_pylist()
    assert {(r["shard"], r["status"]) for r in stored} == {(0, "done"), (1, "error")}
    assert {r["verdict"] for r in stored} <= VERDICT_WORDS  # never a fifth word
    assert read_shard_rows(tmp_path) == [done, failed]


def test_matrix_rows_are_typed_and_stored_as_words(tmp_path: Path) -> None:
    shards = java_matrix.plan_matrix(
        {"4.11.1": Path("/a"), "4.17.3": Path("/b")}, seeds_per_release=2, seed=0, seconds=1
    )
    # An executor that still speaks the old words (as a matrix's rows did before).
    old = {
        0: ("violation", "ok"),
        1: ("clean", "ok"),
        2: ("undecided", "undecided"),
        3: ("clean", "ok"),
    }

    def executor(shard: JavaShard, run_dir: Path) -> dict[str, Any]:
        verdict, status = old[shard.index]
        return {**shard.__dict__, "verdict": verdict, "status": status, "examples": 1}

    result = run_matrix(shards, tmp_path, master="none", executor=executor)
    assert [(r["verdict"], r["status"]) for r in result] == [
        (Verdict.VIOLATION, RowStatus.DONE),
        (Verdict.CLEAN, RowStatus.DONE),
        (Verdict.UNDECIDED, RowStatus.ERROR),
        (Verdict.CLEAN, RowStatus.DONE),
    ]
    assert all(type(r["verdict"]) is Verdict and type(r["status"]) is RowStatus for r in result)
    lines = (tmp_path / java_matrix.SHARDS_FILE).read_text().splitlines()
    assert [(r["verdict"], r["status"]) for r in map(json.loads, lines)] == [
        ("violation", "done"),
        ("clean", "done"),
        ("undecided", "error"),
        ("clean", "done"),
    ]
    cells = {c["version"]: c for c in matrix(result)}
    assert cells["4.17.3"]["verdict"] is Verdict.UNDECIDED and cells["4.17.3"]["errors"] == 1
    assert cells["4.11.1"]["verdict"] is Verdict.VIOLATION and cells["4.11.1"]["errors"] == 0


def test_a_java_shard_that_fails_is_an_error_row_with_an_undecided_verdict(
    tmp_path: Path,
) -> None:
    # A writer shard whose settings name no shape fails before any cluster starts.
    shard = JavaShard(
        0, "4.17.3", str(tmp_path), "writer", "E3-WQ2-AQ2", 0, 1.0, 1, role_settings={"shape": "x"}
    )
    row = java_matrix.execute_java_shard(shard, tmp_path)
    assert row["status"] is RowStatus.ERROR and row["verdict"] is Verdict.UNDECIDED
    assert row["error"].startswith("PlanError: a ledger shape is E/WQ/AQ[+SPARES]")


def _literals(path: Path) -> list[tuple[int, str, str]]:
    """The verdict and status words written as string literals in ``path`` (docstrings aside):
    every verdict word, and a status word where it is compared or given as a value (a column or
    key named ``error`` is no status)."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Expr):
            continue  # a docstring
        if node.value in VERDICT_WORDS:
            found.append((node.lineno, node.value, "verdict word"))
        elif node.value in STATUS_WORDS:
            compared = isinstance(parent, ast.Compare)
            a_value = isinstance(parent, ast.Dict) and any(node is v for v in parent.values)
            a_keyword = isinstance(parent, ast.keyword)
            if compared or a_value or a_keyword:
                found.append((node.lineno, node.value, "status word"))
    return sorted(found)


def test_no_verdict_or_status_word_is_written_outside_the_conversion() -> None:
    modules = sorted(MODULES.glob("*.py"))
    assert len(modules) >= 9
    found = {path.name: _literals(path) for path in modules if path.name != "schema.py"}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_the_literal_check_sees_words_where_they_would_be_written(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        '"""clean"""\n'
        'row = {"status": "done", "verdict": "error", "error": None}\n'
        'if row["status"] == "error":\n'
        '    row.update(status="ok")\n'
        'worst = "undecided"\n'
    )
    assert _literals(source) == [
        (2, "done", "status word"),
        (2, "error", "status word"),
        (3, "error", "status word"),
        (4, "ok", "status word"),
        (5, "undecided", "verdict word"),
    ]
