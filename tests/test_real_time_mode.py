"""Spark 4.3's stateful real-time mode on txstate: refused by Spark, clearly, before anything runs.

Spark 4.3 runs dropDuplicates and aggregations in real-time mode (`trigger(realTime=...)`) with
its own RocksDB provider only: a query started with any other provider fails at start with
STREAMING_REAL_TIME_MODE.SQL_CONFIGURATION_NOT_SUPPORTED, naming the provider setting. This test
pins that down. If it fails, Spark has started accepting other providers in real-time mode, and
txstate's exactness there must be tested before the README says it works.
"""

from pathlib import Path

import pyspark
import pytest
from pyspark.sql import functions as F

from harness import streaming_harness

SPARK_LINE = tuple(int(part) for part in pyspark.__version__.split(".")[:2])


@pytest.mark.skipif(SPARK_LINE < (4, 3), reason="stateful real-time mode came with Spark 4.3")
def test_a_stateful_real_time_query_on_txstate_is_refused_naming_the_provider_setting(
    spark, candidate_provider: str, tmp_path: Path
) -> None:
    spark.conf.set(streaming_harness.PROVIDER_CLASS_CONF, candidate_provider)
    counts = (spark.readStream.format("rate").option("rowsPerSecond", "10").load()
              .groupBy((F.col("value") % 5).alias("k")).count())
    writer = (counts.writeStream.outputMode("update").format("console")
              .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(realTime="5 seconds"))
    try:
        query = writer.start()
    except Exception as error:  # Spark refuses at start (a py4j-wrapped IllegalArgumentException)
        message = str(error)
    else:
        try:
            query.awaitTermination(30)
        finally:
            query.stop()
        pytest.fail(f"real-time mode ran on {candidate_provider}: check its results, then the README")
    assert "STREAMING_REAL_TIME_MODE" in message, message
    assert streaming_harness.PROVIDER_CLASS_CONF in message, message
    assert not (tmp_path / "checkpoint" / "state").exists(), "the refused query must not have written state"
