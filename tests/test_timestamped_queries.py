"""Timestamped interactive queries (KIP-258) and changed-since reads on real streaming queries.

A `groupBy(a, b)` count over input files, one file per micro-batch (`processAllAvailable` after each,
so batch i is file i): batch 0 writes every key, each later batch a seeded random part of them, so
keys are last written by different batches. The model says which batch wrote each key last; each
batch's time is read from the checkpoint's offset log (`offsets/<batch>`, `batchTimestampMs`). A row
is right only if its `last_written_batch` is exactly that batch and its `last_written_ms` exactly
that batch's time, and a changed-since read is right only if it returns exactly the keys the model
says were written at or after it.

* While the query runs: timestamped key, multi-key, range, prefix and scan queries; changed-since
  scans, ranges and prefixes by batch and by time, paged, with their positions.
* The txstate data source (`timestamps`, `changedSinceBatch`, `changedSinceMs`), a follower, and
  `python -m txstate_spark serve` answer the same.
* Malformed `changedSince` filters are caller errors naming the field.
* After the query stops: the same answers from the checkpoint files.
* A store migrated from Spark's HDFS provider, and the 0.1.0 fixture's store (storage format 1): their
  rows' last writes are not known and are reported as None, never made up, and no changed-since
  filter returns them; rows written after the migration carry their batch.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pytest
from pyspark.sql import Row

import txstate_spark
from harness.counting_stream import wait_until
from harness.streaming_harness import (
    HDFS_PROVIDER,
    PROVIDER_CLASS_CONF,
    TXSTATE_PROVIDER,
    InputFiles,
    offset_log_times,
    read_sources,
    session_conf,
)
from test_serving import servers  # noqa: F401  (a fixture)
from txstate_spark import migrate
from txstate_spark.query import (
    FailureReason,
    KeyQuery,
    PositionBound,
    PrefixQuery,
    RangeQuery,
    ScanQuery,
    StateQueryError,
    StateQueryRequest,
    TimestampedKeyQuery,
    TimestampedMultiKeyQuery,
    TimestampedPrefixQuery,
    TimestampedRangeQuery,
    TimestampedScanQuery,
    TimestampedValue,
)
from txstate_spark.query.gateway import gateway_for

A_VALUES, B_VALUES = 4, 15  # 60 keys
BATCHES = 5
TIMEOUT_S = 120.0

Key = tuple[int, str]


def key_b(j: int) -> str:
    return f"b{j:03d}"


ALL_KEYS: list[Key] = [(a, key_b(j)) for a in range(A_VALUES) for j in range(B_VALUES)]
ABSENT: list[Key] = [(A_VALUES + 1, key_b(0)), (0, "zzz")]


def keys_of_batch(batch: int) -> list[Key]:
    """Batch 0 writes every key; each later batch about a third of them (seeded, never none)."""
    if batch == 0:
        return list(ALL_KEYS)
    chosen = [k for k in ALL_KEYS if random.Random(f"{batch}:{k}").random() < 0.33]
    return chosen or [ALL_KEYS[batch]]


@dataclass
class Model:
    """What the state must say: each key's count, the batch that last wrote it, and each batch's time."""

    counts: dict[Key, int]
    last_batch: dict[Key, int | None]
    batch_ms: dict[int, int]

    @staticmethod
    def of(batches: Iterable[int], batch_ms: dict[int, int]) -> "Model":
        counts: dict[Key, int] = {}
        last: dict[Key, int | None] = {}
        for batch in batches:
            for key in keys_of_batch(batch):
                counts[key] = counts.get(key, 0) + 1
                last[key] = batch
        return Model(counts, last, dict(batch_ms))

    def stamp(self, key: Key) -> tuple[int | None, int | None]:
        """(last_written_batch, last_written_ms) of `key`; None, None when its last write is unknown."""
        batch = self.last_batch[key]
        return (None, None) if batch is None else (batch, self.batch_ms[batch])

    def since_batch(self, n: int) -> set[Key]:
        return {k for k, b in self.last_batch.items() if b is not None and b >= n}

    def since_ms(self, t: int) -> set[Key]:
        return {k for k, b in self.last_batch.items() if b is not None and self.batch_ms[b] >= t}

    def time_filters(self) -> list[int]:
        """Each batch's time, a millisecond after it, and 0 (every key of known age)."""
        return sorted({0, *self.batch_ms.values(), *(t + 1 for t in self.batch_ms.values())})


def start_counts(spark, work: Path, name: str, provider: str = TXSTATE_PROVIDER):
    """groupBy(a, b).count() over the input files of `work`, one file per batch; stays active."""
    from pyspark.sql import functions as F

    inputs = InputFiles(work / "input", ["events"])
    with session_conf(spark, {PROVIDER_CLASS_CONF: provider}):
        events = read_sources(spark, inputs, {"events": "a INT, b STRING"})["events"]
        query = (events.groupBy("a", "b").agg(F.count(F.lit(1)).alias("n"))
                 .writeStream.queryName(name).format("noop").outputMode("update")
                 .option("checkpointLocation", str(work / "checkpoint")).start())
    return query, inputs


def run_batches(query, inputs: InputFiles, checkpoint: Path, batches: Iterable[int]) -> dict[int, int]:
    """Writes each batch's file and waits for it; returns the batch times read right after each ran."""
    times: dict[int, int] = {}
    for batch in batches:
        inputs.write_batch(batch, {"events": [{"a": a, "b": b} for a, b in keys_of_batch(batch)]})
        query.processAllAvailable()
        assert (checkpoint / "commits" / str(batch)).exists(), f"batch {batch} was not committed"
        times.update(offset_log_times(checkpoint))
        # The next batch's time must differ from this one's by a few ms at least.
        wait_until(lambda: time.time() * 1000 > max(times.values()) + 5, 10, "the clock past the last batch's time")
    return times


@pytest.fixture(scope="module")
def stamped(spark, tmp_path_factory):
    """The counting query after BATCHES batches, active and idle; stopped by the last test of the module."""
    work = tmp_path_factory.mktemp("timestamped")
    query, inputs = start_counts(spark, work, "timestamped_counts")
    checkpoint = work / "checkpoint"
    times = run_batches(query, inputs, checkpoint, range(BATCHES))
    model = Model.of(range(BATCHES), times)
    # The data must tell batches apart: every batch is some key's last write, and some keys are older.
    assert {b for b in model.last_batch.values()} == set(range(BATCHES))
    yield query, checkpoint, model
    if query.isActive:
        query.stop()


def key_of(row: Any) -> Key:
    return (row.key.a, row.key.b)


def check_rows(rows: Iterable[Any], model: Model, expected_keys: set[Key], context: str) -> None:
    """Timestamped page rows: exactly `expected_keys`, once each, with the model's count and last write."""
    seen: dict[Key, Any] = {}
    for row in rows:
        key = key_of(row)
        assert key not in seen, f"{context}: key {key} returned twice"
        seen[key] = row
    assert set(seen) == expected_keys, (
        f"{context}: missing {sorted(expected_keys - set(seen))[:8]}, unexpected {sorted(set(seen) - expected_keys)[:8]}")
    for key, row in seen.items():
        assert row.value[0] == model.counts[key], f"{context}: {key} counts {row.value[0]}, not {model.counts[key]}"
        assert (row.last_written_batch, row.last_written_ms) == model.stamp(key), (
            f"{context}: {key} says last written ({row.last_written_batch}, {row.last_written_ms}), "
            f"the model says {model.stamp(key)}")


def all_rows(request, spark, context: str, batch: int = BATCHES - 1) -> list[Any]:
    """Every page of a paged request; every partition must answer from `batch`."""
    rows: list[Any] = []
    for result in request.pages(spark):
        assert result.is_success, f"{context}: {result.failures()}"
        assert result.position.batch_id == batch, f"{context}: answered from {result.position}"
        rows.extend(result.rows)
    return rows


class TestWhileTheQueryRuns:
    def test_a_timestamped_key_lookup_gives_the_batch_and_batch_time_of_the_last_write(self, spark, stamped):
        query, _, model = stamped
        store = StateQueryRequest.in_store(query)
        for key in ALL_KEYS:
            answer = store.with_query(TimestampedKeyQuery.with_key(key)).execute(spark).only_partition_result()
            assert isinstance(answer.result, TimestampedValue), answer
            assert answer.result.value[0] == model.counts[key]
            assert (answer.result.last_written_batch, answer.result.last_written_ms) == model.stamp(key), key
        for key in ABSENT:
            assert store.with_query(TimestampedKeyQuery.with_key(key)).execute(spark).only_partition_result().result is None
        plain = store.with_query(KeyQuery.with_key(ALL_KEYS[0])).execute(spark).only_partition_result().result
        assert isinstance(plain, Row) and tuple(plain) == (model.counts[ALL_KEYS[0]],), "a plain key query: the value Row"

    def test_a_timestamped_multi_key_lookup_stamps_each_key_in_request_order(self, spark, stamped):
        query, _, model = stamped
        keys = ALL_KEYS[::-1] + ABSENT
        result = StateQueryRequest.in_store(query).with_query(TimestampedMultiKeyQuery.with_keys(keys)).execute(spark)
        assert result.is_success, result.failures()
        found: dict[Key, TimestampedValue] = {}
        for r in result.partition_results.values():
            assert len(r.result) == len(keys)
            for key, value in zip(keys, r.result):
                if value is not None:
                    assert key not in found, f"{key} found in two partitions"
                    found[key] = value
        assert set(found) == set(ALL_KEYS)
        for key, value in found.items():
            assert (value.value[0], value.last_written_batch, value.last_written_ms) == (model.counts[key], *model.stamp(key))

    def test_timestamped_scan_range_and_prefix_rows_carry_their_last_write(self, spark, stamped):
        query, _, model = stamped
        store = StateQueryRequest.in_store(query)
        check_rows(all_rows(store.with_query(TimestampedScanQuery.all().with_limit(7)), spark, "scan"), model,
                   set(ALL_KEYS), "scan")
        lower, upper = (1, key_b(5)), (3, key_b(2))
        in_range = {k for k in ALL_KEYS if lower <= k <= upper}
        ascending = TimestampedRangeQuery.with_range(lower, upper)
        for query_ in (ascending, ascending.descending()):
            check_rows(all_rows(store.with_query(query_.with_limit(4)), spark, "range"), model, in_range, repr(query_))
        check_rows(all_rows(store.with_query(TimestampedPrefixQuery.with_prefix({"a": 2}).with_limit(3)), spark, "prefix"),
                   model, {k for k in ALL_KEYS if k[0] == 2}, "prefix")
        plain = store.with_query(ScanQuery.all()).execute(spark).rows
        assert plain and all(row.__fields__ == ["key", "value"] for row in plain), "plain scans keep their row shape"

    def test_changed_since_a_batch_returns_exactly_the_keys_written_at_or_after_it(self, spark, stamped):
        query, _, model = stamped
        store = StateQueryRequest.in_store(query)
        lower, upper = (0, key_b(7)), (2, key_b(9))
        for n in range(BATCHES + 1):
            want = model.since_batch(n)
            check_rows(all_rows(store.with_query(TimestampedScanQuery.all().with_limit(5).with_changed_since(batch=n)),
                                spark, f"scan since {n}"), model, want, f"scan changed since batch {n}")
            ranged = TimestampedRangeQuery.with_range(lower, upper).with_limit(2).with_changed_since(batch=n)
            check_rows(all_rows(store.with_query(ranged), spark, "range"), model,
                       {k for k in want if lower <= k <= upper}, f"range changed since batch {n}")
            prefixed = TimestampedPrefixQuery.with_prefix(1).with_limit(2).with_changed_since(batch=n)
            check_rows(all_rows(store.with_query(prefixed), spark, "prefix"), model, {k for k in want if k[0] == 1},
                       f"prefix changed since batch {n}")
            plain = all_rows(store.with_query(ScanQuery.all().with_changed_since(batch=n)), spark, "plain scan")
            assert sorted(key_of(r) for r in plain) == sorted(want), f"plain scan changed since batch {n}"
        assert model.since_batch(BATCHES) == set()

    def test_changed_since_a_time_returns_exactly_the_keys_of_batches_at_or_after_it(self, spark, stamped):
        query, _, model = stamped
        store = StateQueryRequest.in_store(query)
        assert len(set(model.batch_ms.values())) > 1, f"the batches should have different times: {model.batch_ms}"
        for t in model.time_filters():
            request = store.with_query(TimestampedScanQuery.all().with_limit(6).with_changed_since(ms=t))
            check_rows(all_rows(request, spark, f"since {t} ms"), model, model.since_ms(t), f"scan changed since {t} ms")
            prefixed = TimestampedPrefixQuery.with_prefix({"a": 3}).with_changed_since(ms=t)
            check_rows(all_rows(store.with_query(prefixed), spark, "prefix"), model,
                       {k for k in model.since_ms(t) if k[0] == 3}, f"prefix changed since {t} ms")

    def test_a_filtered_page_ends_at_its_limit_and_the_continuation_resumes_after_it(self, spark, stamped):
        query, _, model = stamped
        n = BATCHES - 2
        want = model.since_batch(n)
        request = StateQueryRequest.in_store(query).with_query(
            TimestampedScanQuery.all().with_limit(1).with_changed_since(batch=n))
        pages = list(request.pages(spark))
        # One row per partition and page (two partitions), so at least half as many pages as rows.
        assert len(pages) >= math.ceil(len(want) / 2) > 1, (len(pages), len(want))
        for page in pages:
            assert all(len(r.result.rows) <= 1 for r in page.partition_results.values())
            assert page.position.batch_id == BATCHES - 1
        assert pages[-1].continuation is None and all(page.continuation is not None for page in pages[:-1])
        check_rows([row for page in pages for row in page.rows], model, want, "one row a page")

    def test_a_malformed_changed_since_is_a_caller_error_naming_the_field(self, spark, stamped):
        query, checkpoint, _ = stamped
        store = StateQueryRequest.in_store(query)
        for bad, field in [(ScanQuery(changed_since_batch=-1), "changedSince.batch"),
                           (ScanQuery(changed_since_ms="yesterday"), "changedSince.ms"),  # type: ignore[arg-type]
                           (RangeQuery(changed_since_ms=1.5), "changedSince.ms"),  # type: ignore[arg-type]
                           (PrefixQuery(prefix=1, changed_since_batch=1, changed_since_ms=2), "'changedSince' must be")]:
            with pytest.raises(StateQueryError, match=r"\[TXSTATE_QUERY_BAD_REQUEST\].*" + field.replace(".", r"\.")):
                store.with_query(bad).execute(spark)
        # A key lookup takes no filter: the raw protocol is refused, naming the field.
        request = {"checkpoint": str(checkpoint), "runId": None, "operator": "0", "store": "default",
                   "query": {"type": "key", "key": [1, key_b(1)], "changedSince": {"batch": 1}}}
        with pytest.raises(StateQueryError, match=r"\[TXSTATE_QUERY_BAD_REQUEST\] 'changedSince' filters range"):
            gateway_for(spark).execute(request)
        for kwargs in ({"batch": 1, "ms": 2}, {"batch": -3}, {"ms": 1.5}, {"batch": True}):
            with pytest.raises(StateQueryError, match="with_changed_since"):
                ScanQuery.all().with_changed_since(**kwargs)

    def test_the_data_source_adds_the_last_write_columns_and_filters_by_batch_or_time(self, spark, stamped):
        _, checkpoint, model = stamped

        def read(**options):
            reader = spark.read.format("txstate")
            for name, value in options.items():
                reader = reader.option(name, value)
            return reader.load(str(checkpoint))

        df = read(timestamps="true")
        assert df.schema.names[-2:] == ["last_written_batch", "last_written_ms"]
        assert [f.dataType.simpleString() for f in df.schema.fields[-2:]] == ["bigint", "bigint"]
        check_rows(df.collect(), model, set(ALL_KEYS), "data source")
        assert read().schema.names == ["key", "value", "partition_id", "batch_id", "commit_time"]
        for n in range(BATCHES + 1):
            check_rows(read(timestamps="true", changedSinceBatch=str(n)).collect(), model, model.since_batch(n),
                       f"data source changed since batch {n}")
        for t in model.time_filters():
            check_rows(read(timestamps="true", changedSinceMs=str(t)).collect(), model, model.since_ms(t),
                       f"data source changed since {t} ms")
        # Key lookups pushed down are filtered too (an older key reads as absent).
        old = next(k for k in ALL_KEYS if model.last_batch[k] == 0)
        lookup = f"key.a = {old[0]} AND key.b = '{old[1]}'"
        assert read(changedSinceBatch="1").where(lookup).collect() == []
        assert [key_of(r) for r in read(changedSinceBatch="0").where(lookup).collect()] == [old]
        with pytest.raises(Exception, match="TXSTATE_SOURCE_BAD_OPTION.*changedSinceMs"):
            read(changedSinceBatch="1", changedSinceMs="5").collect()
        with pytest.raises(Exception, match="TXSTATE_SOURCE_BAD_OPTION.*changedSinceBatch"):
            read(changedSinceBatch="-1").collect()

    def test_a_follower_answers_the_same_last_writes(self, spark, stamped):
        _, checkpoint, model = stamped
        with txstate_spark.follow(spark, checkpoint) as follower:
            store = StateQueryRequest.in_store(follower).with_position_bound(PositionBound.at_least_batch(BATCHES - 1))
            scan = store.with_query(TimestampedScanQuery.all().with_limit(9))
            wait_until(lambda: scan.execute(spark).is_success, TIMEOUT_S, "the follower at the last batch")
            check_rows(all_rows(scan, spark, "follower scan"), model, set(ALL_KEYS), "follower scan")
            for n in (1, BATCHES - 1):
                since = store.with_query(TimestampedScanQuery.all().with_limit(4).with_changed_since(batch=n))
                check_rows(all_rows(since, spark, "follower"), model, model.since_batch(n), f"follower since batch {n}")
            key = ALL_KEYS[7]
            answer = store.with_query(TimestampedKeyQuery.with_key(key)).execute(spark).only_partition_result().result
            assert (answer.last_written_batch, answer.last_written_ms) == model.stamp(key)

    def test_serve_answers_timestamped_rows_and_changed_since_over_http(self, stamped, servers):  # noqa: F811
        _, checkpoint, model = stamped
        server = servers(checkpoint)
        bound = {"type": "atLeastBatch", "batchId": BATCHES - 1}

        def rows(response) -> dict[Key, tuple]:
            found = {}
            for p in response["partitions"]:
                assert p["success"], p
                for row in p["result"]["rows"]:
                    found[tuple(row["key"])] = (row["value"][0], row.get("lastWrittenBatch", "absent"),
                                                row.get("lastWrittenMs", "absent"))
            return found

        wait_until(lambda: all(p["success"] for p in server.query({"type": "scan"}, bound=bound)["partitions"]),
                   TIMEOUT_S, "the server at the last batch")
        n = BATCHES - 2
        since = rows(server.query({"type": "scan", "limit": 1000, "changedSince": {"batch": n}}, bound=bound,
                                  timestamped=True))
        assert since == {k: (model.counts[k], *model.stamp(k)) for k in model.since_batch(n)}
        plain = rows(server.query({"type": "scan", "limit": 1000}, bound=bound))
        assert plain == {k: (model.counts[k], "absent", "absent") for k in ALL_KEYS}
        key = ALL_KEYS[3]
        looked_up = server.query({"type": "key", "key": list(key)}, bound=bound, timestamped=True)
        values = [p["result"] for p in looked_up["partitions"] if p["result"] is not None]
        assert values == [{"value": [model.counts[key]], "lastWrittenBatch": model.stamp(key)[0],
                           "lastWrittenMs": model.stamp(key)[1]}]
        bad = {"query": {"type": "scan", "changedSince": {"batch": "x"}}}
        status, _, body = server.request("POST", "/v1/query", json.dumps(bad))
        assert status == 400 and "changedSince.batch" in body, body


def test_after_the_query_stops_checkpoint_reads_answer_the_same_last_writes(spark, stamped):
    """Runs after the class above (it stops the module's query)."""
    query, checkpoint, model = stamped
    query.stop()
    store = StateQueryRequest.in_store(checkpoint).allow_checkpoint_reads()
    not_loaded = StateQueryRequest.in_store(checkpoint).with_query(TimestampedScanQuery.all()).execute(spark)
    assert {r.failure_reason for r in not_loaded.partition_results.values()} == {FailureReason.NOT_PRESENT}
    check_rows(all_rows(store.with_query(TimestampedScanQuery.all().with_limit(8)), spark, "checkpoint scan"), model,
               set(ALL_KEYS), "checkpoint scan")
    for n in range(BATCHES + 1):
        check_rows(all_rows(store.with_query(TimestampedScanQuery.all().with_changed_since(batch=n)), spark, "checkpoint"),
                   model, model.since_batch(n), f"checkpoint changed since batch {n}")
    for t in model.time_filters():
        ranged = TimestampedRangeQuery.with_no_bounds().with_limit(11).with_changed_since(ms=t)
        check_rows(all_rows(store.with_query(ranged), spark, "checkpoint"), model, model.since_ms(t),
                   f"checkpoint changed since {t} ms")
    key = ALL_KEYS[-1]
    answer = store.with_query(TimestampedKeyQuery.with_key(key)).execute(spark).only_partition_result().result
    assert (answer.last_written_batch, answer.last_written_ms) == model.stamp(key)


@pytest.fixture(scope="module")
def migrated(spark, tmp_path_factory):
    """Two batches on Spark's HDFS provider, stopped, migrated to txstate; then the query restarted
    unchanged runs batch 2 on txstate. Yields the checkpoint, the batch times and, per phase, the
    timestamped scan rows (read from the checkpoint right after the migration; live after batch 2)."""
    work = tmp_path_factory.mktemp("timestamped-migrated")
    checkpoint = work / "checkpoint"
    query, inputs = start_counts(spark, work, "timestamped_migrated", provider=HDFS_PROVIDER)
    try:
        times = run_batches(query, inputs, checkpoint, range(2))
    finally:
        query.stop()
    migrate(spark, str(checkpoint), to="txstate", active_window_seconds=0)
    from_files = StateQueryRequest.in_store(checkpoint).allow_checkpoint_reads()
    migrated_rows = {
        "all": all_rows(from_files.with_query(TimestampedScanQuery.all()), spark, "migrated", 1),
        "since batch 0": all_rows(from_files.with_query(TimestampedScanQuery.all().with_changed_since(batch=0)),
                                  spark, "migrated", 1),
        "since 0 ms": all_rows(from_files.with_query(TimestampedScanQuery.all().with_changed_since(ms=0)),
                               spark, "migrated", 1),
    }
    query, inputs = start_counts(spark, work, "timestamped_migrated", provider=HDFS_PROVIDER)
    try:
        times.update(run_batches(query, inputs, checkpoint, [2]))
        live = StateQueryRequest.in_store(query)
        after_rows = {
            "all": all_rows(live.with_query(TimestampedScanQuery.all()), spark, "after", 2),
            "since 2": all_rows(live.with_query(TimestampedScanQuery.all().with_changed_since(batch=2)), spark, "after", 2),
            "since its time": all_rows(live.with_query(TimestampedScanQuery.all().with_changed_since(ms=times[2])),
                                       spark, "after", 2),
        }
    finally:
        query.stop()
    return times, migrated_rows, after_rows


def test_migrated_rows_have_no_known_last_write_and_rows_written_after_carry_their_batch(migrated):
    times, migrated_rows, after_rows = migrated
    counts = Model.of(range(2), times).counts
    before = Model(counts, {k: None for k in ALL_KEYS}, times)
    check_rows(migrated_rows["all"], before, set(ALL_KEYS), "migrated rows")
    assert migrated_rows["since batch 0"] == [], "rows whose last write is not known are not changed since any batch"
    assert migrated_rows["since 0 ms"] == [], "rows whose last write is not known are not changed since any time"
    # Batch 2 ran on txstate: its keys carry batch 2 and its time; the others are still not known.
    after = Model.of(range(3), times)
    written = set(keys_of_batch(2))
    after.last_batch = {k: (2 if k in written else None) for k in ALL_KEYS}
    check_rows(after_rows["all"], after, set(ALL_KEYS), "after the migration")
    check_rows(after_rows["since 2"], after, written, "after the migration, changed since batch 2")
    check_rows(after_rows["since its time"], after, written, "after the migration, changed since batch 2's time")


def test_rows_written_by_release_0_1_0_have_no_known_last_write(spark, tmp_path):
    """The 0.1.0 fixture's aggregation (storage format 1: no stamps), read from a copy of its checkpoint."""
    from test_format_upgrade import FIXTURE, expected_state, fixture_inputs

    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(FIXTURE / "agg" / "checkpoint", checkpoint)
    store = StateQueryRequest.in_store(checkpoint).allow_checkpoint_reads()
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    rows = all_rows(store.with_query(TimestampedScanQuery.all().with_limit(4)), spark, "0.1.0 store", last)
    assert sorted(((r.key[0],), tuple(r.value)) for r in rows) == expected_state("agg", fixture_inputs("agg"))
    assert {(r.last_written_batch, r.last_written_ms) for r in rows} == {(None, None)}
    for since in ({"batch": 0}, {"ms": 0}):
        filtered = store.with_query(TimestampedScanQuery.all().with_changed_since(**since))
        assert all_rows(filtered, spark, "0.1.0 store", last) == [], f"0.1.0 rows changed since {since}"
    key = rows[0].key[0]
    answer = store.with_query(TimestampedKeyQuery.with_key(key)).execute(spark).only_partition_result().result
    assert (answer.last_written_batch, answer.last_written_ms) == (None, None)
