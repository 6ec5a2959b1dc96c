"""Read-only followers (txstate_spark.follow) of real streaming queries on real Spark.

The leader is the counting stream of harness/counting_stream.py: `rate-micro-batch` with N rows
per batch grouped by `value % K`, so every key's (count, sum, max) after batch b is known
(`expected_counter`). An answer is right only if it is exactly the state at the batch its
partition says it answered from: a torn batch, a stale value or an invented one all fail.

* A follower tails a running leader: every answer is one committed batch, positions never go
  back, lag returns to 0 once the leader stops, and the final state is the leader's.
* The `txstate` data source reads through a follower, and a second streaming query joins against
  that read, seeing newer batches as the leader makes them.
* A follower behind a checkpoint whose early changelogs the leader's cleanup deleted re-anchors on
  a snapshot and is exact.
* A follower changes nothing under the checkpoint (every file hashed before and after).
* A checkpoint written by a newer format is refused, naming the file and the release needed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import txstate_spark
from harness.counting_stream import KEYS, check_counter, expected_counter, start_counting_stream, wait_until
from harness.streaming_harness import copy_of_stopped
from txstate_spark.query import (
    FailureReason,
    KeyQuery,
    MultiKeyQuery,
    RangeQuery,
    ScanQuery,
    StateQueryError,
    StateQueryRequest,
)

TIMEOUT_S = 120.0


def committed_batches(checkpoint: Path) -> list[int]:
    commits = checkpoint / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else []


def newest_batch(checkpoint: Path) -> int:
    batches = committed_batches(checkpoint)
    return batches[-1] if batches else -1


def file_hashes(root: Path) -> dict[str, str]:
    """Every file under `root` (relative name -> SHA-256 of its bytes)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def check_whole_state(spark, follower, context: str) -> dict[int, int]:
    """Scans every partition of the follower; checks every key against its partition's batch.
    Returns partition -> the batch it answered from."""
    result = StateQueryRequest.in_store(follower).with_query(ScanQuery.all()).execute(spark)
    assert result.is_success, result
    seen = {}
    batches = {}
    for p, r in result.partition_results.items():
        batches[p] = r.position.batch_id
        for row in r.result.rows:
            check_counter(row.value, row.key.k, r.position.batch_id, f"{context}, partition {p}")
            seen[row.key.k] = p
    assert sorted(seen) == list(range(KEYS)), f"{context}: keys {sorted(seen)}"
    return batches


@pytest.fixture
def leader(spark, tmp_path):
    """A running counting stream; stopped after the test."""
    checkpoint = tmp_path / "leader"
    query = start_counting_stream(spark, checkpoint, f"leader_{tmp_path.name}"[:60])
    wait_until(lambda: newest_batch(checkpoint) >= 1, TIMEOUT_S, "the leader's first batches", query)
    yield query, checkpoint
    if query.isActive:
        query.stop()


def test_a_follower_tails_a_running_query_with_whole_batches_and_ends_equal_to_it(spark, leader):
    query, checkpoint = leader
    start_batch = newest_batch(checkpoint)
    with txstate_spark.follow(spark, checkpoint, operator="stateStoreSave") as follower:
        assert follower.description.num_partitions == 2 and follower.description.key_schema.names == ["k"]
        store = StateQueryRequest.in_store(follower)
        newest_seen: dict[int, int] = {}
        lags = []
        while newest_batch(checkpoint) < start_batch + 12:
            key = len(lags) % KEYS
            only = store.with_query(KeyQuery.with_key(key)).execute(spark).only_partition_result()
            check_counter(only.result, key, only.position.batch_id, "key query on the follower")
            multi = store.with_query(MultiKeyQuery.with_keys([0, 5, 11])).execute(spark)
            for p, r in multi.partition_results.items():
                for k, v in zip([0, 5, 11], r.result):
                    if v is not None:
                        check_counter(v, k, r.position.batch_id, f"multi-key query, partition {p}")
            ranged = store.with_query(RangeQuery.with_range(2, 9)).execute(spark)
            assert sorted(row.key.k for r in ranged.partition_results.values() for row in r.result.rows) == \
                list(range(2, 10))
            for p, batch in check_whole_state(spark, follower, "scan of the follower").items():
                assert batch >= newest_seen.get(p, -1), f"partition {p} went back from {newest_seen[p]} to {batch}"
                assert batch <= newest_batch(checkpoint), f"partition {p} shows batch {batch}, not in the commit log"
                newest_seen[p] = batch
            lag = follower.lag
            assert lag.batches >= 0 and lag.millis >= 0 and lag.leader_batch >= lag.applied_batch
            lags.append(lag)
            assert query.exception() is None
        assert min(newest_seen.values()) > start_batch, f"the follower did not move: {newest_seen}"
        query.stop()
        last = newest_batch(checkpoint)
        status = wait_until(lambda: (s := follower.status).lag.batches == 0 and s.lag.applied_batch == last and s,
                            TIMEOUT_S, "the follower's lag back to 0")
        assert status.lag.millis == 0 and status.failures == 0 and status.catch_ups > 0, status
        assert set(check_whole_state(spark, follower, "final state").values()) == {last}
        for key in range(KEYS):
            final = store.with_query(KeyQuery.with_key(key)).execute(spark).only_partition_result()
            assert tuple(final.result) == expected_counter(key, last)
    with pytest.raises(StateQueryError, match="TXSTATE_FOLLOWER_UNKNOWN"):
        StateQueryRequest.in_store(follower).with_query(KeyQuery.with_key(1)).execute(spark)
    follower.close()  # twice is harmless


def test_the_txstate_source_reads_through_a_follower_and_a_stream_joins_it_every_batch(spark, leader, tmp_path):
    from pyspark.sql import functions as F

    query, checkpoint = leader
    with txstate_spark.follow(spark, checkpoint) as follower:
        state = spark.read.format("txstate").option("follower", follower.id).load()
        rows = state.collect()
        assert sorted(r.key.k for r in rows) == list(range(KEYS))
        for r in rows:
            check_counter(r.value, r.key.k, r.batch_id, "txstate source through a follower")
        one = state.where("key.k = 7").collect()
        assert len(one) == 1 and one[0].key.k == 7

        # A second stream enriches its events with the first query's state, fresh every micro-batch.
        seen: list[tuple[int, int, int, tuple]] = []

        def collect(batch, batch_id):
            for r in batch.collect():
                seen.append((batch_id, r.k, r.state_batch, tuple(r.state)))

        events = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 3).load()
                  .select((F.col("value") % KEYS).alias("k")))
        lookup = state.select(F.col("key.k").alias("k"), F.col("value").alias("state"), F.col("batch_id").alias("state_batch"))
        joined = events.join(lookup, "k")
        enrich = (joined.writeStream.foreachBatch(collect).trigger(processingTime="400 milliseconds")
                  .option("checkpointLocation", str(tmp_path / "enrich")).start())
        try:
            wait_until(lambda: len({b for b, *_ in seen}) >= 6 or enrich.exception(), TIMEOUT_S,
                       "six enriched batches")
        finally:
            enrich.stop()
        assert enrich.exception() is None
        for batch_id, k, state_batch, value in seen:
            assert value == expected_counter(k, state_batch), (batch_id, k, state_batch, value)
        state_batches = [max(sb for b, _, sb, _ in seen if b == batch) for batch in sorted({b for b, *_ in seen})]
        assert state_batches == sorted(state_batches) and state_batches[-1] > state_batches[0], \
            f"the join did not see the leader move on: {state_batches}"
    with pytest.raises(Exception, match="TXSTATE_FOLLOWER_UNKNOWN"):
        spark.read.format("txstate").option("follower", follower.id).load().collect()


def test_a_follower_behind_a_cleaned_up_checkpoint_reanchors_on_a_snapshot(spark, tmp_path):
    checkpoint = tmp_path / "leader"
    conf = {
        "spark.sql.streaming.minBatchesToRetain": "3",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "3",
        "spark.sql.streaming.stateStore.maintenanceInterval": "300ms",
    }
    query = start_counting_stream(spark, checkpoint, "cleaned_leader", extra_conf=conf, trigger_ms=100)
    try:
        wait_until(lambda: newest_batch(checkpoint) >= 2, TIMEOUT_S, "the leader's first batches", query)
        # A long poll interval: after its first poll the follower stays behind while the leader goes on.
        with txstate_spark.follow(spark, checkpoint, poll_interval_ms=15_000, replay_limit=1000) as follower:
            applied = follower.lag.applied_batch
            assert applied is not None and applied >= 2
            changelog = checkpoint / "state" / "0" / "0" / f"{applied + 2}.txlog"
            wait_until(lambda: newest_batch(checkpoint) > applied + 10 and not changelog.exists(), TIMEOUT_S,
                       f"the leader's cleanup deleting {changelog.name}", query)
            status = wait_until(lambda: (s := follower.status).reanchors > 0 and s, 40, "a re-anchor")
            assert status.failures == 0, status
            query.stop()
            last = newest_batch(checkpoint)
            wait_until(lambda: follower.lag.applied_batch == last, 40, "the follower at the leader's last batch")
            assert set(check_whole_state(spark, follower, "after re-anchoring").values()) == {last}
    finally:
        query.stop()


def test_a_follower_changes_nothing_under_the_checkpoint(spark, leader, tmp_path):
    query, running = leader
    wait_until(lambda: newest_batch(running) >= 3, TIMEOUT_S, "four batches", query)
    query.stop()
    # A copy: a stopped leader's own maintenance may still upload a snapshot into its checkpoint later.
    checkpoint = copy_of_stopped(running, tmp_path / "stopped-copy")
    before = file_hashes(checkpoint)
    with txstate_spark.follow(spark, checkpoint, poll_interval_ms=20) as follower:
        check_whole_state(spark, follower, "a stopped leader's state")
        spark.read.format("txstate").option("follower", follower.id).load().collect()
        wait_until(lambda: follower.status.polls > 10, TIMEOUT_S, "a dozen polls of the stopped checkpoint")
    with txstate_spark.follow(spark, checkpoint, partitions=[1]) as one:
        only = StateQueryRequest.in_store(one).with_query(ScanQuery.all()).execute(spark)
        assert sorted(only.partition_results) == [1], "a request without partitions asks the followed ones"
        scan = StateQueryRequest.in_store(one).with_query(ScanQuery.all()).with_partitions([0, 1]).execute(spark)
        assert scan.partition_results[0].failure_reason == FailureReason.NOT_PRESENT
        assert "does not follow partition 0" in scan.partition_results[0].failure_message
        batch = scan.partition_results[1].position.batch_id
        assert batch == newest_batch(checkpoint) and scan.partition_results[1].result.rows
        for row in scan.partition_results[1].result.rows:
            check_counter(row.value, row.key.k, batch, "a follower of partition 1 only")
    with pytest.raises(StateQueryError, match="partition 5 does not exist"):
        txstate_spark.follow(spark, checkpoint, partitions=[5])
    assert file_hashes(checkpoint) == before


def test_a_checkpoint_written_by_a_newer_format_is_refused_naming_what_is_needed(spark, leader, tmp_path):
    query, checkpoint = leader
    query.stop()
    copy = copy_of_stopped(checkpoint, tmp_path / "copy")
    newest = copy / "state" / "0" / "0" / f"{newest_batch(copy) + 1}.txlog"
    data = bytearray(newest.read_bytes())
    assert data[:4] == b"TXCL", "a txstate changelog"
    data[4:8] = (9).to_bytes(4, "big")  # the frame's format version
    newest.write_bytes(bytes(data))
    with pytest.raises(StateQueryError) as refused:
        txstate_spark.follow(spark, copy)
    message = str(refused.value)
    assert "TXSTATE_FOLLOWER_NEWER_FORMAT" in message and str(newest) in message, message
    assert "changelog format 9" in message and "newer txstate-spark" in message, message


def test_a_follower_of_a_checkpoint_format_v2_query_follows_the_ids_in_its_commit_log(spark, tmp_path):
    checkpoint = tmp_path / "leader_v2"
    query = start_counting_stream(spark, checkpoint, "leader_v2",
                                  extra_conf={"spark.sql.streaming.stateStore.checkpointFormatVersion": "2"})
    try:
        wait_until(lambda: newest_batch(checkpoint) >= 2, TIMEOUT_S, "three batches", query)
        assert any("_" in p.name for p in (checkpoint / "state" / "0" / "0").glob("*.txlog")), "v2 file names"
        with txstate_spark.follow(spark, checkpoint) as follower:
            first = min(check_whole_state(spark, follower, "format v2, running").values())
            wait_until(lambda: (follower.lag.applied_batch or -1) >= first + 3, TIMEOUT_S, "three more batches", query)
            query.stop()
            last = newest_batch(checkpoint)
            wait_until(lambda: follower.lag.applied_batch == last, 40, "the follower at the leader's last batch")
            assert set(check_whole_state(spark, follower, "format v2, stopped").values()) == {last}
            assert follower.status.failures == 0
    finally:
        query.stop()
