"""The soak: three stateful queries on txstate, on `local-cluster[2,1,1024]`, under seeded faults,
checked against a model after every restart and at the end. `make soak` runs it; see
docs/reliability.md, "Soak".

The harness (this process) writes the input batch by batch, keeps the model (soak_model.py), runs
the driver (soak_driver.py) in a process group of its own, and injects the faults:
  * executor:<phase>: SIGKILL of an executor JVM in a phase of the aggregation's stores (put,
    early-commit, commit, snapshot, cleanup), aimed by the driver's FaultRunner (soak_faults.py);
    Spark retries the lost tasks on the executor the worker launches in its place;
  * driver: SIGKILL of the driver's whole process group (Python, the driver JVM with the
    standalone master and workers inside it, the executor JVMs) at a random point of a batch, then
    a new driver on the same checkpoints and local directories;
  * restart-keep / restart-wipe: a clean stop (SIGTERM) between batches, then a new driver with the
    local directories kept, or deleted (every store rebuilds from the checkpoint).
Checks (each failure is a violation, listed in the report; the exit code is 1 when there is any):
  * every delivery of every batch of every query equals the model's output of that batch (no lost
    update, no duplicate, a re-delivered batch repeats itself), and every batch was delivered;
  * the final state of agg and dedup, read back by a fresh provider, equals the model's;
  * every interactive-query answer equals the model's state at the batch it says it read;
  * no query failed.
Writes the report (faults by kind and phase, recoveries by load path, time to recover p50/p99) to
stdout, to bench/results/soak-<timestamp>.md and as JSON to --result when given.

Usage: soak.py [--kills 5] [--minutes 0] [--seed 7] [--work-dir DIR] [--rows 6000] [--keys 8000]
       [--max-bytes 128k] [--kinds k1,k2] [--result FILE] [--report-dir bench/results]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SOAK_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SOAK_DIR))
sys.path.insert(0, str(SOAK_DIR.parent))

from harness.cluster_tasks import process_is_gone, wait_for  # noqa: E402
from soak_faults import PHASES, TASK_PHASES  # noqa: E402
from soak_checks import QueryChecks  # noqa: E402
from soak_model import QUERIES, SOURCES, Model, Sizes  # noqa: E402
from harness.streaming_harness import REPO_ROOT, InputFiles  # noqa: E402

KINDS = tuple(f"executor:{p}" for p in PHASES) + ("driver", "restart-keep", "restart-wipe")
DRIVER_START_S = 180.0
BATCH_TIMEOUT_S = 240.0
MAINTENANCE_WAIT_S = 30.0
TASK_PHASE_TRIES = 3


def schedule(kills: int, seed: int, kinds: tuple[str, ...]) -> list[str]:
    """The kinds of the `kills` faults: seeded permutations of `kinds` one after another, so every
    kind comes once before any comes twice."""
    rng = random.Random(seed)
    order: list[str] = []
    while len(order) < kills:
        block = list(kinds)
        rng.shuffle(block)
        order += block
    return order[:kills]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class Fault:
    kind: str
    batch: int
    started: float
    result: dict = field(default_factory=dict)
    recovered_batch: int | None = None
    recovery_s: float | None = None


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = args.work_dir
        self.model = Model(args.seed, Sizes(args.rows, args.keys))
        self.inputs = {s: InputFiles(self.work / "input", [s]) for s in SOURCES}
        self.rng = random.Random(args.seed + 1)
        self.driver: subprocess.Popen | None = None
        self.starts = 0
        self.faults: list[Fault] = []
        self.checks = QueryChecks(self.work, self.model)
        self.violations = self.checks.violations
        self.commands = 0

    # -- the driver process --------------------------------------------------------------------

    def start_driver(self) -> None:
        ready = self.work / "driver-ready.json"
        ready.unlink(missing_ok=True)
        self.starts += 1
        log = (self.work / f"driver-{self.starts}.log").open("w")
        command = [sys.executable, str(SOAK_DIR / "soak_driver.py"), "--work-dir", str(self.work),
                   "--max-bytes", self.args.max_bytes, "--agg-keys", str(self.args.keys)]
        self.driver = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                       cwd=str(REPO_ROOT))
        if not wait_for(lambda: ready.exists() or self.driver.poll() is not None, DRIVER_START_S, 0.2) or not ready.exists():
            raise RuntimeError(f"the driver did not start (see {log.name})")

    def kill_driver(self) -> None:
        assert self.driver is not None
        os.killpg(self.driver.pid, signal.SIGKILL)
        self.driver.wait(30)
        # The executor JVMs are in the group too; wait until none is left holding a store lock.
        wait_for(lambda: all(process_is_gone(int(p.name)) for p in self.group_members()), 30, 0.1)

    def group_members(self) -> list[Path]:
        members = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getpgid(int(entry.name)) == self.driver.pid:
                        members.append(entry)
                except OSError:
                    pass
        return members

    def stop_driver(self) -> None:
        assert self.driver is not None
        self.driver.send_signal(signal.SIGTERM)
        try:
            self.driver.wait(120)
        except subprocess.TimeoutExpired:
            self.violations.append("the driver did not stop within 120 s of SIGTERM")
            self.kill_driver()

    def check_driver(self) -> None:
        error = self.work / "driver-error.json"
        if error.exists():
            raise RuntimeError(f"a query failed: {error.read_text()[:3000]}")
        if self.driver is not None and self.driver.poll() is not None:
            raise RuntimeError(f"the driver exited with {self.driver.returncode} (see driver-{self.starts}.log)")

    # -- batches ----------------------------------------------------------------------------------

    def committed(self, batch: int) -> bool:
        return all(self.query_committed(q, batch) for q in QUERIES)

    def query_committed(self, query: str, batch: int) -> bool:
        """Spark keeps only the newest minBatchesToRetain commits, and the join runs micro-batches of
        its own (its ids run ahead of the input's): a later commit means this one was made too."""
        commits = self.work / "checkpoint" / query / "commits"
        return (commits / str(batch)).exists() or any(
            p.name.isdigit() and int(p.name) > batch for p in commits.glob("[0-9]*"))

    def offsets_written(self, batch: int) -> bool:
        return (self.work / "checkpoint" / "agg" / "offsets" / str(batch)).exists()

    def wait_committed(self, batch: int) -> float:
        deadline = time.monotonic() + BATCH_TIMEOUT_S
        while not self.committed(batch):
            self.checks.record_offsets()
            self.check_driver()
            if time.monotonic() > deadline:
                raise RuntimeError(f"batch {batch} was not committed within {BATCH_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
        committed_at = time.time()
        self.checks.record_offsets()
        return committed_at

    def write_batch(self) -> int:
        index = self.model.batches
        rows = self.model.add_batch()
        for source in SOURCES:
            self.inputs[source].write_batch(index, {source: rows[source]})
        return index

    def send_fault(self, phase: str, batch: int) -> Path:
        """Ask the driver's fault runner to kill an executor in `phase` of `batch`; its result's path."""
        self.commands += 1
        command = {"id": self.commands, "phase": phase, "batch": batch,
                   "timeout_s": BATCH_TIMEOUT_S if phase in TASK_PHASES else MAINTENANCE_WAIT_S}
        name = f"{self.commands:05d}.json"
        (self.work / "commands").mkdir(exist_ok=True)
        partial = self.work / "commands" / f".{name}.tmp"
        partial.write_text(json.dumps(command))
        os.replace(partial, self.work / "commands" / name)
        return self.work / "faults" / name

    def fault_result(self, path: Path) -> dict:
        while not path.exists():
            self.check_driver()
            time.sleep(0.05)
        return json.loads(path.read_text())

    # -- the run --------------------------------------------------------------------------------

    def run(self) -> None:
        kinds = tuple(self.args.kinds.split(",")) if self.args.kinds else KINDS
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise SystemExit(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        plan = schedule(self.args.kills, self.args.seed, kinds)
        end_at = time.monotonic() + 60 * self.args.minutes
        self.start_driver()
        self.wait_committed(self.write_batch())
        tries = 0
        while plan or time.monotonic() < end_at:
            for _ in range(self.rng.randint(0, 1)):
                self.wait_committed(self.write_batch())
            if not plan:
                self.wait_committed(self.write_batch())
                continue
            kind = plan[0]
            phase = kind.split(":", 1)[1] if kind.startswith("executor:") else None
            # The runner watches from before the batch: maintenance (snapshot upload, cleanup) runs
            # on the executors while the batch runs and right after it commits.
            result_path = self.send_fault(phase, self.model.batches) if phase else None
            batch = self.write_batch()
            fault = Fault(kind, batch, time.time())
            if phase:
                fault.result = self.fault_result(result_path)
                if not fault.result.get("hit"):
                    tries += 1
                    self.wait_committed(batch)
                    if tries < TASK_PHASE_TRIES:
                        continue
                    self.faults.append(fault)  # counted as missed
                    plan.pop(0)
                    tries = 0
                    continue
                fault.recovered_batch = (batch if phase in TASK_PHASES or not self.committed(batch)
                                         else self.write_batch())
                committed_at = self.wait_committed(fault.recovered_batch)
                fault.recovery_s = committed_at - fault.result["killed_at"]
            elif kind == "driver":
                wait_for(lambda: self.offsets_written(batch), BATCH_TIMEOUT_S, 0.02)
                time.sleep(self.rng.uniform(0.0, 2.0))
                fault.result = {"hit": True, "killed_at": time.time(),
                                "seen": "batch committed" if self.committed(batch) else "batch running"}
                self.kill_driver()
                self.checks.check_outputs()
                self.start_driver()
                fault.recovered_batch = batch
                fault.recovery_s = self.wait_committed(batch) - fault.result["killed_at"]
            else:
                self.wait_committed(batch)
                stopped_at = time.time()
                self.stop_driver()
                if kind == "restart-wipe":
                    shutil.rmtree(self.work / "local", ignore_errors=True)
                fault.result = {"hit": True, "killed_at": stopped_at, "seen": "between batches"}
                self.checks.check_outputs()
                self.start_driver()
                fault.recovered_batch = self.write_batch()
                fault.recovery_s = self.wait_committed(fault.recovered_batch) - stopped_at
            self.faults.append(fault)
            plan.pop(0)
            tries = 0
            print(f"soak: fault {len(self.faults)} {kind} at batch {batch}: {fault.result.get('seen')}, "
                  f"recovered in {fault.recovery_s:.1f} s", flush=True)
        self.wait_committed(self.write_batch())
        (self.work / "final-dump").touch()
        self.stop_driver()
        self.checks.check_outputs(final=True)

    # -- the report -------------------------------------------------------------------------------

    def load_paths(self) -> dict[tuple[str, int], dict[str, int]]:
        """(query, batch) -> load-path metrics of the batch's last run (summed over its stores)."""
        found: dict[tuple[str, int], dict[str, int]] = {}
        path = self.work / "progress.jsonl"
        for line in path.read_text().splitlines() if path.exists() else ():
            record = json.loads(line)
            found[(record["query"], record["batch"])] = record["metrics"]
        return found

    def report(self, seconds: float) -> dict[str, Any]:
        answers = self.checks.check_answers()
        if answers["answers"] == 0:
            self.violations.append("no interactive query was answered: the queries ran unobserved "
                                   "(see the driver logs for the interactive_queries thread)")
        paths = self.load_paths()
        by_kind: dict[str, dict[str, Any]] = {}
        recoveries: dict[str, dict[str, int]] = {}
        times = [f.recovery_s for f in self.faults if f.recovery_s is not None]
        for fault in self.faults:
            entry = by_kind.setdefault(fault.kind, {"injected": 0, "missed": 0, "seen": {}})
            if not fault.result.get("hit"):
                entry["missed"] += 1
                continue
            entry["injected"] += 1
            seen = fault.result.get("seen", "")
            entry["seen"][seen] = entry["seen"].get(seen, 0) + 1
            totals = recoveries.setdefault(fault.kind, {"rebuilds": 0, "rollbacks": 0, "changelogs_replayed": 0,
                                                        "batches_without_metrics": 0})
            for query in QUERIES:
                metrics = paths.get((query, fault.recovered_batch))
                if metrics is None:
                    totals["batches_without_metrics"] += 1
                    continue
                totals["rebuilds"] += metrics["txstateRebuilds"]
                totals["rollbacks"] += metrics["txstateRollbacks"]
                totals["changelogs_replayed"] += metrics["txstateChangelogsReplayed"]
        return {
            "seed": self.args.seed, "kills_asked": self.args.kills, "minutes": self.args.minutes,
            "rows_per_batch": self.args.rows, "keys": self.args.keys, "max_uncommitted_bytes": self.args.max_bytes,
            "batches": self.model.batches, "driver_starts": self.starts, "seconds": round(seconds, 1),
            "faults": by_kind, "recoveries": recoveries,
            "recovery_s": {"p50": percentile(times, 0.5), "p99": percentile(times, 0.99), "max": max(times, default=None)},
            "interactive_queries": answers, "violations": self.violations,
            "fault_log": [{"kind": f.kind, "batch": f.batch, "recovered_batch": f.recovered_batch,
                           "recovery_s": f.recovery_s, **{k: v for k, v in f.result.items() if k != "id"}}
                          for f in self.faults],
        }


def markdown(report: dict[str, Any], command: str) -> str:
    lines = [f"# Soak {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             f"`{command}`", "",
             f"Seed {report['seed']}, {report['batches']} batches of {report['rows_per_batch']} aggregation rows "
             f"({report['keys']} keys), maxUncommittedBytes {report['max_uncommitted_bytes']}, "
             f"{report['driver_starts']} driver starts, {report['seconds']} s.", "",
             "| Fault | Injected | Missed (phase never seen) | What was seen at the kill |", "|---|---|---|---|"]
    for kind, entry in sorted(report["faults"].items()):
        seen = "; ".join(f"{s} ({n})" for s, n in sorted(entry["seen"].items()))
        lines.append(f"| {kind} | {entry['injected']} | {entry['missed']} | {seen} |")
    lines += ["", "Recoveries by load path (the batch that completed after the fault, all stores of the three "
              "queries; txstateRebuilds, txstateRollbacks, txstateChangelogsReplayed):", "",
              "| Fault | Stores rebuilt | Stores rolled back | Changelogs replayed | Batches without progress |",
              "|---|---|---|---|---|"]
    for kind, totals in sorted(report["recoveries"].items()):
        lines.append(f"| {kind} | {totals['rebuilds']} | {totals['rollbacks']} | {totals['changelogs_replayed']} | "
                     f"{totals['batches_without_metrics']} |")
    r = report["recovery_s"]
    fmt = lambda v: "-" if v is None else f"{v:.1f} s"  # noqa: E731
    iq = report["interactive_queries"]
    lines += ["", f"Time to recover (fault to the next commit of every query): p50 {fmt(r['p50'])}, "
              f"p99 {fmt(r['p99'])}, max {fmt(r['max'])}.", "",
              f"Interactive queries: {iq['answers']} answers, {iq['checked_values']} values checked against the "
              f"model, {iq['failed_partitions']} partition failures and {iq['errors']} errors while faults were "
              f"under way (not wrong answers).", "",
              f"**Violations: {len(report['violations'])}**"]
    lines += [f"- {v}" for v in report["violations"][:50]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=5, help="faults to inject")
    parser.add_argument("--minutes", type=float, default=0.0, help="keep running batches at least this long")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a fresh temporary directory")
    parser.add_argument("--rows", type=int, default=6000, help="aggregation rows per batch")
    parser.add_argument("--keys", type=int, default=8000, help="aggregation keys")
    parser.add_argument("--max-bytes", default="128k", help="txstate.maxUncommittedBytes")
    parser.add_argument("--kinds", default="", help=f"comma-separated fault kinds (default all: {','.join(KINDS)})")
    parser.add_argument("--result", type=Path, default=None, help="also write the report as JSON here")
    parser.add_argument("--report-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    args = parser.parse_args()
    args.work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="txstate-soak-"))
    args.work_dir.mkdir(parents=True, exist_ok=True)

    import pyspark

    # Executors of a standalone cluster are launched from $SPARK_HOME: the pip package is one.
    os.environ.setdefault("SPARK_HOME", os.path.dirname(os.path.realpath(pyspark.__file__)))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    soak = Soak(args)
    started = time.monotonic()
    try:
        soak.run()
    except Exception as error:
        soak.violations.append(f"the soak could not go on: {type(error).__name__}: {error}")
        if soak.driver is not None and soak.driver.poll() is None:
            soak.kill_driver()
    report = soak.report(time.monotonic() - started)
    command = (f"make soak SOAK_KILLS={args.kills} SOAK_SEED={args.seed} SOAK_MINUTES={args.minutes:g}" if not args.kinds
               else f"tests/soak/soak.py --kills {args.kills} --seed {args.seed} --minutes {args.minutes:g} --kinds {args.kinds}")
    text = markdown(report, command)
    print(text)
    args.report_dir.mkdir(parents=True, exist_ok=True)
    out = args.report_dir / f"soak-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}.md"
    out.write_text(text)
    print(f"soak: report written to {out}; work directory {args.work_dir}")
    if args.result is not None:
        args.result.write_text(json.dumps(report, indent=1, default=str))
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
