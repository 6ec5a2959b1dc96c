"""The whole job as a user's first streaming job meets it: each provider in a fresh Spark
application (bench/fresh_app_job.py, one process per run), every batch reported, the first ones
apart from the steady ones; and a small-batch run, 1,000 rows per batch over 1M keys of state.

  .venv/bin/python bench/fresh_app_bench.py [--quick] [--repeat 3] [--only aggregation txstate ...]
  make bench-fresh-app

Shape: `local[2]`, 4 shuffle partitions, 8 batches of 60k rows over 300k keys
(aggregation, dropDuplicates; the join 12k rows per side over 80k keys), Trigger.AvailableNow with
one parquet file per batch. Small batches: the aggregation, batch 0 brings 1M distinct keys, then
40 batches of 1,000 rows drawn from them; p50 and p99 of those batches' time.

On two cores one fresh application's steady batches vary widely from run to run (the JIT's compiler
threads compete with the tasks while the first batches run), so each provider
runs `--repeat` applications per workload, interleaved in a rotating order; a provider's figure is the
median over its applications of each one's steady median, shown with the spread.

Targets, each a ratio within this run: batch time (median of batches 3 and on) ≤ 0.8× Spark's
RocksDB provider (changelog on) and ≤ 1.0× the HDFS provider; small batches p99 ≤ 0.8× RocksDB's.
Writes bench/results/fresh-app-<timestamp>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import (STREAMING_PEERS, fmt_num, fmt_ratio, load_average, load_warning, machine_facts,
                          publish, ratio, table, timestamp)
from streaming_bench import check_results
from streaming_data import DataSize, write_inputs, write_small_batches
from streaming_workloads import WORKLOADS

JOB = Path(__file__).resolve().parent / "fresh_app_job.py"
FULL = DataSize(batches=8, rows=60_000, keys=300_000, join_rows=12_000, join_keys=80_000, warmup_batches=3)
QUICK = DataSize(batches=5, rows=20_000, keys=80_000, join_rows=4_000, join_keys=30_000, warmup_batches=2)
SMALL_STATE_KEYS, SMALL_ROWS, SMALL_BATCHES = 1_000_000, 1_000, 40
QUICK_SMALL = (200_000, 1_000, 15)
TARGETS = {"rocksdb-changelog": 0.8, "hdfs": 1.0}
SMALL_P99_TARGET = 0.8
JOB_TIMEOUT_S = 1200


def run_job(peer: str, workload: str, input_dir: Path, work: Path) -> dict:
    """One fresh application; its result, or the reason it gave none."""
    run_dir = Path(tempfile.mkdtemp(prefix=f"{workload}-{peer}-", dir=work))
    result = run_dir / "result.json"
    command = [sys.executable, str(JOB), "--peer", peer, "--workload", workload, "--input", str(input_dir),
               "--checkpoint", str(run_dir / "checkpoint"), "--result", str(result)]
    load_before = load_average()
    done = subprocess.run(command, capture_output=True, text=True, timeout=JOB_TIMEOUT_S)
    try:
        if done.returncode != 0 or not result.exists():
            return {"peer": peer, "workload": workload, "batches": [], "summary": {}, "state_rows": None,
                    "error": f"exit {done.returncode}: {done.stderr[-800:]}"}
        out = json.loads(result.read_text())
        out["load"] = [load_before, load_average()]
        return out
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def steady_ms(run: dict, warmup: int) -> float | None:
    times = [b["trigger_ms"] for b in run["batches"] if b["batch"] >= warmup]
    return statistics.median(times) if times else None


def of_provider(runs: list[dict], workload: str, peer: str) -> list[dict]:
    return [r for r in runs if r["workload"] == workload and r["peer"] == peer and r["batches"]]


def median_of(runs: list[dict], value) -> float | None:
    values = [v for v in (value(r) for r in runs) if v is not None]
    return statistics.median(values) if values else None


def spread(runs: list[dict], value) -> str:
    values = [v for v in (value(r) for r in runs) if v is not None]
    return f"{fmt_num(min(values))}–{fmt_num(max(values))}" if len(values) > 1 else "—"


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def small_stats(run: dict) -> dict:
    times = [b["trigger_ms"] for b in run["batches"] if b["batch"] >= 1]
    return {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99), "batches": len(times),
            "load_ms": run["batches"][0]["trigger_ms"] if run["batches"] else None}


def render(stamp: str, size: DataSize, small: tuple[int, int, int], runs: list[dict], small_runs: list[dict],
           problems: list[str], facts: list[tuple[str, str]], command: str) -> tuple[str, list[str]]:
    peers = [p for p in STREAMING_PEERS if any(r["peer"] == p.name for r in runs + small_runs)]
    lines = [f"# txstate whole job, fresh application per run ({stamp})", "", "Reproduce with:", "", "```",
             command, "```", "", table(["fact", "value"], facts, right_from=2), "", "## Result check", ""]
    lines += ([f"- **ERROR:** {p}" for p in problems] if problems else
              ["Every provider's output (row count and column sums over all batches) and final `numRowsTotal` agree."])
    lines += ["", "## Every batch of every application (ms, `durationMs.triggerExecution`)", "",
              f"{size.describe()}. Session start is the time to a running SparkSession; batch 0 includes the "
              "provider's first load and the JIT of its code.", ""]
    most = max((len(r["batches"]) for r in runs), default=0)
    rows = []
    for r in sorted(runs, key=lambda r: (r["workload"], r["peer"], r.get("round", 0))):
        times = [fmt_num(b["trigger_ms"]) for b in r["batches"]] + ["—"] * (most - len(r["batches"]))
        rows.append([r["workload"], r["peer"], str(r.get("round", 0) + 1), fmt_num(r.get("session_s"), " s")] + times +
                    [fmt_num(steady_ms(r, size.warmup_batches)), fmt_num(r.get("seconds"), " s")])
    lines += [table(["workload", "provider", "app", "session start"] + [f"b{i}" for i in range(most)] +
                    [f"median b{size.warmup_batches}+", "app wall"], rows, right_from=3), ""]

    def steady(run: dict) -> float | None:
        return steady_ms(run, size.warmup_batches)

    lines += ["## Each provider over its applications (ms)", "",
              f"The median over applications of each one's steady median (batches {size.warmup_batches} and on), "
              "and the range of those medians.", ""]
    rows = []
    for w in sorted({r["workload"] for r in runs}):
        for p in peers:
            apps = of_provider(runs, w, p.name)
            if apps:
                rows.append([w, p.name, str(len(apps)), fmt_num(median_of(apps, lambda r: r["batches"][0]["trigger_ms"])),
                             fmt_num(median_of(apps, steady)), spread(apps, steady)])
    lines += [table(["workload", "provider", "applications", "batch 0 (median)", "steady (median)", "steady range"],
                    rows, right_from=2), ""]
    verdicts: list[str] = []
    lines += ["## Ratios: txstate ÷ peer (below 1: txstate is faster)", ""]
    rows = []
    for workload in sorted({r["workload"] for r in runs}):
        mine = of_provider(runs, workload, "txstate")
        for peer in (p for p in peers if not p.is_txstate):
            other = of_provider(runs, workload, peer.name)
            if not mine or not other:
                continue
            first = ratio(median_of(mine, lambda r: r["batches"][0]["trigger_ms"]),
                          median_of(other, lambda r: r["batches"][0]["trigger_ms"]))
            steady_ratio = ratio(median_of(mine, steady), median_of(other, steady))
            wall = ratio(median_of(mine, lambda r: r.get("seconds")), median_of(other, lambda r: r.get("seconds")))
            rows.append([workload, peer.label, fmt_ratio(first), fmt_ratio(steady_ratio), fmt_ratio(wall)])
            if peer.name in TARGETS and steady_ratio is not None:
                limit = TARGETS[peer.name]
                verdicts.append(f"{workload}: steady batch time ≤ {limit}× {peer.label}: {fmt_ratio(steady_ratio)} — "
                                f"{'met' if steady_ratio <= limit else 'MISSED'}")
    lines += [table(["workload", "peer", "batch 0", f"median b{size.warmup_batches}+", "app wall"], rows,
                    right_from=2), ""]
    if small_runs:
        keys, rows_per, batches = small
        lines += ["## Small batches", "", f"Aggregation: batch 0 brings {keys:,} distinct keys, then {batches} "
                  f"batches of {rows_per:,} rows drawn from them. ms per batch after batch 0.", ""]
        stats = {r["peer"]: small_stats(r) for r in small_runs if r["batches"]}
        lines += [table(["provider", "batch 0 (state load)", "p50", "p99", "batches"],
                        [[p, fmt_num(s["load_ms"]), fmt_num(s["p50"]), fmt_num(s["p99"]), str(s["batches"])]
                         for p, s in stats.items()], right_from=1), ""]
        if "txstate" in stats and "rocksdb-changelog" in stats:
            p99 = ratio(stats["txstate"]["p99"], stats["rocksdb-changelog"]["p99"])
            verdicts.append(f"small batches: p99 ≤ {SMALL_P99_TARGET}× Spark RocksDB (changelog on): "
                            f"{fmt_ratio(p99)} — {'met' if p99 is not None and p99 <= SMALL_P99_TARGET else 'MISSED'}")
    lines += ["## Targets", ""] + [f"- {v}" for v in verdicts]
    lines += [load_warning([r["load"][1] for r in runs + small_runs if r.get("load")])]
    return "\n".join(lines), verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller input (a few minutes)")
    parser.add_argument("--only", nargs="*", default=[], help="workload or provider names; 'small' for the small batches")
    parser.add_argument("--repeat", type=int, default=3, help="fresh applications per provider and workload")
    parser.add_argument("--work-dir", type=Path)
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    small = QUICK_SMALL if args.quick else (SMALL_STATE_KEYS, SMALL_ROWS, SMALL_BATCHES)
    names = set(args.only)
    peers = [p for p in STREAMING_PEERS if not names & {q.name for q in STREAMING_PEERS} or p.name in names]
    workloads = [w for w in WORKLOADS if not names & ({v.name for v in WORKLOADS} | {"small"}) or w.name in names]
    run_small = not names & ({v.name for v in WORKLOADS} | {"small"}) or "small" in names
    stamp = timestamp()
    command = "PYTHONPATH=python TXSTATE_SPARK_JAR=$PWD/target/txstate-spark-4.3_2.13-$(cat VERSION).jar " \
              f".venv/bin/python bench/fresh_app_bench.py {' '.join(sys.argv[1:])}".rstrip()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix=f"txstate-fresh-app-{stamp}-"))
    started, load_start = time.monotonic(), load_average()
    print(f"fresh-application bench: {size.describe()}; work dir {work}", flush=True)
    inputs = work / "input"
    write_inputs(inputs, size)
    small_inputs = work / "small-input"
    if run_small:
        write_small_batches(small_inputs / "events", *small)
    runs, small_runs = [], []
    try:
        for turn, (round_, workload) in enumerate((n, w) for n in range(args.repeat) for w in workloads):
            order = peers[turn % len(peers):] + peers[:turn % len(peers)]  # none always runs first
            for peer in order:
                runs.append({**run_job(peer.name, workload.name, inputs, work), "round": round_})
                r = runs[-1]
                print(f"{workload.name:15} {peer.name:18} app {round_ + 1} batches {[b['trigger_ms'] for b in r['batches']]} ms"
                      f"{', ERROR ' + r['error'] if r.get('error') else ''}", flush=True)
        for peer in peers if run_small else []:
            small_runs.append(run_job(peer.name, "aggregation", small_inputs, work))
            s = small_stats(small_runs[-1]) if small_runs[-1]["batches"] else {}
            print(f"small batches   {peer.name:18} {s}{', ERROR ' + small_runs[-1]['error'] if small_runs[-1].get('error') else ''}",
                  flush=True)
    finally:
        if not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    problems = check_results(runs) + [p.replace("aggregation", "small-batch aggregation") for p in check_results(small_runs)]
    facts = machine_facts() + [("load average at start / end", f"{load_start} / {load_average()}"),
                               ("benchmark wall time", f"{time.monotonic() - started:.0f} s")]
    markdown, verdicts = render(stamp, size, small, runs, small_runs, problems, facts, command)
    data = {"kind": "fresh-app", "stamp": stamp, "size": size.as_dict(), "small": small, "runs": runs,
            "small_runs": small_runs, "problems": problems, "verdicts": verdicts, "facts": dict(facts),
            "command": command}
    return publish("fresh-app", stamp, markdown, data, problems)


if __name__ == "__main__":
    sys.exit(main())
