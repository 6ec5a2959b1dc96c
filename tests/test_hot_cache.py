"""The hot-state cache (`spark.sql.streaming.stateStore.txstate.hotCacheSizeMB`) on real Spark queries.

The same aggregation runs with a 64 MiB cache (it holds every hot key), with a cache far too small
for them (it evicts all the time) and with the cache off (the default). Every batch's output and
state row count must equal a model of the query in all three, and the cache metrics must show what
each cache did. (The engine's TTL model test checks expiry of cached keys.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.streaming_harness import (
    PROVIDER_CLASS_CONF,
    TXSTATE_PROVIDER,
    BatchCollector,
    InputFiles,
    RunOutput,
    custom_metric,
    read_sources,
    session_conf,
)
from harness.ttl_model import count_model

CACHE_CONF = "spark.sql.streaming.stateStore.txstate.hotCacheSizeMB"
HOT_KEYS = 20000
NEW_KEYS = 500
BATCHES = 6


def cache_keys(batch: int) -> list[str]:
    """Every batch counts the same hot keys again, plus keys never seen before."""
    return [f"hot{i:05d}" for i in range(HOT_KEYS)] + [f"new{batch}-{i}" for i in range(NEW_KEYS)]


def run_counts(spark, work: Path, cache_mb: str | None) -> tuple[RunOutput, dict[int, dict[str, Any]]]:
    inputs = InputFiles(work / "input", ["events"])
    output = RunOutput(provider=TXSTATE_PROVIDER)
    with session_conf(spark, {PROVIDER_CLASS_CONF: TXSTATE_PROVIDER, CACHE_CONF: cache_mb}):
        source = read_sources(spark, inputs, {"events": "k string"})["events"]
        query = (
            source.groupBy("k").count().writeStream.outputMode("update")
            .option("checkpointLocation", str(work / "checkpoint"))
            .foreachBatch(BatchCollector(output))
            .start()
        )
        try:
            for batch in range(BATCHES):
                inputs.write_batch(batch, {"events": [{"k": k} for k in cache_keys(batch)]})
                query.processAllAvailable()
            progress = {p["batchId"]: p for p in query.recentProgress if p["numInputRows"] > 0}
        finally:
            query.stop()
    assert sorted(progress) == list(range(BATCHES)), sorted(progress)
    return output, progress


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory) -> dict[str, tuple[RunOutput, dict[int, dict[str, Any]]]]:
    work = tmp_path_factory.mktemp("hot-cache")
    return {name: run_counts(spark, work / name, mb) for name, mb in
            [("on", "64"), ("tiny", "1"), ("off", None)]}


@pytest.mark.parametrize("name", ["on", "tiny", "off"])
def test_every_batch_matches_the_model_whatever_the_cache(runs, name: str) -> None:
    output, progress = runs[name]
    model = count_model({b: 0 for b in range(BATCHES)}, None, keys_of=cache_keys)
    for batch, expected in sorted(model.items()):
        assert output.batches[batch] == expected.rows, f"{name} cache, batch {batch}: output differs from the model"
        rows = sum(int(op["numRowsTotal"]) for op in progress[batch]["stateOperators"])
        assert rows == expected.state_rows, f"{name} cache, batch {batch}: state rows differ from the model"


def test_a_cache_that_fits_answers_every_hot_key_once_they_are_cached(runs) -> None:
    _, progress = runs["on"]
    # Batch 0 reads only absent keys (nothing is cached); batch 1 reads the hot keys from RocksDB and
    # caches them; from batch 2 on each hot key is read from the heap.
    assert custom_metric(progress[0], "txstateCacheHits") == 0
    assert custom_metric(progress[1], "txstateCacheMisses") >= HOT_KEYS
    for batch in range(2, BATCHES):
        hits = custom_metric(progress[batch], "txstateCacheHits")
        misses = custom_metric(progress[batch], "txstateCacheMisses")
        assert hits >= HOT_KEYS, f"batch {batch}: {hits} hits"
        assert hits / (hits + misses) > 0.8, f"batch {batch}: {hits} hits, {misses} misses"
        assert custom_metric(progress[batch], "txstateCacheEvictions") == 0
        assert custom_metric(progress[batch], "txstateCacheBytes") > 0


def test_a_cache_smaller_than_the_hot_keys_evicts_and_stays_within_its_budget(runs) -> None:
    _, progress = runs["tiny"]
    _, fitting = runs["on"]
    evictions = sum(custom_metric(progress[b], "txstateCacheEvictions") for b in range(BATCHES))
    assert evictions > 0
    # Each partition reports its own entries when it commits, so the sum over partitions samples
    # different moments and may exceed the budget a little; it must stay far below what the hot
    # keys take in the 64 MiB cache. (HotStateCacheTest checks the bound itself, exactly.)
    tiny_bytes = max(custom_metric(progress[b], "txstateCacheBytes") for b in range(BATCHES))
    fitting_bytes = max(custom_metric(fitting[b], "txstateCacheBytes") for b in range(BATCHES))
    assert tiny_bytes < 1.5 * (1 << 20) < fitting_bytes, (tiny_bytes, fitting_bytes)
    tiny_hits = sum(custom_metric(progress[b], "txstateCacheHits") for b in range(BATCHES))
    fitting_hits = sum(custom_metric(fitting[b], "txstateCacheHits") for b in range(BATCHES))
    assert tiny_hits < fitting_hits


def test_with_the_cache_off_nothing_is_cached(runs) -> None:
    _, progress = runs["off"]
    for batch in range(BATCHES):
        for metric in ("txstateCacheHits", "txstateCacheMisses", "txstateCacheEvictions", "txstateCacheBytes"):
            assert custom_metric(progress[batch], metric) == 0, f"batch {batch}: {metric}"


def test_a_bad_cache_size_is_refused_naming_the_setting(spark, tmp_path: Path) -> None:
    with pytest.raises(Exception) as raised:
        run_counts(spark, tmp_path, "-3")
    assert CACHE_CONF in str(raised.value)
    assert "-3" in str(raised.value)
