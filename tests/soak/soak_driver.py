"""The soak's Spark driver: three stateful queries on `local-cluster[2,1,1024]`, run in a process of
its own so the harness (soak.py) can SIGKILL it and start it again on the same checkpoints.

It runs, until SIGTERM (then it stops the queries cleanly) or SIGKILL:
  * the queries of soak_model.py (agg, dedup, join) on txstate with a small
    `txstate.maxUncommittedBytes` (so every batch commits early) and a stable `txstate.localDir`
    per query, each over its input directories (one JSON file per batch, `maxFilesPerTrigger=1`),
    each batch's rows written by `foreachBatch` to `output/<query>/<batch>-<attempt>.json` (every
    delivery its own file, so a re-delivered batch is checked too);
  * interactive multi-key queries on the aggregation's store, in a loop, answers appended to
    `iq.jsonl` (each partition's batch id and values) for the harness to check against its model;
  * the queries' progress (load-path metrics per batch), from a listener, appended to `progress.jsonl`;
  * the executor faults the harness asks for (`commands/<n>.json`, see soak_faults.py), results in
    `faults/<n>.json`.
With `<work-dir>/final-dump` present when it stops, it reads the final state of agg and dedup back
through Spark's state data source (a fresh provider, no local directory) into `state-<query>.json`.

Usage: soak_driver.py --work-dir DIR [--max-bytes 128k]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

SOAK_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SOAK_DIR))
sys.path.insert(0, str(SOAK_DIR.parent))
sys.path.insert(0, str(SOAK_DIR.parent.parent / "python"))  # txstate_spark, when not run by `make soak`

from harness import streaming_harness  # noqa: E402
from harness.cluster_tasks import executor_ids, wait_for  # noqa: E402
from jobs.executor_failure_job import LOCAL_DIR_CONF, build_session  # noqa: E402
from soak_faults import FaultRunner  # noqa: E402
from soak_model import QUERIES, SCHEMAS  # noqa: E402

IQ_KEYS_PER_QUERY = 40
IQ_PAUSE_S = 0.5
PROGRESS_METRICS = ("txstateRebuilds", "txstateRollbacks", "txstateChangelogsReplayed", "txstateLoadLatencyMs",
                    "txstateEarlyCommits", "txstateSnapshotUploadedBytes")


def write_json_atomically(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"
    partial.write_text(json.dumps(value))
    os.replace(partial, path)


def append_line(path: Path, value: Any) -> None:
    with path.open("a") as out:
        out.write(json.dumps(value) + "\n")


def build_query(spark, name: str, input_root: Path, files_per_trigger: int = 1):
    from pyspark.sql import functions as F

    def stream(source: str):
        return (spark.readStream.schema(SCHEMAS[source]).option("maxFilesPerTrigger", files_per_trigger)
                .json(str(input_root / source)))

    if name == "agg":
        return stream("agg").groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total")), "update"
    if name == "dedup":
        return stream("dedup").dropDuplicates(["k"]), "append"
    return stream("left").join(stream("right"), "k").select("k", "a", "b"), "append"


def start_query(spark, work_dir: Path, name: str, trigger: str = "300 milliseconds", files_per_trigger: int = 1,
                query_name: str | None = None):
    """Query `name` of soak_model.py on its checkpoint and stable local directory under `work_dir`,
    every delivery of a batch written to its own file under `output/<name>/`."""
    result, mode = build_query(spark, name, work_dir / "input", files_per_trigger)
    out_dir = work_dir / "output" / name

    def deliver(df, batch_id: int) -> None:
        rows = [list(row) for row in df.collect()]
        write_json_atomically(out_dir / f"{batch_id:06d}-{uuid.uuid4().hex[:8]}.json", rows)

    # The session clones its conf when a query starts: each query gets its own stable localDir.
    with streaming_harness.session_conf(spark, {LOCAL_DIR_CONF: str(work_dir / "local" / name)}):
        return (
            result.writeStream.queryName(query_name or f"soak_{name}").outputMode(mode)
            .option("checkpointLocation", str(work_dir / "checkpoint" / name))
            .foreachBatch(deliver).trigger(processingTime=trigger).start()
        )


def start_queries(spark, work_dir: Path) -> dict[str, Any]:
    return {name: start_query(spark, work_dir, name) for name in QUERIES}


def interactive_queries(spark, target: Callable[[], Any], log: Path, agg_keys: int, stop: threading.Event) -> None:
    """Multi-key queries on the aggregation's store until `stop`, each asked of what `target()`
    gives then (the running query, or a follower); every answer (or failure) appended to `log`."""
    from txstate_spark.query import MultiKeyQuery, StateQueryRequest

    rng = random.Random(os.getpid())
    while not stop.wait(IQ_PAUSE_S):
        keys = rng.sample(range(agg_keys), IQ_KEYS_PER_QUERY)
        record: dict[str, Any] = {"at": time.time(), "keys": keys, "partitions": {}, "failures": {}}
        try:
            store = StateQueryRequest.in_store(target())
            result = store.with_query(MultiKeyQuery.with_keys([{"k": k} for k in keys])).execute(spark)
            for p, r in result.partition_results.items():
                if r.is_success:
                    record["partitions"][str(p)] = {
                        "batch": r.position.batch_id,
                        "values": [None if v is None else [int(x) for x in v] for v in r.result]}
                else:
                    record["failures"][str(p)] = str(r.failure_reason)
        except Exception as error:  # the query restarting, an executor gone: counted, not checked
            record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        append_line(log, record)


def progress_listener(work_dir: Path, names: dict[str, str]):
    """A listener appending each batch's load-path metrics (summed over its stores) to progress.jsonl."""
    from pyspark.sql.streaming import StreamingQueryListener

    class ProgressToFile(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            pass

        def onQueryProgress(self, event) -> None:
            progress = json.loads(event.progress.json)
            name = names.get(progress.get("name") or "")
            if name is None or not progress.get("stateOperators"):
                return
            metrics = {m: sum(int(op.get("customMetrics", {}).get(m, 0)) for op in progress["stateOperators"])
                       for m in PROGRESS_METRICS}
            append_line(work_dir / "progress.jsonl", {"query": name, "batch": progress["batchId"],
                                                       "run": progress["runId"], "metrics": metrics})

        def onQueryIdle(self, event) -> None:
            pass

        def onQueryTerminated(self, event) -> None:
            pass

    return ProgressToFile()


def dump_state(spark, work_dir: Path, source: str = "statestore") -> None:
    """The final state of agg and dedup as a fresh provider reads it from the checkpoint, through
    Spark's state data source (4.0+) or txstate's (`source="txstate"`, on 3.5)."""
    spark.conf.unset(LOCAL_DIR_CONF)
    for name, columns in (("agg", ["key.k", "value.*"]), ("dedup", ["key.k"])):
        state = spark.read.format(source).load(str(work_dir / "checkpoint" / name)).select(*columns)
        write_json_atomically(work_dir / f"state-{name}.json", [list(row) for row in state.collect()])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--max-bytes", default="128k")
    parser.add_argument("--agg-keys", type=int, required=True)
    args = parser.parse_args()
    work_dir: Path = args.work_dir

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    spark = build_session(streaming_harness.TXSTATE_PROVIDER, args.max_bytes)
    sc = spark.sparkContext
    spark.conf.set("spark.sql.streaming.noDataMicroBatches.enabled", "false")
    if not wait_for(lambda: len(executor_ids(sc)) >= 2, 120):
        raise RuntimeError(f"two executors did not register within 120 s: {executor_ids(sc)}")
    spark.streams.addListener(progress_listener(work_dir, {f"soak_{name}": name for name in QUERIES}))
    queries = start_queries(spark, work_dir)
    faults = FaultRunner(sc, work_dir, queries["agg"])
    threads = [threading.Thread(target=interactive_queries,
                                args=(spark, lambda: queries["agg"], work_dir / "iq.jsonl", args.agg_keys, stop),
                                daemon=True),
               threading.Thread(target=faults.serve, args=(stop,), daemon=True)]
    for thread in threads:
        thread.start()
    write_json_atomically(work_dir / "driver-ready.json", {"pid": os.getpid(), "app_id": sc.applicationId})
    code = 0
    while not stop.wait(0.5):
        failed = {name: str(q.exception()) for name, q in queries.items() if q.exception() is not None}
        if failed:
            write_json_atomically(work_dir / "driver-error.json", failed)
            code = 1
            break
    for thread in threads:
        thread.join(2)  # the fault runner may be watching for a phase: it is a daemon
    for query in queries.values():
        query.stop()
    if code == 0 and (work_dir / "final-dump").exists():
        dump_state(spark, work_dir)
    spark.stop()
    return code


if __name__ == "__main__":
    sys.exit(main())
