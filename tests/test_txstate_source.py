"""The ``txstate`` data source (``spark.read.format("txstate")``) on real streaming queries.

* A two-column-key aggregation that stays active and idle after two batches: reads through the
  source equal the py4j query API's answers at the same positions (full scan, key equality, IN,
  range, prefix), and equal the state computed here.
* Pushdown is visible in the plan and cuts the work: a key lookup plans one input partition, the
  one the query API routes the key to.
* A running aggregation read again and again while it commits: every partition's rows are one
  committed batch (the interactive-query invariant), and batches never go back.
* SQL through a temporary view; the query-name target; option errors.
* Before the first commit: the query API answers NOT_UP_TO_BOUND, the source fails or waits.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from harness import streaming_harness
from harness.streaming_harness import HAS_OPERATOR_NAMES
from harness.counting_stream import KEYS, check_counter, start_counting_stream, wait_until
from jobs import interactive_query_job as job
from txstate_spark.query import (
    FailureReason,
    KeyQuery,
    MultiKeyQuery,
    PositionBound,
    PrefixQuery,
    RangeQuery,
    ScanQuery,
    StateQueryRequest,
)

A_VALUES, B_VALUES = 12, 40  # 480 keys
# The aggregation's operator, by name where Spark records one (4.x), else by id.
OPERATOR = "stateStoreSave" if HAS_OPERATOR_NAMES else "0"


@pytest.fixture(scope="module")
def idle_store(spark, tmp_path_factory):
    """groupBy(a, b) over two input files; active and idle once both are committed."""
    work_dir = tmp_path_factory.mktemp("source-idle")
    batches = job.input_batches(A_VALUES, B_VALUES)
    query = job.start_query(spark, work_dir, batches, "source_idle")
    job.wait_for_commit(query, work_dir / "checkpoint", job.BATCHES - 1, 240)
    yield query, work_dir / "checkpoint", job.expected_state(batches)
    query.stop()


def source(spark, checkpoint: Path, **options):
    reader = spark.read.format("txstate")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(checkpoint))


def pairs(rows) -> dict[tuple, tuple]:
    found: dict[tuple, tuple] = {}
    for row in rows:
        key = (row.key.a, row.key.b)
        assert key not in found, f"key {key} read twice"
        found[key] = (row.value[0], row.value[1])
    return found


def api_pairs(request, spark) -> tuple[dict[tuple, tuple], dict[int, int]]:
    """Every page of a paged query through the py4j API: rows and each partition's batch."""
    found: dict[tuple, tuple] = {}
    batches: dict[int, int] = {}
    for result in request.pages(spark):
        assert result.is_success, result.failures()
        for p, r in result.partition_results.items():
            batches[p] = r.position.batch_id
            for row in r.result.rows:
                found[(row.key.a, row.key.b)] = (row.value[0], row.value[1])
    return found, batches


def plan_of(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


class TestAgreesWithTheQueryApi:
    def test_a_full_scan_is_the_whole_state_at_the_api_positions(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        rows = source(spark, checkpoint).collect()
        assert pairs(rows) == expected
        api, api_batches = api_pairs(StateQueryRequest.in_store(query).with_query(ScanQuery.all()), spark)
        assert api == expected
        source_batches = {row.partition_id: row.batch_id for row in rows}
        assert source_batches == api_batches == {p: job.BATCHES - 1 for p in api_batches}
        assert source(spark, checkpoint).schema.names == ["key", "value", "partition_id", "batch_id", "commit_time"]

    def test_key_equality_reads_one_key_in_its_owning_partition_only(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        key = (7, job.key_b(11))
        df = source(spark, checkpoint).where(f"key.a = {key[0]} AND key.b = '{key[1]}'")
        plan = plan_of(df)
        # Without the operator's name (Spark 3.5) the owning partition is unknown: every one is asked.
        owners = 1 if HAS_OPERATOR_NAMES else 2
        assert f"1 key lookup in {owners} of 2 partitions" in plan, plan
        assert df.rdd.getNumPartitions() == owners
        rows = df.collect()
        api = StateQueryRequest.in_store(query).with_query(KeyQuery.with_key(key)).execute(spark).only_partition_result()
        assert pairs(rows) == {key: expected[key]} == {key: tuple(api.result)[:2]}
        assert rows[0].partition_id == api.partition and rows[0].batch_id == api.position.batch_id
        assert source(spark, checkpoint).where(f"key.a = {A_VALUES + 3} AND key.b = 'b000'").collect() == []

    def test_in_lists_become_lookups_of_every_combination(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        df = source(spark, checkpoint).where("key.a IN (1, 4, 99) AND key.b IN ('b002', 'b003')")
        assert "6 key lookups" in plan_of(df), plan_of(df)
        wanted = [(a, b) for a in (1, 4, 99) for b in ("b002", "b003")]
        rows = df.collect()
        assert pairs(rows) == {k: expected[k] for k in wanted if k in expected}
        multi = StateQueryRequest.in_store(query).with_query(MultiKeyQuery.with_keys(wanted)).execute(spark)
        api = {}
        for r in multi.partition_results.values():
            api.update({wanted[i]: tuple(v)[:2] for i, v in enumerate(r.result) if v is not None})
        assert pairs(rows) == api

    def test_a_range_on_the_first_key_column_is_a_range_read(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        df = source(spark, checkpoint).where("key.a >= 3 AND key.a < 6")
        assert "range on the first key column" in plan_of(df), plan_of(df)
        want = {k: v for k, v in expected.items() if 3 <= k[0] < 6}
        assert pairs(df.collect()) == want
        api, _ = api_pairs(StateQueryRequest.in_store(query).with_query(
            RangeQuery.with_range((3, ""), (5, "~"))), spark)
        assert api == want

    def test_equality_on_the_leading_column_is_a_prefix_read(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        df = source(spark, checkpoint).where("key.a = 9")
        assert "prefix on 1 leading key column" in plan_of(df), plan_of(df)
        want = {k: v for k, v in expected.items() if k[0] == 9}
        assert pairs(df.collect()) == want
        api, _ = api_pairs(StateQueryRequest.in_store(query).with_query(PrefixQuery.with_prefix(9)), spark)
        assert api == want

    def test_filters_the_source_cannot_use_are_still_applied(self, spark, idle_store):
        _, checkpoint, expected = idle_store
        df = source(spark, checkpoint).where("key.b = 'b005' AND value.count > 1")
        assert ": scan in 2 of 2 partitions" in plan_of(df), plan_of(df)
        assert pairs(df.collect()) == {k: v for k, v in expected.items() if k[1] == "b005" and v[0] > 1}

    def test_limit_and_partition_filters_are_pushed(self, spark, idle_store):
        _, checkpoint, _ = idle_store
        limited = source(spark, checkpoint).limit(7)
        assert "limit 7 per partition" in plan_of(limited), plan_of(limited)
        assert len(limited.collect()) == 7
        one = source(spark, checkpoint).where("partition_id = 1")
        assert one.rdd.getNumPartitions() == 1
        assert {row.partition_id for row in one.collect()} == {1}

    def test_sql_through_a_temporary_view(self, spark, idle_store):
        _, checkpoint, expected = idle_store
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW idle_counts USING txstate "
                  f"OPTIONS (path '{checkpoint}', operator '{OPERATOR}')")
        try:
            rows = spark.sql("SELECT key.a, key.b, value.count, batch_id FROM idle_counts "
                             "WHERE key.a = 2 AND key.b = 'b004'").collect()
            assert [tuple(r) for r in rows] == [(2, "b004", expected[(2, "b004")][0], job.BATCHES - 1)]
            total = spark.sql("SELECT count(*) FROM idle_counts").collect()[0][0]
            assert total == len(expected)
        finally:
            spark.sql("DROP VIEW IF EXISTS idle_counts")

    def test_a_running_query_is_found_by_name_or_id(self, spark, idle_store):
        query, checkpoint, expected = idle_store
        by_name = spark.read.format("txstate").option("queryName", "source_idle").load()
        by_id = spark.read.format("txstate").option("queryId", str(query.id)).load()
        assert pairs(by_name.collect()) == pairs(by_id.collect()) == expected

    @pytest.mark.parametrize("options, words", [
        ({"bogus": "1"}, r"TXSTATE_SOURCE_UNKNOWN_OPTION.*'bogus'"),
        ({"minBatchId": "soon"}, r"TXSTATE_SOURCE_BAD_OPTION.*minBatchId"),
        ({"operator": "nosuch"}, r"TXSTATE_QUERY_UNKNOWN_OPERATOR.*'nosuch'.*" +
         ("stateStoreSave" if HAS_OPERATOR_NAMES else "records no operator names.*by its id")),
        ({"queryName": "absent"}, r"TXSTATE_SOURCE_(NO_TARGET|UNKNOWN_QUERY)"),
    ])
    def test_bad_options_name_what_is_wrong(self, spark, idle_store, options, words):
        _, checkpoint, _ = idle_store
        with pytest.raises(Exception, match=words):
            source(spark, checkpoint, **options).collect()
        with pytest.raises(Exception, match=r"TXSTATE_SOURCE_UNKNOWN_QUERY.*'absent'.*source_idle"):
            spark.read.format("txstate").option("queryName", "absent").load()

    def test_a_bound_no_partition_reached_fails_with_not_up_to_bound(self, spark, idle_store):
        _, checkpoint, _ = idle_store
        with pytest.raises(Exception, match=r"TXSTATE_SOURCE_NOT_UP_TO_BOUND.*batch"):
            source(spark, checkpoint, minBatchId=str(job.BATCHES + 5)).collect()


def test_reads_while_batches_commit_never_show_a_torn_batch(spark, tmp_path):
    checkpoint = tmp_path / "checkpoint"
    query = start_counting_stream(spark, checkpoint, "source_counting", trigger_ms=200)
    try:
        wait_until(lambda: (checkpoint / "commits" / "1").exists(), 120, "two batches", query)
        seen: dict[int, int] = {}
        batches_read: set[int] = set()
        reads = 0
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline or reads < 5:
            reads += 1
            rows = spark.read.format("txstate").option("queryName", "source_counting").load().collect()
            by_partition: dict[int, set[int]] = {}
            for row in rows:
                by_partition.setdefault(row.partition_id, set()).add(row.batch_id)
                check_counter(tuple(row.value), row.key.k, row.batch_id, f"source read {reads}")
            assert sorted(row.key.k for row in rows) == list(range(KEYS))
            for p, batches in by_partition.items():
                assert len(batches) == 1, f"partition {p} mixed batches {sorted(batches)} in one read"
                (batch,) = batches
                assert batch >= seen.get(p, -1), f"partition {p} went back from batch {seen[p]} to {batch}"
                seen[p] = batch
                batches_read.add(batch)
        assert query.isActive
        assert len(batches_read) >= 3, f"the stream hardly moved while we read: {sorted(batches_read)}"
    finally:
        query.stop()


def test_before_the_first_commit_reads_say_no_batch_committed_yet(spark, tmp_path):
    inputs = streaming_harness.InputFiles(tmp_path / "input", ["events"])
    checkpoint = tmp_path / "checkpoint"
    from pyspark.sql import functions as F

    events = spark.readStream.schema("a INT, b STRING, v LONG").json(str(inputs.dirs["events"]))
    with streaming_harness.session_conf(
        spark, {streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER}
    ):
        query = (events.groupBy("a").agg(F.count(F.lit(1)).alias("n")).writeStream.queryName("source_waiting")
                 .format("noop").outputMode("update").option("checkpointLocation", str(checkpoint)).start())
    try:
        # The query runs, found no input and so planned no batch.
        wait_until(lambda: query.status["message"] == "Waiting for data to arrive", 60,
                   "the query waiting for its first input", query)
        assert not (checkpoint / "commits").exists() or not any((checkpoint / "commits").iterdir())
        result = StateQueryRequest.in_store(query).with_query(KeyQuery.with_key(1)).execute(spark)
        assert result.partition_results, result
        for r in result.partition_results.values():
            assert r.failure_reason == FailureReason.NOT_UP_TO_BOUND, r
            assert "no batch committed yet" in r.failure_message
        with pytest.raises(Exception, match=r"TXSTATE_SOURCE_NOT_UP_TO_BOUND.*no batch committed yet"):
            spark.read.format("txstate").option("queryName", "source_waiting").load()
        # With waitMs, a read started before the first commit waits for it.
        threading.Timer(1.5, lambda: inputs.write_batch(0, {"events": [{"a": 1, "b": "x", "v": 1}]})).start()
        rows = (spark.read.format("txstate").option("queryName", "source_waiting").option("waitMs", "60000")
                .load().where("key.a = 1").collect())
        assert [(r.key.a, r.value[0], r.batch_id) for r in rows] == [(1, 1, 0)]
        answered = StateQueryRequest.in_store(query).with_query(KeyQuery.with_key(1)).with_position_bound(
            PositionBound.at_least_batch(0)).execute(spark).only_partition_result()
        assert tuple(answered.result) == (1,)
    finally:
        query.stop()


def test_a_read_inside_the_first_batch_waits_for_its_commit_without_a_job(spark, tmp_path):
    """Batch 0 has written its store's metadata and its stores have committed, but its sink has not
    returned, so the query has not committed. A read with waitMs waits for the query's commit, on
    the driver: it starts no job meanwhile (a task that waited would hold an executor slot the query
    may need), and answers the committed batch once there is one."""
    inputs = streaming_harness.InputFiles(tmp_path / "input", ["events"])
    inputs.write_batch(0, {"events": [{"a": 1, "b": "x", "v": 1}, {"a": 2, "b": "y", "v": 1}]})
    checkpoint = tmp_path / "checkpoint"
    in_sink, release = threading.Event(), threading.Event()

    def hold_first_batch(batch, batch_id: int) -> None:
        batch.collect()  # the stateful stage runs, and its stores commit
        in_sink.set()
        release.wait(120)

    from pyspark.sql import functions as F

    events = spark.readStream.schema("a INT, b STRING, v LONG").json(str(inputs.dirs["events"]))
    with streaming_harness.session_conf(
        spark, {streaming_harness.PROVIDER_CLASS_CONF: streaming_harness.TXSTATE_PROVIDER}
    ):
        query = (events.groupBy("a").agg(F.count(F.lit(1)).alias("n")).writeStream.outputMode("update")
                 .foreachBatch(hold_first_batch).option("checkpointLocation", str(checkpoint)).start())
    group = f"txstate-read-before-commit-{tmp_path.name}"
    answer: dict[str, object] = {}
    answered = threading.Event()

    def read() -> None:
        spark.sparkContext.setJobGroup(group, "a txstate read planned inside batch 0")
        try:
            answer["rows"] = source(spark, checkpoint, waitMs="60000").collect()
            answer["commit_existed"] = (checkpoint / "commits" / "0").exists()
        except Exception as error:
            answer["error"] = error
        finally:
            answered.set()

    try:
        assert in_sink.wait(120), "batch 0 never reached its sink"
        reader = threading.Thread(target=read)
        reader.start()
        # The read must not answer while the sink holds the commit back; it is given a few seconds to
        # (wrongly) answer a batch its query has not committed, or to start its tasks.
        assert not answered.wait(3), f"the read answered before the query's first commit: {answer}"
        tracker = spark.sparkContext.statusTracker()
        assert tracker.getJobIdsForGroup(group) == [], "the read started tasks before the query's first commit"
        release.set()
        assert answered.wait(120) and "error" not in answer, answer
        assert answer["commit_existed"]
        assert sorted((r.key.a, r.value[0], r.batch_id) for r in answer["rows"]) == [(1, 1, 0), (2, 1, 0)]
        reader.join(10)
    finally:
        release.set()
        query.stop()


def test_the_source_is_registered_under_its_short_name(spark):
    services = Path(__file__).resolve().parents[1] / "jvm/src/main/resources/META-INF/services"
    registered = (services / "org.apache.spark.sql.sources.DataSourceRegister").read_text().split()
    assert registered == ["txstate.query.source.TxStateSource"]
    with pytest.raises(Exception, match=re.escape("TXSTATE_SOURCE_NO_TARGET")):
        spark.read.format("txstate").load()
