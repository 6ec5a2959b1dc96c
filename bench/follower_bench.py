"""Followers: how fresh they stay, how fast they answer, how fast they start, against the built-in way.

    TXSTATE_SPARK_JAR=target/txstate-spark-4.3_2.13-<version>.jar PYTHONPATH=python \\
        .venv/bin/python bench/follower_bench.py [--keys 50000] [--batches 30] [--queries 300]

One local[2] Spark application. A leader query, `groupBy(k).agg(count, sum)` over `rate-micro-batch`
with `--keys` rows per batch (every key updated every batch), runs `--batches` batches with a 500 ms
trigger; a follower (`txstate_spark.follow`, 200 ms polls) tails its checkpoint the whole time.

* Freshness: the follower's lag (`follower.lag`), sampled every 100 ms while the leader runs.
* Point reads of one key of the leader's state by another reader, after the leader stopped:
  `KeyQuery` on the follower, the `txstate` source through the follower, a key lookup over HTTP
  from `python -m txstate_spark serve` (its own JVM, one request per lookup), and the built-in way to
  read a query's state from its checkpoint, Spark's state data source
  (`spark.read.format("statestore").load(checkpoint).where(key.k = x)`).
* Starting to read the whole state: `follow()` of the stopped leader's checkpoint (a snapshot and
  changelogs into local replicas), against reading the whole state once through the state data
  source (`count()`).

Ratios are against the state data source measured in the same run. Prints a markdown table and the
command, and writes bench/results/follower-<timestamp>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_common  # noqa: E402
from query_latency import summary, timed  # noqa: E402


def session() -> Any:
    import pyspark
    from pyspark.sql import SparkSession

    import txstate_spark

    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("txstate-follower-bench")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
               .config("spark.sql.streaming.stateStore.providerClass", "txstate.spark.TxStateStoreProvider")
               .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "10"))
    spark = txstate_spark.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def newest_batch(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    names = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.exists() else []
    return max(names, default=-1)


def served_key_lookups(checkpoint: Path, keys: int, queries: int, key_of: Callable[[], int]) -> List[float]:
    """Key lookups over HTTP against `python -m txstate_spark serve` of the checkpoint, in its own JVM."""
    command = [sys.executable, "-m", "txstate_spark", "serve", str(checkpoint), "--operator", "0", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = ""
        deadline = time.monotonic() + 120
        while not url and time.monotonic() < deadline and server.stdout is not None:
            line = server.stdout.readline()
            if not line:
                raise RuntimeError(f"the serving process exited with {server.wait()}")
            if "listening on" in line:
                url = line.split("listening on", 1)[1].strip()

        def lookup() -> None:
            body = json.dumps({"query": {"type": "key", "key": [key_of()]}}).encode()
            request = urllib.request.Request(f"{url}/v1/query", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=30) as answer:
                partitions = json.loads(answer.read())["partitions"]
            assert len(partitions) == 1 and partitions[0]["success"] and partitions[0]["result"] is not None, partitions

        timed(lookup, 50)
        return timed(lookup, queries)
    finally:
        server.terminate()
        server.wait(timeout=60)


def run(keys: int, batches: int, queries: int, work_dir: Path) -> Dict[str, Any]:
    from pyspark.sql import functions as F

    import txstate_spark
    from txstate_spark.query import KeyQuery, StateQueryRequest

    spark = session()
    checkpoint = work_dir / "leader"
    source = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", keys).load()
    counts = source.withColumn("k", F.col("value") % keys).groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("value").alias("total"))
    query = (counts.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="500 milliseconds").start())
    try:
        while newest_batch(checkpoint) < 1:
            if query.exception() is not None:
                raise RuntimeError(f"the leader failed: {query.exception()}")
            time.sleep(0.1)
        follower = txstate_spark.follow(spark, checkpoint)
        lag_ms: List[float] = []
        lag_batches: List[float] = []
        while newest_batch(checkpoint) < batches:
            lag = follower.lag
            lag_ms.append(float(lag.millis))
            lag_batches.append(float(lag.batches))
            time.sleep(0.1)
        query.stop()
        last = newest_batch(checkpoint)
        caught_up = time.perf_counter()
        while follower.lag.applied_batch != last:
            time.sleep(0.02)
        final_catch_up_ms = (time.perf_counter() - caught_up) * 1000
        status = follower.status

        rng_key = iter(range(10 ** 9))

        def key_of() -> int:
            return (next(rng_key) * 7919) % keys

        store = StateQueryRequest.in_store(follower)

        def follower_key() -> None:
            k = key_of()
            assert store.with_query(KeyQuery.with_key(k)).execute(spark).only_partition_result().result is not None

        def follower_source() -> None:
            k = key_of()
            rows = spark.read.format("txstate").option("follower", follower.id).load().where(f"key.k = {k}").collect()
            assert len(rows) == 1, rows

        def state_source() -> None:
            k = key_of()
            rows = spark.read.format("statestore").load(str(checkpoint)).where(f"key.k = {k}").collect()
            assert len(rows) == 1, rows

        timed(follower_key, 50)
        key_ms = timed(follower_key, queries)
        timed(follower_source, 5)
        source_ms = timed(follower_source, max(10, queries // 10))
        timed(state_source, 2)
        builtin_ms = timed(state_source, max(5, queries // 30))
        follower.close()
        http_ms = served_key_lookups(checkpoint, keys, queries, key_of)

        def cold(fn: Callable[[], Any]) -> float:
            started = time.perf_counter()
            fn()
            return (time.perf_counter() - started) * 1000

        start_ms = [cold(lambda: txstate_spark.follow(spark, checkpoint).close()) for _ in range(3)]
        full_ms = [cold(lambda: spark.read.format("statestore").load(str(checkpoint)).count()) for _ in range(3)]
        return {
            "keys": keys, "batches": last + 1, "status": {"polls": status.polls, "catchUps": status.catch_ups,
                                                          "reanchors": status.reanchors, "failures": status.failures},
            "lag_ms": summary(lag_ms), "lag_batches": summary(lag_batches), "final_catch_up_ms": final_catch_up_ms,
            "follower_key": summary(key_ms), "follower_source": summary(source_ms), "state_source": summary(builtin_ms),
            "served_key": summary(http_ms),
            "follow_start": summary(start_ms), "state_source_full": summary(full_ms),
        }
    finally:
        query.stop()
        spark.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    with tempfile.TemporaryDirectory(prefix="txstate-follower-bench-") as tmp:
        r = run(args.keys, args.batches, args.queries, Path(tmp))

    def row(name: str, s: Dict[str, float], against: Dict[str, float] | None) -> str:
        ratio = f"{against['p50'] / s['p50']:.1f}x faster" if against else "-"
        return f"| {name} (n={s['n']}) | {s['p50']:.2f} | {s['p99']:.2f} | {ratio} |"

    lines = [
        f"Followers, {r['keys']:,} keys updated every batch, {r['batches']} leader batches, local[2]",
        "",
        "| | p50 | p99 | vs Spark's state data source (p50) |",
        "|---|---:|---:|---:|",
        row("Follower lag while the leader runs, ms", r["lag_ms"], None),
        row("Follower lag while the leader runs, batches", r["lag_batches"], None),
        row("Point read: KeyQuery on the follower, ms", r["follower_key"], r["state_source"]),
        row("Point read: txstate source through the follower, ms", r["follower_source"], r["state_source"]),
        row("Point read: KeyQuery over HTTP (`python -m txstate_spark serve`), ms", r["served_key"], r["state_source"]),
        row("Point read: Spark's state data source on the checkpoint, ms", r["state_source"], None),
        row("Start reading the whole state: follow(), ms", r["follow_start"], r["state_source_full"]),
        row("Read the whole state once: state data source count(), ms", r["state_source_full"], None),
        "",
        f"Follower after the leader stopped: at its last batch {r['final_catch_up_ms']:.0f} ms later; "
        f"{r['status']['polls']} polls, {r['status']['catchUps']} catch-ups, {r['status']['reanchors']} re-anchors, "
        f"{r['status']['failures']} failures.",
        "",
        f"command: {command}",
    ]
    markdown = "\n".join(lines)
    print(markdown)
    stamp = bench_common.timestamp()
    bench_common.write_results("follower", stamp, markdown, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
