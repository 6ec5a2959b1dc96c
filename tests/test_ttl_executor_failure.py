"""State TTL expires exactly the same keys when an executor is SIGKILLed mid-batch and Spark retries.

TTL expiry is part of a batch's writes: at the start of a batch, the store deletes the keys not
written for the TTL or longer at the batch's time (`batchTimestampMs` from the offset log), so a
retried task, which sees the same offset-log entry, must delete the same keys. This test runs
jobs/executor_failure_job.py (see test_executor_failure.py for how it kills) with `dropDuplicates(["k"])`
(and, with TXSTATE_TTL_KILL_ALL=1, `groupBy("k").count()`), with a TTL of a few seconds, on
`local-cluster[2,1,1024]`, over batches of rotating keys (ttl_model.rotating_keys: keys expire, hot
keys come back). The kill batch also writes BULK_KEYS new keys, so its stateful task writes
early-commit segments; the job SIGKILLs that task's executor once its store has written some and
before it commits, and Spark retries the task. The bulk expires later, all in one batch.

What would break a provider whose expiry is not deterministic (a cutoff from the executor's clock,
or from when the retry runs): the retry of the kill batch starts seconds after the batch's time, so
it would expire keys the model keeps, emit such a key again when the batch brings it back, and leave
other state rows than the model. So every batch's output, its state row count and its
`txstateExpiredEntries` must be exactly the reference model's (ttl_model), computed from the batch
times the checkpoint recorded; and the final state a fresh provider rebuilds from the checkpoint
(replaying the changelogs with their expiry deletes) must be the model's final state.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Callable, Mapping

import pyarrow.parquet as pq
import pytest

from harness.cluster_tasks import check_killed_before_commit, log_excerpt, run_job_script
from harness.streaming_harness import InputFiles, custom_metric
from harness.ttl_model import ModelBatch, count_model, dedup_model, rotating_keys

TESTS_DIR = Path(__file__).resolve().parent
JOB = TESTS_DIR / "jobs" / "executor_failure_job.py"
JOB_TIMEOUT_S = 420  # the job itself takes about a minute, up to three on a busy machine
QUERY_TIMEOUT_S = 300

# Long enough that the keys of the batch before the kill batch are still live in it (however long
# that batch took on a busy machine), short enough that keys expire and come back within the run.
TTL_MS = 5000
BATCHES = 12
KILL_BATCH = 6
# New keys of the kill batch: enough for its stores to write early-commit segments well before
# they commit (see test_executor_failure.py), so the kill lands mid-write.
BULK_KEYS = 50_000
KILL_AFTER_SEGMENTS = 2
# Each batch's output is followed by this pause, so the batches span a few TTLs on a fast machine too.
BATCH_PAUSE_S = 0.6

MODELS: Mapping[str, Callable[..., dict[int, ModelBatch]]] = {"dedup": dedup_model, "count": count_model}
# Each query is a job of its own on a fresh local-cluster (about a minute each), so CI runs
# deduplication only; TXSTATE_TTL_KILL_ALL=1 runs the count aggregation too.
ALL_QUERIES = os.environ.get("TXSTATE_TTL_KILL_ALL") == "1"


def keys_of(batch: int) -> list[str]:
    """The rotating keys, plus BULK_KEYS new keys in the kill batch."""
    keys = rotating_keys(batch)
    if batch == KILL_BATCH:
        keys = keys + [f"bulk{i:06d}" for i in range(BULK_KEYS)]
    return keys


def read_rows(directory: Path) -> list[tuple]:
    """A parquet directory's rows as sorted tuples (duplicates kept)."""
    return sorted(tuple(row.values()) for row in pq.read_table(directory).to_pylist())


def differences(got: list[tuple], want: list[tuple]) -> str:
    """The rows missing from `got`, unexpected in it or in it too often, compared with `want`."""
    got_n, want_n = Counter(got), Counter(want)
    missing = sorted((want_n - got_n).elements())
    extra = sorted((got_n - want_n).elements())
    return (f"{len(got)} rows, {len(want)} expected; {len(missing)} missing, e.g. {missing[:5]}; "
            f"{len(extra)} unexpected or repeated, e.g. {extra[:5]}")


@pytest.mark.parametrize("query", [
    "dedup",
    pytest.param("count", marks=pytest.mark.skipif(not ALL_QUERIES, reason="TXSTATE_TTL_KILL_ALL=1 runs it")),
])
def test_ttl_expires_the_same_keys_when_an_executor_dies_before_its_store_commits(
    work_dir, plugin_jar, candidate_provider, query
):
    inputs = InputFiles(work_dir / "input", ["events"])
    for batch in range(BATCHES):
        inputs.write_batch(batch, {"events": [{"k": k} for k in keys_of(batch)]})
    report, log = run_job_script(
        JOB, ["--input", str(inputs.dirs["events"]), "--work-dir", str(work_dir / "job"),
              "--provider", candidate_provider, "--query", query, "--ttl", f"{TTL_MS}ms",
              "--batch-pause", str(BATCH_PAUSE_S), "--kill-batch", str(KILL_BATCH),
              "--kill-after-segments", str(KILL_AFTER_SEGMENTS), "--max-bytes", "1m",
              "--timeout", str(QUERY_TIMEOUT_S)],
        work_dir / "job", plugin_jar, JOB_TIMEOUT_S, what=f"the {query} job")
    print(f"\nkill: {report['kill']}; job {report['job_seconds']} s")

    # The kill came mid-write, before the store committed, and the lost task of the kill batch ran again.
    check_killed_before_commit(report, log, KILL_BATCH, KILL_AFTER_SEGMENTS)
    assert f"[batchId = {KILL_BATCH}] Lost task" in log, (
        f"no task of batch {KILL_BATCH} was lost:\n{log_excerpt(log)}")
    assert report["recorded_provider"] == candidate_provider

    batch_times = {int(batch): ms for batch, ms in report["batch_times"].items()}
    assert sorted(batch_times) == list(range(BATCHES)), sorted(batch_times)
    model = MODELS[query](batch_times, TTL_MS, keys_of)
    print(f"model: expired per batch {[model[b].expired for b in range(BATCHES)]}, "
          f"state rows {[model[b].state_rows for b in range(BATCHES)]}")
    # The data must exercise TTL around the kill: keys written before the kill batch are still live
    # in it (a retry that expired by a later clock would drop them), later keys expire and come
    # back, and the bulk goes in one batch.
    assert set(model[KILL_BATCH - 1].state) & set(model[KILL_BATCH].state), (
        f"no key outlived the kill batch's expiry (the batch before it took longer than the TTL): "
        f"batch times {batch_times}")
    assert any(m.expired >= BULK_KEYS for b, m in model.items() if b > KILL_BATCH), (
        {b: m.expired for b, m in model.items()})
    assert sum(1 for m in model.values() if any(row[0] == "hot0" for row in m.rows)) > 1
    if query == "count":  # an expired key's count restarts
        assert any(("hot0", 1) in m.rows for b, m in model.items() if b > 0)

    output = work_dir / "job" / "output"
    assert sorted(p.name for p in output.iterdir()) == [f"batch-{b:03d}" for b in range(BATCHES)], (
        sorted(p.name for p in output.iterdir()))
    progress = {p["batchId"]: p for p in report["progress"] if p.get("stateOperators")}
    problems = []
    for batch, want in sorted(model.items()):
        which = f"batch {batch}{' (the kill batch)' if batch == KILL_BATCH else ''}"
        rows = read_rows(output / f"batch-{batch:03d}")
        if rows != want.rows:
            problems.append(f"{which}: output differs from the model: {differences(rows, want.rows)}")
        state_rows = sum(int(op["numRowsTotal"]) for op in progress[batch]["stateOperators"])
        if state_rows != want.state_rows:
            problems.append(f"{which}: {state_rows} state rows, the model has {want.state_rows}")
        expired = custom_metric(progress[batch], "txstateExpiredEntries")
        if expired != want.expired:
            problems.append(f"{which}: txstateExpiredEntries {expired}, the model expired {want.expired}")
    assert not problems, f"the kill came in batch {KILL_BATCH}; differences from the model:\n" + "\n".join(problems)

    # The state a fresh provider rebuilds from the checkpoint (changelogs with their expiry deletes).
    final = model[BATCHES - 1].state
    want_state = sorted((k,) if query == "dedup" else (k, entry[0]) for k, entry in final.items())
    state = read_rows(work_dir / "job" / "state-dump")
    assert state == want_state, f"the final state read back from the checkpoint: {differences(state, want_state)}"
