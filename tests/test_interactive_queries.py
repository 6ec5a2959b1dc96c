"""Interactive queries (txstate_spark.query) against real streaming queries on real Spark.

* Decoded rows equal what `DataFrame.collect()` returns (the conversion itself, keys, bounds and
  results without Spark are in unit/query/).
* A running aggregation over a deterministic source (`rate-micro-batch`, N rows per batch, keys
  value % K), queried in a loop while it runs: at every batch boundary every key's count is
  (batch + 1) * N / K, and its sum and max follow from the batch too. An answer is right only if it
  is exactly the state at the batch the partition says it answered from.
* Every failure reason, on stopped and running queries and on damaged checkpoint files.
* A 100,000-key store with a two-column key: a scan paged through completely, ranges in both
  orders, prefixes, compared with the state computed here.
* The same queries on `local-cluster[2,1,1024]` (stores on executor JVMs, a subprocess running
  jobs/interactive_query_job.py) answer exactly what they answer in local mode.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyspark.sql import Row
from pyspark.sql import types as T

from harness.counting_stream import KEYS, check_counter, start_counting_stream, wait_until
from harness.schemas import EVERY_TYPE, EVERY_VALUE, EVERY_VALUE_WITH_NULLS, through_json
from jobs import interactive_query_job as job
from txstate_spark.query import (
    FailureReason,
    KeyQuery,
    MultiKeyQuery,
    PositionBound,
    PrefixQuery,
    Query,
    RangeQuery,
    ScanQuery,
    StateQueryError,
    StateQueryRequest,
)
from txstate_spark.query.conversion import decode_row

TESTS_DIR = Path(__file__).resolve().parent
TIMEOUT_S = 120.0

# ------------------------------------------------------------------------------------------------
# A local-cluster run, started first so it runs while the local tests do


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, plugin_jar):
    """interactive_query_job.py on local-cluster[2,1,1024], in its own process group."""
    work_dir = tmp_path_factory.mktemp("iq-cluster")
    result, log_path = work_dir / "result.json", work_dir / "job.log"
    env = {**os.environ, "TXSTATE_SPARK_JAR": str(plugin_jar), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR.parent / "python"), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, str(TESTS_DIR / "jobs" / "interactive_query_job.py"), "--work-dir", str(work_dir),
               "--result", str(result), "--timeout", "240"]
    log = log_path.open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                               start_new_session=True, cwd=str(TESTS_DIR.parent))
    yield {"process": process, "result": result, "log": log_path}
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    log.close()


@pytest.fixture(scope="module", autouse=True)
def _start_cluster_early(request):
    if any(item.name.startswith("test_local_cluster") for item in request.session.items):
        request.getfixturevalue("cluster_run")


# ------------------------------------------------------------------------------------------------
# Helpers for the Spark tests

def committed_batches(checkpoint: Path) -> list[int]:
    return sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())


def reasons(result) -> dict[int, FailureReason | None]:
    return {p: r.failure_reason for p, r in result.partition_results.items()}


# ------------------------------------------------------------------------------------------------
# Decoded values against DataFrame.collect() (real Spark)


def test_decoded_rows_are_what_dataframe_collect_returns(spark):
    collected = spark.createDataFrame([EVERY_VALUE, EVERY_VALUE_WITH_NULLS], EVERY_TYPE).collect()
    decoded = [through_json(EVERY_TYPE, value) for value in (EVERY_VALUE, EVERY_VALUE_WITH_NULLS)]
    assert decoded == collected
    for ours, theirs in zip(decoded, collected):
        assert ours.__fields__ == theirs.__fields__ == EVERY_TYPE.names
        assert ours.asDict(recursive=True) == theirs.asDict(recursive=True)
        # Binary is the one exception: bytearray here, bytes from pyspark 4's collect() (equal values).
        assert [type(v) for n, v in zip(ours.__fields__, ours) if n != "bytes"] == [
            type(v) for n, v in zip(theirs.__fields__, theirs) if n != "bytes"]
    assert decoded[0].inner.__fields__ == collected[0].inner.__fields__ == ["x", "y"]
    assert decoded[0].structs[1].__fields__ == collected[0].structs[1].__fields__ == ["z"]
    assert decoded[1].inner is None and decoded[1].list is None and decoded[1].map is None
    assert decode_row(EVERY_TYPE, None) is None


# ------------------------------------------------------------------------------------------------
# Queries while a streaming query runs


@pytest.fixture(scope="class")
def counting_stream(spark, tmp_path_factory):
    checkpoint = tmp_path_factory.mktemp("iq-counting") / "checkpoint"
    query = start_counting_stream(spark, checkpoint, "iq_counting")
    wait_until(lambda: (checkpoint / "commits" / "1").exists(), TIMEOUT_S, "two batches", query)
    yield query, checkpoint
    query.stop()


class WindowQuery(Query):
    """A query type the JVM does not know."""

    type = "window"


class TestWhileTheQueryRuns:
    """Queries on a running aggregation (the stream is stopped after the class)."""

    def test_the_store_description_names_its_schemas_and_partitions(self, spark, counting_stream):
        query, checkpoint = counting_stream
        by_id = StateQueryRequest.in_store(query, operator=0).describe(spark)
        by_name = StateQueryRequest.in_store(query, operator="stateStoreSave").describe(spark)
        assert by_id == by_name
        assert by_id.num_partitions == 2 and by_id.operator_id == 0 and by_id.store_name == "default"
        assert by_id.key_schema.names == ["k"] and isinstance(by_id.key_schema["k"].dataType, T.LongType)
        assert [type(f.dataType) for f in by_id.value_schema.fields] == [T.LongType] * 3, by_id.value_schema

    def test_answers_while_the_query_runs_are_exactly_one_committed_batch_per_partition(self, spark, counting_stream):
        query, _ = counting_stream
        store = StateQueryRequest.in_store(query)
        seen: dict[int, int] = {}  # partition -> newest batch it answered from
        rng = random.Random(796)
        kinds: dict[str, int] = {}
        deadline = time.monotonic() + 15
        checked_batches: set[int] = set()
        while time.monotonic() < deadline or len(kinds) < 4:
            kind = ["key", "multi", "range", "scan"][len(kinds) if len(kinds) < 4 else rng.randrange(4)]
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind == "key":
                key = rng.randrange(KEYS)
                result = store.with_query(KeyQuery.with_key(key)).execute(spark)
                only = result.only_partition_result()
                check_counter(only.result, key, only.position.batch_id, "key query")
                answered = {key: only.partition}
            elif kind == "multi":
                keys = rng.sample(range(KEYS), 5) + [KEYS + 3]  # the last one never exists
                result = store.with_query(MultiKeyQuery.with_keys([{"k": k} for k in keys])).execute(spark)
                answered = {}
                for p, r in result.partition_results.items():
                    assert len(r.result) == len(keys), r
                    for key, value in zip(keys, r.result):
                        if value is not None:
                            assert key not in answered, f"key {key} answered by partitions {answered[key]} and {p}"
                            check_counter(value, key, r.position.batch_id, f"multi-key query, partition {p}")
                            answered[key] = p
                assert sorted(answered) == sorted(keys[:-1]), result
            else:
                if kind == "range":
                    lower, upper = sorted(rng.sample(range(KEYS), 2))
                    paged = RangeQuery.with_range(lower, upper)
                    paged = paged.descending() if rng.random() < 0.5 else paged
                    want = set(range(lower, upper + 1))
                else:
                    paged = ScanQuery.all()
                    want = set(range(KEYS))
                result = store.with_query(paged).execute(spark)
                answered = {}
                for p, r in result.partition_results.items():
                    keys = [row.key.k for row in r.result.rows]
                    if kind == "range":
                        order = sorted(keys, reverse=paged.is_descending)
                        assert keys == order, f"partition {p} returned {keys}, not in {'de' if paged.is_descending else 'a'}scending key order"
                    for row in r.result.rows:
                        check_counter(row.value, row.key.k, r.position.batch_id, f"{kind} query, partition {p}")
                        assert row.key.k not in answered
                        answered[row.key.k] = p
                    assert r.result.continuation is None
                assert set(answered) == want, result
                assert result.continuation is None
            assert result.is_success, result
            for p, r in result.partition_results.items():
                batch = r.position.batch_id
                assert batch == r.position.version - 1 and batch >= 1
                assert batch >= seen.get(p, -1), f"partition {p} went back from batch {seen[p]} to {batch}"
                seen[p] = batch
                checked_batches.add(batch)
                assert result.position.batch_of(p) == batch
                assert len(r.position.source_offsets) == 1, r.position
            assert result.position.batch_id == min(r.position.batch_id for r in result.partition_results.values())
        assert query.isActive
        assert len(checked_batches) >= 3, f"the stream hardly moved while we queried: batches {sorted(checked_batches)}"

    def test_a_key_lookup_asks_only_the_partition_that_owns_the_key(self, spark, counting_stream):
        query, _ = counting_stream
        store = StateQueryRequest.in_store(query)
        owners = set()
        for key in range(KEYS):
            routed = store.with_query(KeyQuery.with_key(key)).execute(spark)
            assert len(routed.partition_results) == 1, routed
            (owner, answer), = routed.partition_results.items()
            assert answer.result is not None and answer.result[0] >= 1  # the count
            everywhere = store.with_query(KeyQuery.with_key(key)).with_partitions([0, 1]).execute(spark)
            holders = [p for p, r in everywhere.partition_results.items() if r.result is not None]
            assert holders == [owner], f"key {key}: routed to {owner}, held by {holders}"
            owners.add(owner)
        assert owners == {0, 1}, f"all {KEYS} keys hashed to one partition: is the routing hashing at all?"
        # A key no partition holds: every partition is asked, and each says so.
        absent = store.with_query(KeyQuery.with_key(KEYS + 7)).execute(spark)
        assert sorted(absent.partition_results) == [0, 1]
        assert all(r.is_success and r.result is None for r in absent.partition_results.values())

    def test_a_bound_above_the_committed_batch_answers_not_up_to_bound_then_succeeds(self, spark, counting_stream):
        query, _ = counting_stream
        store = StateQueryRequest.in_store(query).with_query(KeyQuery.with_key(5))
        now = store.execute(spark)
        ahead = max(r.position.batch_id for r in now.partition_results.values()) + 4
        early = store.with_position_bound(PositionBound.at_least_batch(ahead)).execute(spark)
        assert reasons(early) == {0: FailureReason.NOT_UP_TO_BOUND, 1: FailureReason.NOT_UP_TO_BOUND}, early
        for r in early.partition_results.values():
            assert r.position is None or r.position.batch_id < ahead
            with pytest.raises(StateQueryError, match="NOT_UP_TO_BOUND"):
                r.result
        with pytest.raises(StateQueryError, match="NOT_UP_TO_BOUND"):
            early.only_partition_result()
        later = wait_until(
            lambda: (lambda r: r if r.is_success else None)(
                store.with_position_bound(PositionBound.at_least_batch(ahead)).execute(spark)),
            TIMEOUT_S, f"an answer at batch {ahead}", query)
        answer = later.only_partition_result()
        assert answer.position.batch_id >= ahead
        check_counter(answer.result, 5, answer.position.batch_id, "bounded key query")
        # at_least(an earlier position): never older than what was seen before
        again = store.with_position_bound(PositionBound.at_least(later.position)).execute(spark)
        assert again.is_success and again.position.batch_id >= answer.position.batch_id

    def test_execution_info_says_where_a_partition_was_served(self, spark, counting_stream):
        query, _ = counting_stream
        result = StateQueryRequest.in_store(query).with_query(ScanQuery.all()).enable_execution_info().execute(spark)
        assert all(r.execution_info for r in result.partition_results.values()), result
        plain = StateQueryRequest.in_store(query).with_query(ScanQuery.all()).execute(spark)
        assert all(r.execution_info == [] for r in plain.partition_results.values())

    def test_an_unknown_query_type_answers_unknown_query_type_in_every_partition(self, spark, counting_stream):
        query, _ = counting_stream
        result = StateQueryRequest.in_store(query).with_query(WindowQuery()).execute(spark)
        assert reasons(result) == {0: FailureReason.UNKNOWN_QUERY_TYPE, 1: FailureReason.UNKNOWN_QUERY_TYPE}

    def test_a_partition_outside_the_store_does_not_exist(self, spark, counting_stream):
        query, _ = counting_stream
        result = StateQueryRequest.in_store(query).with_query(ScanQuery.all()).with_partitions([1, 2, -1]).execute(spark)
        assert reasons(result) == {-1: FailureReason.DOES_NOT_EXIST, 1: None, 2: FailureReason.DOES_NOT_EXIST}
        assert result.partition_results[2].failure_message

    def test_a_wrong_key_or_an_unknown_store_is_a_state_query_error(self, spark, counting_stream):
        query, checkpoint = counting_stream
        store = StateQueryRequest.in_store(query)
        with pytest.raises(StateQueryError, match="column 'k' expects bigint, got str"):
            store.with_query(KeyQuery.with_key({"k": "5"})).execute(spark)
        with pytest.raises(StateQueryError, match="extra column 'word'"):
            store.with_query(KeyQuery.with_key({"word": "spark"})).execute(spark)
        for request in (StateQueryRequest.in_store(query, operator=3), StateQueryRequest.in_store(query, operator="dedupe"),
                        StateQueryRequest.in_store(query, store="left-keyToNumValues"),
                        StateQueryRequest.in_store(checkpoint.parent / "no-such-checkpoint")):
            with pytest.raises(StateQueryError, match=r"\[TXSTATE_") as error:
                request.with_query(ScanQuery.all()).execute(spark)
            assert "\tat " not in str(error.value), "the Java stack trace should be trimmed"
        with pytest.raises(StateQueryError, match="no query"):
            store.execute(spark)


# ------------------------------------------------------------------------------------------------
# A stopped query: NOT_PRESENT, checkpoint reads, NOT_ACTIVE, STORE_EXCEPTION


@pytest.fixture(scope="class")
def stopped_stream(spark, tmp_path_factory):
    """A counting stream without snapshots (so reads replay changelogs), stopped after batch 3."""
    checkpoint = tmp_path_factory.mktemp("iq-stopped") / "checkpoint"
    query = start_counting_stream(spark, checkpoint, "iq_stopped", trigger_ms=100,
                                  extra_conf={"spark.sql.streaming.stateStore.txstate.snapshotInterval": "1000"})
    wait_until(lambda: (checkpoint / "commits" / "3").exists(), TIMEOUT_S, "four batches", query)
    query.stop()
    return query, checkpoint, committed_batches(checkpoint)[-1]


class TestStoppedQuery:
    """A counting stream without snapshots, stopped after batch 3."""

    def test_a_stopped_query_answers_not_present_unless_checkpoint_reads_are_allowed(self, spark, stopped_stream):
        query, checkpoint, last = stopped_stream
        for target in (query, checkpoint, str(checkpoint)):
            result = StateQueryRequest.in_store(target).with_query(ScanQuery.all()).execute(spark)
            assert reasons(result) == {0: FailureReason.NOT_PRESENT, 1: FailureReason.NOT_PRESENT}, target
        from_files = StateQueryRequest.in_store(checkpoint).with_query(ScanQuery.all()).allow_checkpoint_reads()
        result = from_files.enable_execution_info().execute(spark)
        assert result.is_success, result
        assert {r.position.batch_id for r in result.partition_results.values()} == {last}
        rows = result.rows
        assert sorted(row.key.k for row in rows) == list(range(KEYS))
        for row in rows:
            check_counter(row.value, row.key.k, last, "checkpoint read")
        key = from_files.with_query(KeyQuery.with_key(3)).execute(spark).only_partition_result()
        check_counter(key.result, 3, last, "checkpoint key read")

    def test_require_active_answers_not_active_for_a_store_no_query_holds(self, spark, stopped_stream):
        query, checkpoint, _ = stopped_stream
        request = StateQueryRequest.in_store(query).with_query(ScanQuery.all()).allow_checkpoint_reads().require_active()
        assert reasons(request.execute(spark)) == {0: FailureReason.NOT_ACTIVE, 1: FailureReason.NOT_ACTIVE}

    def test_a_bound_past_the_last_commit_of_a_stopped_query_is_never_reached(self, spark, stopped_stream):
        _, checkpoint, last = stopped_stream
        request = (StateQueryRequest.in_store(checkpoint).with_query(KeyQuery.with_key(1)).allow_checkpoint_reads()
                   .with_position_bound(PositionBound.at_least_batch(last + 1)))
        assert reasons(request.execute(spark)) == {0: FailureReason.NOT_UP_TO_BOUND, 1: FailureReason.NOT_UP_TO_BOUND}
        fresh_enough = request.with_position_bound(PositionBound.at_least_batch(last)).execute(spark)
        check_counter(fresh_enough.only_partition_result().result, 1, last, "bounded checkpoint read")

    def test_a_damaged_changelog_answers_store_exception_naming_the_file(self, spark, stopped_stream, tmp_path):
        _, checkpoint, last = stopped_stream
        copy = tmp_path / "damaged-checkpoint"
        shutil.copytree(checkpoint, copy)
        partition_dir = copy / "state" / "0" / "1"
        assert not list(partition_dir.glob("*.snapshot")), "this store should have no snapshot"
        damaged = [p for p in partition_dir.glob("*.txlog") if p.name.split(".")[0].split("_")[0] == str(last + 1)]
        assert damaged, sorted(p.name for p in partition_dir.iterdir())
        for path in damaged:
            data = path.read_bytes()
            path.write_bytes(data[: len(data) // 2])
        result = StateQueryRequest.in_store(copy).with_query(ScanQuery.all()).allow_checkpoint_reads().execute(spark)
        assert reasons(result) == {0: None, 1: FailureReason.STORE_EXCEPTION}, result
        message = result.partition_results[1].failure_message
        assert any(path.name in message for path in damaged), message
        with pytest.raises(StateQueryError, match="STORE_EXCEPTION"):
            result.partition_results[1].result


# ------------------------------------------------------------------------------------------------
# 100,000 keys with a two-column key: scans, ranges and prefixes against the state computed here

BIG_A, BIG_B = 100, 1000


@pytest.fixture(scope="class")
def big_store(spark, tmp_path_factory):
    work_dir = tmp_path_factory.mktemp("iq-big")
    batches = job.input_batches(BIG_A, BIG_B)
    query = job.start_query(spark, work_dir, batches, "iq_big")
    job.wait_for_commit(query, work_dir / "checkpoint", job.BATCHES - 1, 240)
    expected = job.expected_state(batches)
    assert len(expected) == BIG_A * BIG_B
    yield query, expected
    query.stop()


def big_request(query):
    return StateQueryRequest.in_store(query).with_position_bound(PositionBound.at_least_batch(job.BATCHES - 1))


def row_pair(row: Row) -> tuple[tuple, tuple]:
    return (row.key.a, row.key.b), (row.value[0], row.value[1])


def keys_between(expected: dict, lower: tuple | None, upper: tuple | None) -> set[tuple]:
    return {k for k in expected if (lower is None or k >= lower) and (upper is None or k <= upper)}


def ordered_rows(request, spark) -> tuple[dict[int, list[tuple]], dict[tuple, tuple]]:
    """Every page of a paged query: keys per partition in the order returned, and all values."""
    per_partition: dict[int, list[tuple]] = {}
    values: dict[tuple, tuple] = {}
    for result in request.pages(spark):
        assert result.is_success, result.failures()
        for p, r in result.partition_results.items():
            for row in r.result.rows:
                key, value = row_pair(row)
                per_partition.setdefault(p, []).append(key)
                assert key not in values, f"key {key} returned twice"
                values[key] = value
    return per_partition, values


class TestHundredThousandKeys:
    """A 100,000-key store with a two-column key (the query stays active, idle, for the class)."""

    def test_a_scan_pages_through_100k_keys_without_duplicates_or_gaps(self, spark, big_store):
        query, expected = big_store
        seen: dict[tuple, tuple] = {}
        pages = 0
        for result in big_request(query).with_query(ScanQuery.all().with_limit(7000)).pages(spark):
            pages += 1
            assert result.is_success, result.failures()
            for row in result.rows:
                key, value = row_pair(row)
                assert key not in seen, f"key {key} returned twice (page {pages})"
                seen[key] = value
            for r in result.partition_results.values():
                assert len(r.result.rows) <= 7000
            assert pages < 100, "the continuation does not end"
        assert pages >= 8
        missing = set(expected) - set(seen)
        assert not missing, f"{len(missing)} keys never returned, e.g. {sorted(missing)[:5]}"
        assert seen == expected

    @pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
    @pytest.mark.parametrize(
        "lower, upper",
        [((3, job.key_b(100)), (5, job.key_b(200))), ((42, job.key_b(7)), (42, job.key_b(7))),
         ((98, job.key_b(990)), None), (None, (0, job.key_b(12))), ((7, "b5"), (7, "b6"))],
        ids=["across-a", "one-key", "lower-only", "upper-only", "between-keys"],
    )
    def test_range_queries_return_exactly_the_keys_within_inclusive_bounds_in_key_order(
            self, spark, big_store, lower, upper, descending):
        query, expected = big_store
        if lower is not None and upper is not None:
            ranged = RangeQuery.with_range(lower, upper)
        elif lower is not None:
            ranged = RangeQuery.with_lower_bound(lower)
        else:
            ranged = RangeQuery.with_upper_bound(upper)
        ranged = (ranged.descending() if descending else ranged).with_limit(333)
        per_partition, values = ordered_rows(big_request(query).with_query(ranged), spark)
        want = keys_between(expected, lower, upper)
        assert set(values) == want, f"missing {sorted(want - set(values))[:5]}, unexpected {sorted(set(values) - want)[:5]}"
        assert values == {k: expected[k] for k in want}
        for p, keys in per_partition.items():
            assert keys == sorted(keys, reverse=descending), f"partition {p} is not in key order"

    def test_a_prefix_query_returns_the_keys_sharing_the_leading_columns(self, spark, big_store):
        query, expected = big_store
        for prefix, a in (({"a": 7}, 7), (99, 99), ((0,), 0)):
            per_partition, values = ordered_rows(big_request(query).with_query(PrefixQuery.with_prefix(prefix).with_limit(400)), spark)
            assert values == {k: v for k, v in expected.items() if k[0] == a}, prefix
        _, values = ordered_rows(big_request(query).with_query(PrefixQuery.with_prefix((12, job.key_b(34)))), spark)
        assert values == {(12, job.key_b(34)): expected[(12, job.key_b(34))]}
        _, values = ordered_rows(big_request(query).with_query(PrefixQuery.with_prefix(BIG_A + 1)), spark)
        assert values == {}

    def test_key_and_multi_key_queries_on_a_two_column_key(self, spark, big_store):
        query, expected = big_store
        keys = [(5, job.key_b(5)), {"b": job.key_b(998), "a": 0}, Row(a=BIG_A + 1, b="nope"), (99, job.key_b(999))]
        plain_keys = [(5, job.key_b(5)), (0, job.key_b(998)), (BIG_A + 1, "nope"), (99, job.key_b(999))]
        for key, plain in zip(keys, plain_keys):
            only = big_request(query).with_query(KeyQuery.with_key(key)).execute(spark).only_partition_result()
            assert (None if only.result is None else tuple(only.result)) == expected.get(plain), key
        result = big_request(query).with_query(MultiKeyQuery.with_keys(keys)).execute(spark)
        found: dict[int, tuple] = {}
        for r in result.partition_results.values():
            for i, value in enumerate(r.result):
                if value is not None:
                    assert i not in found
                    found[i] = tuple(value)
        assert found == {i: expected[k] for i, k in enumerate(plain_keys) if k in expected}


# ------------------------------------------------------------------------------------------------
# local-cluster: the same answers as local mode


def test_local_cluster_queries_answer_exactly_as_local_mode(spark, cluster_run, tmp_path):
    query = job.start_query(spark, tmp_path, job.input_batches(), "iq_local_twin")
    try:
        job.wait_for_commit(query, tmp_path / "checkpoint", job.BATCHES - 1, 240)
        local = job.run_standard_queries(spark, query)
    finally:
        query.stop()
    process = cluster_run["process"]
    try:
        process.wait(timeout=420)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the local-cluster job did not finish; log {cluster_run['log']}")
    log = cluster_run["log"].read_text()
    excerpt = "\n".join(line for line in log.splitlines() if "ERROR" in line or "Exception" in line)[:6000]
    assert process.returncode == 0 and cluster_run["result"].is_file(), f"job exited {process.returncode}:\n{excerpt}"
    report = json.loads(cluster_run["result"].read_text())
    assert not report["errors"], f"{report['errors']}\n{excerpt}"
    assert len(report["executors"]) >= 2 and report["still_active"]
    cluster = report["answers"]
    local_info, cluster_info = local.pop("execution_info"), cluster.pop("execution_info")
    assert local.keys() == cluster.keys()
    for name in local:
        assert cluster[name] == local[name], f"{name}: local-cluster answered differently from local mode"
    expected = job.expected_state(job.input_batches())
    assert [[list(k), list(v)] for k, v in sorted(expected.items())] == local["scan"]["rows"]
    assert local["key0"]["value"] == list(expected[(3, job.key_b(4))]) and local["key3"]["value"] is None
    # where each was served, for the record (the JVM decides the wording)
    print("execution info, local:", local_info[0], "\nexecution info, local-cluster:", cluster_info[0])
