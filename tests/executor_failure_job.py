"""A streaming aggregation on a local standalone cluster that loses an executor mid-batch.

Run by test_executor_failure.py in its own process (it needs its own SparkContext, on
`local-cluster[2,1,1024]`: a master and two workers inside the driver JVM, each worker launching one
executor JVM). The job:
  1. writes BATCHES input files, one micro-batch each, of rows (k, v) over a dozen keys;
  2. runs `groupBy(k).agg(count, sum)` in update mode with the given state store provider,
     collecting every batch's rows in the driver with foreachBatch;
  3. while batch KILL_BATCH's stateful tasks run (a Python filter after the aggregation sleeps on
     each row while a flag file exists, so those tasks last a few seconds), SIGKILLs one executor
     JVM of this application; Spark retries the lost tasks and the standalone worker launches a
     replacement executor;
  4. writes a JSON report: the input rows, every batch's output, which executor it killed, the
     executors before and after, and each batch's durations.

The test computes the expected counts from the input and compares; this script asserts nothing
except that it could do what it was asked (a kill that found no executor fails it).

Usage: executor_failure_job.py --work-dir DIR --result FILE [--provider CLASS] [--batches N]
       [--kill-batch B] [--timeout SECONDS]
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import streaming_harness  # noqa: E402

KEYS = [f"k{i:02d}" for i in range(12)]
ROWS_PER_BATCH = 30
SLEEP_PER_ROW_S = 0.5  # in the slowed batch; about six keys per partition, so ~3 s per task


def input_batches(count: int) -> list[list[dict]]:
    """Deterministic rows: batch b holds ROWS_PER_BATCH rows over a shifting subset of KEYS."""
    batches = []
    for b in range(count):
        rows = []
        for i in range(ROWS_PER_BATCH):
            key = KEYS[(b * 5 + i * 7) % len(KEYS)] if i % 3 else KEYS[(b + i) % len(KEYS)]
            rows.append({"k": key, "v": (b + 1) * 100 + i - 15})
        batches.append(rows)
    return batches


def executor_processes(app_id: str) -> dict[str, int]:
    """Executor id -> pid of this application's CoarseGrainedExecutorBackend JVMs."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in args if a]
        if not any(a.endswith("CoarseGrainedExecutorBackend") for a in argv):
            continue
        if app_id not in argv:
            continue
        if "--executor-id" in argv:
            found[argv[argv.index("--executor-id") + 1]] = int(entry.name)
    return found


def executor_ids(sc) -> list[str]:
    ids = sc._jsc.sc().getExecutorIds()
    return sorted(ids.apply(i) for i in range(ids.size()))


def wait_for(predicate, timeout_s: float, step_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step_s)
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--provider", default=streaming_harness.candidate_provider())
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--kill-batch", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args()

    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    work_dir: Path = args.work_dir
    slow_flag = work_dir / "slow-batch.flag"
    batches = input_batches(args.batches)
    inputs = streaming_harness.InputFiles(work_dir / "input", ["events"])
    for index, rows in enumerate(batches):
        inputs.write_batch(index, {"events": rows})

    builder = SparkSession.builder.master("local-cluster[2,1,1024]").appName("txstate-executor-failure")
    for key, value in streaming_harness.spark_settings(streaming_harness.plugin_jar()).items():
        builder = builder.config(key, value)
    builder = (
        builder.config("spark.executor.memory", "768m")
        .config("spark.driver.memory", "1g")
        .config("spark.task.maxFailures", "4")
        .config(streaming_harness.PROVIDER_CLASS_CONF, args.provider)
    )
    spark = builder.getOrCreate()
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    app_id = sc.applicationId
    report: dict = {
        "app_id": app_id,
        "provider": args.provider,
        "input_batches": batches,
        "output_batches": {},
        "kill": None,
        "errors": [],
    }

    try:
        ready = wait_for(lambda: len(executor_ids(sc)) >= 2, 90)
        report["executors_before"] = executor_ids(sc)
        if not ready:
            raise RuntimeError(f"two executors did not register within 90 s: {executor_ids(sc)}")

        def pace(key: str) -> bool:
            if os.path.exists(str(slow_flag)):
                time.sleep(SLEEP_PER_ROW_S)
            return True

        pace_udf = F.udf(pace, BooleanType()).asNondeterministic()

        def running_stateful_tasks() -> list[tuple[str, int, int]]:
            """(executor id, stage id, partition) of the running tasks of the stateful stage,
            the stage with one task per shuffle partition (2)."""
            tracker = sc.statusTracker()
            store = sc._jsc.sc().statusStore()
            running = []
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if not info or info.numTasks != 2:
                    continue
                tasks = store.taskList(stage_id, info.currentAttemptId, 10)
                for i in range(tasks.size()):
                    task = tasks.apply(i)
                    if task.status() == "RUNNING":
                        running.append((task.executorId(), stage_id, task.index()))
            return running

        def kill_one_executor_during_stateful_stage() -> None:
            if not wait_for(running_stateful_tasks, 60, 0.05):
                report["errors"].append("the stateful stage of the kill batch never ran")
                return
            time.sleep(0.6)  # into the tasks, which sleep for seconds
            running = running_stateful_tasks()
            processes = executor_processes(app_id)
            victims = [t for t in running if t[0] in processes]
            if not victims:
                report["errors"].append(
                    f"no running stateful task on a live executor to kill: tasks {running}, "
                    f"executor processes {processes}"
                )
                return
            executor_id, stage_id, partition = victims[0]
            os.kill(processes[executor_id], signal.SIGKILL)
            report["kill"] = {
                "executor_id": executor_id,
                "pid": processes[executor_id],
                "stage_id": stage_id,
                "partition": partition,
                "running_stateful_tasks": running,
                "executor_processes_before_kill": processes,
            }

        def collect(df, batch_id: int) -> None:
            killer = None
            if batch_id == args.kill_batch and report["kill"] is None:
                slow_flag.touch()
                killer = threading.Thread(target=kill_one_executor_during_stateful_stage, daemon=True)
                killer.start()
            try:
                rows = sorted([list(r) for r in df.collect()])
            finally:
                if killer is not None:
                    killer.join(90)
                    slow_flag.unlink(missing_ok=True)
            previous = report["output_batches"].get(str(batch_id))
            if previous is not None and previous != rows:
                report["errors"].append(f"batch {batch_id} delivered twice with different rows")
            report["output_batches"][str(batch_id)] = rows

        events = (
            spark.readStream.schema("k string, v long")
            .option("maxFilesPerTrigger", 1)
            .json(str(inputs.dirs["events"]))
        )
        result = (
            events.groupBy("k")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
            .where(pace_udf(F.col("k")))
        )
        query = (
            result.writeStream.outputMode("update")
            .option("checkpointLocation", str(work_dir / "checkpoint"))
            .foreachBatch(collect)
            .trigger(availableNow=True)
            .start()
        )
        try:
            finished = query.awaitTermination(args.timeout)
        except Exception as error:  # the query failed
            report["errors"].append(f"query failed: {streaming_harness.describe_failure(error)}")
            finished = True
        if not finished:
            report["errors"].append(f"query did not finish within {args.timeout:.0f} s")
            query.stop()
        report["query_exception"] = str(query.exception()) if query.exception() else None

        # The worker relaunches the killed executor; wait for the replacement to register.
        killed = (report["kill"] or {}).get("executor_id")
        wait_for(lambda: len([e for e in executor_ids(sc) if e != killed]) >= 2, 60)
        report["executors_after"] = executor_ids(sc)

        report["batch_durations_ms"] = {
            p["batchId"]: p["durationMs"] for p in query.recentProgress
        }
        report["recorded_provider"] = streaming_harness.recorded_provider(work_dir / "checkpoint")
    except Exception as error:
        report["errors"].append(f"{type(error).__name__}: {streaming_harness.describe_failure(error)}")
    finally:
        args.result.write_text(json.dumps(report, indent=1, default=str))
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
