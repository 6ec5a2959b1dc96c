"""One run of the many-stores benchmark (bench/many_stores_bench.py), in a process of its own.

A stream-stream join and an aggregation run at once in one Spark application on
`local-cluster[1,2,2048]`: one executor JVM hosts every store instance (4 per partition for the
join, 1 for the aggregation). Both queries read their input one file per batch until it is consumed
(`availableNow`). The executor's resident memory is sampled from /proc the whole time. Writes a
JSON report: each query's batch durations and output summary, and the executor's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench_common import PROVIDER_CLASS_CONF
from jobs.bounded_memory_job import RssMonitor, build_session  # tests/, put on sys.path by bench_common
from streaming_workloads import WORKLOADS

EXECUTOR_HEAP = "2g"
QUERY_TIMEOUT_S = 1200


def session(partitions: int, confs: dict[str, str]):
    """The bounded-memory job's session (the plugin jar, executor metrics), on one executor of 2 cores."""
    settings = {"spark.executor.memory": EXECUTOR_HEAP, "spark.driver.memory": "2g",
                "spark.sql.shuffle.partitions": str(partitions), "spark.ui.showConsoleProgress": "false", **confs}
    return build_session("txstate-many-stores", confs[PROVIDER_CLASS_CONF], settings, master="local-cluster[1,2,2048]")


def start(spark, name: str, inputs: dict[str, Path], checkpoint: Path, sums: dict[str, int]):
    workload = next(w for w in WORKLOADS if w.name == name)

    def collect(df, batch_id: int) -> None:
        row = df.agg(*workload.summarize(df)).collect()[0].asDict()
        for column, value in row.items():
            sums[column] = sums.get(column, 0) + (value or 0)

    return (workload.build(spark, inputs).writeStream.outputMode(workload.output_mode)
            .option("checkpointLocation", str(checkpoint)).foreachBatch(collect)
            .trigger(availableNow=True).queryName(name).start())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--confs", required=True, help="the provider's settings, as JSON")
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    inputs = {name: args.inputs / name for name in ("events", "left", "right")}
    report: dict = {"partitions": args.partitions, "errors": []}
    spark = session(args.partitions, json.loads(args.confs))
    monitor = RssMonitor(spark.sparkContext.applicationId)
    monitor.start()
    started = time.monotonic()
    sums = {name: {} for name in ("join", "aggregation")}
    queries = {name: start(spark, name, inputs, args.work / name, sums[name]) for name in sums}
    for name, query in queries.items():
        try:
            if not query.awaitTermination(QUERY_TIMEOUT_S):
                report["errors"].append(f"{name} did not finish within {QUERY_TIMEOUT_S} s")
                query.stop()
        except Exception as failure:  # recorded; the parent reports it
            report["errors"].append(f"{name}: {str(failure).splitlines()[0][:300]}")
    report["seconds"] = round(time.monotonic() - started, 1)
    report["queries"] = {
        name: {"batches": [{"batch": p["batchId"], "ms": p["durationMs"]["triggerExecution"],
                            "state_rows": sum(op["numRowsTotal"] for op in p["stateOperators"])}
                           for p in (json.loads(x.json) for x in query.recentProgress) if p["numInputRows"] > 0],
               "summary": dict(sorted(sums[name].items()))}
        for name, query in queries.items()}
    peaks = monitor.finish()
    report["executor_peak_rss"] = max((p["peak_rss"] for p in peaks.values()), default=None)
    report["executor_hwm"] = max((p["hwm"] for p in peaks.values()), default=None)
    report["executor_peak_open_files"] = max((p.get("peak_open_files", 0) for p in peaks.values()), default=None)
    report["provider"] = spark.conf.get(PROVIDER_CLASS_CONF)
    spark.stop()
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
