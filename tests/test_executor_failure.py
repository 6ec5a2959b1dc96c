"""A streaming aggregation survives losing an executor JVM in the middle of a batch's state writes,
before its store commits, with exact results.

The job runs in its own process (jobs/executor_failure_job.py) on `local-cluster[2,1,1024]`, so its
executors are real JVM processes. With `txstate.maxUncommittedBytes=1m` the stateful task of the
kill batch writes its store's uncommitted changes to the checkpoint in early-commit segments
(`<v>_<id>-<k>.txseg`) well before it commits the version (`<v>.txlog`); the job SIGKILLs the
executor of such a task once its store has written a couple of segments and no changelog of the
version. Spark retries the lost task (and re-runs the lost shuffle output), the retry reopens the
local store the killed JVM left (a stable `txstate.localDir`), and the batch commits once.

What would break a provider that commits partial data: if the killed attempt's writes counted as
committed (the changelog of the version written early, or the killed attempt's segments or local
writes kept under the retry's commit), the keys that attempt wrote would be counted twice (the
retry reads the key's running count and adds the batch to it) or the checkpoint would hold a
version the retry did not write. So every batch's output rows must be exactly the running counts
computed here from the input, the final state read back from the checkpoint by a fresh provider
must be exactly the totals, and the version's only changelog must have been written after the kill.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from harness.cluster_tasks import check_killed_before_commit, run_job_script
from harness.streaming_harness import InputFiles

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "jobs" / "executor_failure_job.py"
JOB_TIMEOUT_S = 480  # the job itself takes about a minute on two quiet cores
QUERY_TIMEOUT_S = 360

OLD_KEYS = 20_000
NEW_KEYS = 150_000
KILL_BATCH = 1
# Segments of the killed store's version at the kill: written (so the attempt had made real
# progress into the version) with many more to go before the commit.
KILL_AFTER_SEGMENTS = 2


def input_batches() -> list[list[dict]]:
    """Batch 0 creates OLD_KEYS keys; batch 1 (the kill batch) creates NEW_KEYS more and updates
    every old key, in a scrambled order; batch 2 updates every third key and adds a few new ones."""
    old = list(range(OLD_KEYS))
    new = list(range(OLD_KEYS, OLD_KEYS + NEW_KEYS))
    kill_batch = [(k * 7919) % (OLD_KEYS + NEW_KEYS) for k in range(OLD_KEYS + NEW_KEYS)]  # a permutation
    assert sorted(kill_batch) == old + new
    after = list(range(0, OLD_KEYS + NEW_KEYS, 3)) + list(range(OLD_KEYS + NEW_KEYS, OLD_KEYS + NEW_KEYS + 100))
    return [
        [{"k": k, "v": 2 * k} for k in old],
        [{"k": k, "v": k % 1000 - 300} for k in kill_batch],
        [{"k": k, "v": -k} for k in after],
    ]


def expected_updates(batches: list[list[dict]]) -> tuple[list[dict[int, tuple]], dict[int, tuple]]:
    """Per batch, the update-mode rows k -> (count, sum) of the keys it touched; and the final state."""
    totals: dict[int, tuple[int, int]] = {}
    per_batch = []
    for rows in batches:
        for row in rows:
            n, s = totals.get(row["k"], (0, 0))
            totals[row["k"]] = (n + 1, s + row["v"])
        per_batch.append({row["k"]: totals[row["k"]] for row in rows})
    return per_batch, totals


def read_rows(directory: Path) -> dict[int, tuple]:
    """The (k, n, total) rows of a parquet directory as k -> (n, total); duplicate keys fail."""
    table = pq.read_table(directory)
    ks, ns, totals = (table.column(c).to_pylist() for c in ("k", "n", "total"))
    rows = dict(zip(ks, zip(ns, totals)))
    assert len(rows) == len(ks), f"{directory}: {len(ks) - len(rows)} keys appear more than once"
    return rows


def differences(got: dict[int, tuple], want: dict[int, tuple]) -> list[str]:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    wrong = sorted(k for k in set(want) & set(got) if got[k] != want[k])
    problems = []
    if missing:
        problems.append(f"{len(missing)} keys missing, e.g. {missing[:5]}")
    if extra:
        problems.append(f"{len(extra)} unexpected keys, e.g. {extra[:5]}")
    if wrong:
        problems.append(f"{len(wrong)} keys with wrong (count, sum) (key, got, expected): "
                        f"{[(k, got[k], want[k]) for k in wrong[:5]]}")
    return problems


def run_kill_job(work_dir: Path, plugin_jar: Path, provider: str, extra_args: list[str]) -> tuple[list, dict]:
    """Writes the input, runs the job with an executor killed in KILL_BATCH (`extra_args` put the
    checkpoint elsewhere), and checks the kill came before the store committed; returns the input
    batches and the job's report."""
    batches = input_batches()
    inputs = InputFiles(work_dir / "input", ["events"])
    for index, rows in enumerate(batches):
        inputs.write_batch(index, {"events": rows})
    report, log = run_job_script(
        JOB, ["--input", str(inputs.dirs["events"]), "--work-dir", str(work_dir / "job"),
              "--provider", provider, "--kill-batch", str(KILL_BATCH),
              "--kill-after-segments", str(KILL_AFTER_SEGMENTS), "--max-bytes", "1m",
              "--timeout", str(QUERY_TIMEOUT_S), *extra_args],
        work_dir / "job", plugin_jar, JOB_TIMEOUT_S)
    print(f"\nkill: {report['kill']}; job {report['job_seconds']} s")
    check_killed_before_commit(report, log, KILL_BATCH, KILL_AFTER_SEGMENTS)
    assert report["recorded_provider"] == provider
    return batches, report


def assert_exact_counts(work_dir: Path, batches: list[list[dict]], state_from: str) -> None:
    """Every batch's output of the job in `work_dir`, and the final state it read back from
    `state_from` (the checkpoint's file system, for the message), equal the counts of the input."""
    want_batches, want_state = expected_updates(batches)
    output = work_dir / "job" / "output"
    assert sorted(p.name for p in output.iterdir()) == [f"batch-{b:03d}" for b in range(len(batches))], (
        sorted(p.name for p in output.iterdir()))
    for batch_id, want in enumerate(want_batches):
        problems = differences(read_rows(output / f"batch-{batch_id:03d}"), want)
        assert not problems, f"batch {batch_id} (the kill came in batch {KILL_BATCH}): " + "; ".join(problems)
    problems = differences(read_rows(work_dir / "job" / "state-dump"), want_state)
    assert not problems, f"the final state read back from {state_from}: " + "; ".join(problems)


def test_an_executor_killed_before_its_store_commits_leaves_exact_counts(
    work_dir, plugin_jar, candidate_provider
):
    batches, report = run_kill_job(work_dir, plugin_jar, candidate_provider, [])
    kill_progress = [p for p in report["progress"] if p["batchId"] == KILL_BATCH and p.get("stateOperators")]
    print(f"kill batch state metrics: {[op.get('customMetrics') for op in kill_progress[-1]['stateOperators']]}"
          if kill_progress else "no progress of the kill batch")
    # Every batch's output, and the state rebuilt from the checkpoint, are exact.
    assert_exact_counts(work_dir, batches, "the checkpoint")
