"""The Parquet schemas of a qualification's results (documented in docs/distributed.md).

Three datasets in the run directory, one Parquet file per shard in each (``part-NNNNN``):

- ``steps/``: one row per step of every example a shard ran on its target;
- ``findings/``: one row per shrunk finding (a shard has at most one);
- ``shards/``: one row per shard, written last: a shard with a row here is done (or recorded
  with status ``error``), and a resumed run skips it.

In Python a row is typed (:class:`StepRow`, :class:`FindingRow`, :class:`ShardRow`): its
``verdict`` is a :class:`~conformance.verdict.Verdict` and its ``status`` a :class:`RowStatus`.
On disk (Parquet, Spark, JSON lines) both are their words; :func:`to_storage` and
:func:`from_storage` are the one conversion between the two, and an old row's words read through
:meth:`Verdict.named <conformance.verdict.Verdict.named>` and :meth:`RowStatus.named`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import Enum, StrEnum
from typing import Any, TypedDict

import pyarrow as pa

from conformance.verdict import Verdict


class RowStatus(StrEnum):
    """Whether a row's work finished: the one status of a qualification's shard rows and of the
    Java-client matrix's rows. An ``error`` row's verdict is undecided and its ``error`` field
    says why (what was raised, or ``undecided: why`` for a search that could not decide)."""

    DONE = "done"
    ERROR = "error"

    @classmethod
    def named(cls, name: object) -> RowStatus:
        """The status of that name. The Java-client matrix wrote ``ok`` for done and
        ``undecided`` for a search that ran but could not decide before there was one
        vocabulary; anything else that is no status reads as an error, never as done."""
        if isinstance(name, str):
            if name in cls._value2member_map_:
                return cls(name)
            if name in _OLD_STATUS:
                return _OLD_STATUS[name]
        return cls.ERROR


#: The Java-client matrix's words before the one vocabulary.
_OLD_STATUS: dict[str, RowStatus] = {"ok": RowStatus.DONE, "undecided": RowStatus.ERROR}

STEPS = pa.schema(
    [
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("example", pa.int32(), nullable=False),  # the shard's n-th example, from 0
        pa.field("phase", pa.string(), nullable=False),  # replay, hypothesis, shrink, minimise
        pa.field("step", pa.int32(), nullable=False),  # from 1
        pa.field("action", pa.string(), nullable=False),
        pa.field("description", pa.string(), nullable=False),
        pa.field("request", pa.string()),  # the message a bookie received, if any
        pa.field("predicted", pa.string()),  # JSON of the model's Observation, if compared
        pa.field("observed", pa.string()),  # JSON of the target's Observation, if compared
        pa.field("response", pa.string()),  # the observed status (EOK, EFENCED, ...), if any
        pa.field("engine_divergence", pa.list_(pa.string()), nullable=False),
        pa.field("violations", pa.list_(pa.string()), nullable=False),
        pa.field("error", pa.string()),
    ]
)

FINDINGS = pa.schema(
    [
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("verdict", pa.string(), nullable=False),  # Verdict: violation or divergence
        pa.field("violations", pa.list_(pa.string()), nullable=False),
        pa.field("divergences", pa.list_(pa.string()), nullable=False),
        pa.field("found_by", pa.string(), nullable=False),  # hypothesis or explorer
        pa.field("found_after", pa.float64(), nullable=False),  # seconds into the shard
        pa.field("found_steps", pa.int32(), nullable=False),
        pa.field("shrunk_steps", pa.int32(), nullable=False),
        pa.field("trace_key", pa.string(), nullable=False),  # sha256 of the shrunk trace
        pa.field("trace_text", pa.string(), nullable=False),
        pa.field("sequence_text", pa.string(), nullable=False),
        pa.field("sequence_svg", pa.string(), nullable=False),
        pa.field("blob", pa.string(), nullable=False),  # `bkconform replay BLOB`
    ]
)

SHARDS = pa.schema(
    [
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("configuration", pa.string(), nullable=False),
        pa.field("config_summary", pa.string(), nullable=False),
        pa.field("target", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),
        pa.field("max_examples", pa.int32(), nullable=False),
        pa.field("max_steps", pa.int32(), nullable=False),
        pa.field("time_budget", pa.float64()),
        pa.field("explore", pa.bool_(), nullable=False),
        pa.field("status", pa.string(), nullable=False),  # RowStatus: done or error
        pa.field("verdict", pa.string(), nullable=False),  # Verdict (an error: undecided)
        pa.field("findings", pa.int32(), nullable=False),
        pa.field("examples", pa.int32(), nullable=False),
        pa.field("steps", pa.int64(), nullable=False),  # the search's steps on the target
        pa.field("explorer_steps", pa.int64(), nullable=False),  # in the model alone
        pa.field("target_steps", pa.int64(), nullable=False),  # rows in steps/
        pa.field("elapsed", pa.float64(), nullable=False),  # the last attempt's search, s
        pa.field("wall", pa.float64(), nullable=False),  # all attempts, target start/stop, s
        pa.field("steps_per_second", pa.float64(), nullable=False),  # on the target
        pa.field("time_to_first_finding", pa.float64()),
        pa.field("attempts", pa.int32(), nullable=False),
        pa.field("error", pa.string()),  # "Type: message" or "undecided: why"; null when done
        # Whether that error was retriable (it was retried while attempts were left); null
        # when done, and in runs written before this column existed.
        pa.field("error_retriable", pa.bool_()),
        pa.field("log", pa.string(), nullable=False),
        pa.field("ledgers", pa.list_(pa.int64()), nullable=False),  # cluster targets' ledgers
        # JSON: what became of them on a cluster that outlives the shard, a list of the
        # external target's records (created, deleted, kept and why), one per attempt that
        # opened it; null for the other targets, and in runs written before this column.
        pa.field("ledger_records", pa.string()),
        # Crashes run (on a cluster, bookie restarts) and the seconds they took; null in runs
        # written before these columns existed.
        pa.field("restarts", pa.int32()),
        pa.field("restart_seconds", pa.float64()),
        # JSON: what the bookies did on their own (bookie_recovers_limbo: their recovery of a
        # limbo ledger, judged as observed); null without that actor, and in older runs.
        pa.field("bookies_own", pa.string()),
        pa.field("versions", pa.string(), nullable=False),  # JSON
        pa.field("target_description", pa.string(), nullable=False),  # JSON
        # The system under test (adapters.installations.system.SystemUnderTest), in words:
        pa.field("bookies", pa.string(), nullable=False),  # BookKeeper 4.17.3 (Maven, ...)
        pa.field("client", pa.string(), nullable=False),  # model client (bkconform)
        pa.field("zookeeper", pa.string(), nullable=False),  # ZooKeeper 3.9.5 (...)
        # The bookies' settings where the suite configures them (local, docker with real
        # bookies): in words ("DbLedgerStorage, settings profile pulsar"), the ledger storage
        # (sorted, db) and the settings profile (suite, bookkeeper, pulsar); null elsewhere
        # (the model, an external cluster, the reference bookie) and in older runs.
        pa.field("bookie_settings", pa.string()),
        pa.field("ledger_storage", pa.string()),
        pa.field("settings_profile", pa.string()),
        pa.field("worker", pa.string(), nullable=False),  # host:pid that ran it
        pa.field("finished_at", pa.string(), nullable=False),  # UTC, ISO 8601
    ]
)

DATASETS = {"steps": STEPS, "findings": FINDINGS, "shards": SHARDS}


class StepRow(TypedDict):
    """A ``steps/`` row."""

    shard: int
    configuration: str
    target: str
    example: int
    phase: str
    step: int
    action: str
    description: str
    request: str | None
    predicted: str | None
    observed: str | None
    response: str | None
    engine_divergence: list[str]
    violations: list[str]
    error: str | None


class FindingRow(TypedDict):
    """A ``findings/`` row."""

    shard: int
    configuration: str
    target: str
    seed: int
    verdict: Verdict
    violations: list[str]
    divergences: list[str]
    found_by: str
    found_after: float
    found_steps: int
    shrunk_steps: int
    trace_key: str
    trace_text: str
    sequence_text: str
    sequence_svg: str
    blob: str


class ShardRow(TypedDict):
    """A ``shards/`` row."""

    shard: int
    configuration: str
    config_summary: str
    target: str
    seed: int
    max_examples: int
    max_steps: int
    time_budget: float | None
    explore: bool
    status: RowStatus
    verdict: Verdict
    findings: int
    examples: int
    steps: int
    explorer_steps: int
    target_steps: int
    elapsed: float
    wall: float
    steps_per_second: float
    time_to_first_finding: float | None
    attempts: int
    error: str | None
    error_retriable: bool | None
    log: str
    ledgers: list[int]
    ledger_records: str | None
    restarts: int | None
    restart_seconds: float | None
    bookies_own: str | None
    versions: str
    target_description: str
    bookies: str
    client: str
    zookeeper: str
    bookie_settings: str | None
    ledger_storage: str | None
    settings_profile: str | None
    worker: str
    finished_at: str


ROW_TYPES: dict[str, type[Any]] = {"steps": StepRow, "findings": FindingRow, "shards": ShardRow}

#: The columns that are an enum in Python and its word on disk, and how a stored word is read.
ENUM_COLUMNS: dict[str, Callable[[object], Enum]] = {
    "verdict": Verdict.named,
    "status": RowStatus.named,
}


def to_storage(row: Mapping[str, Any]) -> dict[str, Any]:
    """A typed row as it is stored (Parquet, Spark, JSON lines): every enum as its word."""
    return {key: value.value if isinstance(value, Enum) else value for key, value in row.items()}


def from_storage(row: Mapping[str, Any]) -> dict[str, Any]:
    """A stored row as the typed row: ``verdict`` a Verdict and ``status`` a RowStatus (an old
    row's ``error`` verdict is undecided); the other columns as they are."""
    typed = dict(row)
    for column, read in ENUM_COLUMNS.items():
        if column in typed:
            typed[column] = read(typed[column])
    return typed
