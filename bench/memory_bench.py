"""Memory benchmark: peak executor memory of one huge micro-batch, txstate
against Spark's RocksDB provider, in the same run.

  .venv/bin/python bench/memory_bench.py --quick     (part of `make bench-quick`)
  .venv/bin/python bench/memory_bench.py             (part of `make bench`)

Each configuration runs tests/jobs/bounded_memory_job.py in `huge` mode in its own process: one
micro-batch of `groupBy(k).agg(count, sum)` over millions of new keys on `local-cluster[2,1,1024]`
(two real executor JVMs of 1 GiB heap), while the job samples the executors' resident memory from
/proc (peak VmRSS, VmHWM) and reads their JVM heap peaks from Spark's executor metrics. The job
and the input generator are the bounded-memory test's own (imported, not copied), so the bench
measures exactly what tests/test_bounded_memory.py checks.

Writes bench/results/memory-<timestamp>.md and .json (read by plots.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from bench_common import (CHANGELOG_CONF, REPO_ROOT, ROCKSDB_CLASS, TXSTATE_CLASS, Spread, fmt_num, fmt_ratio,
                          fmt_spread, load_average, load_warning, machine_facts, ratio, table, timestamp,
                          publish)

from jobs import bounded_memory_job  # tests/, put on sys.path by bench_common

JOB = REPO_ROOT / "tests" / "jobs" / "bounded_memory_job.py"
MIB = 1 << 20
JOB_TIMEOUT_S = 1200


@dataclass(frozen=True)
class MemoryConfig:
    name: str
    label: str
    provider: str
    max_bytes: str = "-1"  # txstate's maxUncommittedBytes (the job always sets it; other providers ignore it)
    confs: tuple[str, ...] = field(default_factory=tuple)


TX_BOUNDED = MemoryConfig("txstate-32m", "txstate, maxUncommittedBytes=32m", TXSTATE_CLASS, "32m")
TX_UNBOUNDED = MemoryConfig("txstate-unbounded", "txstate, unbounded (-1)", TXSTATE_CLASS, "-1")
ROCKSDB = MemoryConfig("rocksdb-changelog", "Spark RocksDB (changelog on)", ROCKSDB_CLASS,
                       confs=(f"{CHANGELOG_CONF}=true",))
ROCKSDB_BOUNDED = MemoryConfig(
    "rocksdb-bounded", "Spark RocksDB (changelog on, boundedMemoryUsage)", ROCKSDB_CLASS,
    confs=(f"{CHANGELOG_CONF}=true", "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage=true"))
FULL_CONFIGS = (TX_BOUNDED, TX_UNBOUNDED, ROCKSDB, ROCKSDB_BOUNDED)
QUICK_CONFIGS = (TX_BOUNDED, ROCKSDB)


def run_job(config: MemoryConfig, input_dir: Path, work_dir: Path) -> dict:
    """Runs the job in its own process group (a timeout kills the driver and its executors too);
    returns its JSON report with the wall time and load average added."""
    work_dir.mkdir(parents=True, exist_ok=True)
    result = work_dir / "result.json"
    command = [sys.executable, str(JOB), "huge", "--input", str(input_dir), "--work-dir", str(work_dir),
               "--result", str(result), "--max-bytes", config.max_bytes, "--provider", config.provider,
               "--timeout", str(JOB_TIMEOUT_S - 120)]
    for conf in config.confs:
        command += ["--conf", conf]
    load_before = load_average()
    started = time.monotonic()
    with (work_dir / "job.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   cwd=str(REPO_ROOT), env=dict(os.environ, PYSPARK_PYTHON=sys.executable,
                                                                 PYSPARK_DRIVER_PYTHON=sys.executable))
        try:
            process.wait(timeout=JOB_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    report = json.loads(result.read_text()) if result.is_file() else {
        "errors": [f"the job wrote no report (exit code {process.returncode}); see {work_dir / 'job.log'}"]}
    report["wall_seconds"] = round(time.monotonic() - started, 1)
    report["load"] = [load_before, load_average()]
    return report


def run_metrics(config: MemoryConfig, report: dict) -> dict:
    """The numbers a report shows for one run."""
    rss = report.get("rss", {})
    heap = report.get("heap", {})
    failure = report.get("query_exception") or "; ".join(report.get("errors", []))
    progress = [p for p in report.get("progress", []) if p.get("stateOperators")]
    return {
        "config": config.name,
        "failure": (failure or "")[:400] or None,
        "oom": bool(failure) and any(w in failure for w in ("OutOfMemoryError", "Java heap space", "exited")),
        "peak_rss_mib": max((r["hwm"] for r in rss.values()), default=0) / MIB or None,
        "rss_mib": {e: round(r["hwm"] / MIB) for e, r in sorted(rss.items())},
        "peak_heap_mib": max((h.get("JVMHeapMemory", 0) for h in heap.values()), default=0) / MIB or None,
        "heap_mib": {e: round(h.get("JVMHeapMemory", 0) / MIB) for e, h in sorted(heap.items())},
        "gc_s": max((h.get("TotalGCTime", 0) for h in heap.values()), default=0) / 1000,
        "query_s": report.get("query_seconds"),
        "summary": report.get("summaries", {}).get("0"),
        "state_rows": progress[-1]["stateOperators"][0]["numRowsTotal"] if progress else None,
        "custom": {k: v for k, v in (progress[-1]["stateOperators"][0].get("customMetrics", {}) if progress else {}).items()
                   if k in ("txstateEarlyCommits", "txstateUncommittedBytesPeak", "rocksdbPinnedBlocksMemoryUsage",
                            "rocksdbTotalBytesWrittenByFlush", "rocksdbCommitFlushLatency")},
        "load": report.get("load"),
    }


def check(runs: list[dict], keys: int, rows: int, total: int) -> list[str]:
    """Each finished run's one batch must output every key once with the right counts and sums."""
    want = {"rows": keys, "n": rows, "total": total}
    problems = []
    for r in runs:
        if r["failure"]:
            continue
        got = {k: (r["summary"] or {}).get(k) for k in want}
        if got != want:
            problems.append(f"{r['config']}: batch output summed to {got}, expected {want}")
        if r["state_rows"] != keys:
            problems.append(f"{r['config']}: {r['state_rows']} state rows, expected {keys}")
    return problems


def render(stamp: str, mode: str, keys: int, rows: int, repetitions: int, configs, runs: list[dict],
           problems: list[str], facts, command: str) -> tuple[str, dict]:
    stats = {}
    for c in configs:
        mine = [r for r in runs if r["config"] == c.name]
        ok = [r for r in mine if not r["failure"]]
        stats[c.name] = {"peak_rss_mib": Spread.of(r["peak_rss_mib"] for r in ok),
                         "peak_heap_mib": Spread.of(r["peak_heap_mib"] for r in ok),
                         "query_s": Spread.of(r["query_s"] for r in ok),
                         "failed": len(mine) - len(ok), "runs": len(mine)}
    lines = [f"# txstate memory benchmark, {mode} ({stamp})", "", "Reproduce with:", "", "```", command,
             f"make bench-memory{'-quick' if mode == 'quick' else ''}", "```", "",
             table(["fact", "value"], facts, right_from=2), "", "## Result check", ""]
    lines += ([f"**ERROR:** {p}" for p in problems] if problems else
              [f"Every finished run output {keys:,} keys with counts summing to {rows:,} and the expected sums, "
               f"and ended with {keys:,} state rows."])
    lines += ["", "## Peak executor memory, one micro-batch", "",
              f"Median over {repetitions} repetition(s), [min–max]. Peak RSS: VmHWM of the executor JVM (the "
              "larger of the two executors); heap: Spark's peak `JVMHeapMemory` executor metric. "
              "Per executor: each run's VmHWM of executor 0 / 1.", ""]
    rows_md = []
    for c in configs:
        s = stats[c.name]
        mine = [r for r in runs if r["config"] == c.name]
        per_exec = "; ".join("/".join(str(v) for v in r["rss_mib"].values()) for r in mine if not r["failure"])
        failed = f"{s['failed']} of {s['runs']} failed" + (" (out of memory)" if any(r["oom"] for r in mine) else "")
        rows_md.append([c.label, fmt_spread(s["peak_rss_mib"]), per_exec or "—", fmt_spread(s["peak_heap_mib"]),
                        fmt_spread(s["query_s"]), failed if s["failed"] else "ok"])
    lines += [table(["configuration", "peak RSS MiB", "RSS MiB per executor", "peak heap MiB", "batch s",
                     "status"], rows_md), ""]
    lines += ["## Ratios: txstate ÷ Spark RocksDB", ""]
    ratio_rows = []
    for tx in (c for c in configs if c.provider == TXSTATE_CLASS):
        for peer in (c for c in configs if c.provider == ROCKSDB_CLASS):
            a, b = stats[tx.name], stats[peer.name]
            ratio_rows.append([f"{tx.label} ÷ {peer.label}",
                               *(fmt_ratio(ratio(a[m] and a[m].median, b[m] and b[m].median))
                                 for m in ("peak_rss_mib", "peak_heap_mib", "query_s"))])
    lines += [table(["pair", "peak RSS", "peak heap", "batch s"], ratio_rows), ""]
    custom = [[r["config"], json.dumps(r["custom"])] for r in runs if r["custom"]]
    if custom:
        lines += ["Provider metrics of the batch (last repetition of each):", "",
                  table(["configuration", "metrics"], list({c: [c, m] for c, m in custom}.values()), right_from=2), ""]
    lines += [load_warning([r["load"][1] for r in runs if r["load"]]), "## Setup", "",
              f"- One micro-batch of {rows:,} rows over {keys:,} new keys (`groupBy(k).agg(count, sum)`, update "
              "mode, `foreachBatch` sums the output), 4 parquet input files, `local-cluster[2,1,1024]` "
              "(2 executors, 1 core and 1 GiB heap each), 2 shuffle partitions: one state store per executor.",
              "- Each configuration in its own application (fresh executors, fresh checkpoint); RSS sampled "
              "every 200 ms from /proc by tests/jobs/bounded_memory_job.py.",
              "- Spark RocksDB keeps RocksDB's own defaults for memtables (its `writeBufferSizeMB`/"
              "`maxWriteBufferNumber` unset) and an 8 MiB block cache per instance; `boundedMemoryUsage` "
              "puts all instances of an executor under one shared 500 MiB limit.", ""]
    return "\n".join(lines), stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smaller batch, two configurations, one repetition")
    # Sized for a shared 2-core machine (one 1M-key run takes ~2 minutes there when busy); the bounded-memory
    # test uses 5M keys, e.g. --keys 5000000 on a quiet machine.
    parser.add_argument("--keys", type=int, help="new keys in the batch (default 1,000,000; quick 300,000)")
    parser.add_argument("--repetitions", type=int, help="default: 1 quick, 3 full")
    parser.add_argument("--only", nargs="*", default=[], help="configuration names to run")
    args = parser.parse_args()
    mode = "quick" if args.quick else "full"
    keys = args.keys or (300_000 if args.quick else 1_000_000)
    rows = keys + keys // 5  # the first fifth of the keys twice, so counts and sums are not trivial
    repetitions = args.repetitions or (1 if args.quick else 3)
    configs = [c for c in (QUICK_CONFIGS if args.quick else FULL_CONFIGS) if not args.only or c.name in args.only]
    stamp = timestamp()
    command = ("PYTHONPATH=python TXSTATE_SPARK_JAR=$PWD/target/txstate-spark-4.3_2.13-$(cat VERSION).jar "
               f".venv/bin/python bench/memory_bench.py {' '.join(sys.argv[1:])}").rstrip()
    load_start = load_average()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"txstate-memory-bench-{stamp}-"))
    print(f"memory bench ({mode}): one batch of {rows:,} rows, {keys:,} keys; R={repetitions}; "
          f"{[c.name for c in configs]}; work dir {work}", flush=True)
    k, v = bounded_memory_job.huge_keys(rows, keys)
    total = int(v.sum())
    bounded_memory_job.write_parquet(work / "input", k, v, files=4)
    del k, v
    runs: list[dict] = []
    try:
        for rep in range(repetitions):
            order = configs[rep % len(configs):] + configs[:rep % len(configs)]
            for config in order:
                report = run_job(config, work / "input", work / f"run-{rep}-{config.name}")
                run = run_metrics(config, report) | {"repetition": rep, "wall_s": report["wall_seconds"]}
                runs.append(run)
                print(f"rep {rep} {config.label:50} peak RSS {fmt_num(run['peak_rss_mib'])} MiB {run['rss_mib']}, "
                      f"heap {fmt_num(run['peak_heap_mib'])} MiB, batch {run['query_s']} s, load {run['load'][1]}"
                      f"{', FAILED: ' + run['failure'][:200] if run['failure'] else ''}", flush=True)
                shutil.rmtree(work / f"run-{rep}-{config.name}" / "checkpoint", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    problems = check(runs, keys, rows, total)
    facts = machine_facts() + [("load average at start / end", f"{load_start} / {load_average()}"),
                               ("benchmark wall time", f"{time.monotonic() - started:.0f} s"),
                               ("repetitions", str(repetitions))]
    markdown, stats = render(stamp, mode, keys, rows, repetitions, configs, runs, problems, facts, command)
    data = {"kind": "memory", "mode": mode, "stamp": stamp, "keys": keys, "rows": rows, "repetitions": repetitions,
            "configs": [{"name": c.name, "label": c.label} for c in configs], "runs": runs, "problems": problems,
            "facts": dict(facts),
            "stats": {c: {k: (v.__dict__ if isinstance(v, Spread) else v) for k, v in s.items()}
                      for c, s in stats.items()}}
    return publish("memory", stamp, markdown, data, problems)


if __name__ == "__main__":
    sys.exit(main())
