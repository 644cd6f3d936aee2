"""Distributed qualification: a plan of shards run on Spark (or in process), the
observed-vs-model diff over every step, Parquet results and the ``report.html``.

- ``plan``: shards of seeds x configurations x target, deterministic from a master seed;
- ``shard``: one shard's execution (own target, retry, timeout, the fault test hook);
- ``schema`` and ``store``: the Parquet datasets (steps, findings, shards) and resume;
- ``diff``: the diff and aggregates in plain Python; ``spark_job``: the same as Spark jobs,
  and the Spark session's quiet start and complete stop;
- ``qualification``: the run; ``report``: the HTML report.

See docs/distributed.md.
"""
