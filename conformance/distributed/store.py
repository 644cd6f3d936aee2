"""The run directory's Parquet datasets: one file per shard and dataset, written atomically.

Every writer (a Spark task on an executor, or the in-process loop) writes its shard's files
itself, so the run directory must be on storage that the driver and every executor reach
(a local disk for ``local[N]``; a shared file system for a real cluster). A shard's
``shards/`` row is written last: it is the mark that the shard is finished.

Rows are written and read typed (``conformance.distributed.schema``): the enums become their
words on the way in and are read back on the way out, by the schema's one conversion.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.distributed.schema import DATASETS, ShardRow, from_storage, to_storage

PLAN_FILE = "plan.json"


def part_name(shard: int) -> str:
    return f"part-{shard:05d}.parquet"


def write_part(run_dir: Path, dataset: str, shard: int, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` (typed rows: their enums are stored as words) as the shard's file of
    ``dataset``, replacing any earlier one at once (a reader sees the old file or the new one,
    never half of one). Hidden names (``.tmp-``) are what Spark and pyarrow skip while a file
    is being written."""
    schema = DATASETS[dataset]
    directory = run_dir / dataset
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([to_storage(row) for row in rows], schema=schema)
    final = directory / part_name(shard)
    partial = directory / f".tmp-{os.getpid()}-{part_name(shard)}"
    pq.write_table(table, partial)
    os.replace(partial, final)
    return final


def read_dataset(run_dir: Path, dataset: str) -> pa.Table:
    """Every shard's rows of ``dataset`` (an empty table with the schema when there are none)."""
    schema = DATASETS[dataset]
    parts = sorted((run_dir / dataset).glob("part-*.parquet"))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables([pq.read_table(part, schema=schema) for part in parts])


def read_rows(run_dir: Path, dataset: str) -> list[dict[str, Any]]:
    """Every shard's rows of ``dataset``, typed: verdicts and statuses as enums (an old row's
    words read as the schema's conversion reads them)."""
    return [from_storage(row) for row in read_dataset(run_dir, dataset).to_pylist()]


def read_shard_rows(run_dir: Path) -> list[ShardRow]:
    """Every ``shards/`` row, typed, in shard order."""
    rows = sorted(read_rows(run_dir, "shards"), key=lambda row: int(row["shard"]))
    return cast(list[ShardRow], rows)


def finished_shards(run_dir: Path) -> set[int]:
    """Shards with a row in ``shards/``: done or recorded as errors; a resumed run skips them."""
    found: set[int] = set()
    for part in (run_dir / "shards").glob("part-*.parquet"):
        column = pq.read_table(part, columns=["shard"]).column("shard")
        found.update(int(value) for value in column.to_pylist())
    return found
