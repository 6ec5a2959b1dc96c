"""Spark's state data source (`spark.read.format("statestore")`) reads txstate checkpoints as it
reads the HDFS provider's.

Two queries from the operator-equivalence suite run once each on Spark's HDFS provider and on the
candidate, over the same input files (a keyed aggregation, whose state only grows, and
dropDuplicates with a watermark, whose state is also evicted, so the change feed carries deletes).
Nothing is cleaned up (minBatchesToRetain is large) and the candidate snapshots every two versions.
Then the same reads run on both checkpoints and must return the same rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.streaming_harness import (
    HDFS_PROVIDER,
    describe_listing,
    run_case,
    sorted_rows,
    store_dirs,
    to_plain,
    wait_for_quiet_checkpoint,
)
from test_operator_equivalence import OPERATOR_CASES

CASES = {case.name: case for case in OPERATOR_CASES if case.name in ("aggregation_update", "dedup_with_watermark")}
READ_CONF = {
    "spark.sql.streaming.minBatchesToRetain": "100",
    "spark.sql.streaming.stateStore.txstate.snapshotInterval": "2",
}
CHANGE_START, CHANGE_END = 2, 5
READ_BATCH = 4


@pytest.fixture(scope="module")
def checkpoints(spark, candidate_provider, tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Case name -> {"reference": HDFS checkpoint, "candidate": txstate checkpoint}."""
    result: dict[str, dict[str, Path]] = {}
    for name, case in CASES.items():
        root = tmp_path_factory.mktemp(name)
        paths = {}
        for role, provider in (("reference", HDFS_PROVIDER), ("candidate", candidate_provider)):
            output = run_case(spark, case, provider, root / role, extra_conf=READ_CONF)
            assert max(output.batches) > CHANGE_END, f"{name} on {provider}: batches {sorted(output.batches)}"
            paths[role] = root / role / "checkpoint"
        # Snapshots staged by the last commits are uploaded once the providers are unloaded.
        if store_dirs(paths["candidate"]):  # txstate's files (not another candidate's)
            wait_for_quiet_checkpoint(paths["candidate"])
        result[name] = paths
    return result


def read_state(spark, checkpoint: Path, **options) -> list[tuple]:
    reader = spark.read.format("statestore")
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted_rows(reader.load(str(checkpoint)).collect())


def last_batch(checkpoint: Path) -> int:
    return max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def read_feed_in_order(spark, checkpoint: Path) -> list[tuple]:
    """The change feed of batches CHANGE_START..CHANGE_END as (batch, type, key, value, partition), in
    the order each partition recorded it (the order matters for net changes)."""
    df = (spark.read.format("statestore").option("readChangeFeed", True)
          .option("changeStartBatchId", CHANGE_START).option("changeEndBatchId", CHANGE_END)
          .load(str(checkpoint)))
    return [to_plain(r) for r in df.select("batch_id", "change_type", "key", "value", "partition_id").collect()]


def net_changes(feed: list[tuple], initial: list[tuple]) -> list[tuple]:
    """Each batch's net effect on the state: the final value of every key the batch changed, or a
    delete for a key it removed; writes that a batch undid itself (put, then delete of a key that
    did not exist before) vanish. HDFS logs every operation, txstate its net change per batch: this
    is what both must agree on."""
    state = {(part, key): value for key, value, part in initial}
    net = []
    for batch in sorted({row[0] for row in feed}):
        before = dict(state)
        touched = []
        for b, kind, key, value, part in feed:
            if b != batch:
                continue
            touched.append((part, key))
            if kind == "delete":
                state.pop((part, key), None)
            else:
                state[(part, key)] = value
        for part, key in sorted(set(touched), key=repr):
            was, now = before.get((part, key)), state.get((part, key))
            if ((part, key) in before) != ((part, key) in state) or was != now:
                net.append((batch, "update", key, now, part) if (part, key) in state else (batch, "delete", key, None, part))
    return sorted(net, key=repr)


@pytest.mark.parametrize("case_name", list(CASES))
def test_change_feed_of_batches_2_to_5_has_the_hdfs_providers_net_changes(spark, checkpoints, case_name):
    paths = checkpoints[case_name]
    initial = [to_plain(r) for r in spark.read.format("statestore").option("batchId", CHANGE_START - 1)
               .load(str(paths["reference"])).select("key", "value", "partition_id").collect()]
    feeds = {role: read_feed_in_order(spark, path) for role, path in paths.items()}
    reference = feeds["reference"]
    assert {row[0] for row in reference} >= {CHANGE_START, CHANGE_END - 1}, reference
    if case_name == "dedup_with_watermark":
        assert any(row[1] == "delete" for row in reference), f"no eviction in the change feed: {reference}"
    expected = net_changes(reference, initial)
    actual = net_changes(feeds["candidate"], initial)
    assert actual == expected, (f"missing {[r for r in expected if r not in actual][:10]}; "
                                f"unexpected {[r for r in actual if r not in expected][:10]}")
    # txstate's feed is already net: replaying it changes nothing, and it carries no no-op records.
    assert sorted(feeds["candidate"], key=repr) == actual


@pytest.mark.parametrize("case_name", list(CASES))
def test_state_at_a_batch_equals_the_hdfs_providers(spark, checkpoints, case_name):
    reads = {role: read_state(spark, path, batchId=READ_BATCH) for role, path in checkpoints[case_name].items()}
    assert reads["reference"], "the reference state at batch 4 is empty"
    assert reads["candidate"] == reads["reference"]


def test_reading_from_a_snapshot_equals_the_plain_read(spark, checkpoints):
    """snapshotStartBatchId X loads the snapshot of version X + 1 and replays up to batchId Y: the
    rows equal the plain read of batch Y (partition 0), for every snapshot of partition 0."""
    checkpoint = checkpoints["aggregation_update"]["candidate"]
    end_batch = last_batch(checkpoint)
    stores = wait_for_quiet_checkpoint(checkpoint)
    (partition0,) = [s for s in stores if s.path.name == "0"]
    snapshot_batches = sorted(v - 1 for v in partition0.snapshots if 1 <= v <= end_batch + 1)
    assert snapshot_batches, f"no snapshot of partition 0: {describe_listing(stores)}"
    plain = [row for row in read_state(spark, checkpoint, batchId=end_batch) if row[-1] == 0]
    assert plain, "partition 0 holds no state"
    for start_batch in snapshot_batches:
        from_snapshot = read_state(spark, checkpoint, snapshotStartBatchId=start_batch, snapshotPartitionId=0,
                                   batchId=end_batch)
        assert from_snapshot == plain, f"read from the snapshot of batch {start_batch} differs"


def test_reading_from_a_missing_snapshot_fails_clearly(spark, checkpoints):
    """A snapshotStartBatchId whose snapshot does not exist is an error naming the snapshot, not a
    silent read from some other snapshot."""
    checkpoint = checkpoints["aggregation_update"]["candidate"]
    end_batch = last_batch(checkpoint)
    (partition0,) = [s for s in wait_for_quiet_checkpoint(checkpoint) if s.path.name == "0"]
    missing = [v for v in range(2, end_batch + 2) if v not in partition0.snapshots]
    assert missing, f"every version of partition 0 has a snapshot: {sorted(partition0.snapshots)}"
    with pytest.raises(Exception) as failure:
        read_state(spark, checkpoint, snapshotStartBatchId=missing[0] - 1, snapshotPartitionId=0, batchId=end_batch)
    assert f"no snapshot of version {missing[0]}" in str(failure.value), str(failure.value)[:3000]
