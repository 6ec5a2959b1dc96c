"""Bounded memory: txstate's early commits, on real Spark with real RocksDB.

Past `spark.sql.streaming.stateStore.txstate.maxUncommittedBytes` a store writes its uncommitted
buffer as a durable changelog segment (`<v>_<id>-<k>.txseg` in the store's checkpoint directory)
and moves it into its local RocksDB under an in-flight marker. The batch must stay atomic: an abort
undoes every early commit, a crash with a version in flight rebuilds from the checkpoint.

1. One micro-batch of 2.5 million new keys on `local-cluster[2,1,1024]` with a 16 MiB limit:
   it commits early several times per store, its buffers stay bounded, and it stays exact (state
   read back through Spark's state data source, compared with counts computed here). The 5M-key
   batch at 32 MiB, and its peak memory against the same batch with no limit, are measured by
   bench/memory_bench.py (`make bench-memory`).
2. A batch that early-commits several times per store and then fails, before any store commits
   (a filter after dropDuplicates raises in the task thread): the restarted query, whose providers
   reopen the same local RocksDB, ends exactly where the input says; no key of the failed attempt
   leaks into the state or hides from the re-run's output.
3. An executor JVM SIGKILLed while its stateful task is between early commits and commit: Spark
   retries the task on another executor, which reopens the killed JVM's local RocksDB (a stable
   txstate.localDir) with the version in flight and rebuilds; every batch's output and the final
   state stay exact.

Tests 1 and 3 run jobs/bounded_memory_job.py in their own process (their own SparkContext); test 2 uses
the shared local session. Every expectation is computed here from the input, with numpy.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from harness.cluster_tasks import log_excerpt, run_job_script
from harness.streaming_harness import PROVIDER_CLASS_CONF, describe_failure, held_locks, session_conf
from jobs.bounded_memory_job import (
    LOCAL_DIR_CONF,
    MAX_BYTES_CONF,
    SCHEMA,
    compare_state,
    expected_state,
    huge_keys,
    read_state_dump,
    write_parquet,
    write_parquet_file,
)

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "jobs" / "bounded_memory_job.py"
MIB = 1 << 20

HUGE_KEYS = 2_500_000
HUGE_ROWS = 3_000_000  # the first half million keys twice, so counts and sums are not trivial
HUGE_LIMIT_MIB = 16
HUGE_LIMIT = f"{HUGE_LIMIT_MIB}m"
HUGE_QUERY_TIMEOUT_S = 900  # one run takes 2-7 minutes on two busy cores


# --------------------------------------------------------------------------------------------
# Helpers


def run_job(mode: str, work_dir: Path, jar: Path, provider: str, args: list[str], timeout_s: float
            ) -> tuple[dict, str]:
    """Runs bounded_memory_job.py in its own process group; returns its report and its log."""
    return run_job_script(JOB, [mode, "--work-dir", str(work_dir), "--provider", provider, *args],
                          work_dir, jar, timeout_s, what=f"bounded_memory_job.py {mode}")


def batch_progress(report_or_progress, batch_id: int) -> dict:
    """The last progress entry of `batch_id` (a re-run batch reports again)."""
    progress = report_or_progress["progress"] if isinstance(report_or_progress, dict) else report_or_progress
    entries = [p for p in progress if p["batchId"] == batch_id and p.get("stateOperators")]
    assert entries, f"no progress with state operators for batch {batch_id}: {[p['batchId'] for p in progress]}"
    return entries[-1]


def txstate_metrics(progress: dict) -> dict:
    return {k: v for op in progress["stateOperators"] for k, v in op.get("customMetrics", {}).items()
            if k.startswith("txstate")}


def segment_files(checkpoint: Path, version: int) -> dict[int, list[str]]:
    """Partition -> early-commit segment files of `version` in its store directory."""
    return {p: sorted(f.name for f in (checkpoint / "state" / "0" / str(p)).glob(f"{version}_*.txseg"))
            for p in (0, 1)}


def write_batches(directory: Path, batches: list[tuple[np.ndarray, np.ndarray]]) -> None:
    """One parquet file per micro-batch, with strictly increasing modification times, so that
    `maxFilesPerTrigger=1` turns file i into batch i."""
    directory.mkdir(parents=True, exist_ok=True)
    base = time.time() - 1000
    for index, (k, v) in enumerate(batches):
        target = directory / f"batch-{index:03d}.parquet"
        write_parquet_file(target, k, v)
        os.utime(target, (base + 10 * index, base + 10 * index))


def batch_summaries(batches) -> dict[str, dict]:
    """Per batch, what its update-mode output must sum to: rows (keys touched), the running counts
    and sums of those keys."""
    summaries = {}
    for b in range(len(batches)):
        state = expected_state(batches[: b + 1])
        touched = np.isin(state["k"], np.unique(batches[b][0]))
        summaries[str(b)] = {"rows": int(touched.sum()), "n": int(state["n"][touched].sum()),
                             "total": int(state["total"][touched].sum())}
    return summaries


def mib(n: float) -> str:
    return f"{n / MIB:.0f} MiB"


# --------------------------------------------------------------------------------------------
# 1. One huge micro-batch, bounded


@pytest.fixture(scope="module")
def huge_input(tmp_path_factory) -> tuple[Path, dict]:
    directory = tmp_path_factory.mktemp("huge") / "input"
    k, v = huge_keys(HUGE_ROWS, HUGE_KEYS)
    write_parquet(directory, k, v, files=4)
    return directory, expected_state([(k, v)])


def memory_line(report: dict) -> str:
    parts = []
    for executor_id, rss in sorted(report.get("rss", {}).items()):
        heap = report.get("heap", {}).get(executor_id, {})
        parts.append(f"executor {executor_id}: peak RSS {mib(rss['hwm'])} (VmHWM; max sampled VmRSS "
                     f"{mib(rss['peak_rss'])}, {rss['samples']} samples), peak JVM heap used "
                     f"{mib(heap.get('JVMHeapMemory', 0))}, GC {heap.get('TotalGCTime', 0) / 1000:.1f} s")
    return "; ".join(parts)


def test_one_batch_of_millions_of_new_keys_commits_early_and_stays_exact(
    huge_input, plugin_jar, candidate_provider, tmp_path
):
    # How much lower the peak is than with the limit off is measured by bench/memory_bench.py
    # (`make bench-memory`), beside Spark's providers in the same run: a comparison, not a check.
    input_dir, want = huge_input
    common = ["--input", str(input_dir), "--timeout", str(HUGE_QUERY_TIMEOUT_S)]
    started = time.monotonic()
    bounded, bounded_log = run_job("huge", tmp_path / "bounded", plugin_jar, candidate_provider,
                                   [*common, "--max-bytes", HUGE_LIMIT, "--dump-state"],
                                   HUGE_QUERY_TIMEOUT_S + 240)
    bounded_s = time.monotonic() - started

    print(f"\nbounded ({HUGE_LIMIT}): job {bounded_s:.0f} s, query {bounded.get('query_seconds')} s, "
          f"state read-back {bounded.get('dump_seconds')} s; {memory_line(bounded)}")

    # The bounded run: one batch, exact, early-committed, its buffers bounded.
    context = f"\njob log excerpt:\n{log_excerpt(bounded_log)}"
    assert not bounded["errors"], f"{bounded['errors']}{context}"
    assert bounded["query_exception"] is None, f"{bounded['query_exception']}{context}"
    assert [p["batchId"] for p in bounded["progress"] if p["numInputRows"]] == [0], (
        "the input must arrive as one micro-batch")
    progress = batch_progress(bounded, 0)
    metrics = txstate_metrics(progress)
    print(f"bounded txstate metrics: {metrics}")
    assert progress["numInputRows"] == HUGE_ROWS
    assert progress["stateOperators"][0]["numRowsTotal"] == HUGE_KEYS
    stores = 2
    assert metrics["txstateEarlyCommits"] >= 2 * stores, f"several early commits per store: {metrics}"
    # The whole batch went through early commits but for each store's last sub-limit remainder
    # (the peaks are summed over the two stores, as the remainders are).
    assert metrics["txstateEarlyCommitEntries"] >= HUGE_KEYS - metrics["txstateUncommittedEntriesPeak"], metrics
    # A store commits early as soon as a write takes it past the limit (no iterator is open in an
    # aggregation), so its buffer peaks one entry above the limit; the bound allows twice that.
    assert metrics["txstateUncommittedBytesPeak"] <= stores * 2 * HUGE_LIMIT_MIB * MIB, metrics
    print(f"bounded: early-commit segments and changelog written at (s after start): {bounded.get('segment_seconds')}")
    assert bounded["summaries"]["0"] == {
        "rows": HUGE_KEYS, "n": HUGE_ROWS, "total": int(want["total"].sum()),
        "min_n": 1, "max_n": 2}, bounded["summaries"]
    problems = compare_state(read_state_dump(tmp_path / "bounded" / "state-dump"), want)
    assert not problems, "the state read back through Spark's state data source differs:\n" + "\n".join(problems)
    assert set(bounded["rss"]) == {"0", "1"}, f"RSS of both executors must be measured: {bounded['rss']}"


# --------------------------------------------------------------------------------------------
# 2. A failed batch after early commits, then a restart
#
# The failure must come between the store's first writes and its commit, in the task thread. A
# streaming aggregation cannot host it: the operator after its state store is a hash aggregate that
# drains the store (all writes, then the commit) before any later filter or UDF sees a row, so a
# UDF "after the aggregation" fails a batch whose stores have already committed (a re-run, not an
# abort). Deduplication emits each new row right after writing it, so a filter after
# dropDuplicates runs between writes. The filter counts the rows of its task in a JVM system
# property and raises at the ABORT_FAIL_AT-th row while the "flag" property is set (the local
# session's executors are the driver JVM, so the test sets and clears it through py4j).


ABORT_OLD_KEYS = 20_000
ABORT_NEW_KEYS = 200_000
ABORT_FAIL_AT = 60_000  # rows into a task of the failing batch (~110k rows); batch 0's have ~10k
INJECTED = "txstate-test injected failure after the early commits"


def abort_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    old = np.arange(ABORT_OLD_KEYS, dtype=np.int64)
    new = np.arange(ABORT_OLD_KEYS, ABORT_OLD_KEYS + ABORT_NEW_KEYS, dtype=np.int64)
    batch1 = np.concatenate([new, old])
    return [(old, old + 1), (batch1, 3 * batch1 + 7)]


def fail_at_task_row(token: str, flag_property: str, n: int, message: str) -> str:
    """SQL filter, true for every row, raising at the n-th row (from 1) of a task of the current
    batch while the JVM system property `flag_property` is "1". The count lives in a system
    property named after the task's partition and the batch's timestamp."""
    key = f"concat('{token}-', spark_partition_id(), '-', CAST(current_timestamp() AS STRING))"
    previous = f"coalesce(try_cast(reflect('java.lang.System', 'getProperty', {key}) AS BIGINT), 0)"
    count = (f"coalesce(try_cast(reflect('java.lang.System', 'setProperty', {key}, "
             f"CAST({previous} + 1 AS STRING)) AS BIGINT), 0) + 1")
    flag = f"reflect('java.lang.System', 'getProperty', '{flag_property}') = '1'"
    return f"CASE WHEN {count} = {n} AND {flag} THEN raise_error('{message}') ELSE true END"


def test_a_failed_batch_that_early_committed_three_times_leaves_the_previous_version(
    spark, candidate_provider, work_dir
):
    from pyspark.sql import functions as F

    batches = abort_batches()
    input_dir = work_dir / "input"
    write_batches(input_dir, batches)
    checkpoint = work_dir / "checkpoint"
    local_dir = work_dir / "local"
    token = f"txstate-test-{os.getpid()}-{time.time_ns()}"
    flag_property = token + "-fail"
    system = spark.sparkContext._jvm.java.lang.System
    conf = {PROVIDER_CLASS_CONF: candidate_provider, MAX_BYTES_CONF: "1m", LOCAL_DIR_CONF: str(local_dir)}
    summaries: dict[str, dict] = {}

    def summarize(df, batch_id: int) -> None:
        row = df.agg(F.count(F.lit(1)).alias("rows"), F.sum("k").alias("keys"), F.sum("v").alias("values")
                     ).collect()[0]
        summaries[str(batch_id)] = row.asDict()

    def start():
        with session_conf(spark, conf):
            result = (
                spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(input_dir))
                .dropDuplicates(["k"])
                .where(F.expr(fail_at_task_row(token, flag_property, ABORT_FAIL_AT, INJECTED)))
            )
            return (result.writeStream.outputMode("append").option("checkpointLocation", str(checkpoint))
                    .foreachBatch(summarize).trigger(availableNow=True).start())

    # Run 1: batch 0 commits; batch 1 early-commits in both stores, then its tasks fail.
    system.setProperty(flag_property, "1")
    try:
        query = start()
        try:
            finished = query.awaitTermination(180)
        except Exception as error:  # the expected failure
            failure = describe_failure(error)
        else:
            query.stop()
            pytest.fail(f"the query did not fail (finished={finished}); the injected failure never fired")
    finally:
        system.clearProperty(flag_property)
    assert INJECTED in failure, f"the query failed, but not with the injected failure:\n{failure}"
    committed = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert committed == [0], f"batch 0 alone must have committed before the failure: {committed}"
    segments = segment_files(checkpoint, 2)  # batch 1 is version 2
    print(f"\nearly-commit segments of the failed batch: { {p: len(s) for p, s in segments.items()} }")
    assert all(len(s) >= 3 for s in segments.values()), (
        f"each store must have early-committed at least three times before the failure: {segments}")
    assert not list(checkpoint.glob("state/0/*/2.txlog")) and not list(checkpoint.glob("state/0/*/2_*.txlog")), (
        "a store of the failed batch committed: the failure came too late to test an abort")

    # Run 2: once the failed run's providers are unloaded (their store locks released), the
    # restart reopens the same local RocksDB, where the abort must have undone every early commit.
    deadline = time.monotonic() + 90
    while held_locks(local_dir):
        assert time.monotonic() < deadline, f"store locks still held: {held_locks(local_dir)}"
        time.sleep(0.25)
    query = start()
    try:
        assert query.awaitTermination(180), "the restarted query did not finish within 180 s"
    except AssertionError:
        raise
    except Exception as error:
        pytest.fail(f"the restarted query failed:\n{describe_failure(error)}")
    rerun = batch_progress(query.recentProgress, 1)
    metrics = txstate_metrics(rerun)
    print(f"re-run of batch 1: {metrics}")
    assert metrics["txstateRebuilds"] == 0 and metrics["txstateChangelogsReplayed"] == 0, (
        f"the restart did not reuse the aborted local stores (so the abort went untested): {metrics}")
    assert metrics["txstateEarlyCommits"] >= 6, metrics

    # Every key of batch 1 that batch 0 did not have comes out once: a key the failed attempt
    # wrote and the abort left behind would count as seen and be missing here.
    old, new = batches[0][0], batches[1][0][:ABORT_NEW_KEYS]
    assert summaries == {
        "0": {"rows": ABORT_OLD_KEYS, "keys": int(old.sum()), "values": int((old + 1).sum())},
        "1": {"rows": ABORT_NEW_KEYS, "keys": int(new.sum()), "values": int((3 * new + 7).sum())},
    }, summaries
    assert rerun["stateOperators"][0]["numRowsTotal"] == ABORT_OLD_KEYS + ABORT_NEW_KEYS
    state = spark.read.format("statestore").load(str(checkpoint)).select("key.k").toPandas()["k"].to_numpy()
    want = np.concatenate([old, new])
    assert len(state) == len(want) and np.array_equal(np.sort(state), np.sort(want)), (
        f"the state holds {len(state)} keys, expected {len(want)}: missing "
        f"{np.setdiff1d(want, state)[:5].tolist()}, unexpected {np.setdiff1d(state, want)[:5].tolist()}")


# --------------------------------------------------------------------------------------------
# 3. An executor killed during an early-committed batch


KILL_OLD_KEYS = 50_000
KILL_NEW_KEYS = 250_000
KILL_BATCH = 1
# The kill waits for this many early commits of the victim's store: with the job's 1 MiB
# memtables some of them have been flushed (with their in-flight marker) by then, so the retry
# reopens a local store with a version in flight (a WAL-less RocksDB loses unflushed writes).
KILL_AFTER_SEGMENTS = 6
KILL_JOB_TIMEOUT_S = 480


def kill_batches() -> list[tuple[np.ndarray, np.ndarray]]:
    old = np.arange(KILL_OLD_KEYS, dtype=np.int64)
    new = np.arange(KILL_OLD_KEYS, KILL_OLD_KEYS + KILL_NEW_KEYS, dtype=np.int64)
    batch1 = np.concatenate([new, old])[::-1].copy()
    batch2 = np.arange(0, KILL_OLD_KEYS + KILL_NEW_KEYS, 7, dtype=np.int64)
    return [(old, old * 2), (batch1, batch1 + 11), (batch2, -batch2)]


def test_an_executor_killed_during_an_early_committed_batch_leaves_exact_state(
    plugin_jar, candidate_provider, work_dir
):
    batches = kill_batches()
    input_dir = work_dir / "input"
    write_batches(input_dir, batches)
    report, log = run_job("kill", work_dir / "job", plugin_jar, candidate_provider,
                          ["--input", str(input_dir), "--max-bytes", "1m", "--kill-batch", str(KILL_BATCH),
                           "--kill-after-segments", str(KILL_AFTER_SEGMENTS), "--timeout", "360"],
                          KILL_JOB_TIMEOUT_S)
    context = f"\njob log excerpt:\n{log_excerpt(log)}"
    print(f"\nkill: {report['kill']}; job {report['job_seconds']} s")
    assert not report["errors"], f"{report['errors']}{context}"
    assert report["query_exception"] is None, f"{report['query_exception']}{context}"

    kill = report["kill"]
    assert kill is not None, f"no executor was killed{context}"
    assert len(kill["segments_at_kill"][str(kill["partition"])]) >= KILL_AFTER_SEGMENTS, kill
    assert not kill["changelogs_of_the_version_at_kill"], f"the killed task's store had already committed: {kill}"
    assert f"ExecutorLostFailure (executor {kill['executor_id']} exited" in log, (
        f"executor {kill['executor_id']} was killed but no running task was lost with it{context}")
    assert kill["executor_id"] not in report["executors_after"], report["executors_after"]

    progress = batch_progress(report, KILL_BATCH)
    metrics = txstate_metrics(progress)
    print(f"kill batch metrics: {metrics}")
    print(f"store loads: {[(l['executor_id'], l['line'].split('txstate: ')[-1]) for l in report['store_loads']]}")
    print(f"local store directories: {report['local_dirs']}")
    assert metrics["txstateEarlyCommits"] > 0, metrics
    # The killed partition's next attempt (on another executor; the progress shows only the
    # attempt that committed, which may have reused a store an earlier retry loaded) rebuilt
    # version KILL_BATCH from the checkpoint: the killed JVM's local store had a version in flight.
    retried = [l for l in report["store_loads"]
               if l["executor_id"] != kill["executor_id"]
               and f"loaded version {KILL_BATCH} of StateStoreId[ operatorId=0, partitionId={kill['partition']}," in l["line"]]
    assert retried and all("Rebuilt" in l["line"] for l in retried), (
        f"the killed partition's retry did not rebuild version {KILL_BATCH}: {retried or report['store_loads']}")

    assert report["summaries"] == batch_summaries(batches), report["summaries"]
    assert batch_progress(report, len(batches) - 1)["stateOperators"][0]["numRowsTotal"] == (
        KILL_OLD_KEYS + KILL_NEW_KEYS)
    problems = compare_state(read_state_dump(work_dir / "job" / "state-dump"), expected_state(batches))
    assert not problems, "the state after the kill differs:\n" + "\n".join(problems)
