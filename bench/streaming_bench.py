"""Streaming-level benchmark: real streaming queries on `local[2]`, txstate
against Spark's RocksDB provider (changelog checkpointing on and off) and the HDFS-backed one.

  .venv/bin/python bench/streaming_bench.py --quick      (part of `make bench-quick`)
  .venv/bin/python bench/streaming_bench.py              (part of `make bench`)

Each provider runs each workload (streaming_workloads.py) over the same parquet input
(streaming_data.py) with a fresh checkpoint, R times; the order of the providers rotates between
repetitions so none always runs first. One Spark session serves every run: the provider is a
session setting read when a query starts, and between runs every loaded state store is unloaded.

Per run, from `StreamingQueryProgress` of the batches after the warm-up ones: median
`durationMs.triggerExecution`, median state operator time (`allUpdatesTimeMs + allRemovalsTimeMs +
commitTimeMs`, summed over partitions and operators), median `commitTimeMs`, and the last batch's
`numRowsTotal`. Reports show the median over repetitions with the [min–max] spread, and ratios
txstate ÷ peer. Results that differ between providers are printed as errors.

Writes bench/results/streaming-<timestamp>.md and .json (read by plots.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench_common import (CHANGELOG_CONF, PROVIDER_CLASS_CONF, STREAMING_PEERS, Peer, Spread, fmt_num,
                          fmt_ratio, fmt_spread, load_average, load_warning, machine_facts, ratio, table,
                          timestamp, publish)
from streaming_data import FULL, QUICK, DataSize, write_inputs
from streaming_workloads import WORKLOADS, Workload

TARGET = 0.8  # the speed target: txstate's batch duration at most 0.8x each of Spark's RocksDB provider's variants
# The stricter targets per workload, against Spark's RocksDB provider with changelog on.
FASTER_TARGETS = {"aggregation": 0.8, "dropDuplicates": 0.6, "join": 0.6}
RUN_TIMEOUT_S = 900


def build_session(shuffle_partitions: int, app_name: str = "txstate-streaming-bench",
                  java_options: str | None = None):
    """The benchmark's local[2] session; `java_options` go to the driver JVM (a profiler's agent)."""
    from pyspark.sql import SparkSession
    from txstate_spark import configure

    builder = configure(SparkSession.builder.master("local[2]").appName(app_name))
    if java_options:
        builder = builder.config("spark.driver.extraJavaOptions", java_options)
    settings = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.driver.memory": "4g",  # the HDFS-backed provider keeps state (and versions of it) on the heap
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def select_peer(spark, peer: Peer) -> None:
    """Session settings for the next query: the peer's, every other peer's setting back to default."""
    for key in sorted({k for p in STREAMING_PEERS for k in p.confs} | {PROVIDER_CLASS_CONF, CHANGELOG_CONF}):
        if key in peer.confs:
            spark.conf.set(key, peer.confs[key])
        else:
            spark.conf.unset(key)


def unload_state_stores(spark) -> None:
    """Closes every loaded provider (RocksDB instances, in-memory maps) so one run's leftovers do not
    weigh on the next; Spark would otherwise unload them at its next maintenance pass."""
    spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    spark._jvm.System.gc()


def batch_metrics(progress: dict) -> dict:
    """The numbers kept from one batch's progress (state operators summed)."""
    ops = progress.get("stateOperators") or []
    total = lambda name: sum(op.get(name, 0) or 0 for op in ops)  # noqa: E731
    return {
        "batch": progress["batchId"],
        "input_rows": progress["numInputRows"],
        "trigger_ms": progress["durationMs"].get("triggerExecution"),
        "add_batch_ms": progress["durationMs"].get("addBatch"),
        "state_ms": total("allUpdatesTimeMs") + total("allRemovalsTimeMs") + total("commitTimeMs"),
        "updates_ms": total("allUpdatesTimeMs"),
        "commit_ms": total("commitTimeMs"),
        "state_rows": total("numRowsTotal"),
        "memory_bytes": total("memoryUsedBytes"),
        # the providers' own metrics (txstate's load and commit latencies, RocksDB's), for digging
        "custom": {name: sum((op.get("customMetrics") or {}).get(name, 0) for op in ops)
                   for name in sorted({n for op in ops for n in (op.get("customMetrics") or {})})},
    }


def run_to_end(spark, workload: Workload, dirs: dict[str, Path], checkpoint: Path) -> tuple:
    """Runs `workload` on `checkpoint` until its input is consumed (Trigger.AvailableNow): the query,
    its output summed over the batches (the cross-provider check), and why it failed, if it did."""
    sums: dict[str, int] = {}

    def collect(df, batch_id: int) -> None:
        row = df.agg(*workload.summarize(df)).collect()[0].asDict()
        for name, value in row.items():
            sums[name] = sums.get(name, 0) + (value or 0)

    query = (workload.build(spark, dirs).writeStream.outputMode(workload.output_mode)
             .option("checkpointLocation", str(checkpoint)).foreachBatch(collect)
             .trigger(availableNow=True).start())
    error = None
    try:
        if not query.awaitTermination(RUN_TIMEOUT_S):
            error = f"did not finish within {RUN_TIMEOUT_S} s"
            query.stop()
    except Exception as failure:  # the query failed: recorded, the other runs go on
        error = str(failure).splitlines()[0][:500]
    return query, sums, error


def run_once(spark, peer: Peer, workload: Workload, dirs: dict[str, Path], checkpoint: Path,
             warmup: int) -> dict:
    """One query from a fresh checkpoint until its input is consumed; its metrics and summary."""
    select_peer(spark, peer)
    load_before = load_average()
    started = time.monotonic()
    query, sums, error = run_to_end(spark, workload, dirs, checkpoint)
    seconds = time.monotonic() - started
    batches = [batch_metrics(p) for p in (json.loads(p.json) for p in query.recentProgress)
               if p["numInputRows"] > 0]
    unload_state_stores(spark)
    shutil.rmtree(checkpoint, ignore_errors=True)
    measured = [b for b in batches if b["batch"] >= warmup]
    med = lambda key: Spread.of(b[key] for b in measured).median if measured else None  # noqa: E731
    return {
        "peer": peer.name, "workload": workload.name, "error": error, "seconds": round(seconds, 1),
        "load": [load_before, load_average()], "batches": batches,
        "trigger_ms": med("trigger_ms"), "state_ms": med("state_ms"), "commit_ms": med("commit_ms"),
        "state_rows": batches[-1]["state_rows"] if batches else None,
        "summary": dict(sorted(sums.items())),
    }


def check_results(runs: list[dict]) -> list[str]:
    """Every run of a workload must output the same summary and end with the same state size."""
    problems = []
    for workload in {r["workload"] for r in runs}:
        same = [r for r in runs if r["workload"] == workload and not r["error"]]
        if not same:
            continue
        reference = same[0]
        for r in same[1:]:
            if r["summary"] != reference["summary"]:
                problems.append(f"{workload}: {r['peer']} output {r['summary']}, but {reference['peer']} "
                                f"output {reference['summary']}")
            if r["state_rows"] != reference["state_rows"]:
                problems.append(f"{workload}: {r['peer']} ended with {r['state_rows']} state rows, "
                                f"{reference['peer']} with {reference['state_rows']}")
    problems += [f"{r['workload']}: {r['peer']} failed: {r['error']}" for r in runs if r["error"]]
    return sorted(set(problems))


def summarize(runs: list[dict], peers: list[Peer]) -> dict:
    """workload -> peer -> Spread of each metric over the repetitions, and of the ratio txstate ÷ peer
    taken within each repetition (paired: the two runs were minutes apart, under similar load)."""
    out: dict = {}
    for workload in WORKLOADS:
        def run_of(peer: str, rep: int) -> dict | None:
            return next((r for r in runs if r["workload"] == workload.name and r["peer"] == peer
                         and r["repetition"] == rep and not r["error"]), None)

        reps = sorted({r["repetition"] for r in runs})
        for peer in peers:
            mine = [r for r in runs if r["workload"] == workload.name and r["peer"] == peer.name and not r["error"]]
            stats = {key: Spread.of(r[key] for r in mine) for key in ("trigger_ms", "state_ms", "commit_ms", "state_rows")}
            stats |= {"load": Spread.of(r["load"][1] for r in mine), "runs": len(mine)}
            for key in ("trigger_ms", "state_ms"):
                pairs = [(run_of("txstate", rep), run_of(peer.name, rep)) for rep in reps]
                stats[f"ratio_{key}"] = Spread.of(ratio(tx[key], other[key]) for tx, other in pairs if tx and other)
            out.setdefault(workload.name, {})[peer.name] = stats
    return out


def render(stamp: str, mode: str, size: DataSize, repetitions: int, peers: list[Peer], stats: dict,
           problems: list[str], facts: list[tuple[str, str]], command: str) -> str:
    lines = [f"# txstate streaming benchmark, {mode} ({stamp})", "", "Reproduce with:", "", "```",
             command, f"make bench-streaming{'-quick' if mode == 'quick' else ''}", "```", "",
             table(["fact", "value"], facts, right_from=2), ""]
    lines += ["## Result check", ""]
    if problems:
        lines += ["**ERROR: providers disagree — these timings compare different work:**", ""]
        lines += [f"- {p}" for p in problems]
    else:
        lines += ["Every provider's output (row count and column sums over all batches) and final "
                  "`numRowsTotal` agree, in every repetition."]
    lines += ["", "## Batch duration and state operator time (medians over batches after warm-up)", "",
              f"Median over {repetitions} repetition(s), [min–max] of the repetitions' medians. ms; lower is better.",
              "state op ms = allUpdatesTimeMs + allRemovalsTimeMs + commitTimeMs, summed over the partitions "
              "(task time, not wall time).", ""]
    rows = []
    for workload, by_peer in stats.items():
        for peer in peers:
            s = by_peer[peer.name]
            rows.append([workload, peer.label, fmt_spread(s["trigger_ms"]), fmt_spread(s["state_ms"]),
                         fmt_spread(s["commit_ms"]), fmt_num(s["state_rows"] and s["state_rows"].median),
                         fmt_num(s["load"] and s["load"].median)])
    lines += [table(["workload", "provider", "batch ms", "state op ms", "commit ms", "final numRowsTotal",
                     "load avg"], rows, right_from=2), ""]
    lines += ["## Ratios: txstate ÷ peer (below 1: txstate is faster)", "",
              "Paired: the ratio of the two medians within each repetition, then the median [min–max] over "
              "repetitions. Runs of one repetition are minutes apart, so this cancels most of the load drift.", ""]
    others = [p for p in peers if not p.is_txstate]
    rows = []
    for workload, by_peer in stats.items():
        if "txstate" not in by_peer:
            continue
        for metric, label in (("trigger_ms", "batch ms"), ("state_ms", "state op ms")):
            rows.append([workload, label] + [fmt_ratio_spread(by_peer[p.name][f"ratio_{metric}"]) for p in others])
    lines += [table(["workload", "metric"] + [p.label for p in others], rows, right_from=2), ""]
    lines += [f"## Target: batch duration ≤ {TARGET}× Spark's RocksDB provider's", ""]
    lines += [f"- {t}" for t in targets(stats, peers)]
    lines += ["", "## Targets per workload: batch duration against Spark's RocksDB provider (changelog on)", ""]
    lines += [f"- {t}" for t in faster_targets(stats)]
    lines += [load_warning([s["load"].high for by in stats.values() for s in by.values() if s["load"]]), "## Setup", "",
              f"- {size.describe()}.",
              "- `local[2]`, `spark.sql.shuffle.partitions=4`, one Spark session (4 GiB driver) for every run; "
              "`Trigger.AvailableNow` with `maxFilesPerTrigger=1` on pre-written parquet files (one per batch), "
              "so every provider gets the same batches. Fresh checkpoint per run; every state store unloaded "
              "(`StateStore.stop()`) between runs.",
              "- Output goes to `foreachBatch`, which sums the batch (the check above): the same small extra "
              "job for every provider.",
              "- Provider order rotates per repetition. Spark's defaults otherwise (maintenance every 60 s, "
              "snapshots every 10 versions).",
              "- join: inner, no watermark, so every input row stays in state; join state format "
              "`spark.sql.streaming.join.stateFormatVersion` as in the facts above (four stores per partition "
              "at v2) for every provider.", ""]
    return "\n".join(lines)


def fmt_ratio_spread(s: Spread | None) -> str:
    if s is None:
        return "—"
    return fmt_ratio(s.median) + (f" [{s.low:.2f}–{s.high:.2f}]" if s.n > 1 else "")


def targets(stats: dict, peers: list[Peer]) -> list[str]:
    """The speed target per workload and RocksDB variant, on the paired batch-duration ratio."""
    result = []
    for workload, by_peer in stats.items():
        if "txstate" not in by_peer:
            continue
        for name in ("rocksdb-changelog", "rocksdb"):
            r = by_peer.get(name, {}).get("ratio_trigger_ms")
            if r is None:
                continue
            label = next(p.label for p in peers if p.name == name)
            verdict = "met" if r.median <= TARGET else "MISSED"
            result.append(f"{workload} vs {label}: {fmt_ratio_spread(r)} — {verdict}")
    return result


def faster_targets(stats: dict) -> list[str]:
    """The per-workload targets: aggregation ≤ 0.8×, dropDuplicates and the join ≤ 0.6× Spark RocksDB (changelog on)."""
    result = []
    for workload, limit in FASTER_TARGETS.items():
        r = stats.get(workload, {}).get("rocksdb-changelog", {}).get("ratio_trigger_ms")
        if r is None:
            result.append(f"{workload} ≤ {limit}×: not measured in this run")
        else:
            result.append(f"{workload} ≤ {limit}×: {fmt_ratio_spread(r)} — {'met' if r.median <= limit else 'MISSED'}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small input, one repetition (minutes)")
    parser.add_argument("--repetitions", type=int, help="default: 1 quick, 3 full")
    parser.add_argument("--only", nargs="*", default=[], help="workload or provider names to run")
    parser.add_argument("--work-dir", type=Path, help="default: a fresh temporary directory")
    parser.add_argument("--from-json", type=Path, help="only rewrite the report of a saved run (its .json)")
    args = parser.parse_args()
    if args.from_json:
        return rerender(args.from_json)
    mode = "quick" if args.quick else "full"
    size = QUICK if args.quick else FULL
    repetitions = args.repetitions or (1 if args.quick else 3)
    peers = [p for p in STREAMING_PEERS if not args.only or p.name in args.only or
             not any(o in {q.name for q in STREAMING_PEERS} for o in args.only)]
    workloads = [w for w in WORKLOADS if not args.only or w.name in args.only or
                 not any(o in {v.name for v in WORKLOADS} for o in args.only)]
    stamp = timestamp()
    command = "PYTHONPATH=python TXSTATE_SPARK_JAR=$PWD/target/txstate-spark-4.3_2.13-$(cat VERSION).jar " \
              f".venv/bin/python bench/streaming_bench.py {' '.join(sys.argv[1:])}".rstrip()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix=f"txstate-streaming-bench-{stamp}-"))
    load_start = load_average()
    started = time.monotonic()
    print(f"streaming bench ({mode}): {size.describe()}; R={repetitions}; work dir {work}", flush=True)
    dirs = write_inputs(work / "input", size)
    warm_dirs = write_inputs(work / "warmup-input", DataSize(2, 2_000, 5_000, 1_000, 2_000, 0))
    spark = build_session(4)
    runs: list[dict] = []
    try:
        # JIT and class loading for Spark's operators (and, in full mode, every provider) on tiny
        # input, not measured; each run's first batches are not counted either.
        for workload in workloads:
            for peer in (peers[-1:] if args.quick else peers):
                run_once(spark, peer, workload, warm_dirs, work / "checkpoint-warmup", 0)
        for rep in range(repetitions):
            order = peers[rep % len(peers):] + peers[:rep % len(peers)]
            for workload in workloads:
                for peer in order:
                    run = run_once(spark, peer, workload, dirs, work / f"checkpoint-{rep}-{workload.name}-{peer.name}",
                                   size.warmup_batches)
                    run["repetition"] = rep
                    runs.append(run)
                    print(f"rep {rep} {workload.name:15} {peer.label:30} batch p50 {fmt_num(run['trigger_ms'])} ms, "
                          f"state op p50 {fmt_num(run['state_ms'])} ms, state rows {run['state_rows']}, "
                          f"{run['seconds']} s, load {run['load'][1]}{', ERROR ' + run['error'] if run['error'] else ''}",
                          flush=True)
        join_format = spark.conf.get("spark.sql.streaming.join.stateFormatVersion")
    finally:
        spark.stop()
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    facts = machine_facts() + [
        ("load average at start / end", f"{load_start} / {load_average()}"),
        ("benchmark wall time", f"{time.monotonic() - started:.0f} s"),
        ("repetitions", str(repetitions)),
        ("spark.sql.streaming.join.stateFormatVersion", join_format),
    ]
    return report(stamp, mode, size, repetitions, peers, [w.name for w in workloads], runs, facts, command)


def report(stamp: str, mode: str, size: DataSize, repetitions: int, peers: list[Peer], workloads: list[str],
           runs: list[dict], facts: list[tuple[str, str]], command: str) -> int:
    """Checks, summarizes, prints and writes the results; 1 when providers disagree."""
    problems = check_results(runs)
    stats = summarize(runs, peers)
    stats = {w: stats[w] for w in workloads}
    markdown = render(stamp, mode, size, repetitions, peers, stats, problems, facts, command)
    data = {"kind": "streaming", "mode": mode, "stamp": stamp, "size": size.as_dict(), "repetitions": repetitions,
            "peers": [{"name": p.name, "label": p.label} for p in peers], "workloads": workloads,
            "problems": problems, "facts": dict(facts), "command": command, "runs": runs, "target": TARGET,
            "stats": {w: {p: {k: (v.__dict__ if isinstance(v, Spread) else v) for k, v in s.items()}
                          for p, s in by.items()} for w, by in stats.items()}}
    return publish("streaming", stamp, markdown, data, problems)


def rerender(path: Path) -> int:
    """Rewrites a saved run's report from its .json (after a change to the summary or the tables)."""
    data = json.loads(path.read_text())
    peers = [p for p in STREAMING_PEERS if p.name in {q["name"] for q in data["peers"]}]
    command = data.get("command") or ("PYTHONPATH=python TXSTATE_SPARK_JAR=$PWD/target/txstate-spark-4.3_2.13-$(cat VERSION).jar "
                                      ".venv/bin/python bench/streaming_bench.py" + (" --quick" if data["mode"] == "quick" else ""))
    return report(data["stamp"], data["mode"], DataSize(**data["size"]), data["repetitions"], peers,
                  data.get("workloads") or list(data["stats"]), data["runs"], list(data["facts"].items()), command)


if __name__ == "__main__":
    sys.exit(main())
