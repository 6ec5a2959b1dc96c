"""Requests and bytes per micro-batch per state store on a real HDFS or S3 (issue 18): txstate
against Spark's RocksDB provider with changelog checkpointing on, in the same run.

  .venv/bin/python bench/dfs_requests.py [--fs hdfs|s3] [--batches 30] [--keys 20000] [--updates 5000]
  make bench-dfs                    (HDFS; builds the jar and the 4.3 test classes first)
  make bench-s3                     (S3; builds the jar and resolves the s3a and s3proxy jars first)

HDFS: a NameNode and a DataNode (Hadoop's MiniDFSCluster, tests/servers/dfs_cluster.py) run in their own JVM on
loopback. S3: s3proxy runs in its own JVM on loopback and Spark reaches it through s3a:// and a
counting HTTP proxy (tests/servers/s3_server.py) that classifies every request (PUT, COPY, GET, HEAD, LIST,
DELETE) and counts the bytes sent and answered.

The same streaming aggregation (`groupBy(k).agg(count, sum)`, update mode, one store per
shuffle partition) runs over the same input once per provider, with its checkpoint on the cluster,
then once without state (a projection with the same source and sink): what Spark's own logs cost
(offsets, commits, metadata). Before and after each run (and a settle time for the maintenance
thread's snapshot uploads and cleanups) the bench reads the real counters: on HDFS the NameNode's
client RPC calls by method (its RpcDetailedActivity metrics) and the DataNode's
BytesWritten/BytesRead; on S3 the counting proxy's. A provider's cost is its run's counts minus the
stateless run's, per batch and per store.

Writes bench/results/dfs-requests-<timestamp>.md and .json (HDFS) or s3-requests-<timestamp>.* (S3).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from bench_common import (ROCKSDB_CHANGELOG, TXSTATE, fmt_num, fmt_ratio, load_average, machine_facts, publish,
                          ratio, table, timestamp)
from harness.streaming_harness import await_available_now, plugin_jar
from servers.dfs_cluster import DfsCluster
from servers.s3_server import S3Server

RUN_TIMEOUT_S = 600
SETTLE_S = 6.0  # with maintenance every second, a few rounds upload pending snapshots and clean up
PEERS = (TXSTATE, ROCKSDB_CHANGELOG)
# The client calls each table row counts (the NameNode's RPC method names); the DataNode's own
# calls to the NameNode (heartbeats, block reports) are not requests of a store.
REQUESTS: dict[str, tuple[str, ...]] = {
    "create": ("Create",),
    "open (getBlockLocations)": ("GetBlockLocations",),
    "list (getListing)": ("GetListing",),
    "delete": ("Delete",),
    "rename": ("Rename", "Rename2"),
    "getFileInfo": ("GetFileInfo",),
    "mkdirs": ("Mkdirs",),
    "addBlock + complete": ("AddBlock", "Complete"),
}
DATANODE_CALLS = {"SendHeartbeat", "BlockReceivedAndDeleted", "BlockReport", "CacheReport", "RegisterDatanode",
                  "VersionRequest", "ErrorReport", "CommitBlockSynchronization", "SendLifeline"}
BYTES = {"KiB written (DataNode)": "dn.BytesWritten", "KiB read (DataNode)": "dn.BytesRead"}
# On S3 (tests/servers/s3_server.py's kinds): a rename is a COPY and a DELETE; OTHER are multipart starts
# and completions.
S3_REQUESTS = ("PUT", "COPY", "GET", "HEAD", "LIST", "DELETE", "OTHER")
S3_BYTES = {"KiB uploaded (PUT bodies)": "bytes_in.PUT", "KiB downloaded (GET bodies)": "bytes_out.GET",
            "KiB of listings": "bytes_out.LIST"}


class Store(Protocol):
    """The file system under the checkpoints, with its request counters."""

    def counters(self) -> dict[str, int]: ...

    def uri(self, path: str) -> str: ...

    def stop(self) -> None: ...


def hdfs_rows(delta: dict[str, int]) -> dict[str, float]:
    """The table's rows for one run's increase on HDFS."""
    rows: dict[str, float] = {label: requests(delta, methods) for label, methods in REQUESTS.items()}
    rows["all client requests"] = client_calls(delta)
    rows.update({label: delta.get(key, 0) / 1024 for label, key in BYTES.items()})
    return rows


def s3_rows(delta: dict[str, int]) -> dict[str, float]:
    """The table's rows for one run's increase on S3."""
    rows: dict[str, float] = {kind: delta.get(f"requests.{kind}", 0) for kind in S3_REQUESTS}
    rows["all requests"] = sum(rows[kind] for kind in S3_REQUESTS)
    rows["keys deleted (multi-object deletes count each key)"] = delta.get("deleted_keys", 0)
    rows.update({label: delta.get(key, 0) / 1024 for label, key in S3_BYTES.items()})
    return rows


@dataclass(frozen=True)
class FileSystemKind:
    name: str
    results: str  # bench/results/<results>-<timestamp>.md
    title: str
    where: str  # what the checkpoint is on, for the report
    counted: str  # what the counts are, for the report
    make_target: str
    rows: Callable[[dict[str, int]], dict[str, float]]


FILE_SYSTEMS = {
    "hdfs": FileSystemKind(
        "hdfs", "dfs-requests", "HDFS", "a NameNode + DataNode (MiniDFSCluster) on loopback",
        "the NameNode's client RPC calls and the DataNode's bytes", "make bench-dfs", hdfs_rows),
    "s3": FileSystemKind(
        "s3", "s3-requests", "S3", "s3proxy (filesystem blob store) on loopback, through s3a:// (hadoop-aws)",
        "the S3 requests s3a sent, by kind, and their body bytes (a counting HTTP proxy in front of s3proxy)",
        "make bench-s3", s3_rows),
}


@dataclass(frozen=True)
class Params:
    batches: int
    keys: int
    updates: int
    partitions: int
    maintenance: str
    fs: str


def parse_args() -> Params:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--keys", type=int, default=20_000, help="distinct keys")
    parser.add_argument("--updates", type=int, default=5_000, help="rows per batch (random keys)")
    parser.add_argument("--partitions", type=int, default=2, help="shuffle partitions = stores per batch")
    parser.add_argument("--fs", choices=sorted(FILE_SYSTEMS), default="hdfs",
                        help="the file system under the checkpoints")
    parser.add_argument("--maintenance", default="1s",
                        help="spark.sql.streaming.stateStore.maintenanceInterval (Spark's default: 60s)")
    args = parser.parse_args()
    return Params(args.batches, args.keys, args.updates, args.partitions, args.maintenance, args.fs)


def write_input(directory: Path, params: Params) -> None:
    """One JSON file per micro-batch, the same for every run."""
    rng = random.Random(18)
    directory.mkdir(parents=True)
    for batch in range(params.batches):
        rows = (json.dumps({"k": rng.randrange(params.keys), "v": rng.randrange(1000)}) for _ in range(params.updates))
        (directory / f"batch-{batch:04d}.json").write_text("\n".join(rows) + "\n")


def build_session(params: Params, extra: dict[str, str]):
    from pyspark.sql import SparkSession

    settings = {
        "spark.jars": str(plugin_jar()),
        "spark.sql.shuffle.partitions": str(params.partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.memory": "2g",
        # Spark's defaults for snapshots (every 10 versions); maintenance every second (--maintenance)
        # instead of a minute, and 10 batches retained instead of 100, so the run sees uploads and
        # cleanups. Each maintenance round costs requests of its own: compare --maintenance 60s.
        "spark.sql.streaming.stateStore.maintenanceInterval": params.maintenance,
        "spark.sql.streaming.minBatchesToRetain": "10",
        **extra,
    }
    builder = SparkSession.builder.master("local[2]").appName(f"txstate-{params.fs}-requests")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def aggregation(events):
    from pyspark.sql import functions as F

    return events.groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total")), "update"


def stateless(events):
    return events.selectExpr("k", "v * 2 AS v2"), "append"


def run(spark, dfs: Store, name: str, confs: dict[str, str], build: Callable, input_dir: Path,
        params: Params) -> dict[str, int]:
    """One query over every input file, checkpoint on the cluster; the counters' increase."""
    for key, value in confs.items():
        spark.conf.set(key, value)
    events = spark.readStream.schema("k long, v long").option("maxFilesPerTrigger", 1).json(str(input_dir))
    result, mode = build(events)
    before = dfs.counters()
    query = (result.writeStream.outputMode(mode)
             .option("checkpointLocation", dfs.uri(f"/bench/{name}/checkpoint"))
             .foreachBatch(lambda df, _: df.write.format("noop").mode("overwrite").save())
             .trigger(availableNow=True).start())
    await_available_now(query, RUN_TIMEOUT_S, f"the {name} run")
    batches = len({p["batchId"] for p in query.recentProgress})
    if batches != params.batches:
        raise RuntimeError(f"the {name} run ran {batches} batches, expected {params.batches}")
    time.sleep(SETTLE_S)
    after = dfs.counters()
    for key in confs:
        spark.conf.unset(key)
    return {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}


def requests(delta: dict[str, int], methods: tuple[str, ...]) -> int:
    return sum(delta.get(f"rpc.{m}", 0) for m in methods)


def client_calls(delta: dict[str, int]) -> int:
    return sum(v for k, v in delta.items() if k.startswith("rpc.") and k[4:] not in DATANODE_CALLS)


def main() -> int:
    params = parse_args()
    kind = FILE_SYSTEMS[params.fs]
    stamp = timestamp()
    loads = [load_average()]
    with tempfile.TemporaryDirectory(prefix="txstate-dfs-bench-") as tmp:
        work = Path(tmp)
        write_input(work / "input", params)
        dfs: Store
        if kind.name == "s3":
            server = S3Server.start(work / "s3")
            dfs, extra = server, server.spark_settings()
        else:
            dfs, extra = DfsCluster.start(work / "dfs"), {}
        try:
            spark = build_session(params, extra)
            try:
                deltas = {"spark-logs": run(spark, dfs, "stateless", {}, stateless, work / "input", params)}
                for peer in PEERS:
                    deltas[peer.name] = run(spark, dfs, peer.name, peer.confs, aggregation, work / "input", params)
                    loads.append(load_average())
            finally:
                spark.stop()
        finally:
            dfs.stop()

    per_store = params.batches * params.partitions
    logs = kind.rows(deltas["spark-logs"])
    per_peer = {p.name: {k: (v - logs[k]) / per_store for k, v in kind.rows(deltas[p.name]).items()} for p in PEERS}
    tx, rocks = per_peer[TXSTATE.name], per_peer[ROCKSDB_CHANGELOG.name]
    header = ["per micro-batch per store", TXSTATE.label, ROCKSDB_CHANGELOG.label, "txstate ÷ RocksDB"]
    body = [[label, fmt_num(tx[label]), fmt_num(rocks[label]), fmt_ratio(ratio(tx[label], rocks[label]))]
            for label in tx]
    logs_body = [[label, fmt_num(value / params.batches)] for label, value in logs.items()]
    command = (f".venv/bin/python bench/dfs_requests.py --fs {params.fs} --batches {params.batches} "
               f"--keys {params.keys} --updates {params.updates} --partitions {params.partitions} "
               f"--maintenance {params.maintenance}")
    markdown = "\n".join([
        f"# {kind.title} requests and bytes per micro-batch per store ({stamp})",
        "",
        f"`{command}` (`{kind.make_target}`). A streaming `groupBy(k).agg(count, sum)` in update mode, "
        f"{params.batches} micro-batches of {params.updates:,} rows over {params.keys:,} keys, "
        f"{params.partitions} stores (shuffle partitions), checkpoint on {kind.where}; snapshots every 10 "
        f"versions (Spark's default), maintenance every {params.maintenance}, 10 batches retained. Counts are "
        f"{kind.counted}, over the whole run and its maintenance (snapshot uploads, cleanups), "
        "minus a stateless query's (Spark's offset and commit logs), divided by batches × stores.",
        "",
        table(header, body),
        "",
        "Spark's own logs (the stateless run), per micro-batch, for both providers alike:",
        "",
        table(["per micro-batch", "count"], logs_body),
        "",
        "| machine | |", "| --- | --- |",
        *[f"| {k} | {v} |" for k, v in machine_facts()],
        f"| load average (1 min) | {', '.join(str(x) for x in loads)} |",
        "",
    ])
    data = {"params": params.__dict__, "deltas": deltas, "per_batch_per_store": per_peer, "command": command}
    return publish(kind.results, stamp, markdown, data, [])


if __name__ == "__main__":
    sys.exit(main())
