"""State TTL (`spark.sql.streaming.stateStore.txstate.ttl`) on real Spark queries.

Every batch's output, its state row count and its `txstateExpiredEntries` metric are checked
against a reference model that the test runs over the same input, with each batch's time taken
from the checkpoint's offset log (`batchTimestampMs`, the time TTL measures against). Semantics
as Flink's state TTL: a key not written for the TTL or longer, at the batch's time, is gone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import pytest

from harness.streaming_harness import (
    PROVIDER_CLASS_CONF,
    TXSTATE_PROVIDER,
    BatchCollector,
    InputFiles,
    RunOutput,
    custom_metric,
    offset_log_times,
    read_sources,
    session_conf,
)
from harness.ttl_model import TTL_CONF, ModelBatch, count_model, dedup_model, rotating_keys

TTL_MS = 3000
BATCHES = 40
# Batches come about this far apart (plus their own run time), so keys outlive the TTL after a few.
PAUSE_S = 0.25


@dataclass
class Run:
    output: RunOutput
    batch_times: dict[int, int]
    progress: dict[int, dict] = field(default_factory=dict)

    def state_rows(self, batch: int) -> int:
        return sum(int(op["numRowsTotal"]) for op in self.progress[batch]["stateOperators"])


def run_stream(
    spark, work: Path, build: Callable[[Any], Any], output_mode: str, ttl: str | None, batches: int
) -> Run:
    """Run the query on txstate, one input file per micro-batch, pausing between batches."""
    inputs = InputFiles(work / "input", ["events"])
    checkpoint = work / "checkpoint"
    output = RunOutput(provider=TXSTATE_PROVIDER)
    conf = {PROVIDER_CLASS_CONF: TXSTATE_PROVIDER, TTL_CONF: ttl}
    with session_conf(spark, conf):
        source = read_sources(spark, inputs, {"events": "k string"})["events"]
        query = (
            build(source).writeStream.outputMode(output_mode)
            .option("checkpointLocation", str(checkpoint))
            .foreachBatch(BatchCollector(output))
            .start()
        )
    # Cleanup keeps only the last few offset-log entries: read each batch's time right after it ran.
    batch_times: dict[int, int] = {}
    try:
        for index in range(batches):
            inputs.write_batch(index, {"events": [{"k": k} for k in rotating_keys(index)]})
            query.processAllAvailable()
            batch_times.update(offset_log_times(checkpoint))
            time.sleep(PAUSE_S)
        progress = {p["batchId"]: p for p in query.recentProgress if p["numInputRows"] > 0}
    finally:
        query.stop()
    assert sorted(output.batches) == list(range(batches)), sorted(output.batches)
    assert sorted(batch_times) == list(range(batches)), sorted(batch_times)
    return Run(output, batch_times, progress)


def assert_matches_model(run: Run, model: Mapping[int, ModelBatch]) -> None:
    for batch, expected in sorted(model.items()):
        assert run.output.batches[batch] == expected.rows, f"batch {batch}: output differs from the model"
        assert run.state_rows(batch) == expected.state_rows, f"batch {batch}: state rows differ from the model"
        assert custom_metric(run.progress[batch], "txstateExpiredEntries") == expected.expired, (
            f"batch {batch}: txstateExpiredEntries differs from the model"
        )


def test_deduplication_with_ttl_keeps_state_bounded_and_matches_the_model(spark, tmp_path: Path) -> None:
    dedup = lambda df: df.dropDuplicates(["k"])  # noqa: E731
    with_ttl = run_stream(spark, tmp_path / "ttl", dedup, "append", f"{TTL_MS}ms", BATCHES)
    without = run_stream(spark, tmp_path / "plain", dedup, "append", None, BATCHES)

    model = dedup_model(with_ttl.batch_times, TTL_MS)
    # The data must exercise TTL: keys expire, and a hot key is emitted again after expiring.
    assert sum(b.expired for b in model.values()) > 0
    assert sum(1 for b in model.values() if ("hot0",) in b.rows) > 1
    assert_matches_model(with_ttl, model)
    assert_matches_model(without, dedup_model(without.batch_times, None))

    last = BATCHES - 1
    # Without TTL the state holds every key ever seen; with it, about the keys of the last TTL.
    assert without.state_rows(last) == len({k for b in range(BATCHES) for k in rotating_keys(b)})
    assert with_ttl.state_rows(last) < without.state_rows(last) / 3
    assert max(with_ttl.state_rows(b) for b in range(BATCHES // 2, BATCHES)) <= with_ttl.state_rows(last) * 2


def test_aggregation_with_ttl_restarts_expired_counts_as_the_model_says(spark, tmp_path: Path) -> None:
    counts = lambda df: df.groupBy("k").count()  # noqa: E731
    run = run_stream(spark, tmp_path, counts, "update", "3s", BATCHES // 2)
    model = count_model(run.batch_times, TTL_MS)
    assert sum(b.expired for b in model.values()) > 0
    assert_matches_model(run, model)
    oldest = [custom_metric(run.progress[b], "txstateOldestEntryAgeMs") for b in range(1, BATCHES // 2)]
    assert any(age > 0 for age in oldest)


@pytest.mark.parametrize(
    "value, problem",
    [("3 parsecs", "must be a duration > 0 with a unit"), ("-5s", "must be a duration > 0 with a unit")],
)
def test_a_bad_ttl_is_refused_naming_the_setting(spark, tmp_path: Path, value: str, problem: str) -> None:
    with pytest.raises(Exception) as failure:
        run_stream(spark, tmp_path, lambda df: df.dropDuplicates(["k"]), "append", value, 1)
    text = str(failure.value)
    assert TTL_CONF in text and problem in text, text
