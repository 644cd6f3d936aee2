"""The Parquet schemas of a qualification's results (documented in docs/distributed.md).

Three datasets in the run directory, one Parquet file per shard in each (``part-NNNNN``):

- ``steps/``: one row per step of every example a shard ran on its target;
- ``findings/``: one row per shrunk finding (a shard has at most one);
- ``shards/``: one row per shard, written last: a shard with a row here is done (or recorded
  as ``error``), and a resumed run skips it.
"""

from __future__ import annotations

import pyarrow as pa

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
        pa.field("verdict", pa.string(), nullable=False),  # violation or divergence
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
        pa.field("status", pa.string(), nullable=False),  # done or error
        pa.field("verdict", pa.string(), nullable=False),  # clean/violation/divergence/...
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
        # Crashes run (on a cluster, bookie restarts) and the seconds they took; null in runs
        # written before these columns existed.
        pa.field("restarts", pa.int32()),
        pa.field("restart_seconds", pa.float64()),
        pa.field("versions", pa.string(), nullable=False),  # JSON
        pa.field("target_description", pa.string(), nullable=False),  # JSON
        # The system under test (adapters.installations.system.SystemUnderTest), in words:
        pa.field("bookies", pa.string(), nullable=False),  # BookKeeper 4.17.3 (Maven, ...)
        pa.field("client", pa.string(), nullable=False),  # model client (bkconform)
        pa.field("zookeeper", pa.string(), nullable=False),  # ZooKeeper 3.9.5 (...)
        pa.field("worker", pa.string(), nullable=False),  # host:pid that ran it
        pa.field("finished_at", pa.string(), nullable=False),  # UTC, ISO 8601
    ]
)

DATASETS = {"steps": STEPS, "findings": FINDINGS, "shards": SHARDS}
