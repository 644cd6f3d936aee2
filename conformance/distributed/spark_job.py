"""The qualification as Spark jobs: shards as tasks, the diff and aggregates as Spark SQL.

The plan's shards become an RDD with one partition per shard; each task runs its shard with
``conformance.distributed.shard.execute_shard`` (its own target, its own cluster for
``local``) and writes the shard's Parquet files. The diff then reads every step of every shard
back as a DataFrame and computes the aggregates (see ``conformance.distributed.diff`` for the
rules, which the plain-Python version shares). Spark reads the stored words; what comes back
to Python is typed by the schema's conversion (``from_storage``): verdicts and statuses as
enums, an old ``error`` verdict as undecided.

Spark starts quietly (no UI, WARN logs, loopback only, few shuffle partitions) and is stopped
on every exit path, down to its JVM: ``spark_session`` waits for the gateway process to exit.
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from functools import reduce
from pathlib import Path
from typing import Any

from conformance.distributed.diff import OBSERVATION_FIELDS, Aggregates, configuration_verdict
from conformance.distributed.plan import Shard
from conformance.distributed.schema import RowStatus, from_storage
from conformance.distributed.shard import ExecutionOptions, execute_shard
from conformance.errors import ConformanceError
from conformance.observations import STATUS_COMPARED_KINDS
from conformance.verdict import Verdict

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""
#: How long the JVM may take to exit once its gateway is closed.
JVM_EXIT_TIMEOUT = 30.0
OBSERVATION_DDL = (
    "kind STRING, status STRING, success BOOLEAN, code STRING, lac BIGINT, data BIGINT"
)


class SparkUnavailable(ConformanceError, RuntimeError):
    """Spark could not start (no Java, a bad master URL)."""


def quiet_conf(master: str, log_config: Path) -> dict[str, str]:
    java_options = f"-Dlog4j2.configurationFile={log_config.as_uri()} -XX:+UseSerialGC"
    return {
        "spark.master": master,
        "spark.app.name": "bkconform-qualify",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.adaptive.enabled": "false",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
        "spark.executorEnv.PYTHONPATH": str(_PROJECT_ROOT),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
    }


@contextlib.contextmanager
def spark_session(master: str) -> Iterator[Any]:
    """A SparkSession on ``master``, stopped (and its JVM gone) however the block ends."""
    from pyspark.sql import SparkSession

    # Python workers run the project's code: the same interpreter and the project on the path.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # Loopback only (and no warning that the host name resolves to it).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(_PROJECT_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(_PROJECT_ROOT), *paths])
    with tempfile.TemporaryDirectory(prefix="bkconform-spark-") as scratch:
        log_config = Path(scratch) / "log4j2.properties"
        log_config.write_text(_LOG4J2)
        builder = SparkSession.builder
        for key, value in quiet_conf(master, log_config).items():
            builder = builder.config(key, value)
        spark = None
        try:
            try:
                spark = builder.getOrCreate()
            except Exception as exc:
                raise SparkUnavailable(f"Spark could not start on {master!r}: {exc}") from exc
            spark.sparkContext.setLogLevel("WARN")
            yield spark
        finally:
            stop_spark(spark)


def stop_spark(spark: Any) -> None:
    """Stop the session and its JVM; the next session in this process starts a fresh one."""
    from pyspark import SparkContext

    if spark is not None:
        with contextlib.suppress(Exception):
            spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if process is not None:
        # The JVM exits when its standard input closes (PythonGatewayServer watches it).
        with contextlib.suppress(Exception):
            if process.stdin is not None:
                process.stdin.close()
        try:
            process.wait(timeout=JVM_EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=JVM_EXIT_TIMEOUT)
    SparkContext._gateway = None
    SparkContext._jvm = None
    with contextlib.suppress(Exception):
        from pyspark.sql import SparkSession

        SparkSession._instantiatedSession = None
        SparkSession._activeSession = None


def _shard_task(shard: dict[str, Any], options: ExecutionOptions) -> dict[str, Any]:
    """Runs on an executor's Python worker."""
    row = execute_shard(Shard(**shard), options)
    # Only a summary travels back: the rows are in the run directory's Parquet files.
    return {k: row[k] for k in ("shard", "status", "verdict", "findings")}


def run_shards(spark: Any, shards: list[Shard], options: ExecutionOptions) -> list[dict[str, Any]]:
    """One Spark task per shard; returns each shard's status summary."""
    if not shards:
        return []
    context = spark.sparkContext
    specs = [shard.as_dict() for shard in shards]
    rdd = context.parallelize(specs, numSlices=len(specs))
    summaries: list[dict[str, Any]] = rdd.map(
        functools.partial(_shard_task, options=options)
    ).collect()
    return summaries


def aggregate_spark(spark: Any, run_dir: Path) -> Aggregates:
    """The diff and the aggregates over every step of every shard, as Spark jobs."""
    from pyspark.sql import functions as F

    steps = spark.read.parquet(str(run_dir / "steps"))
    shards = spark.read.parquet(str(run_dir / "shards"))
    findings = spark.read.parquet(str(run_dir / "findings"))
    predicted = F.from_json("predicted", OBSERVATION_DDL)
    observed = F.from_json("observed", OBSERVATION_DDL)
    same = reduce(
        lambda a, b: a & b, [predicted[f].eqNullSafe(observed[f]) for f in OBSERVATION_FIELDS]
    )
    # As observations.compared_fields: a metadata write's status is the model's word too.
    status_decided = predicted["kind"].isin(*STATUS_COMPARED_KINDS) | observed["kind"].isin(
        *STATUS_COMPARED_KINDS
    )
    same = same & (~status_decided | predicted["status"].eqNullSafe(observed["status"]))
    compared = F.col("predicted").isNotNull() & F.col("observed").isNotNull()
    judged = steps.select(
        "action",
        "target",
        "configuration",
        "response",
        compared.cast("int").alias("compared"),
        (compared & ~same).cast("int").alias("divergences"),
        (F.size("violations") > 0).cast("int").alias("violations"),
        F.col("error").isNotNull().cast("int").alias("errors"),
    ).cache()
    counts = [
        F.count(F.lit(1)).alias("steps"),
        F.sum("compared").alias("compared"),
        F.sum("divergences").alias("divergences"),
        F.sum("violations").alias("violations"),
        F.sum("errors").alias("errors"),
    ]
    try:
        by_action = [_counted(r) for r in judged.groupBy("action").agg(*counts).collect()]
        by_target_steps = {
            r["target"]: _counted(r) for r in judged.groupBy("target").agg(*counts).collect()
        }
        by_config_steps = {
            r["configuration"]: _counted(r)
            for r in judged.groupBy("configuration").agg(*counts).collect()
        }
        responses = (
            judged.where(F.col("response").isNotNull())
            .groupBy("action", "response")
            .count()
            .collect()
        )
    finally:
        judged.unpersist()
    target_shards = {r["target"]: r["count"] for r in shards.groupBy("target").count().collect()}
    config_rows = (
        shards.groupBy("configuration")
        .agg(
            F.first("config_summary").alias("config_summary"),
            F.count(F.lit(1)).alias("shards"),
            F.sum((F.col("status") == RowStatus.ERROR.value).cast("int")).alias("errors"),
            F.sum("findings").alias("findings"),
        )
        .collect()
    )
    verdict_counts: dict[str, Counter[Verdict]] = {}
    for r in shards.groupBy("configuration", "verdict").count().collect():
        typed = from_storage(r.asDict())  # an old run's error verdict is undecided
        tally = verdict_counts.setdefault(typed["configuration"], Counter())
        tally[typed["verdict"]] += int(typed["count"])
    by_configuration = []
    for r in sorted(config_rows, key=lambda r: str(r["configuration"])):
        name = r["configuration"]
        verdicts = dict(sorted(verdict_counts.get(name, Counter()).items()))
        step_counts = by_config_steps.get(name, {})
        by_configuration.append(
            {
                "configuration": name,
                "config_summary": r["config_summary"],
                "shards": int(r["shards"]),
                "errors": int(r["errors"] or 0),
                "findings": int(r["findings"] or 0),
                "verdict": configuration_verdict(verdicts),
                "verdicts": verdicts,
                "steps": int(step_counts.get("steps", 0)),
                "divergences": int(step_counts.get("divergences", 0)),
            }
        )
    by_target = []
    for target in sorted(set(by_target_steps) | set(target_shards)):
        step_counts = by_target_steps.get(target, _counted(None))
        by_target.append(
            {**step_counts, "target": target, "shards": int(target_shards.get(target, 0))}
        )
    return {
        "by_action": sorted(by_action, key=lambda r: str(r["action"])),
        "by_configuration": by_configuration,
        "by_target": by_target,
        "responses": sorted(
            (
                {"action": r["action"], "response": r["response"], "count": int(r["count"])}
                for r in responses
            ),
            key=lambda r: (r["action"], r["response"]),
        ),
        "findings": _unique_findings_spark(findings),
    }


def _counted(row: Any) -> dict[str, Any]:
    names = ("steps", "compared", "divergences", "violations", "errors")
    counted: dict[str, Any] = {n: int(row[n] or 0) if row is not None else 0 for n in names}
    if row is not None:
        for key in ("action", "target", "configuration"):
            if key in row.asDict():
                counted = {key: row[key], **counted}
    return counted


def _unique_findings_spark(findings: Any) -> list[dict[str, Any]]:
    """Findings de-duplicated by shrunk trace, as a Spark job (details from the lowest shard)."""
    from pyspark.sql import functions as F

    groups = findings.groupBy("trace_key").agg(
        F.count(F.lit(1)).alias("occurrences"),
        F.sort_array(F.collect_list("shard")).alias("shards"),
        F.sort_array(F.collect_set("configuration")).alias("configurations"),
        F.min("shard").alias("first_shard"),
    )
    joined = findings.join(groups, on="trace_key").where(F.col("shard") == F.col("first_shard"))
    unique = []
    for r in joined.drop("first_shard").collect():
        row = from_storage(r.asDict(recursive=True))
        row["violations"] = list(row["violations"])
        row["divergences"] = list(row["divergences"])
        row["shards"] = [int(s) for s in row["shards"]]
        row["configurations"] = list(row["configurations"])
        row["occurrences"] = int(row["occurrences"])
        unique.append(row)
    return sorted(unique, key=lambda f: (f["shard"], f["trace_key"]))
