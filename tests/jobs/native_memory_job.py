"""A streaming aggregation over 512 store instances on one executor JVM (`local-cluster[1,2,1024]`).

Run by test_native_memory.py in its own process (its own SparkContext, a real executor JVM). Every
store of the executor shares one RocksDB native memory budget (`maxNativeMemoryMB`); the job writes
two small parquet files, runs one micro-batch per file, and reports each batch's progress and where
the executor keeps its stores' local directories. It asserts nothing: the test reads the budget's
metrics from the progress, and checks that the stores' directories are gone once the executor exits.

Usage: native_memory_job.py --work-dir DIR --result FILE --max-native-mb N [--partitions P]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the harness package

from harness import streaming_harness  # noqa: E402
from harness.cluster_tasks import local_cluster_session, store_entries  # noqa: E402

TXSTATE = "spark.sql.streaming.stateStore.txstate."


def build_session(partitions: int, max_native_mb: int):
    return local_cluster_session("local-cluster[1,2,1024]", "txstate-native-memory", {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: "txstate.spark.TxStateStoreProvider",
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.executor.memory": "1g",
        "spark.driver.memory": "1g",
        # Snapshots are not under test: keep maintenance out of the way of 512 stores.
        "spark.sql.streaming.stateStore.maintenanceInterval": "60s",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "10",
        TXSTATE + "maxNativeMemoryMB": str(max_native_mb),
    })


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--max-native-mb", required=True, type=int)
    parser.add_argument("--partitions", type=int, default=512)
    parser.add_argument("--keys", type=int, default=200_000)
    args = parser.parse_args()

    spark = build_session(args.partitions, args.max_native_mb)
    try:
        from pyspark.sql import functions as F

        source = args.work_dir / "input"
        for batch in range(2):
            rows = spark.range(args.keys).select((F.col("id") * 7 + batch).alias("k"), F.lit(batch).alias("v"))
            rows.coalesce(1).write.parquet(str(source / f"part-{batch}"))
        # The file source reads the two directories' files one per batch.
        files = sorted(str(p) for p in source.glob("part-*/*.parquet"))
        for i, f in enumerate(files):
            os.rename(f, source / f"in-{i}.parquet")
        counts = (spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1)
                  .parquet(str(source)).groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s")))
        query = (counts.writeStream.format("noop").outputMode("update").trigger(availableNow=True)
                 .option("checkpointLocation", str(args.work_dir / "checkpoint")).start())
        query.awaitTermination(240)
        # The standalone worker runs each executor in $SPARK_HOME/work/<app>/<executor>.
        app_dir = Path(os.environ["SPARK_HOME"]) / "work" / spark.sparkContext.applicationId
        report = {"progress": [json.loads(p.json) for p in query.recentProgress],
                  "error": str(query.exception()) if query.exception() else None,
                  "app_dir": str(app_dir), "store_dirs_while_running": sum(1 for p in store_entries(app_dir) if p.is_dir())}
        args.result.write_text(json.dumps(report, indent=1, default=str))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
