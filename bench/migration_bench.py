"""Migration benchmark (issue 13): throughput and peak memory of `python -m txstate_spark migrate`
for one aggregation's state, Spark's HDFS provider -> txstate, then txstate -> Spark's RocksDB
provider (changelog on), the same state rescaled from 2 to 4 partitions on the way, and rescaled
from 2 to 4 partitions in place on txstate (issue 33: `--to txstate --partitions 4` on a checkpoint
that already runs on txstate).

  .venv/bin/python bench/migration_bench.py --quick     (200k keys; `make bench-migrate-quick`)
  .venv/bin/python bench/migration_bench.py             (5M keys; `make bench-migrate`)
  .venv/bin/python bench/migration_bench.py --keys 1000000 --in-place-only   (HDFS -> txstate, then
      the in-place rescale only; `make bench-rescale`)

One application builds the state: a single micro-batch of `groupBy(k).agg(count, sum)` over N new
keys on Spark's HDFS provider, 2 shuffle partitions. Each migration then runs as a user runs it,
`python -m txstate_spark migrate CHECKPOINT --to ... --json` in its own process (its own local
Spark driver, `--conf spark.driver.memory=...`: the HDFS provider reads a partition's whole state
into the heap). The process tree's resident memory is sampled from /proc every 100 ms (VmHWM of
the JVM). Rows/s is the report's rows over the report's own seconds (inside the JVM, after Spark
started); wall time includes starting Spark. Every migration must move exactly N rows.

Writes bench/results/migration-<timestamp>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_common import (CHANGELOG_CONF, HDFS_CLASS, PROVIDER_CLASS_CONF, REPO_ROOT, fmt_num, load_average,
                          load_warning, machine_facts, publish, table, timestamp)

from harness.streaming_harness import plugin_jar  # tests/, put on sys.path by bench_common

MIB = 1 << 20
DRIVER_MEMORY = "6g"
MIGRATE_TIMEOUT_S = 1800


def build_state(keys: int, work: Path) -> Path:
    """A stopped aggregation's checkpoint on Spark's HDFS provider holding `keys` state rows."""
    from pyspark.sql import SparkSession, functions as F

    spark = (SparkSession.builder.master("local[2]").appName("migration-bench-build")
             .config("spark.jars", str(plugin_jar()))
             .config("spark.driver.memory", DRIVER_MEMORY)
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config(PROVIDER_CLASS_CONF, HDFS_CLASS)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        source = work / "input"
        (spark.range(keys, numPartitions=4).selectExpr("concat('k', id) AS k", "id AS v")
         .write.mode("overwrite").parquet(str(source)))
        checkpoint = work / "checkpoint"
        query = (spark.readStream.schema("k string, v long").parquet(str(source))
                 .groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("total"))
                 .writeStream.outputMode("update").format("noop")
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination()
        rows = query.lastProgress["stateOperators"][0]["numRowsTotal"]
        if rows != keys:
            raise SystemExit(f"the aggregation holds {rows} state rows, expected {keys}")
        return checkpoint
    finally:
        spark.stop()


def tree_peak_rss(root_pid: int) -> int:
    """The largest VmHWM (peak resident memory) among `root_pid` and its descendants, in bytes."""
    peak, pending = 0, [root_pid]
    while pending:
        pid = pending.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            peak = max(peak, next((int(line.split()[1]) * 1024 for line in status.splitlines()
                                   if line.startswith("VmHWM:")), 0))
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return peak


def run_migration(checkpoint: Path, to: str, log: Path, extra: list[str]) -> dict:
    """Runs the command line in its own process; returns its report, wall time and peak RSS."""
    command = [sys.executable, "-m", "txstate_spark", "migrate", str(checkpoint), "--to", to, "--json",
               "--active-window", "0", "--conf", f"spark.driver.memory={DRIVER_MEMORY}",
               "--conf", f"{CHANGELOG_CONF}=true", *extra]
    env = dict(os.environ, TXSTATE_SPARK_JAR=str(plugin_jar()),
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    peak = [0]
    started = time.monotonic()
    with log.open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env, text=True)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], tree_peak_rss(process.pid))
                done.wait(0.1)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            out, _ = process.communicate(timeout=MIGRATE_TIMEOUT_S)
        finally:
            done.set()
            sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"migrate --to {to} failed (exit {process.returncode}); see {log}")
    report = json.loads(out)
    return {"to": to, "extra": extra, "report": report, "wall_s": round(time.monotonic() - started, 1),
            "peak_rss_mib": round(peak[0] / MIB)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="200k keys instead of 5M")
    parser.add_argument("--keys", type=int, help="state rows (default 5,000,000; 200,000 with --quick)")
    parser.add_argument("--in-place-only", action="store_true",
                        help="only HDFS -> txstate and the in-place rescale of its result")
    args = parser.parse_args()
    keys = args.keys or (200_000 if args.quick else 5_000_000)
    stamp = timestamp()
    loads = [load_average()]
    work = Path(tempfile.mkdtemp(prefix="txstate-migration-bench-"))
    try:
        built = time.monotonic()
        checkpoint = build_state(keys, work)
        build_s = time.monotonic() - built
        # The rescaling run starts from a copy of the same HDFS checkpoint.
        rescaled = work / "rescaled"
        shutil.copytree(checkpoint, rescaled)
        runs = [run_migration(checkpoint, "txstate", work / "to-txstate.log", [])]
        # The in-place rescale starts from a copy of the checkpoint now on txstate.
        in_place = work / "in-place"
        shutil.copytree(checkpoint, in_place)
        if not args.in_place_only:
            runs += [run_migration(checkpoint, "rocksdb", work / "to-rocksdb.log", []),
                     run_migration(rescaled, "txstate", work / "rescale.log", ["--partitions", "4"])]
        runs.append(run_migration(in_place, "txstate", work / "in-place.log", ["--partitions", "4"]))
        loads.append(load_average())
    finally:
        shutil.rmtree(work, ignore_errors=True)

    problems = [f"migrate --to {r['to']} {' '.join(r['extra'])} moved {r['report']['rows']} rows, expected {keys}"
                for r in runs if r["report"]["rows"] != keys]
    labels = ["HDFS -> txstate"] + ([] if args.in_place_only else [
        "txstate -> RocksDB (changelog on)", "HDFS -> txstate, 2 -> 4 partitions"]) + [
        "txstate in place, 2 -> 4 partitions"]
    rows = []
    for label, r in zip(labels, runs):
        seconds = r["report"]["seconds"]
        rows.append([label, f"{r['report']['rows']:,}", fmt_num(seconds, " s"), fmt_num(r["report"]["rows"] / seconds),
                     fmt_num(seconds * 1e6 / r["report"]["rows"], " s"), fmt_num(r["wall_s"], " s"),
                     f"{r['peak_rss_mib']:,}"])
    command = f".venv/bin/python bench/migration_bench.py{' --quick' if args.quick else ''}" + (
        f" --keys {args.keys}" if args.keys else "") + (" --in-place-only" if args.in_place_only else "")
    markdown = "\n".join([
        f"# txstate migration benchmark ({stamp})", "", "Reproduce with:", "", "```", command, "```", "",
        table(["fact", "value"], machine_facts(), right_from=2), "",
        f"State: one aggregation (`groupBy(k).agg(count, sum)`), {keys:,} keys in 2 partitions, built on Spark's "
        f"HDFS provider in {build_s:.0f} s. Each migration is `python -m txstate_spark migrate` in its own "
        f"process (local Spark driver, {DRIVER_MEMORY} heap); it copies, reads back and verifies every row.", "",
        table(["migration", "rows", "in JVM", "rows/s", "s per million keys", "wall (with Spark start)",
               "peak RSS MiB"], rows), "",
        load_warning(loads),
    ])
    return publish("migration", stamp, markdown, {"keys": keys, "build_s": build_s, "runs": runs}, problems)


if __name__ == "__main__":
    sys.exit(main())
