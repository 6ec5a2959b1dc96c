"""Streaming aggregations on `local-cluster[2,1,1024]` that make txstate commit early.

Run by test_bounded_memory.py in its own process: it needs its own SparkContext, whose two
executors are real JVMs, so their resident memory can be measured and one of them can be killed.
Two modes:

  huge   one micro-batch of `groupBy(k).agg(count, sum)` over a parquet input directory written by
         the test (millions of new keys), with the given `maxUncommittedBytes`. While the query runs
         a thread polls `/proc/<pid>/status` (VmRSS, VmHWM) of the application's executor JVMs every
         200 ms; the executors' JVM heap peaks come from Spark's own executor metrics (the status
         store behind `/api/v1/applications/<app>/executors` `peakMemoryMetrics`). Optionally the
         final state is read back with `spark.read.format("statestore")` and written as parquet.
  kill   several micro-batches (one parquet file each) with a small `maxUncommittedBytes`; during
         the kill batch, once the store of a running stateful task has written a few early-commit
         segments (`<ckpt>/state/0/<p>/<version>_<id>-<k>.txseg`) and no changelog of the version
         yet, that task's executor JVM is SIGKILLed: mid-batch, between early commits and commit.
         (Nothing after the aggregation can pace it: in a streaming aggregation the operator after
         the state store is a hash aggregate that drains it, so the store has committed before any
         row reaches a later filter or UDF.) The final state is written as parquet.

The job asserts nothing: it writes a JSON report (progress metrics, memory numbers, the kill, the
query's error if any); the test computes the expected state from the input and compares.

Usage: bounded_memory_job.py huge --input DIR --work-dir DIR --result FILE --max-bytes 32m [--dump-state]
                                  [--provider CLASS] [--conf KEY=VALUE ...]
       bounded_memory_job.py kill --input DIR --work-dir DIR --result FILE --max-bytes 1m --kill-batch B
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the harness and servers packages

from harness import streaming_harness  # noqa: E402
from harness.cluster_tasks import (  # noqa: E402
    executor_ids, executor_processes, running_stateful_tasks, stateful_task_to_kill, wait_for)

TXSTATE = "spark.sql.streaming.stateStore.txstate."
MAX_BYTES_CONF = TXSTATE + "maxUncommittedBytes"
LOCAL_DIR_CONF = TXSTATE + "localDir"
SCHEMA = "k long, v long"
# A multiplier coprime with every key count used here (odd, not a multiple of 5): spreads keys.
KEY_MULTIPLIER = 2654435761
HEAP_METRICS = ("JVMHeapMemory", "JVMOffHeapMemory", "ProcessTreeJVMRSSMemory", "OnHeapExecutionMemory",
                "TotalGCTime", "MajorGCCount")


# --------------------------------------------------------------------------------------------
# Input (written by the test with pyarrow, no Spark) and its expected aggregation


def huge_keys(rows: int, keys: int):
    """Row i has key (i % keys) * KEY_MULTIPLIER % keys and value i: `keys` distinct keys in a
    scrambled order, the first `rows - keys` of them twice."""
    import numpy as np

    i = np.arange(rows, dtype=np.int64)
    return (i % keys) * KEY_MULTIPLIER % keys, i


def write_parquet_file(path: Path, k, v) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"k": k, "v": v}), path, row_group_size=1 << 20)


def write_parquet(path: Path, k, v, files: int) -> None:
    """The rows as `files` parquet files (so the reading stage has several tasks)."""
    path.mkdir(parents=True, exist_ok=True)
    bounds = [len(k) * f // files for f in range(files + 1)]
    for f in range(files):
        write_parquet_file(path / f"part-{f:03d}.parquet", k[bounds[f]:bounds[f + 1]], v[bounds[f]:bounds[f + 1]])


def expected_state(batches) -> dict:
    """Key -> (count, sum) over every (k, v) array pair in `batches`, as numpy arrays sorted by key."""
    import numpy as np

    k = np.concatenate([b[0] for b in batches])
    v = np.concatenate([b[1] for b in batches])
    order = np.argsort(k, kind="stable")
    k, v = k[order], v[order]
    keys, starts, counts = np.unique(k, return_index=True, return_counts=True)
    sums = np.add.reduceat(v, starts) if len(v) else v
    return {"k": keys, "n": counts.astype(np.int64), "total": sums.astype(np.int64)}


def read_state_dump(path: Path) -> dict:
    """The state rows the job wrote (k, n, total), as numpy arrays sorted by key."""
    import numpy as np
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    k = table.column("k").to_numpy()
    order = np.argsort(k, kind="stable")
    return {name: table.column(name).to_numpy()[order] for name in ("k", "n", "total")}


def compare_state(got: dict, want: dict) -> list[str]:
    """Differences between two states (empty when equal), described for an assertion message."""
    import numpy as np

    problems = []
    if len(got["k"]) != len(want["k"]):
        problems.append(f"{len(got['k'])} state rows, expected {len(want['k'])}")
    if len(np.unique(got["k"])) != len(got["k"]):
        problems.append(f"{len(got['k']) - len(np.unique(got['k']))} duplicate keys in the state")
    missing = np.setdiff1d(want["k"], got["k"])
    extra = np.setdiff1d(got["k"], want["k"])
    if len(missing):
        problems.append(f"{len(missing)} keys missing, e.g. {missing[:5].tolist()}")
    if len(extra):
        problems.append(f"{len(extra)} unexpected keys, e.g. {extra[:5].tolist()}")
    if not problems:
        for name in ("n", "total"):
            wrong = np.nonzero(got[name] != want[name])[0]
            if len(wrong):
                sample = [(int(want["k"][i]), int(got[name][i]), int(want[name][i])) for i in wrong[:5]]
                problems.append(f"{len(wrong)} keys with a wrong {name} (key, got, expected): {sample}")
    return problems


# --------------------------------------------------------------------------------------------
# Executor memory


def read_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in bytes (empty once it is gone)."""
    values = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return values


def open_files(pid: int) -> int:
    """How many descriptors process `pid` holds open now (0 once it is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class RssMonitor(threading.Thread):
    """Polls the application's executor JVMs every `interval_s`: peak VmRSS and open files seen, last VmHWM."""

    def __init__(self, app_id: str, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.app_id = app_id
        self.interval_s = interval_s
        self.peaks: dict[str, dict] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        processes: dict[str, int] = {}
        last_scan = 0.0
        while not self._stop_event.is_set():
            if time.monotonic() - last_scan > 1.0:
                processes = executor_processes(self.app_id)
                last_scan = time.monotonic()
            self.sample(processes)
            self._stop_event.wait(self.interval_s)

    def sample(self, processes: dict[str, int]) -> None:
        for executor_id, pid in processes.items():
            status = read_status(pid)
            if not status:
                continue
            entry = self.peaks.setdefault(executor_id, {"pid": pid, "peak_rss": 0, "hwm": 0, "samples": 0,
                                                        "peak_open_files": 0})
            entry["peak_rss"] = max(entry["peak_rss"], status.get("VmRSS", 0))
            entry["hwm"] = max(entry["hwm"], status.get("VmHWM", 0))
            entry["peak_open_files"] = max(entry["peak_open_files"], open_files(pid))
            entry["samples"] += 1

    def finish(self) -> dict[str, dict]:
        self._stop_event.set()
        self.join(5)
        self.sample(executor_processes(self.app_id))  # VmHWM once more, before the executors exit
        return self.peaks


def executor_peak_metrics(sc) -> dict[str, dict]:
    """Per executor, Spark's own peak executor metrics (JVM heap and friends), if it has them."""
    result: dict[str, dict] = {}
    summaries = sc._jsc.sc().statusStore().executorList(False)
    for i in range(summaries.size()):
        summary = summaries.apply(i)
        if summary.id() == "driver":
            continue
        peaks = summary.peakMemoryMetrics()
        if peaks.isDefined():
            metrics = peaks.get()
            result[summary.id()] = {name: int(metrics.getMetricValue(name)) for name in HEAP_METRICS}
    return result


# --------------------------------------------------------------------------------------------
# The job


def build_session(app_name: str, provider: str, extra: dict[str, str], master: str = "local-cluster[2,1,1024]"):
    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: provider,
        "spark.executor.memory": "1g",
        "spark.driver.memory": "1g",
        # Spark's executor metrics, polled often enough to see the stateful task's heap peak.
        "spark.executor.metrics.pollingInterval": "200ms",
        "spark.executor.processTreeMetrics.enabled": "true",
        "spark.executor.heartbeatInterval": "2s",
        **extra,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def aggregation(spark, input_dir: Path, max_files: int | None):
    from pyspark.sql import functions as F

    reader = spark.readStream.schema(SCHEMA)
    if max_files:
        reader = reader.option("maxFilesPerTrigger", max_files)
    return reader.parquet(str(input_dir)).groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))


def run_query(query, report: dict, timeout_s: float) -> None:
    try:
        finished = query.awaitTermination(timeout_s)
    except Exception as error:  # the query failed
        report["query_exception"] = streaming_harness.describe_failure(error)
        finished = True
    if not finished:
        report["errors"].append(f"query did not finish within {timeout_s:.0f} s")
        query.stop()
    report["progress"] = [json.loads(p.json) for p in query.recentProgress]


def dump_state(spark, checkpoint: Path, target: Path) -> None:
    state = spark.read.format("statestore").load(str(checkpoint))
    # The value struct is the aggregation buffer (count, sum), whatever the output columns are called.
    state.select("key.k", "value.*").toDF("k", "n", "total").write.parquet(str(target))


def run_huge(args, report: dict) -> None:
    from pyspark.sql import functions as F

    spark = build_session("txstate-bounded-memory-huge", args.provider, {
        MAX_BYTES_CONF: args.max_bytes,
        "spark.task.maxFailures": "2",  # an executor OOM fails the query after one retry
        **dict(setting.split("=", 1) for setting in args.conf),  # e.g. bench/memory_bench.py's peers
    })
    sc = spark.sparkContext
    report["app_id"] = sc.applicationId
    try:
        if not wait_for(lambda: len(executor_ids(sc)) >= 2, 90):
            raise RuntimeError(f"two executors did not register within 90 s: {executor_ids(sc)}")
        monitor = RssMonitor(sc.applicationId)
        monitor.start()
        summaries: dict = {}

        def summarize(df, batch_id: int) -> None:
            row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("n").alias("n"), F.sum("total").alias("total"),
                         F.min("n").alias("min_n"), F.max("n").alias("max_n")).collect()[0]
            summaries[str(batch_id)] = row.asDict()

        started = time.monotonic()
        started_wall = time.time()
        query = (
            aggregation(spark, args.input, None).writeStream.outputMode("update")
            .option("checkpointLocation", str(args.work_dir / "checkpoint"))
            .foreachBatch(summarize)
            .trigger(availableNow=True)
            .start()
        )
        run_query(query, report, args.timeout)
        report["query_seconds"] = round(time.monotonic() - started, 1)
        report["rss"] = monitor.finish()
        report["heap"] = executor_peak_metrics(sc)
        report["summaries"] = summaries
        report["executors_after"] = executor_ids(sc)
        report["segment_seconds"] = segment_times(args.work_dir / "checkpoint", started_wall)
        if args.dump_state and report.get("query_exception") is None:
            started = time.monotonic()
            dump_state(spark, args.work_dir / "checkpoint", args.work_dir / "state-dump")
            report["dump_seconds"] = round(time.monotonic() - started, 1)
    finally:
        spark.stop()


def segments(checkpoint: Path, partition: int, version: int) -> list[str]:
    directory = checkpoint / "state" / "0" / str(partition)
    try:
        return sorted(p.name for p in directory.iterdir()
                      if p.name.endswith(".txseg") and p.name.startswith(f"{version}_"))
    except FileNotFoundError:
        return []


def store_loads(app_id: str) -> list[dict]:
    """The provider's "loaded version" log lines from every executor of the application (the
    standalone workers keep each executor's stderr under $SPARK_HOME/work/<app>/<executor>/)."""
    loads = []
    for stderr in sorted((Path(os.environ["SPARK_HOME"]) / "work" / app_id).glob("*/stderr")):
        for line in stderr.read_text(errors="replace").splitlines():
            if "txstate: loaded version" in line:
                loads.append({"executor_id": stderr.parent.name, "line": line})
    return loads


def segment_times(checkpoint: Path, since: float) -> dict[str, list[float]]:
    """Per partition, when each early-commit segment and the changelog were written (seconds
    after `since`), to show the pace of the stateful task."""
    result = {}
    for store in sorted((checkpoint / "state" / "0").glob("[0-9]*")):
        files = [p for p in store.iterdir() if p.name.endswith((".txseg", ".txlog"))]
        result[store.name] = sorted(round(p.stat().st_mtime - since, 1) for p in files)
    return result


def changelogs(checkpoint: Path, partition: int, version: int) -> list[str]:
    directory = checkpoint / "state" / "0" / str(partition)
    return sorted(p.name for p in directory.glob(f"{version}.txlog")) + sorted(
        p.name for p in directory.glob(f"{version}_*.txlog"))


def run_kill(args, report: dict) -> None:
    from pyspark.sql import functions as F

    spark = build_session("txstate-bounded-memory-kill", args.provider, {
        MAX_BYTES_CONF: args.max_bytes,
        "spark.task.maxFailures": "4",
        # Stable local RocksDB directories shared by both executors: the retried task of the
        # killed executor's partition reopens the directory the killed JVM left mid-batch.
        LOCAL_DIR_CONF: str(args.work_dir / "local-state"),
        # The local RocksDB runs without a WAL: only flushed memtables survive a SIGKILL. With 1 MiB
        # memtables the early commits reach disk (with their in-flight marker; flushes are atomic
        # across column families) before the kill, so the retry reopens a version in flight.
        TXSTATE + "writeBufferSizeMB": "1",
    })
    sc = spark.sparkContext
    app_id = sc.applicationId
    report["app_id"] = app_id
    checkpoint = args.work_dir / "checkpoint"
    version = args.kill_batch + 1  # batch b commits version b + 1
    try:
        if not wait_for(lambda: len(executor_ids(sc)) >= 2, 90):
            raise RuntimeError(f"two executors did not register within 90 s: {executor_ids(sc)}")
        report["executors_before"] = executor_ids(sc)

        def victim():
            """A running stateful task on a live executor whose store has committed early
            `--kill-after-segments` times and not committed yet."""
            return stateful_task_to_kill(sc, app_id, lambda partition: (
                len(segments(checkpoint, partition, version)) >= args.kill_after_segments
                and not changelogs(checkpoint, partition, version)))

        def kill_during_early_committed_batch() -> None:
            try:
                found = wait_for(victim, 90, 0.05)
                if not found:
                    report["errors"].append(
                        f"no running stateful task with {args.kill_after_segments} early-commit segments of "
                        f"version {version}: "
                        f"tasks {running_stateful_tasks(sc)}, segments "
                        f"{[segments(checkpoint, p, version) for p in (0, 1)]}")
                    return
                executor_id, pid, stage_id, partition = found
                listed = {p: segments(checkpoint, p, version) for p in (0, 1)}
                os.kill(pid, signal.SIGKILL)
                committed = changelogs(checkpoint, partition, version)
                report["kill"] = {"executor_id": executor_id, "pid": pid, "stage_id": stage_id,
                                  "partition": partition, "segments_at_kill": listed,
                                  "changelogs_of_the_version_at_kill": committed,
                                  "running_stateful_tasks": running_stateful_tasks(sc)}
                time.sleep(1.0)
            except Exception as error:
                report["errors"].append(f"killer: {type(error).__name__}: {error}")

        def collect(df, batch_id: int) -> None:
            killer = None
            if batch_id == args.kill_batch and report["kill"] is None:
                killer = threading.Thread(target=kill_during_early_committed_batch, daemon=True)
                killer.start()
            try:
                row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("n").alias("n"),
                             F.sum("total").alias("total")).collect()[0]
            finally:
                if killer is not None:
                    killer.join(120)
            report["summaries"][str(batch_id)] = row.asDict()

        result = aggregation(spark, args.input, 1)
        query = (
            result.writeStream.outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .foreachBatch(collect)
            .trigger(availableNow=True)
            .start()
        )
        run_query(query, report, args.timeout)
        killed = (report["kill"] or {}).get("executor_id")
        wait_for(lambda: len([e for e in executor_ids(sc) if e != killed]) >= 2, 60)
        report["executors_after"] = executor_ids(sc)
        report["segments_after"] = {
            p: sorted(x.name for x in (checkpoint / "state" / "0" / str(p)).glob("*.txseg")) for p in (0, 1)
        }
        report["store_loads"] = store_loads(app_id)
        report["local_dirs"] = sorted(p.name for p in (args.work_dir / "local-state").glob("txstate/*/*"))
        if report.get("query_exception") is None:
            dump_state(spark, checkpoint, args.work_dir / "state-dump")
    finally:
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("huge", "kill"))
    parser.add_argument("--input", required=True, type=Path)
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--max-bytes", required=True)
    parser.add_argument("--provider", default=streaming_harness.candidate_provider())
    parser.add_argument("--dump-state", action="store_true")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="huge mode: an extra Spark setting (repeatable), e.g. for Spark's RocksDB provider")
    parser.add_argument("--kill-batch", type=int, default=1)
    parser.add_argument("--kill-after-segments", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    report: dict = {"mode": args.mode, "provider": args.provider, "max_bytes": args.max_bytes, "errors": [], "query_exception": None,
                    "kill": None, "summaries": {}}
    started = time.monotonic()
    try:
        (run_huge if args.mode == "huge" else run_kill)(args, report)
    except Exception as error:
        report["errors"].append(f"{type(error).__name__}: {streaming_harness.describe_failure(error)}")
    finally:
        report["job_seconds"] = round(time.monotonic() - started, 1)
        args.result.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
