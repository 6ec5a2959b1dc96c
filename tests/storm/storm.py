"""The restart storm: the soak's three queries (soak_model.py: an aggregation, a dropDuplicates and a
stream-stream join) on txstate in one `local[2]` application, each stopped and restarted at random
moments, `--restarts` times each, with readers beside them all the while and a CPU spinner as CI's
load. `make storm` runs it; see docs/reliability.md, "Restart storm".

Each restart is `query.stop()` at a random moment (mid-batch or between batches) and a new run on
the same checkpoint and local directory at once: on Spark 4.1+ the stopped run's providers then run
their unload maintenance while the new run's providers load, the overlap the store's races came
from. Maintenance runs every 100 ms, a snapshot is staged at every version, three batches are retained.

Checks (each failure is a violation; the exit code is 1 when there is any):
  * every delivery of every batch equals the model's, every batch was delivered, and the final
    state of agg and dedup read back by a fresh provider is the model's (soak_checks.py);
  * no query failed;
  * every data-source read (`waitMs`), interactive-query answer and follower answer is the model's
    state at the batch it says it read, and no read failed for a reason a restart does not explain;
  * the same of the reads of `--first-commits` fresh starts of the aggregation, read from their
    first moment (storm_first_commits.py), some of them planned before that start's first commit;
  * `verify` finds each checkpoint sound;
  * at least one load read the checkpoint while another instance's maintenance of the same store
    ran in the JVM (`loadsBesideMaintenance`, a new run's stores' first loads): a storm that caused no overlap tested nothing.

Usage: storm.py [--restarts 50] [--seed 11] [--work-dir DIR] [--rows 2000] [--keys 4000] [--first-commits 20]
       [--max-bytes 64k] [--result FILE] [--report-dir bench/results]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

STORM_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(STORM_DIR.parent / "soak"))
sys.path.insert(0, str(STORM_DIR.parent))

from harness import streaming_harness  # noqa: E402
from harness.cluster_tasks import wait_for  # noqa: E402
from harness.streaming_harness import REPO_ROOT, InputFiles  # noqa: E402
from jobs.executor_failure_job import LOCAL_DIR_CONF, TXSTATE  # noqa: E402
from soak_checks import QueryChecks  # noqa: E402
from soak_driver import dump_state, interactive_queries, start_query  # noqa: E402
from soak_model import QUERIES, SOURCES, Model, Sizes  # noqa: E402
from storm_first_commits import FirstCommitProbes  # noqa: E402
from storm_readers import PARTITIONS, check_source_reads, failure_reasons, read_records, read_through_source  # noqa: E402

TRIGGER = "100 milliseconds"
# Batches written ahead of the slowest query: enough that a restarted run always has work at once.
LEAD_BATCHES = 3
GAP_S = (1.0, 5.0)  # a run lives long enough to commit a batch or two, or is stopped inside its first
CATCH_UP_S = 300.0
SPINNER = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end:\n    pass\n"


def build_session(max_bytes: str):
    from pyspark.sql import SparkSession

    settings = {
        **streaming_harness.spark_settings(streaming_harness.plugin_jar()),
        streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER,
        "spark.sql.shuffle.partitions": str(PARTITIONS),
        "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
        TXSTATE + "snapshotInterval": "1",
        TXSTATE + "maxUncommittedBytes": max_bytes,
        "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    }
    builder = SparkSession.builder.master("local[2]").appName("txstate-storm")
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


INTERRUPTS = ("java.lang.InterruptedException", "java.nio.channels.ClosedByInterruptException",
              "java.io.InterruptedIOException")


def interrupted(query) -> bool:
    """Whether the error `query` ended with was caused by a thread interrupt (read from the JVM's
    exception: pyspark's copy keeps no cause)."""
    error = query._jsq.exception()
    cause = error.get() if error.isDefined() else None
    while cause is not None:
        if cause.getClass().getName() in INTERRUPTS:
            return True
        cause = cause.getCause()
    return False


class Storm:
    def __init__(self, args: argparse.Namespace, spark) -> None:
        self.args = args
        self.spark = spark
        self.work: Path = args.work_dir
        self.model = Model(args.seed, Sizes(args.rows, args.keys))
        self.inputs = InputFiles(self.work / "input", SOURCES)
        self.checks = QueryChecks(self.work, self.model)
        self.violations = self.checks.violations
        self.queries: dict[str, Any] = {}
        self.restarts = {name: 0 for name in QUERIES}
        self.stopping: set[str] = set()  # runs the storm has stopped or is stopping
        self.interrupted_stops = 0
        self.start_lock = threading.Lock()  # a start sets the session's localDir for its query
        self.done = threading.Event()
        self.first_commits = FirstCommitProbes(self, args.first_commits, TRIGGER)

    # -- the queries ------------------------------------------------------------------------------

    def start(self, name: str) -> None:
        with self.start_lock:
            self.queries[name] = start_query(self.spark, self.work, name, TRIGGER)

    def note_failure(self, name: str, query, stopped: bool = False) -> None:
        """A violation when `query` ended with an error, unless the storm `stopped` it and the
        error is the stop's own interrupt (Spark reports some interrupts that reach the planning of
        a batch as a failure of the run it was stopping)."""
        error = query.exception()
        if error is None:
            return
        if stopped and interrupted(query):
            self.interrupted_stops += 1
            return
        problem = f"{name} failed (run {query.runId}): {str(error)[:2000]}"
        if problem not in self.violations:
            self.violations.append(problem)
        self.done.set()

    def committed(self, name: str) -> int:
        commits = [int(p.name) for p in (self.work / "checkpoint" / name / "commits").glob("[0-9]*") if p.name.isdigit()]
        return max(commits, default=-1)

    def restart_repeatedly(self, name: str) -> None:
        try:
            self.restart_at_random_moments(name)
        except Exception as error:
            self.violations.append(f"restarting {name} failed: {type(error).__name__}: {str(error)[:2000]}")
            self.done.set()

    def restart_at_random_moments(self, name: str) -> None:
        rng = random.Random(f"{self.args.seed}-{name}")
        while self.restarts[name] < self.args.restarts and not self.done.wait(rng.uniform(*GAP_S)):
            query = self.queries[name]
            self.stopping.add(str(query.runId))
            query.stop()
            self.note_failure(name, query, stopped=True)
            self.start(name)
            self.restarts[name] += 1
            if self.restarts[name] % 10 == 0:
                print(f"storm: {name} restarted {self.restarts[name]} times, committed batch {self.committed(name)}",
                      flush=True)

    def write_ahead(self) -> None:
        """Input batches, each written once the slowest query is within LEAD_BATCHES of the newest."""
        while not self.done.is_set():
            slowest = min(self.committed(name) for name in ("agg", "dedup"))
            if self.model.batches - 1 - slowest < LEAD_BATCHES:
                index = self.model.batches
                self.inputs.write_batch(index, self.model.add_batch())
            else:
                self.done.wait(0.05)

    def caught_up(self, name: str) -> bool:
        """Whether `name` has committed every batch it planned, and its sources planned every input file."""
        checkpoint = self.work / "checkpoint" / name
        planned = [int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*") if p.name.isdigit()]
        if not planned or max(planned) != self.committed(name):
            return False
        listed = set()  # "<source>/<file>" of every input file a source planned
        for log in (checkpoint / "sources").glob("*/*"):
            if not log.name.startswith("."):
                listed |= {"/".join(json.loads(line)["path"].split("/")[-2:]) for line in log.read_text().splitlines()[1:]}
        last = f"batch-{self.model.batches - 1:04d}.json"
        return all(f"{source}/{last}" in listed for source in (("left", "right") if name == "join" else (name,)))

    def all_caught_up(self) -> bool:
        self.checks.record_offsets()
        return all(self.caught_up(name) for name in QUERIES)

    # -- the run ----------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        spark, started = self.spark, time.monotonic()
        self.inputs.write_batch(0, self.model.add_batch())
        stop_readers = threading.Event()
        # The data source and the interactive queries read from the aggregation's first moment: a
        # read planned while its batch 0 writes its metadata must wait for the commit (waitMs), not fail.
        readers = [
            threading.Thread(target=read_through_source, args=(spark, self.work / "checkpoint" / "agg",
                                                               self.work / "source.jsonl", stop_readers)),
            threading.Thread(target=interactive_queries, args=(spark, lambda: self.queries["agg"],
                                                               self.work / "iq.jsonl", self.args.keys, stop_readers)),
        ]
        self.start("agg")
        for thread in readers:
            thread.start()
        for name in QUERIES[1:]:
            self.start(name)
        if not wait_for(lambda: self.committed("agg") >= 0, 120):
            stop_readers.set()
            raise RuntimeError("the aggregation committed no batch within 120 s")
        import txstate_spark

        follower = txstate_spark.follow(spark, str(self.work / "checkpoint" / "agg"))
        spinner = subprocess.Popen([sys.executable, "-c", SPINNER, str(self.args.spin_s)])
        readers.append(threading.Thread(target=interactive_queries, args=(
            spark, lambda: follower, self.work / "follower.jsonl", self.args.keys, stop_readers)))
        writer = threading.Thread(target=self.write_ahead)
        restarters = [threading.Thread(target=self.restart_repeatedly, args=(name,)) for name in QUERIES]
        probes = threading.Thread(target=self.first_commits.run)
        for thread in readers[-1:] + [writer, probes] + restarters:
            thread.start()
        try:
            while any(t.is_alive() for t in restarters + [probes]):
                for name, query in list(self.queries.items()):
                    if str(query.runId) not in self.stopping and not query.isActive:
                        self.note_failure(name, query)
                self.checks.record_offsets()
                self.done.wait(0.05)
            self.done.set()
            writer.join()
            if not self.violations and not wait_for(self.all_caught_up, CATCH_UP_S, 0.05):
                self.violations.append(f"the queries did not commit input file {self.model.batches - 1} within {CATCH_UP_S:.0f} s")
            last = self.committed("agg")
            if not wait_for(lambda: (follower.lag.applied_batch is not None and follower.lag.applied_batch >= last), 60):
                self.violations.append(f"the follower stayed at {follower.lag} after the last batch")
        finally:
            self.done.set()
            stop_readers.set()
            for thread in readers + restarters + [probes]:
                thread.join(60)
            spinner.kill()
            follower.close()
            for name, query in self.queries.items():
                query.stop()
                self.note_failure(name, query, stopped=True)
        overlaps = int(spark._jvm.txstate.store.CheckpointMaintenanceLocks.loadsBesideMaintenance())
        return self.check(overlaps, time.monotonic() - started)

    # -- checks -----------------------------------------------------------------------------------

    def check(self, overlaps: int, seconds: float) -> dict[str, Any]:
        import txstate_spark

        if not self.violations:
            dump_state(self.spark, self.work, "statestore" if streaming_harness.SPARK_LINE >= (4, 0) else "txstate")
            self.checks.check_outputs(final=True)
        answers = {log: self.checks.check_answers(log) for log in ("iq.jsonl", "follower.jsonl")}
        source, problems = check_source_reads(self.model, self.checks.last_file_of_batch("agg"),
                                              read_records(self.work / "source.jsonl"))
        self.violations += problems
        if answers["iq.jsonl"]["answers"] == 0 or answers["follower.jsonl"]["answers"] == 0 or source["reads"] == 0:
            self.violations.append(f"a reader was never answered: {answers}, data source {source}")
        verified = {}
        for name in QUERIES:
            verification = txstate_spark.verify(self.spark, str(self.work / "checkpoint" / name))
            verified[name] = verification.sound
            if not verification.sound:
                self.violations.append(f"verify finds {name}'s checkpoint damaged: {verification.findings[:3]}")
        if overlaps == 0:
            self.violations.append("no load ran beside another instance's maintenance: the storm caused no overlap")
        self.violations += self.first_commits.report_problems()
        import pyspark

        return {
            "spark": pyspark.__version__, "seed": self.args.seed, "restarts": self.restarts,
            "batches": self.model.batches, "seconds": round(seconds, 1), "loads_beside_maintenance": overlaps,
            "stops_ended_by_their_interrupt": self.interrupted_stops, "unchecked_batches": self.checks.unchecked_batches,
            "data_source": source, "first_commits": self.first_commits.counts,
            "interactive_queries": answers["iq.jsonl"], "follower": answers["follower.jsonl"],
            "read_failures": {log: failure_reasons(self.work / log) for log in ("iq.jsonl", "follower.jsonl")},
            "verify_sound": verified, "violations": self.violations,
        }


def markdown(report: dict[str, Any], command: str) -> str:
    ds, iq, fo, fc = report["data_source"], report["interactive_queries"], report["follower"], report["first_commits"]
    lines = [f"# Restart storm {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, Spark {report['spark']}", "",
             f"`{command}`", "",
             f"Seed {report['seed']}: restarts {report['restarts']}, {report['batches']} input files, {report['seconds']} s; "
             f"{report['stops_ended_by_their_interrupt']} stops ended their run with the stop's interrupt as its error; "
             f"{report['unchecked_batches']} delivered batches unchecked (their offsets were cleaned up before the storm read them).",
             f"First loads of a new run's stores while another instance of the store ran "
             f"its maintenance: {report['loads_beside_maintenance']}.",
             f"Data source reads: {ds['reads']} ({ds['rows_checked']} rows checked, {ds['failed']} failed while a run stopped).",
             f"First commits probed: {fc['probes']} fresh starts, {fc['reads']} reads ({fc['rows_checked']} rows checked, "
             f"{fc['failed']} failed), {fc['waited_for_first_commit']} planned before their query's first commit.",
             f"Interactive queries: {iq['answers']} answers ({iq['checked_values']} values checked); "
             f"follower: {fo['answers']} answers ({fo['checked_values']} values checked).",
             f"Partition failures and errors by reason: {report['read_failures']}.",
             f"verify: {report['verify_sound']}.", "",
             f"**Violations: {len(report['violations'])}**"]
    lines += [f"- {v}" for v in report["violations"][:50]]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--restarts", type=int, default=50, help="restarts of each query")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--work-dir", type=Path, default=None, help="default: a fresh temporary directory")
    parser.add_argument("--rows", type=int, default=2000, help="aggregation rows per batch")
    parser.add_argument("--keys", type=int, default=4000, help="aggregation keys")
    parser.add_argument("--first-commits", type=int, default=20, help="fresh starts of the aggregation read from their first moment")
    parser.add_argument("--max-bytes", default="64k", help="txstate.maxUncommittedBytes (every batch commits early)")
    parser.add_argument("--spin-s", type=float, default=900.0, help="the CPU spinner's limit (it stops with the storm)")
    parser.add_argument("--result", type=Path, default=None, help="also write the report as JSON here")
    parser.add_argument("--report-dir", type=Path, default=REPO_ROOT / "bench" / "results")
    args = parser.parse_args()
    args.work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="txstate-storm-"))
    spark = build_session(args.max_bytes)
    storm = Storm(args, spark)
    try:
        report = storm.run()
    except Exception as error:
        storm.violations.append(f"the storm could not go on: {type(error).__name__}: {error}")
        report = {"violations": storm.violations}
        print(json.dumps(report, indent=1))
        return 1
    finally:
        spark.stop()
    text = markdown(report, f"make storm STORM_RESTARTS={args.restarts} STORM_SEED={args.seed}")
    print(text)
    args.report_dir.mkdir(parents=True, exist_ok=True)
    out = args.report_dir / f"storm-{report['spark']}-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}.md"
    out.write_text(text)
    print(f"storm: report written to {out}; work directory {args.work_dir}")
    if args.result is not None:
        args.result.write_text(json.dumps(report, indent=1, default=str))
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
