"""Many stores on one executor: batch time and executor memory as the store count grows.

  make bench-many-stores        100, 200 and 400 shuffle partitions, every provider (about 15 minutes)
  .venv/bin/python bench/many_stores_bench.py --partitions 100 --peers txstate,rocksdb-bounded

Each cell (shuffle partitions x provider) runs bench/many_stores_job.py in a process of its own: a
stream-stream join and an aggregation at once, on one executor JVM (2 cores, 2 GiB heap), so that
executor hosts 5 store instances per partition (500 at 100 partitions). Spark's RocksDB provider runs
with its changelog on, unbounded and bounded (`boundedMemoryUsage`, `maxMemoryUsageMB` equal to
txstate's default executor budget, `maxNativeMemoryMB` 256). Reported: each query's median batch
time after the warm-up batches, the executor's peak RSS and open files, and the outputs, which must
agree across providers. Writes bench/results/many-stores-<timestamp>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_common import (CHANGELOG_CONF, HDFS, PROVIDER_CLASS_CONF, REPO_ROOT, ROCKSDB_CHANGELOG, ROCKSDB_CLASS,
                          TXSTATE, Peer, fmt_num, fmt_ratio, load_average, load_warning, machine_facts, publish,
                          ratio, table, timestamp)
from streaming_data import DataSize, write_inputs

ROCKSDB_BOUNDED = Peer("rocksdb-bounded", "Spark RocksDB (changelog on, bounded 256 MiB)", {
    PROVIDER_CLASS_CONF: ROCKSDB_CLASS, CHANGELOG_CONF: "true",
    "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
    "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "256"})
PEERS = {p.name: p for p in (TXSTATE, ROCKSDB_CHANGELOG, ROCKSDB_BOUNDED, HDFS)}
SIZE = DataSize(batches=8, rows=20_000, keys=80_000, join_rows=4_000, join_keys=30_000, warmup_batches=2)
JOB = Path(__file__).resolve().parent / "many_stores_job.py"
MIB = 1 << 20


def run_cell(peer: Peer, partitions: int, inputs: Path, scratch: Path) -> dict:
    out = scratch / f"{peer.name}-{partitions}.json"
    work = scratch / f"{peer.name}-{partitions}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(REPO_ROOT / d) for d in ("bench", "tests", "python")))
    log = scratch / f"{peer.name}-{partitions}.log"
    with log.open("w") as stderr:
        done = subprocess.run([sys.executable, str(JOB), "--partitions", str(partitions), "--confs",
                               json.dumps(peer.confs), "--inputs", str(inputs), "--work", str(work), "--out", str(out)],
                              env=env, stdout=subprocess.DEVNULL, stderr=stderr, timeout=3600)
    shutil.rmtree(work, ignore_errors=True)
    if done.returncode != 0 or not out.exists():
        tail = log.read_text().splitlines()[-5:]
        return {"peer": peer.name, "partitions": partitions, "errors": [f"exit {done.returncode}: {' | '.join(tail)}"]}
    report = json.loads(out.read_text())
    report["peer"] = peer.name
    for name, query in report["queries"].items():
        measured = [b["ms"] for b in query["batches"] if b["batch"] >= SIZE.warmup_batches]
        query["median_ms"] = statistics.median(measured) if measured else None
    return report


def cell(cells: list[dict], peer: str, partitions: int) -> dict:
    return next((c for c in cells if c["peer"] == peer and c["partitions"] == partitions), {})


def median_ms(c: dict, query: str) -> float | None:
    return c.get("queries", {}).get(query, {}).get("median_ms")


def rss_mib(c: dict) -> float | None:
    return c["executor_peak_rss"] / MIB if c.get("executor_peak_rss") else None


def open_files(c: dict) -> int | None:
    return c.get("executor_peak_open_files") or None


def check_outputs(cells: list[dict]) -> list[str]:
    problems = [f"{c['peer']} at {c['partitions']} partitions: {e}" for c in cells for e in c.get("errors", [])]
    for partitions in sorted({c["partitions"] for c in cells}):
        summaries = {c["peer"]: {q: v["summary"] for q, v in c.get("queries", {}).items()}
                     for c in cells if c["partitions"] == partitions and not c.get("errors")}
        if len({json.dumps(s, sort_keys=True) for s in summaries.values()}) > 1:
            problems.append(f"outputs differ at {partitions} partitions: {summaries}")
    return problems


def render(cells: list[dict], sizes: list[int], peers: list[str], stamp: str, loads: list[float],
           problems: list[str]) -> str:
    rows = [(str(c["partitions"]), str(5 * c["partitions"]), PEERS[c["peer"]].label,
             fmt_num(median_ms(c, "join")), fmt_num(median_ms(c, "aggregation")), fmt_num(rss_mib(c)),
             fmt_num(open_files(c)), fmt_num(c.get("seconds")), "; ".join(c.get("errors", [])) or "ok") for c in cells]
    ratios, targets = [], []
    for p in sizes:
        tx = cell(cells, "txstate", p)
        for peer in (x for x in peers if x != "txstate"):
            other = cell(cells, peer, p)
            ratios.append((str(p), PEERS[peer].label, fmt_ratio(ratio(median_ms(tx, "join"), median_ms(other, "join"))),
                           fmt_ratio(ratio(median_ms(tx, "aggregation"), median_ms(other, "aggregation"))),
                           fmt_ratio(ratio(rss_mib(tx), rss_mib(other))),
                           fmt_ratio(ratio(open_files(tx), open_files(other)))))
        bounded = cell(cells, "rocksdb-bounded", p)
        for query in ("join", "aggregation"):
            r = ratio(median_ms(tx, query), median_ms(bounded, query))
            if r is not None:
                targets.append(f"- {p} partitions, {query}: median batch time {fmt_ratio(r)} Spark RocksDB (bounded), "
                               f"target ≤ 0.5×: {'met' if r <= 0.5 else 'MISSED'}")
        r = ratio(rss_mib(tx), rss_mib(bounded))
        if r is not None:
            targets.append(f"- {p} partitions: executor peak RSS {fmt_ratio(r)} Spark RocksDB (bounded), target ≤ 1.0×: "
                           f"{'met' if r <= 1.0 else 'MISSED'}")
    rss = [rss_mib(cell(cells, "txstate", p)) for p in sizes]
    if len(sizes) > 1 and all(rss):
        spread = max(rss) / min(rss)
        targets.append(f"- txstate's executor peak RSS from {sizes[0]} to {sizes[-1]} partitions: largest ÷ smallest "
                       f"{spread:.2f}, target within 20%: {'met' if spread <= 1.2 else 'MISSED'}")
    return "\n".join([
        f"# txstate many-stores benchmark ({stamp})", "",
        f"Reproduce with `.venv/bin/python bench/many_stores_bench.py --partitions {','.join(map(str, sizes))} "
        f"--peers {','.join(peers)}` (`make bench-many-stores`).", "",
        *[f"- {k}: {v}" for k, v in machine_facts()], load_warning(loads), "",
        f"A stream-stream join (inner, no watermark) and an aggregation (update mode) run at once on one executor "
        f"(`local-cluster[1,2,2048]`), 5 store instances per partition; {SIZE.describe()}.", "",
        "## Results", "",
        table(("partitions", "store instances", "provider", "join batch ms (median)", "aggregation batch ms (median)",
               "executor peak RSS MiB", "executor peak open files", "run s", "outcome"), rows, right_from=3), "",
        "## Ratios: txstate ÷ peer (below 1: txstate is faster or smaller)", "",
        table(("partitions", "peer", "join batch ms", "aggregation batch ms", "executor peak RSS", "open files"), ratios, right_from=2),
        "", "## Targets", "", *targets, "",
        "## Output check", "",
        "Every provider's outputs (rows and column sums over all batches) agree at each size." if not problems
        else "\n".join(f"- {p}" for p in problems), ""])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", default="100,200,400", help="shuffle partitions, comma-separated")
    parser.add_argument("--peers", default=",".join(PEERS), help=f"any of {', '.join(PEERS)}")
    params = parser.parse_args()
    sizes = sorted(int(p) for p in params.partitions.split(","))
    peers = [p for p in params.peers.split(",") if p]
    unknown = [p for p in peers if p not in PEERS]
    if unknown or "txstate" not in peers or not sizes or min(sizes) <= 0:
        parser.error(f"--peers takes txstate and any of {', '.join(PEERS)} (unknown: {unknown}); "
                     "--partitions positive whole numbers")
    stamp, cells, loads = timestamp(), [], []
    with tempfile.TemporaryDirectory(prefix="txstate-many-stores-") as tmp:
        scratch = Path(tmp)
        write_inputs(scratch / "input", SIZE)
        for partitions in sizes:
            for peer in peers:
                print(f"[many-stores] {partitions} partitions, {peer}", file=sys.stderr, flush=True)
                c = run_cell(PEERS[peer], partitions, scratch / "input", scratch)
                loads.append(load_average())
                print(f"[many-stores]   join {fmt_num(median_ms(c, 'join'))} ms, aggregation "
                      f"{fmt_num(median_ms(c, 'aggregation'))} ms, executor RSS {fmt_num(rss_mib(c))} MiB, "
                      f"{fmt_num(open_files(c))} open files "
                      f"{c.get('errors') or ''}", file=sys.stderr, flush=True)
                cells.append(c)
    problems = check_outputs(cells)
    markdown = render(cells, sizes, peers, stamp, loads, problems)
    return publish("many-stores", stamp, markdown, {"kind": "many-stores", "size": SIZE.as_dict(), "cells": cells,
                                                    "loads": loads}, problems)


if __name__ == "__main__":
    sys.exit(main())
