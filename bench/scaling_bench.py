"""The scaling curve: updates/s, commit p50 and peak RSS of each provider as the state grows.

  make bench-scaling          1M, 10M and 50M keys, uniform and Zipf keys (about an hour on 2 cores)
  make bench-scaling-quick    100k and 300k keys, the same peers (a few minutes)
  .venv/bin/python bench/scaling_bench.py --keys 1000000,10000000 --dists zipf --heap 6g

Each cell (state size x key distribution x provider) is one run of the store benchmark
(txstate.bench.StoreBench: a preload of N keys, then batches of get+put through Spark's
StateStoreProvider API) in a JVM of its own, so its peak RSS (the kernel's maxrss of that process)
is its own. Every JVM gets the same heap limit and exits on OutOfMemoryError: a provider that keeps
its state on the heap (Spark's HDFS-backed one) shows where it runs out. Writes
bench/results/scaling-<timestamp>.md and .json; `make bench-plots` draws docs/bench/scaling.png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench_common import REPO_ROOT, RESULTS_DIR, fmt_num, fmt_ratio, load_warning, machine_facts, publish, ratio, table, \
    timestamp

ROOT = REPO_ROOT
JAVA_ARGS = ROOT / "target" / "bench-java-args"
PEERS = ("txstate", "txstate-cache", "rocksdb-changelog", "rocksdb-bounded", "hdfs")
OUT_OF_HEAP_EXIT = 3  # what -XX:+ExitOnOutOfMemoryError exits with


def java_args() -> list[str]:
    """The benchmark JVM's flags and classpath, written by sbt (one sbt start for the whole curve)."""
    subprocess.run([str(ROOT / "build" / "sbt"), "bench/benchJavaArgs"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    return JAVA_ARGS.read_text().splitlines()


def run_cell(args: list[str], heap: str, keys: int, dist: str, peer: str, batches: int, updates: int,
             timeout_s: int) -> dict:
    """One StoreBench run in its own JVM: its headline numbers, peak RSS, and how it ended."""
    command = ["java", f"-Xmx{heap}", "-XX:+ExitOnOutOfMemoryError", *args, "txstate.bench.StoreBench",
               "--keys", str(keys), "--dist", dist, "--only", peer, "--batches", str(batches),
               "--updates", str(updates), "--reps", "1", "--no-profile", "--no-reopen"]
    started = time.monotonic()
    log = RESULTS_DIR / f".scaling-{peer}-{dist}-{keys}.log"
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=out)
        deadline = started + timeout_s
        status, usage = 0, None
        while usage is None:
            pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                usage = rusage
            elif time.monotonic() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
            else:
                time.sleep(0.5)
    seconds = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    cell = {"keys": keys, "distribution": dist, "peer": peer, "seconds": round(seconds, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "exit": code}
    text = log.read_text(errors="replace")
    if code == OUT_OF_HEAP_EXIT or "OutOfMemoryError" in text:
        cell["outcome"] = f"out of heap ({heap})"
    elif time.monotonic() > deadline:
        cell["outcome"] = f"stopped after {timeout_s} s"
    elif code != 0:
        cell["outcome"] = f"failed (exit {code}; see {log.name})"
    else:
        report = next((line.split("wrote ", 1)[1].strip() for line in text.splitlines()
                       if "wrote " in line and line.strip().endswith(".json")), None)
        if report is None:
            cell["outcome"] = "failed (no report written)"
        else:
            data = json.loads((ROOT / report).read_text())
            numbers = data["peers"].get(peer, {})
            cell.update({k: v for k, v in numbers.items() if k != "label"})
            cell["outcome"] = f"failed: {numbers['failed']}" if "failed" in numbers else "ok"
            for suffix in (".json", ".md"):  # the per-run reports: this curve's report replaces them
                (ROOT / report).with_suffix(suffix).unlink(missing_ok=True)
    if cell["outcome"] == "ok":
        log.unlink(missing_ok=True)
    return cell


def value(cells: list[dict], keys: int, dist: str, peer: str, metric: str = "updates_per_s") -> float | None:
    return next((c.get(metric) for c in cells if (c["keys"], c["distribution"], c["peer"]) == (keys, dist, peer)
                 and c["outcome"] == "ok"), None)


def render(cells: list[dict], params: argparse.Namespace, stamp: str, loads: list[float], env: dict) -> str:
    def num(c: dict, k: str, scale: float = 1.0) -> str:
        return fmt_num(c[k] / scale) if isinstance(c.get(k), (int, float)) else "—"
    rows = [(f"{c['keys']:,}", c["distribution"], c["peer"], c["outcome"], num(c, "updates_per_s"),
             num(c, "updates_per_cpu_s"), num(c, "commit_p50_ms"), num(c, "peak_rss_mib"), num(c, "preload_ms", 1000),
             num(c, "rerun_ms"), num(c, "checkpoint_bytes", 1 << 20), c.get("verified", "—")) for c in cells]
    ratios = [(f"{k:,}", d, fmt_ratio(ratio(value(cells, k, d, "txstate"), value(cells, k, d, "hdfs"))),
               fmt_ratio(ratio(value(cells, k, d, "txstate"), value(cells, k, d, "rocksdb-changelog"))),
               fmt_ratio(ratio(value(cells, k, d, "txstate"), value(cells, k, d, "rocksdb-bounded"))),
               fmt_ratio(ratio(value(cells, k, d, "txstate"), value(cells, k, d, "txstate-cache"))))
              for k in sorted({c["keys"] for c in cells}) for d in params.dists.split(",")]
    return "\n".join([
        f"# txstate scaling curve ({stamp})", "",
        f"Command: `.venv/bin/python bench/scaling_bench.py --keys {params.keys} --dists {params.dists} "
        f"--peers {params.peers} --batches {params.batches} --updates {params.updates} --heap {params.heap}`", "",
        "Each cell is one StoreBench run (a preload of N keys in one batch, then batches of get+put through "
        "Spark's StateStoreProvider API) in a JVM of its own, every JVM with the same heap limit; peak RSS is "
        "that JVM's maxrss. updates/s and commit p50 are medians over the measured batches.", "",
        *[f"- {k}: {v}" for k, v in env.items()], load_warning(loads),
        table(("keys", "keys picked", "provider", "outcome", "updates/s", "updates/CPU-s", "commit p50 ms",
               "peak RSS MiB", "preload s", "re-run committed v ms", "checkpoint MiB", "state verified"), rows),
        "", "Ratios of updates/s in this run:", "",
        table(("keys", "keys picked", "txstate ÷ HDFS", "txstate ÷ RocksDB (changelog on)", "txstate ÷ RocksDB (bounded)", "txstate ÷ txstate with cache"), ratios),
        ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", default="1000000,10000000,50000000", help="state sizes, comma-separated")
    parser.add_argument("--dists", default="uniform,zipf", help="uniform, zipf or both")
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--batches", type=int, default=20, help="measured batches per cell (20: caches are measured full)")
    parser.add_argument("--updates", type=int, default=200000, help="get+put per batch")
    parser.add_argument("--heap", default="6g", help="-Xmx of every benchmark JVM (the same for all)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds before one run is stopped")
    params = parser.parse_args()
    sizes = [int(k) for k in params.keys.split(",")]
    if any(d not in ("uniform", "zipf") for d in params.dists.split(",")) or not sizes or min(sizes) <= 0:
        parser.error("--keys takes positive whole numbers and --dists uniform and/or zipf")
    args = java_args()
    stamp, cells, loads = timestamp(), [], []
    plan = [(k, d, p) for k in sizes for d in params.dists.split(",") for p in params.peers.split(",")]
    for i, (keys, dist, peer) in enumerate(plan, 1):
        print(f"[scaling] {i}/{len(plan)}: {keys:,} keys, {dist}, {peer}", file=sys.stderr, flush=True)
        cell = run_cell(args, params.heap, keys, dist, peer, params.batches, params.updates, params.timeout)
        loads.append(os.getloadavg()[0])
        print(f"[scaling]   {cell['outcome']}: {cell.get('updates_per_s', 0):,.0f} updates/s, "
              f"peak RSS {cell['peak_rss_mib']:,} MiB in {cell['seconds']:.0f} s", file=sys.stderr, flush=True)
        cells.append(cell)
    env = dict(machine_facts())
    markdown = render(cells, params, stamp, loads, env)
    data = {"kind": "scaling", "facts": env, "heap": params.heap, "batches": params.batches,
            "updates": params.updates, "cells": cells, "loads": loads}
    problems = [f"{c['peer']} at {c['keys']:,} {c['distribution']} keys: {c['outcome']}" for c in cells
                if c["outcome"] != "ok" and not c["outcome"].startswith("out of heap")]
    return publish("scaling", stamp, markdown, data, problems)


if __name__ == "__main__":
    sys.exit(main())
