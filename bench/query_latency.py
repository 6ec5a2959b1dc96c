"""Point-query latency of txstate interactive queries from Python: local, local-cluster and Connect.

    TXSTATE_SPARK_JAR=target/txstate-spark-4.3_2.13-<version>.jar PYTHONPATH=python \\
        .venv/bin/python bench/query_latency.py [--keys 100000] [--queries 500] [--modes local,cluster,connect]

Each mode runs in its own Python process (one Spark JVM each): a streaming `groupBy(k).count()` over
`--keys` distinct keys (one input file, so the query stays active and idle after its first batch),
then `--queries` KeyQuery lookups of random keys against the running query, after a warm-up:

* `KeyQuery, as written (routed)`: `StateQueryRequest.in_store(query).with_query(KeyQuery.with_key(k))`
  as a user writes it (the JVM routes it to the partition owning the key by Spark's hash
  partitioning, and asks every partition only when that one does not hold it);
* `KeyQuery, one partition`: the same with `with_partitions([p])`, p the partition holding the key;
* `py4j call only`: the gateway's `execute` with a prebuilt JSON request (no Python conversion);
* `txstate data source`: `spark.read.format("txstate").load(checkpoint).where(key.k = x).collect()`,
  a Spark batch read pushed down to one key lookup in the owning partition (fewer samples);
* `state data source`: the closest built-in way to read one key of a streaming query's state,
  `spark.read.format("statestore").load(checkpoint).where(key.k = x).collect()` (fewer samples).

Latencies are wall-clock milliseconds measured in the driver's Python process. local: stores and
queries on the driver JVM. local-cluster[2,1,1024]: stores on two executor JVMs, each query served
on the executor holding the partition's store. connect: a local[2] Spark Connect server started
with the jar (tests/servers/connect_server.py), the query and the lookups sent from a Connect client
session, where KeyQuery goes through the txstate data source (no py4j row). Prints a markdown table
and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

MASTERS = {"local": "local[2]", "cluster": "local-cluster[2,1,1024]", "connect": "local[2] behind Spark Connect"}
ROWS = ["KeyQuery, as written (routed)", "KeyQuery, one partition", "py4j call only", "txstate data source",
        "state data source"]


def percentile(samples: List[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, int(round(q / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def timed(fn: Callable[[], Any], count: int) -> List[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def summary(samples: List[float]) -> Dict[str, float]:
    return {"n": len(samples), "p50": percentile(samples, 50), "p99": percentile(samples, 99),
            "mean": statistics.fmean(samples)}


def classic_session(mode: str) -> Any:
    from pyspark.sql import SparkSession

    import txstate_spark

    builder = (
        SparkSession.builder.master(MASTERS[mode]).appName(f"txstate-query-latency-{mode}")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.memory", "768m")
        .config("spark.driver.memory", "1g")
    )
    spark = txstate_spark.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if mode == "cluster":
        deadline = time.monotonic() + 90
        while spark.sparkContext._jsc.sc().getExecutorIds().size() < 2 and time.monotonic() < deadline:
            time.sleep(0.2)

    return spark


def run_mode(mode: str, keys: int, queries: int, work_dir: Path) -> Dict[str, Any]:
    """One mode, in this process: start Spark, load the state, measure."""
    import pyspark

    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from txstate_spark.query import KeyQuery, StateQueryRequest
    from txstate_spark.query.gateway import gateway_for

    if mode == "connect":
        spark = SparkSession.builder.remote(os.environ["SPARK_CONNECT_URL"]).getOrCreate()
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", "txstate.spark.TxStateStoreProvider")
        spark.conf.set("spark.sql.shuffle.partitions", "2")
    else:
        spark = classic_session(mode)

    input_dir, checkpoint = work_dir / "input", work_dir / "checkpoint"
    input_dir.mkdir(parents=True)
    (input_dir / "keys.json").write_text("".join(f'{{"k": {i}}}\n' for i in range(keys)))
    query = (
        spark.readStream.schema("k LONG").json(str(input_dir)).groupBy("k").count()
        .writeStream.format("noop").outputMode("update")
        .option("checkpointLocation", str(checkpoint)).start()
    )
    try:
        deadline = time.monotonic() + 300
        while not (checkpoint / "commits" / "0").exists():
            if query.exception() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the {mode} query did not commit batch 0: {query.exception()}")
            time.sleep(0.2)

        rng = random.Random(7)
        store = StateQueryRequest.in_store(query)
        description = store.describe(spark)
        owner: Dict[int, int] = {}

        def key_all() -> None:
            k = rng.randrange(keys)
            result = store.with_query(KeyQuery.with_key(k)).execute(spark).only_partition_result()
            assert result.result is not None and result.result[0] == 1, result
            owner[k] = result.partition

        def key_one() -> None:
            k = rng.choice(known)
            result = store.with_query(KeyQuery.with_key(k)).with_partitions([owner[k]]).execute(spark)
            assert result.only_partition_result().result is not None

        gateway = gateway_for(spark)
        target = store._target_json(gateway)

        def raw_call() -> None:
            k = rng.randrange(keys)
            gateway.execute({**target, "query": {"type": "key", "key": [k]}, "partitions": None,
                             "bound": {"type": "unbounded"}, "requireActive": False,
                             "executionInfo": False, "checkpointReads": False})

        def txstate_data_source() -> None:
            k = rng.randrange(keys)
            rows = spark.read.format("txstate").load(str(checkpoint)).where(f"key.k = {k}").collect()
            assert len(rows) == 1 and rows[0].value[0] == 1, rows

        def state_data_source() -> None:
            k = rng.randrange(keys)
            rows = spark.read.format("statestore").load(str(checkpoint)).where(f"key.k = {k}").collect()
            assert len(rows) == 1, rows

        timed(key_all, 100)  # warm-up (JIT, py4j connections, first loads)
        all_partitions = timed(key_all, queries)
        known = sorted(owner)
        timed(key_one, 50)
        one_partition = timed(key_one, queries)
        raw: List[float] = []
        if mode != "connect":  # a Connect client has no py4j
            timed(raw_call, 50)
            raw = timed(raw_call, queries)
        timed(txstate_data_source, 5)
        ours = timed(txstate_data_source, max(20, queries // 5))
        timed(state_data_source, 2)
        data_source = timed(state_data_source, max(10, queries // 25))
        return {
            "mode": mode, "master": MASTERS[mode], "keys": keys, "partitions": description.num_partitions,
            "KeyQuery, as written (routed)": summary(all_partitions),
            "KeyQuery, one partition": summary(one_partition),
            "py4j call only": summary(raw) if raw else None,
            "txstate data source": summary(ours),
            "state data source": summary(data_source),
        }
    finally:
        query.stop()
        spark.stop()


def run_behind_connect(child: List[str], work_dir: Path) -> "subprocess.CompletedProcess[str]":
    """Run the connect child as a client of a local Spark Connect server started with the jar."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from servers.connect_server import ConnectServer

    import txstate_spark

    jar = os.environ.get("TXSTATE_SPARK_JAR") or str(txstate_spark.jar_path())
    with ConnectServer(jar, work_dir, conf={"spark.sql.shuffle.partitions": "2"}) as server:
        env = {**os.environ, "SPARK_CONNECT_URL": server.url}
        return subprocess.run(child, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--modes", default="local,cluster,connect")
    parser.add_argument("--child", choices=sorted(MASTERS), help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        with tempfile.TemporaryDirectory(prefix=f"txstate-qlat-{args.child}-") as tmp:
            result = run_mode(args.child, args.keys, args.queries, Path(tmp))
        args.result.write_text(json.dumps(result))
        return 0

    command = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    results = []
    with tempfile.TemporaryDirectory(prefix="txstate-qlat-") as tmp:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            out = Path(tmp) / f"{mode}.json"
            child = [sys.executable, __file__, "--child", mode, "--result", str(out),
                     "--keys", str(args.keys), "--queries", str(args.queries)]
            print(f"running {mode} ({MASTERS[mode]}) ...", file=sys.stderr, flush=True)
            if mode == "connect":
                done = run_behind_connect(child, Path(tmp) / "connect-server")
            else:
                done = subprocess.run(child, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0 or not out.is_file():
                print(done.stderr[-4000:], file=sys.stderr)
                return 1
            results.append(json.loads(out.read_text()))

    rows = ROWS
    print(f"\nPoint-query latency from Python, {args.keys:,} keys, ms (n = samples per cell)\n")
    header = "| | " + " | ".join(f"{r['mode']} p50 | {r['mode']} p99" for r in results) + " |"
    print(header)
    print("|---|" + "---:|" * (2 * len(results)))
    for row in rows:
        cells = " | ".join(f"{r[row]['p50']:.2f} | {r[row]['p99']:.2f}" if r[row] else "- | -" for r in results)
        print(f"| {row} (n={max((r[row] or {'n': 0})['n'] for r in results)}) | {cells} |")
    for r in results:
        ratio = r["state data source"]["p50"] / r["KeyQuery, as written (routed)"]["p50"]
        ours = r["state data source"]["p50"] / r["txstate data source"]["p50"]
        print(f"\n{r['mode']}: a KeyQuery is {ratio:.0f}x faster (p50) than a state data source point read; "
              f"a txstate data source point read is {ours:.1f}x faster")
    print(f"\ncommand: {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
