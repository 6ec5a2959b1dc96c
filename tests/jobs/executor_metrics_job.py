"""A word count on `local-cluster[1,1,1024]` with Spark's CSV metrics sink, configured by configure().

Run by test_executor_metrics.py in its own process (a real executor JVM). configure() enables
txstate's plugin (spark.plugins); the sink writes every metric of the driver and the executor to a CSV file of its own each second. The
job runs two micro-batches, small enough per store to commit early several times, then waits,
with the query still running (its stores open), until the executor's sink has reported twice more
and reports each plugin metric's last value next to the query's progress. It asserts nothing.

Usage: executor_metrics_job.py --work-dir DIR --result FILE
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the harness package

from harness.cluster_tasks import wait_for  # noqa: E402
from harness.executor_metric_names import SOURCE_NAME  # noqa: E402
WORDS_PER_BATCH = 60
SINK_WAIT_S = 60


def session(metrics_dir: Path):
    import pyspark
    from pyspark.sql import SparkSession

    from txstate_spark import configure

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    sink = "spark.metrics.conf.*.sink.csv."
    builder = (SparkSession.builder.master("local-cluster[1,1,1024]").appName("txstate-executor-metrics")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.executor.memory", "1g")
               .config(sink + "class", "org.apache.spark.metrics.sink.CsvSink")
               .config(sink + "period", "1")
               .config(sink + "unit", "seconds")
               .config(sink + "directory", str(metrics_dir)))
    return configure(builder, max_uncommitted_records=8, max_native_memory_mb=64, max_heap_memory_mb=32).getOrCreate()


def plugin_files(metrics_dir: Path, app_id: str) -> dict[str, Path]:
    """The executor's CSV file of each plugin metric: `<app>.<executor>.plugin...TxStatePlugin.<name>.csv`."""
    prefix = f"{app_id}.0.{SOURCE_NAME}."
    return {p.name[len(prefix):-len(".csv")]: p for p in metrics_dir.glob(f"{prefix}*.csv")}


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args()
    metrics_dir = args.work_dir / "metrics"
    metrics_dir.mkdir(parents=True, exist_ok=True)
    source = args.work_dir / "input"
    source.mkdir()

    spark = session(metrics_dir)
    spark.sparkContext.setLogLevel("WARN")
    app_id = spark.sparkContext.applicationId
    try:
        counts = spark.readStream.option("maxFilesPerTrigger", 1).text(str(source)).groupBy("value").count()
        query = (counts.writeStream.format("noop").outputMode("update").trigger(processingTime="500 milliseconds")
                 .option("checkpointLocation", str(args.work_dir / "checkpoint")).start())
        progress: list[dict] = []
        for batch in range(2):
            (source / f"{batch}.txt").write_text("".join(f"w{batch}-{i}\n" for i in range(WORDS_PER_BATCH)))

            def processed() -> bool:
                progress[:] = [json.loads(p.json) if hasattr(p, "json") else p for p in query.recentProgress]
                return sum(p["numInputRows"] for p in progress) == WORDS_PER_BATCH * (batch + 1)

            if not wait_for(processed, 120):
                raise RuntimeError(f"batch {batch} was not processed: {query.exception() or query.status}")
        # The stores stay open under the running query; the sink reports twice more after the last batch.
        seen_rows = {name: len(rows(path)) for name, path in plugin_files(metrics_dir, app_id).items()}
        reported = wait_for(lambda: len(plugin_files(metrics_dir, app_id)) > 0 and all(
            len(rows(path)) >= seen_rows.get(name, 0) + 2 for name, path in plugin_files(metrics_dir, app_id).items()),
            SINK_WAIT_S)
        files = plugin_files(metrics_dir, app_id)
        last = {name: read[-1] for name, path in files.items() if (read := rows(path))}
        report = {"app_id": app_id, "reported_twice_more": bool(reported), "metrics": last,
                  "progress": [json.loads(p.json) if hasattr(p, "json") else p for p in query.recentProgress],
                  "plugins": spark.sparkContext.getConf().get("spark.plugins"),
                  "files": sorted(p.name for p in metrics_dir.iterdir())}
        query.stop()
        args.result.write_text(json.dumps(report, indent=1))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
