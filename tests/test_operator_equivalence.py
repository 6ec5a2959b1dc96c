"""Every stateful operator emits exactly what it emits on Spark's HDFS provider.

Each case runs one query over the same input files twice: on the HDFS-backed provider (the
reference) and on the candidate provider (txstate's, or $TXSTATE_TEST_CANDIDATE_PROVIDER). Each run
spans several micro-batches and a stop and restart on the same checkpoint in the middle, so the
candidate must reload its state from its own checkpoint files. The rows emitted and the state
operators' row counts must be equal batch by batch.

OPERATOR_CASES is the reusable part: a later suite can run the same cases with other settings (for
example checkpoint format v2) through run_candidate().
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupStateTimeout

from harness.streaming_harness import (
    CHECKPOINT_FORMAT_CONF,
    HAS_CHECKPOINT_FORMAT_V2,
    HDFS_PROVIDER,
    RunOutput,
    StreamCase,
    assert_same_output,
    event_datetime,
    event_time,
    run_case,
)

EVENTS = "k string, v long, ts timestamp"
RECORDS = "id string, v long, ts timestamp"
LEFT = "lk string, lv long, lts timestamp"
RIGHT = "rk string, rv long, rts timestamp"


def ev(k: str, v: int, t: float) -> dict[str, Any]:
    return {"k": k, "v": v, "ts": event_time(t)}


def rec(id_: str, v: int, t: float) -> dict[str, Any]:
    return {"id": id_, "v": v, "ts": event_time(t)}


def left(k: str, v: int, t: float) -> dict[str, Any]:
    return {"lk": k, "lv": v, "lts": event_time(t)}


def right(k: str, v: int, t: float) -> dict[str, Any]:
    return {"rk": k, "rv": v, "rts": event_time(t)}


# --------------------------------------------------------------------------------------------
# Input data. Keys a..h spread over both shuffle partitions (test_case_keys_use_both_partitions).

# Keyed updates without event-time semantics: new keys, updates of existing keys, exact duplicate
# rows, a key-heavy batch, and an empty batch after the restart.
KEYED_UPDATES = [
    {"events": [ev("a", 1, 1), ev("b", 2, 2), ev("c", 3, 3), ev("d", 4, 4), ev("e", 5, 5), ev("f", 6, 6)]},
    {"events": [ev("a", 10, 11), ev("b", -2, 12), ev("g", 7, 13), ev("a", 10, 11)]},
    {"events": [ev("c", 3, 21), ev("c", 30, 22), ev("c", -3, 23), ev("h", 8, 24)]},
    {"events": [ev(k, i, 30 + i) for i, k in enumerate("abcdefgh")]},
    {"events": [ev("d", 100, 41), ev("d", 1, 42)]},
    {"events": []},
    {"events": [ev("h", 2, 61), ev("e", 9, 62), ev("a", -5, 63)]},
]

# Event-time data with a 10 s watermark: time moves forward batch by batch, some rows arrive late
# (older than the watermark: dropped), and the last batches jump far ahead so state is evicted.
TIMED_EVENTS = [
    {"events": [ev("a", 1, 1), ev("b", 2, 2), ev("c", 3, 3), ev("a", 2, 4), ev("d", 4, 4), ev("e", 5, 5), ev("a", 6, 7), ev("f", 1, 8)]},
    {"events": [ev("a", 2, 11), ev("b", 3, 12), ev("g", 4, 13), ev("c", 5, 14), ev("h", 1, 16), ev("d", 7, 18)]},
    {"events": [ev("e", 1, 21), ev("f", 2, 22), ev("a", 3, 24), ev("b", 1, 25), ev("c", 9, 5), ev("g", 2, 29), ev("h", 3, 30)]},
    {"events": [ev("a", 4, 35), ev("c", 1, 36), ev("d", 2, 38), ev("e", 3, 41), ev("f", 5, 15), ev("b", 2, 44)]},
    {"events": [ev("a", 1, 55), ev("b", 1, 58), ev("c", 2, 61), ev("h", 4, 62), ev("g", 7, 64), ev("a", 2, 57)]},
    {"events": [ev("d", 1, 90), ev("e", 2, 91)]},
    {"events": [ev("f", 3, 120)]},
]

# Records with ids repeated inside a batch (exact duplicates), across batches and across the
# restart, late duplicates, and ids coming back after their state has expired.
RECORDS_WITH_DUPLICATES = [
    {"records": [rec("u1", 1, 1), rec("u2", 2, 2), rec("u3", 3, 3), rec("u4", 4, 4), rec("u1", 1, 1), rec("u5", 5, 6), rec("u6", 6, 8)]},
    {"records": [rec("u1", 7, 12), rec("u2", 2, 2), rec("u7", 8, 14), rec("u8", 9, 15), rec("u3", 10, 16)]},
    {"records": [rec("u9", 11, 25), rec("u4", 12, 26), rec("u1", 7, 12), rec("u2", 13, 3), rec("u6", 14, 27)]},
    {"records": [rec("u1", 15, 33), rec("u5", 16, 34), rec("u7", 17, 36), rec("u8", 18, 15), rec("u9", 19, 38), rec("u10", 26, 37)]},
    {"records": [rec("u2", 20, 50), rec("u3", 21, 51), rec("u4", 22, 52), rec("u9", 19, 38), rec("u1", 15, 33)]},
    {"records": [rec("u5", 23, 80), rec("u6", 24, 81)]},
    {"records": [rec("u1", 25, 90)]},
]

# Two sides joined on key with |rts - lts| <= 5 s, 10 s watermarks on both. Some left rows never
# find a match (left outer emits them null-padded once the watermark passes), some right rows come
# too early or too late for their left row.
JOIN_SIDES = [
    {"left": [left("a", 1, 1), left("b", 2, 2), left("c", 3, 3), left("d", 4, 4)],
     "right": [right("a", 10, 2), right("b", 20, 9), right("e", 50, 5)]},
    {"left": [left("e", 5, 12), left("f", 6, 13), left("g", 7, 14)],
     "right": [right("c", 30, 6), right("f", 60, 14), right("a", 11, 4), right("g", 70, 30)]},
    {"left": [left("h", 8, 22), left("a", 9, 23)],
     "right": [right("h", 80, 24), right("d", 40, 25), right("a", 12, 20)]},
    {"left": [left("b", 3, 35), left("c", 4, 36)],
     "right": [right("b", 21, 33), right("c", 31, 45), right("e", 51, 37)]},
    {"left": [left("d", 5, 50), left("h", 6, 51)],
     "right": [right("d", 41, 52), right("x", 1, 53), right("d", 42, 54)]},
    {"left": [left("e", 6, 80)], "right": [right("f", 61, 81)]},
    {"left": [], "right": [right("g", 1, 95)]},
]


# --------------------------------------------------------------------------------------------
# Checks that the reference output really exercises what a case is about.


def progress_total(output: RunOutput, field_index: int) -> int:
    """Sum of one state progress field (1 total, 2 updated, 3 removed, 4 dropped) over batches."""
    return sum(op[field_index] or 0 for ops in output.state_progress.values() for op in ops)


def rows_after_restart(output: RunOutput) -> list[tuple]:
    later = [b for run in output.run_batch_ids[1:] for b in run]
    return [row for b in later for row in output.batches.get(b, [])]


def expect_evictions_and_late_rows(output: RunOutput) -> None:
    assert progress_total(output, 3) > 0, "no state row was ever removed (no eviction happened)"
    assert progress_total(output, 4) > 0, "no late row was dropped by the watermark"


def expected_keyed_totals(batches) -> dict[str, tuple[int, int, int]]:
    totals: dict[str, tuple[int, int, int]] = {}
    for batch in batches:
        for row in batch["events"]:
            n, s, m = totals.get(row["k"], (0, 0, row["v"]))
            totals[row["k"]] = (n + 1, s + row["v"], max(m, row["v"]))
    return totals


def check_keyed_update(output: RunOutput) -> None:
    last: dict[str, tuple] = {}
    for batch_id in sorted(output.batches):
        for k, *values in output.batches[batch_id]:
            last[k] = tuple(values)
    assert last == expected_keyed_totals(KEYED_UPDATES)
    assert rows_after_restart(output), "nothing was emitted after the restart"


def check_keyed_complete(output: RunOutput) -> None:
    final = output.batches[max(output.batches)]
    assert {k: tuple(v) for k, *v in final} == expected_keyed_totals(KEYED_UPDATES)


def check_global_update(output: RunOutput) -> None:
    values = [row["v"] for batch in KEYED_UPDATES for row in batch["events"]]
    emitted = [row for b in sorted(output.batches) for row in output.batches[b]]
    assert emitted[-1] == (len(values), sum(values), min(values), max(values))
    assert rows_after_restart(output)


def check_dedup_no_watermark(output: RunOutput) -> None:
    ids = [row[0] for row in output.all_rows()]
    assert sorted(ids) == sorted({r["id"] for b in RECORDS_WITH_DUPLICATES for r in b["records"]})
    assert rows_after_restart(output), "no new id arrived after the restart"


def check_dedup_with_watermark(output: RunOutput) -> None:
    expect_evictions_and_late_rows(output)
    emitted = Counter((row[0], row[2]) for row in output.all_rows())
    assert max(emitted.values()) == 1, f"a (id, ts) pair was emitted twice: {emitted}"
    assert ("u1", event_datetime(12)) in emitted, "u1 with a new event time was not emitted"


def check_dedup_within_watermark(output: RunOutput) -> None:
    expect_evictions_and_late_rows(output)
    per_id = Counter(row[0] for row in output.all_rows())
    assert per_id["u1"] >= 2, "u1 never came back after its state expired"


def check_window_append(output: RunOutput) -> None:
    expect_evictions_and_late_rows(output)
    emitting = [b for b, rows in output.batches.items() if rows]
    assert len(emitting) >= 2, f"windows were emitted in batches {emitting} only"
    assert rows_after_restart(output), "no window was emitted after the restart"


def check_session_append(output: RunOutput) -> None:
    check_window_append(output)
    assert any(row[2] >= 3 for row in output.all_rows()), "no session merged three rows"


def check_inner_join(output: RunOutput) -> None:
    assert len(output.all_rows()) >= 5
    assert rows_after_restart(output), "no join result after the restart"
    assert progress_total(output, 3) > 0, "join state was never evicted"


def check_left_outer_join(output: RunOutput) -> None:
    check_inner_join(output)
    padded = {b for b, rows in output.batches.items() for row in rows if row[3] is None}
    assert padded, "no null-padded row was emitted"
    assert padded & {b for run in output.run_batch_ids[1:] for b in run}, (
        "no null-padded row was emitted after the restart"
    )


def check_pandas_state(output: RunOutput) -> None:
    statuses = Counter(row[3] for row in output.all_rows())
    assert {"open", "closed", "expired"} <= set(statuses), statuses
    assert any(row[3] == "expired" for row in rows_after_restart(output))


# --------------------------------------------------------------------------------------------
# Queries


def keyed_aggregation(s: Mapping[str, Any]):
    return s["events"].groupBy("k").agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.max("v").alias("top")
    )


def global_aggregation(s: Mapping[str, Any]):
    return s["events"].agg(
        F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"), F.min("v").alias("low"),
        F.max("v").alias("top"),
    )


def dedup_no_watermark(s: Mapping[str, Any]):
    return s["records"].dropDuplicates(["id"])


def dedup_with_watermark(s: Mapping[str, Any]):
    return s["records"].withWatermark("ts", "10 seconds").dropDuplicates(["id", "ts"])


def dedup_within_watermark(s: Mapping[str, Any]):
    return s["records"].withWatermark("ts", "10 seconds").dropDuplicatesWithinWatermark(["id"])


def window_aggregation(s: Mapping[str, Any]):
    return (
        s["events"].withWatermark("ts", "10 seconds")
        .groupBy(F.window("ts", "10 seconds"), "k")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
        .select(F.col("window.start").alias("start"), F.col("window.end").alias("end"), "k", "n", "total")
    )


def session_aggregation(s: Mapping[str, Any]):
    return (
        s["events"].withWatermark("ts", "10 seconds")
        .groupBy(F.session_window("ts", "5 seconds"), "k")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))
        .select("k", F.col("session_window.start").alias("start"), "n", "total",
                F.col("session_window.end").alias("end"))
    )


def stream_join(how: str) -> Callable[[Mapping[str, Any]], Any]:
    def build(s: Mapping[str, Any]):
        l_side = s["left"].withWatermark("lts", "10 seconds")
        r_side = s["right"].withWatermark("rts", "10 seconds")
        condition = F.expr(
            "lk = rk AND rts >= lts - interval 5 seconds AND rts <= lts + interval 5 seconds"
        )
        return l_side.join(r_side, condition, how).select("lk", "lv", "lts", "rv", "rts")

    return build


CLOSE_AT_TOTAL = 10  # a key whose running total reaches this is closed and its state removed
IDLE_TIMEOUT_MS = 15_000  # state expires once the watermark is this far past its last update


def running_count_function(close_at_total: int, idle_timeout_ms: int):
    """The applyInPandasWithState function: running count and total per key, closed (state
    removed) once the total reaches close_at_total, expired after idling idle_timeout_ms of event
    time. Built inside a function so cloudpickle ships it by value: the Python workers cannot
    import this test module."""

    def running_count(key, frames, state):
        import pandas as pd

        (k,) = key
        if state.hasTimedOut:
            n, total = state.get
            state.remove()
            yield pd.DataFrame({"k": [k], "n": [n], "total": [total], "status": ["expired"]})
            return
        n, total = state.get if state.exists else (0, 0)
        for frame in frames:
            n += len(frame)
            total += int(frame["v"].sum())
        if total >= close_at_total:
            state.remove()
            status = "closed"
        else:
            state.update((n, total))
            state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + idle_timeout_ms)
            status = "open"
        yield pd.DataFrame({"k": [k], "n": [n], "total": [total], "status": [status]})

    return running_count


def pandas_with_state(s: Mapping[str, Any]):
    return (
        s["events"].withWatermark("ts", "10 seconds")
        .groupBy("k")
        .applyInPandasWithState(
            running_count_function(CLOSE_AT_TOTAL, IDLE_TIMEOUT_MS),
            outputStructType="k string, n long, total long, status string",
            stateStructType="n long, total long",
            outputMode="update",
            timeoutConf=GroupStateTimeout.EventTimeTimeout,
        )
    )


# --------------------------------------------------------------------------------------------
# The cases. Restart before batch 3 everywhere: three batches in the first run, the rest after.

OPERATOR_CASES: list[StreamCase] = [
    StreamCase("aggregation_update", {"events": EVENTS}, KEYED_UPDATES, keyed_aggregation,
               "update", (3,), check_keyed_update, {"events": "k"}),
    StreamCase("aggregation_complete", {"events": EVENTS}, KEYED_UPDATES, keyed_aggregation,
               "complete", (3,), check_keyed_complete, {"events": "k"}),
    StreamCase("global_aggregation_update", {"events": EVENTS}, KEYED_UPDATES, global_aggregation,
               "update", (3,), check_global_update),
    StreamCase("dedup_without_watermark", {"records": RECORDS}, RECORDS_WITH_DUPLICATES,
               dedup_no_watermark, "append", (3,), check_dedup_no_watermark, {"records": "id"}),
    StreamCase("dedup_with_watermark", {"records": RECORDS}, RECORDS_WITH_DUPLICATES,
               dedup_with_watermark, "append", (3,), check_dedup_with_watermark, {"records": "id"}),
    StreamCase("dedup_within_watermark", {"records": RECORDS}, RECORDS_WITH_DUPLICATES,
               dedup_within_watermark, "append", (3,), check_dedup_within_watermark, {"records": "id"}),
    StreamCase("window_aggregation_append", {"events": EVENTS}, TIMED_EVENTS, window_aggregation,
               "append", (3,), check_window_append, {"events": "k"}),
    StreamCase("session_window_append", {"events": EVENTS}, TIMED_EVENTS, session_aggregation,
               "append", (3,), check_session_append, {"events": "k"}),
    StreamCase("stream_stream_inner_join", {"left": LEFT, "right": RIGHT}, JOIN_SIDES,
               stream_join("inner"), "append", (3,), check_inner_join, {"left": "lk", "right": "rk"}),
    StreamCase("stream_stream_left_outer_join", {"left": LEFT, "right": RIGHT}, JOIN_SIDES,
               stream_join("left_outer"), "append", (3,), check_left_outer_join,
               {"left": "lk", "right": "rk"}),
    StreamCase("apply_in_pandas_with_state", {"events": EVENTS}, TIMED_EVENTS, pandas_with_state,
               "update", (3,), check_pandas_state, {"events": "k"}),
]

# Checkpoint formats the candidate runs with; None leaves Spark's default (format 1). The
# reference always runs with the default, so adding "2" here reuses the reference outputs.
CHECKPOINT_FORMATS: dict[str, str | None] = {"format-default": None}

_reference_outputs: dict[str, RunOutput] = {}


def run_reference(spark, case: StreamCase, work_dir: Path) -> RunOutput:
    """The case's output on Spark's HDFS provider (computed once per pytest session)."""
    if case.name not in _reference_outputs:
        output = run_case(spark, case, HDFS_PROVIDER, work_dir / "reference")
        case.check(output)
        _reference_outputs[case.name] = output
    return _reference_outputs[case.name]


def run_candidate(spark, case: StreamCase, provider: str, work_dir: Path,
                  checkpoint_format: str | None = None) -> RunOutput:
    return run_case(spark, case, provider, work_dir / "candidate",
                    extra_conf={CHECKPOINT_FORMAT_CONF: checkpoint_format})


@pytest.mark.parametrize("checkpoint_format", list(CHECKPOINT_FORMATS.values()),
                         ids=list(CHECKPOINT_FORMATS))
@pytest.mark.parametrize("case", OPERATOR_CASES, ids=[c.name for c in OPERATOR_CASES])
def test_candidate_emits_what_hdfs_emits_batch_by_batch_across_a_restart(
    spark, candidate_provider, work_dir, case, checkpoint_format
):
    reference = run_reference(spark, case, work_dir)
    candidate = run_candidate(spark, case, candidate_provider, work_dir, checkpoint_format)
    assert len(candidate.run_batch_ids) == 2 and all(candidate.run_batch_ids)
    assert_same_output(reference, candidate, case.name)


# The cases the candidate also runs at checkpoint format v2 (file names and commit log carry
# checkpoint ids; Spark names the lineage to load): one per state shape (aggregation, dedup with
# eviction, session windows, the four stores of a join), against the same format-1 reference.
# A subset, to keep this file under ~5 min: every case at v2 would add about a minute (a quarter).
FORMAT_V2_CASES = ("aggregation_update", "dedup_with_watermark", "session_window_append",
                   "stream_stream_left_outer_join")


def commit_log_checkpoint_ids(checkpoint: Path) -> dict[int, Any]:
    """Batch id -> the commit log's `stateUniqueIds` (None when the entry has none)."""
    ids = {}
    for commit in (checkpoint / "commits").glob("[0-9]*"):
        if commit.name.isdigit():
            metadata = json.loads(commit.read_text().splitlines()[1])
            ids[int(commit.name)] = metadata.get("stateUniqueIds")
    return ids


_V2_CASES = [c for c in OPERATOR_CASES if c.name in FORMAT_V2_CASES]
assert len(_V2_CASES) == len(FORMAT_V2_CASES), "FORMAT_V2_CASES names a case that does not exist"


@pytest.mark.skipif(not HAS_CHECKPOINT_FORMAT_V2, reason="Spark 3.5 has no checkpoint format v2")
@pytest.mark.parametrize("case", _V2_CASES, ids=[c.name for c in _V2_CASES])
def test_candidate_at_checkpoint_format_v2_emits_what_hdfs_emits_batch_by_batch_across_a_restart(
    spark, candidate_provider, work_dir, case
):
    reference = run_reference(spark, case, work_dir)
    candidate = run_candidate(spark, case, candidate_provider, work_dir, "2")
    assert len(candidate.run_batch_ids) == 2 and all(candidate.run_batch_ids)
    assert_same_output(reference, candidate, f"{case.name} (checkpoint format v2)")
    # Format 2 records every stateful operator's checkpoint ids (per partition, one per store) in
    # the commit log, and the candidate names its changelog files `<version>_<id>.txlog`.
    checkpoint = work_dir / "candidate" / "checkpoint"
    ids = commit_log_checkpoint_ids(checkpoint)
    # Spark keeps the newest minBatchesToRetain commits; the last batch's is always there.
    assert max(candidate.batches) in ids, f"commits {sorted(ids)}"
    operators = {len(ops) for ops in candidate.state_progress.values()}
    for batch_id, unique_ids in sorted(ids.items()):
        assert unique_ids, f"commit {batch_id} carries no stateUniqueIds under format v2"
        assert {len(unique_ids)} == operators, f"commit {batch_id}: {unique_ids}"
        for operator, partitions in unique_ids.items():
            assert len(partitions) == 2 and all(p and all(p) for p in partitions), (
                f"commit {batch_id}, operator {operator}: {partitions}"
            )
    last = max(ids)
    for operator, partitions in ids[last].items():
        for partition, store_ids in enumerate(partitions):
            store_root = checkpoint / "state" / operator / str(partition)
            named = {f.name.split("_", 1)[1].removesuffix(".txlog")
                     for f in store_root.rglob(f"{last + 1}_*.txlog")}
            assert set(store_ids) <= named, (
                f"batch {last}, operator {operator}, partition {partition}: the commit log names "
                f"{store_ids}, the version {last + 1} changelogs are {sorted(named)}"
            )


def test_default_checkpoint_format_is_v1_and_the_candidate_runs_on_it(
    spark, candidate_provider, work_dir
):
    """The suite above runs at Spark's default checkpoint format, which is version 1 (3.5 has no other)."""
    if HAS_CHECKPOINT_FORMAT_V2:
        assert spark.conf.get(CHECKPOINT_FORMAT_CONF) == "1"
    case = OPERATOR_CASES[0]
    candidate = run_candidate(spark, case, candidate_provider, work_dir, None)
    assert candidate.batches
    # Format 2 records per-partition checkpoint ids in the commit log; format 1 records none.
    for commit in sorted((work_dir / "candidate" / "checkpoint" / "commits").glob("[0-9]*")):
        metadata = json.loads(commit.read_text().splitlines()[1])
        assert not metadata.get("stateUniqueIds"), f"{commit} carries checkpoint ids: {metadata}"


def test_case_keys_use_both_shuffle_partitions(spark):
    """The cases' keys hash to both shuffle partitions, so both stores of an operator hold state.

    A stateful operator's shuffle puts key k in partition pmod(hash(k), 2): Spark's hash
    partitioning is Murmur3 `hash()` modulo the partition count."""
    keyed = [
        (case.name, source, str(row[column]))
        for case in OPERATOR_CASES
        for source, column in case.key_columns.items()
        for batch in case.batches
        for row in batch.get(source, [])
    ]
    partitions = (
        spark.createDataFrame(keyed, "case string, source string, key string")
        .groupBy("case", "source")
        .agg(F.collect_set(F.expr("pmod(hash(key), 2)")).alias("partitions"))
        .collect()
    )
    assert len(partitions) == sum(len(c.key_columns) for c in OPERATOR_CASES)
    for row in partitions:
        assert sorted(row["partitions"]) == [0, 1], f"{row['case']}: keys of {row['source']} land in one partition"
