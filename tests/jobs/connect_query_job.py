"""A Spark Connect client that runs a stateful query on a Connect server and reads its state.

test_txstate_source_connect.py runs it in its own interpreter (a Connect client never shares a
process with a classic session) against a real local Connect server started with our jar. It:
  1. starts the counting stream of harness/counting_stream.py (rate-micro-batch, key
     value % 12) on the server, with the txstate provider, and waits for two commits;
  2. reads the state through `spark.read.format("txstate")` (key equality, IN, full scan) and SQL;
  3. runs StateQueryRequest.execute(spark) on the Connect session (key, multi-key, scan pages),
     which goes through the data source, and records the result types;
  4. times one key lookup through the source and through StateQueryRequest (the benchmark reads it).
It prints one JSON line (prefixed RESULT) with plain values the test checks against its model.

Usage: SPARK_CONNECT_URL=sc://... python connect_query_job.py CHECKPOINT_DIR
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from typing import Any

ROWS_PER_BATCH = 600
KEYS = 12


def main(checkpoint: str) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import txstate_spark
    from txstate_spark.query import (
        KeyQuery,
        MultiKeyQuery,
        QueryResult,
        ScanQuery,
        StateQueryRequest,
        StateQueryResult,
    )

    spark = SparkSession.builder.remote(os.environ["SPARK_CONNECT_URL"]).getOrCreate()
    report: dict[str, Any] = {"session": type(spark).__module__}
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", "txstate.spark.TxStateStoreProvider")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    source = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    counts = source.withColumn("k", F.col("value") % KEYS).groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("value").alias("total"), F.max("value").alias("top"))
    query = (counts.writeStream.queryName("connect_counting").format("noop").outputMode("update")
             .option("checkpointLocation", checkpoint).trigger(processingTime="300 milliseconds").start())
    try:
        deadline = time.monotonic() + 180
        while not os.path.exists(os.path.join(checkpoint, "commits", "1")):
            if time.monotonic() > deadline:
                raise TimeoutError("two batches were not committed within 180 s")
            time.sleep(0.2)

        def rows(df) -> list[list[Any]]:
            return [[r.key.k, list(r.value), r.partition_id, r.batch_id] for r in df.collect()]

        by_name = spark.read.format("txstate").option("queryName", "connect_counting").load()
        report["source_key"] = rows(by_name.where("key.k = 5"))
        report["source_in"] = rows(by_name.where("key.k IN (1, 2, 3)"))
        report["source_scan"] = rows(spark.read.format("txstate").load(checkpoint))
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW connect_counts USING txstate "
                  f"OPTIONS (path '{checkpoint}', operator 'stateStoreSave')")
        report["sql"] = [list(r) for r in spark.sql(
            "SELECT key.k AS k, value.count AS count, batch_id FROM connect_counts WHERE key.k = 7").collect()]

        store = StateQueryRequest.in_store(query)
        key = store.with_query(KeyQuery.with_key(4)).execute(spark)
        only = key.only_partition_result()
        report["api_key"] = [list(only.result), only.partition, only.position.batch_id]
        report["api_types"] = [type(key).__name__, type(only).__name__,
                               isinstance(key, StateQueryResult) and isinstance(only, QueryResult)]
        multi = store.with_query(MultiKeyQuery.with_keys([0, 11, 99])).execute(spark)
        report["api_multi"] = {str(p): [None if v is None else list(v) for v in r.result]
                               for p, r in multi.partition_results.items()}
        report["api_multi_batches"] = {str(p): r.position.batch_id for p, r in multi.partition_results.items()}
        scanned = []
        for page in StateQueryRequest.in_store(checkpoint).with_query(ScanQuery.all().with_limit(5)).pages(spark):
            for p, r in page.partition_results.items():
                scanned += [[row.key.k, list(row.value), p, r.position.batch_id] for row in r.result.rows]
        report["api_scan"] = scanned
        report["api_unknown_store"] = ""
        try:
            StateQueryRequest.in_store(checkpoint, store="nosuch").with_query(KeyQuery.with_key(1)).execute(spark)
        except Exception as error:  # StateQueryError, the type the py4j path raises
            report["api_unknown_store"] = f"{type(error).__name__}: {error}"

        def timed(run, n: int = 20) -> list[float]:
            run()  # warm up
            samples = []
            for _ in range(n):
                started = time.perf_counter()
                run()
                samples.append((time.perf_counter() - started) * 1000)
            return samples

        source_ms = timed(lambda: by_name.where("key.k = 3").collect())
        api_ms = timed(lambda: store.with_query(KeyQuery.with_key(3)).execute(spark))
        report["latency_ms"] = {"source": statistics.median(source_ms), "api": statistics.median(api_ms)}
        # A follower in the Connect server's JVM, started, queried and closed from this client.
        follower = txstate_spark.follow(spark, checkpoint)
        followed = StateQueryRequest.in_store(follower).with_query(KeyQuery.with_key(6)).execute(spark)
        only = followed.only_partition_result()
        report["follower_key"] = [list(only.result), only.position.batch_id]
        report["follower_source"] = rows(spark.read.format("txstate").option("follower", follower.id).load())
        lag = follower.lag
        report["follower_lag"] = [lag.applied_batch, lag.leader_batch, lag.batches]
        follower.close()
        report["still_active"] = query.isActive
    finally:
        query.stop()
        spark.stop()
    return report


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1])))
