"""The same interactive queries on the same state, for local mode and for local-cluster mode.

test_interactive_queries.py runs this file as a script, in its own process, on
`local-cluster[2,1,1024]` (a master and two workers inside the driver JVM, each launching one
executor JVM, so the stores live in executor processes and queries are served there), and calls
`run_standard_queries` itself on its local[2] session. Both sides:
  1. write the same two input files (`input_batches`): keys (a INT, b STRING) with a value v;
  2. run `groupBy(a, b).agg(count, sum(v))` in update mode with maxFilesPerTrigger=1 and the
     default trigger, so the query stays active, idle, once both files are processed;
  3. wait until batch 1 is committed, then run `run_standard_queries` while the query is active.
The answers are plain JSON-able values so the two modes can be compared for equality.

Usage: interactive_query_job.py --work-dir DIR --result FILE [--master MASTER] [--timeout SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the harness and servers packages

from harness import streaming_harness  # noqa: E402

A_VALUES = 40
B_VALUES = 250  # 10,000 keys
BATCHES = 2
MAX_PAGE = 100_000  # the largest page a request may ask for


def key_b(j: int) -> str:
    return f"b{j:03d}"


def input_batches(a_values: int = A_VALUES, b_values: int = B_VALUES) -> list[list[dict]]:
    """Batch 0: every key (a, b) once; batch 1: the keys with an even b index again."""
    first = [{"a": a, "b": key_b(j), "v": a * 1000 + j} for a in range(a_values) for j in range(b_values)]
    second = [{"a": a, "b": key_b(j), "v": 7 + j} for a in range(a_values) for j in range(0, b_values, 2)]
    return [first, second]


def expected_state(batches: list[list[dict]]) -> dict[tuple, tuple]:
    """(a, b) -> (count, sum of v) after every batch."""
    state: dict[tuple, tuple] = {}
    for rows in batches:
        for row in rows:
            n, total = state.get((row["a"], row["b"]), (0, 0))
            state[(row["a"], row["b"])] = (n + 1, total + row["v"])
    return state


def start_query(spark, work_dir: Path, batches: list[list[dict]], name: str):
    """Write the input files, start the aggregation; it stays active once the files are read."""
    from pyspark.sql import functions as F

    inputs = streaming_harness.InputFiles(work_dir / "input", ["events"])
    for index, rows in enumerate(batches):
        inputs.write_batch(index, {"events": rows})
    events = (
        spark.readStream.schema("a INT, b STRING, v LONG")
        .option("maxFilesPerTrigger", 1)
        .json(str(inputs.dirs["events"]))
    )
    counts = events.groupBy("a", "b").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
    with streaming_harness.session_conf(
        spark, {streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER}
    ):
        return (
            counts.writeStream.queryName(name)
            .format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(work_dir / "checkpoint"))
            .start()
        )


def wait_for_commit(query, checkpoint: Path, batch_id: int, timeout_s: float) -> None:
    """Wait until the query's commit log has `batch_id` (every partition committed it)."""
    deadline = time.monotonic() + timeout_s
    while not (checkpoint / "commits" / str(batch_id)).exists():
        if query.exception() is not None:
            raise AssertionError(f"the query failed: {streaming_harness.describe_failure(query.exception())}")
        if time.monotonic() > deadline:
            raise AssertionError(
                f"batch {batch_id} was not committed within {timeout_s:.0f} s; last progress "
                f"{json.dumps(query.lastProgress)[:1500] if query.lastProgress else None}"
            )
        time.sleep(0.2)


def plain(value: Any) -> Any:
    """Rows and tuples as lists, so answers are JSON values and compare across processes."""
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def _page_answer(result) -> dict:
    """Rows per partition (in the order each partition returned them) and batch ids."""
    return {
        "rows": {str(p): [plain(row) for row in r.result.rows] for p, r in result.partition_results.items()},
        "batches": {str(p): r.position.batch_id for p, r in result.partition_results.items()},
    }


def _all_pages(request, spark) -> dict:
    """Follow the continuation to the end; rows per partition, concatenated in page order."""
    rows: dict[str, list] = {}
    batches: dict[str, list] = {}
    pages = 0
    for result in request.pages(spark):
        pages += 1
        for p, r in result.partition_results.items():
            rows.setdefault(str(p), []).extend(plain(row) for row in r.result.rows)
            batches.setdefault(str(p), []).append(r.position.batch_id)
    return {"rows": rows, "batches": batches, "pages": pages}


def run_standard_queries(spark, query) -> dict:
    """Key, multi-key, range (both orders), prefix and scan queries on the (a, b) store."""
    from txstate_spark.query import (
        KeyQuery,
        MultiKeyQuery,
        PositionBound,
        PrefixQuery,
        RangeQuery,
        ScanQuery,
        StateQueryRequest,
    )

    store = StateQueryRequest.in_store(query).with_position_bound(PositionBound.at_least_batch(BATCHES - 1))
    answers: dict[str, Any] = {}
    keys = [{"a": 3, "b": key_b(4)}, (0, key_b(1)), (A_VALUES - 1, key_b(B_VALUES - 1)), (A_VALUES + 5, key_b(0))]
    for i, key in enumerate(keys):
        result = store.with_query(KeyQuery.with_key(key)).enable_execution_info().execute(spark)
        only = result.only_partition_result()
        answers[f"key{i}"] = {"value": plain(only.result), "partition": only.partition,
                              "batch": only.position.batch_id}
        answers.setdefault("execution_info", []).append(only.execution_info)
    multi = store.with_query(MultiKeyQuery.with_keys(keys)).execute(spark)
    answers["multi"] = {str(p): plain(r.result) for p, r in multi.partition_results.items()}
    lower, upper = (5, key_b(100)), (7, key_b(20))
    answers["range_asc"] = _page_answer(store.with_query(RangeQuery.with_range(lower, upper).with_limit(MAX_PAGE)).execute(spark))
    answers["range_desc_pages"] = _all_pages(
        store.with_query(RangeQuery.with_range(lower, upper).descending().with_limit(97)), spark)
    answers["prefix"] = _all_pages(store.with_query(PrefixQuery.with_prefix({"a": 11}).with_limit(60)), spark)
    scan = _all_pages(store.with_query(ScanQuery.all().with_limit(1500)), spark)
    answers["scan"] = {"rows": sorted(row for rows in scan["rows"].values() for row in rows),
                       "pages": scan["pages"]}
    return answers



def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work-dir", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--master", default="local-cluster[2,1,1024]")
    parser.add_argument("--timeout", type=float, default=240.0)
    args = parser.parse_args()

    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(args.master).appName("txstate-interactive-queries")
    for key, value in streaming_harness.spark_settings(streaming_harness.plugin_jar()).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.executor.memory", "768m").config("spark.driver.memory", "1g")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    report: dict[str, Any] = {"master": args.master, "errors": []}
    query = None
    try:
        if args.master.startswith("local-cluster"):
            sc = spark.sparkContext
            deadline = time.monotonic() + 90
            while sc._jsc.sc().getExecutorIds().size() < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            ids = sc._jsc.sc().getExecutorIds()
            report["executors"] = sorted(ids.apply(i) for i in range(ids.size()))
        query = start_query(spark, args.work_dir, input_batches(), "iq_cluster")
        wait_for_commit(query, args.work_dir / "checkpoint", BATCHES - 1, args.timeout)
        started = time.monotonic()
        report["answers"] = run_standard_queries(spark, query)
        report["query_seconds"] = time.monotonic() - started
        report["still_active"] = query.isActive
    except Exception as error:
        report["errors"].append(f"{type(error).__name__}: {streaming_harness.describe_failure(error)}")
    finally:
        args.result.write_text(json.dumps(report, indent=1, default=str))
        if query is not None:
            query.stop()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
