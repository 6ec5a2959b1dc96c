"""A stateful streaming query on a local standalone cluster that loses an executor mid-batch, before
the state store of the batch's stateful task has committed.

Run by test_executor_failure.py and test_ttl_executor_failure.py in its own process (it needs its
own SparkContext, on `local-cluster[2,1,1024]`: a master and two workers inside the driver JVM, each
worker launching one executor JVM, each executor running one task at a time). The job:
  1. runs one of QUERIES (`--query`; default `groupBy(k).agg(count, sum)` in update mode) with the
     given state store provider, and state TTL when `--ttl` is given, over the input directory the
     test wrote (one JSON file per micro-batch); writes every batch's output rows as parquet under
     `<work-dir>/output/batch-<id>`, records every batch's `batchTimestampMs` from the offset log
     (the time TTL measures against), and waits `--batch-pause` seconds before the next batch;
  2. runs the stores with a small `txstate.maxUncommittedBytes`, so the stateful task of the kill
     batch writes its store's uncommitted changes out in early-commit segments
     (`<ckpt>/state/0/<p>/<version>_<id>-<k>.txseg`) long before it commits (`<version>.txlog`);
     a stable `txstate.localDir` shared by both executors and 1 MiB RocksDB memtables make the
     retried task reopen the local store the killed JVM left mid-version;
  3. while the kill batch runs, polls the running stateful tasks (status API) and the checkpoint;
     as soon as a running task's store has written `--kill-after-segments` segments of the batch's
     version and no changelog of it, SIGKILLs that task's executor JVM, waits for the process to be
     gone, and lists the store's files of the version once more (what the killed JVM left).
     Spark retries the lost task (re-running the lost shuffle output) and the standalone worker
     launches a replacement executor;
  4. after the query, reads the final state back through Spark's state data source with no local
     directory (a fresh provider rebuilds it from the checkpoint), as parquet under
     `<work-dir>/state-dump` (the query's state columns, see QUERIES);
  5. writes a JSON report: the kill (executor, pid, partition, the files at the kill, whether the
     JVM died), the executors before and after, the changelogs of the version after the retry, the
     query's progress, the batch times, and the query's error if any.

The test computes the expected rows from the input and compares; this script asserts nothing
except that it could do what it was asked (a kill that found no task to interrupt is an error).

With `--hdfs`/`--webhdfs` the checkpoint is on that HDFS (test_hdfs.py), read over WebHDFS. With
`--s3`/`--s3-bucket-dir` it is on that S3 server (test_s3.py), written through s3a:// and read from the
server's blob store.

Usage: executor_failure_job.py --input DIR --work-dir DIR --result FILE [--provider CLASS]
       [--query count_sum|dedup|count] [--ttl DURATION] [--batch-pause SECONDS]
       [--kill-batch B] [--kill-after-segments N] [--max-bytes 1m] [--timeout SECONDS]
       [--hdfs hdfs://HOST:PORT --webhdfs http://HOST:PORT] [--s3 http://HOST:PORT --s3-bucket-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the harness and servers packages

from harness import streaming_harness  # noqa: E402
from harness.cluster_tasks import (  # noqa: E402
    alongside,
    executor_ids,
    executor_processes,
    process_is_gone,
    running_stateful_tasks,
    stateful_task_to_kill,
    wait_for,
)
from servers.dfs_cluster import WebHdfsPath  # noqa: E402
from servers.s3_server import S3Path, s3a_spark_settings  # noqa: E402

TXSTATE = "spark.sql.streaming.stateStore.txstate."
LOCAL_DIR_CONF = TXSTATE + "localDir"
TTL_CONF = TXSTATE + "ttl"
PARTITIONS = (0, 1)  # spark.sql.shuffle.partitions in streaming_harness.spark_settings


class Query(NamedTuple):
    """A stateful query the job can run: its input schema, output mode, the query over the input
    stream, and the columns of its state (from the state data source) that the state dump keeps."""

    schema: str
    output_mode: str
    build: Callable[[Any], Any]
    state_columns: Callable[[Any], Any]


def count_and_sum(events):
    from pyspark.sql import functions as F

    return events.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))


QUERIES = {
    # The value struct is the aggregation buffer (count, sum).
    "count_sum": Query("k long, v long", "update", count_and_sum,
                       lambda state: state.select("key.k", "value.*").toDF("k", "n", "total")),
    # Deduplication keeps no value worth reading (a null placeholder): the keys are the state.
    "dedup": Query("k string", "append", lambda events: events.dropDuplicates(["k"]),
                   lambda state: state.select("key.k")),
    "count": Query("k string", "update", lambda events: events.groupBy("k").count(),
                   lambda state: state.select("key.k", "value.*").toDF("k", "count")),
}


def build_session(provider: str, max_bytes: str, extra: Mapping[str, str] = {}):
    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    settings = {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: provider,
        "spark.executor.memory": "768m",
        "spark.driver.memory": "1g",
        "spark.task.maxFailures": "4",
        TXSTATE + "maxUncommittedBytes": max_bytes,
        # The local RocksDB runs without a WAL: only flushed memtables survive a SIGKILL. With 1 MiB
        # memtables the early commits reach disk (under their in-flight marker) before the kill.
        TXSTATE + "writeBufferSizeMB": "1",
        **extra,
    }
    builder = SparkSession.builder.master("local-cluster[2,1,1024]").appName("txstate-executor-failure")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--provider", default=streaming_harness.candidate_provider())
    parser.add_argument("--query", choices=sorted(QUERIES), default="count_sum")
    parser.add_argument("--ttl", default=None, help="state TTL (txstate.ttl), e.g. 3s; default none")
    parser.add_argument("--batch-pause", type=float, default=0.0,
                        help="seconds to wait after each batch's output, so batch times spread out")
    parser.add_argument("--kill-batch", type=int, default=1)
    parser.add_argument("--kill-after-segments", type=int, default=2)
    parser.add_argument("--max-bytes", default="1m")
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--hdfs", default=None,
                        help="hdfs://host:port: put the checkpoint on this HDFS (with --webhdfs); default local")
    parser.add_argument("--webhdfs", default=None, help="http://host:port of that HDFS's NameNode (WebHDFS)")
    parser.add_argument("--s3", default=None,
                        help="http://host:port of an S3 server for the checkpoint (with --s3-bucket-dir)")
    parser.add_argument("--s3-bucket-dir", default=None, type=Path,
                        help="the folder of that server's blob store that holds the bucket (tests/servers/s3_server.py)")
    args = parser.parse_args()
    if bool(args.hdfs) != bool(args.webhdfs):
        parser.error("--hdfs and --webhdfs go together (the checkpoint is written to one, listed through the other)")
    if bool(args.s3) != bool(args.s3_bucket_dir):
        parser.error("--s3 and --s3-bucket-dir go together (the checkpoint is written to one, listed in the other)")

    work_dir: Path = args.work_dir
    checkpoint = work_dir / "checkpoint"
    if args.hdfs:
        # Listed and read over WebHDFS by the same helpers; Spark writes to str(checkpoint), hdfs://.
        checkpoint = WebHdfsPath(args.hdfs, args.webhdfs, f"/executor-failure/{work_dir.name}/checkpoint")
    if args.s3:
        # Spark writes to str(checkpoint), s3a://; the helpers list the server's blob store.
        checkpoint = S3Path(args.s3_bucket_dir, f"executor-failure/{work_dir.name}/checkpoint")
    query_kind = QUERIES[args.query]
    version = args.kill_batch + 1  # batch b commits version b + 1
    report: dict = {"provider": args.provider, "kill": None, "errors": [], "query_exception": None,
                    "version": version, "batch_times": {}}
    started = time.monotonic()
    spark = build_session(args.provider, args.max_bytes, s3a_spark_settings(args.s3) if args.s3 else {})
    sc = spark.sparkContext
    app_id = sc.applicationId
    report["app_id"] = app_id

    def store_files(partition: int) -> tuple[list[str], list[str]]:
        """The early-commit segments and changelogs of the kill batch's version in a store."""
        return streaming_harness.version_files(checkpoint / "state" / "0" / str(partition), version)

    def early_committed_and_uncommitted(partition: int) -> bool:
        segments, changelogs = store_files(partition)
        return len(segments) >= args.kill_after_segments and not changelogs

    def kill_mid_write() -> None:
        """SIGKILLs the executor of a stateful task whose store has committed early and not committed."""
        try:
            victim = wait_for(lambda: stateful_task_to_kill(sc, app_id, early_committed_and_uncommitted), 180, 0.05)
            if victim is None:
                report["errors"].append(
                    f"no running stateful task whose store wrote {args.kill_after_segments} early-commit "
                    f"segments of version {version} without committing it: tasks {running_stateful_tasks(sc)}, "
                    f"files {({p: store_files(p) for p in PARTITIONS})}")
                return
            batch_commit = checkpoint / "commits" / str(args.kill_batch)
            killed_at = time.time()
            os.kill(victim.pid, signal.SIGKILL)
            died = wait_for(lambda: process_is_gone(victim.pid), 30, 0.01) is not None
            # Listed once the JVM is gone: everything the killed attempt wrote is on disk by now, and
            # the retry of its task cannot have run yet (Spark has barely noticed the loss).
            segments, changelogs = store_files(victim.partition)
            report["kill"] = {
                **victim._asdict(), "killed_at": killed_at, "died": died,
                "segments_at_kill": segments, "changelogs_at_kill": changelogs,
                "batch_committed_at_kill": batch_commit.exists(),
                "other_stores_at_kill": {p: store_files(p) for p in PARTITIONS if p != victim.partition},
            }
        except Exception as error:
            report["errors"].append(f"killer: {type(error).__name__}: {error}")

    def record_retry_changelogs() -> None:
        """The changelogs of the kill batch's version in the killed task's store, with their mtimes.
        Read at the next batch (cleanup deletes them a few batches later), else after the query."""
        kill = report["kill"]
        if kill and "changelogs_after" not in report:
            store = checkpoint / "state" / "0" / str(kill["partition"])
            report["changelogs_after"] = {name: (store / name).stat().st_mtime
                                          for name in store_files(kill["partition"])[1]}

    def write_output(df, batch_id: int) -> None:
        if batch_id > args.kill_batch:
            record_retry_changelogs()
        # The batch's offset-log entry is written before it runs; cleanup drops it a few batches later.
        report["batch_times"].update(streaming_harness.offset_log_times(checkpoint))
        killer = kill_mid_write if batch_id == args.kill_batch and report["kill"] is None else None
        with alongside(killer, 200):
            df.write.mode("overwrite").parquet(str(work_dir / "output" / f"batch-{batch_id:03d}"))
        time.sleep(args.batch_pause)

    try:
        if not wait_for(lambda: len(executor_ids(sc)) >= 2, 90):
            raise RuntimeError(f"two executors did not register within 90 s: {executor_ids(sc)}")
        report["executors_before"] = executor_ids(sc)
        report["executor_processes_before"] = executor_processes(app_id)

        # Set on the session, not the SparkConf, so the state read-back below can go without it.
        spark.conf.set(LOCAL_DIR_CONF, str(work_dir / "local-state"))
        if args.ttl is not None:
            spark.conf.set(TTL_CONF, args.ttl)
        events = spark.readStream.schema(query_kind.schema).option("maxFilesPerTrigger", 1).json(str(args.input))
        query = (
            query_kind.build(events)
            .writeStream.outputMode(query_kind.output_mode)
            .option("checkpointLocation", str(checkpoint))
            .foreachBatch(write_output)
            .trigger(availableNow=True)
            .start()
        )
        try:
            streaming_harness.await_available_now(query, args.timeout, "the executor-failure query")
        except AssertionError as error:  # it failed, or did not finish in time (then it was stopped)
            report["query_exception"] = str(error)
        report["progress"] = streaming_harness.progress_dicts(query)

        # The worker relaunches the killed executor; wait for the replacement to register.
        kill = report["kill"] or {}
        wait_for(lambda: len([e for e in executor_ids(sc) if e != kill.get("executor_id")]) >= 2, 60)
        report["executors_after"] = executor_ids(sc)
        report["executor_processes_after"] = executor_processes(app_id)
        record_retry_changelogs()
        report["recorded_provider"] = streaming_harness.recorded_provider(checkpoint)
        if report["query_exception"] is None:
            spark.conf.unset(LOCAL_DIR_CONF)
            # Spark's own state reader (4.0+) reads any provider's state independently of txstate;
            # 3.5 has none, so there the txstate data source reads the checkpoint's files.
            reader = "statestore" if streaming_harness.SPARK_LINE >= (4, 0) else "txstate"
            state = spark.read.format(reader).load(str(checkpoint))
            query_kind.state_columns(state).write.parquet(str(work_dir / "state-dump"))
    except Exception as error:
        report["errors"].append(f"{type(error).__name__}: {streaming_harness.describe_failure(error)}")
    finally:
        report["job_seconds"] = round(time.monotonic() - started, 1)
        args.result.write_text(json.dumps(report, indent=1, default=str))
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
