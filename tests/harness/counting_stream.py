"""The counting stream the interactive-query, data source, follower and serving tests read.

`groupBy(value % KEYS).agg(count, sum, max)` over `rate-micro-batch` with ROWS_PER_BATCH rows per
batch, in update mode on txstate: after batch b every key's (count, sum, max) follows from b alone
(`expected_counter`), so an answer is right only if it is exactly the state of the batch it says it
read. jobs/connect_query_job.py runs the same stream on a Spark Connect server (it keeps its own
copy of the two numbers: it runs in a fresh interpreter without tests/ on sys.path).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from harness import streaming_harness

if TYPE_CHECKING:
    from pyspark.sql import Row

ROWS_PER_BATCH = 600
KEYS = 12  # divides ROWS_PER_BATCH: every batch adds 50 rows to every key


def expected_counter(key: int, batch_id: int) -> tuple[int, int, int]:
    """(count, sum, max) of key `key` after batch `batch_id` of the counting stream."""
    m = (batch_id + 1) * ROWS_PER_BATCH // KEYS
    return m, KEYS * m * (m - 1) // 2 + key * m, (batch_id + 1) * ROWS_PER_BATCH - KEYS + key


def start_counting_stream(spark, checkpoint: Path, name: str, extra_conf: dict | None = None,
                          trigger_ms: int = 300):
    """groupBy(value % KEYS).agg(count, sum, max) over rate-micro-batch, in update mode."""
    from pyspark.sql import functions as F

    source = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_BATCH).load()
    # A named column, not an expression: the state's key schema then says "k".
    counts = source.withColumn("k", F.col("value") % KEYS).groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("value").alias("total"), F.max("value").alias("top"))
    conf = {streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER, **(extra_conf or {})}
    with streaming_harness.session_conf(spark, conf):
        return (counts.writeStream.queryName(name).format("noop").outputMode("update")
                .option("checkpointLocation", str(checkpoint))
                .trigger(processingTime=f"{trigger_ms} milliseconds").start())


def wait_until(predicate, timeout_s: float, what: str, query=None):
    """Polls `predicate` every 200 ms until it returns something truthy (returned); fails when
    `query` (if any) has failed or after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if query is not None and query.exception() is not None:
            raise AssertionError(f"{what}: the query failed: {query.exception()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(0.2)


def check_counter(value: "Row | None", key: int, batch_id: int, context: str) -> None:
    """Asserts `value` is exactly key `key`'s state after batch `batch_id` (`expected_counter`)."""
    want = expected_counter(key, batch_id)
    assert value is not None, f"{context}: key {key} absent at batch {batch_id}"
    assert tuple(value) == want, (
        f"{context}: key {key} at batch {batch_id}: state (count, sum, max) is {tuple(value)}, "
        f"expected {want} (an answer that is not exactly one committed batch)"
    )

