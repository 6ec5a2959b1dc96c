"""Queries restart with the current build from checkpoints txstate-spark 0.1.0 wrote.

tests/fixtures/checkpoint-0.1.0 holds, per query (`agg`: count and sum per key, update mode;
`dedup`: dropDuplicates(k) without a watermark, append mode), the checkpoint 0.1.0 left after three
micro-batches, their input files and what each batch emitted (tests/fixtures/make_checkpoints_0_1_0.py
wrote it). Every store there has changelogs of versions 1..3 in 0.1.0's format and a snapshot of
version 2.

Each test works on a copy of a fixture checkpoint. A restart reads new input files only, from a
new directory; the fixture's files are not copied there. Spark's file-source log in the copy names
the files 0.1.0 processed by their absolute paths on the machine that wrote the fixture, and a
restart re-plans the last logged batch with the source directory as basePath, refusing files
outside it ("Wrong basePath"), so the test points the log at the new directory first
(relocate_file_source_log). Expected rows come from a model of all input, the fixture's files and
the new ones.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlparse

import pytest

from fixtures.make_checkpoints_0_1_0 import BATCHES, EVENTS, KEYS, QUERIES
from harness.streaming_harness import (
    TXSTATE_PROVIDER,
    BatchCollector,
    InputFiles,
    RunOutput,
    await_available_now,
    custom_metric,
    describe_listing,
    list_checkpoint,
    read_sources,
    recorded_provider,
    session_conf,
    sorted_rows,
)
from test_snapshots_and_recovery import LOCAL_DIR_CONF, SNAPSHOT_INTERVAL_CONF, expected_updates

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "checkpoint-0.1.0"
# The changelog format 0.1.0 writes (bytes 4..7 of a changelog, after the magic).
FORMAT_0_1_0 = 1
STORES = 2  # one operator, two shuffle partitions
SNAPSHOT_VERSION = 2
# No snapshot from the restarts, so every restart loads from 0.1.0's snapshot of version 2.
NO_NEW_SNAPSHOT = {SNAPSHOT_INTERVAL_CONF: "1000"}

Rows = list[dict[str, Any]]


# --------------------------------------------------------------------------------------------
# Input and the model


def read_json_lines(path: Path) -> Rows:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def fixture_inputs(name: str) -> list[Rows]:
    """The fixture's input rows of batches 0..2, in file order."""
    return [read_json_lines(FIXTURE / name / "input" / f"batch-{b:04d}.json") for b in range(BATCHES)]


def new_inputs() -> list[Rows]:
    """The input of batches 3 and 4: keys the fixture saw, keys it never saw (key11 and key14 of
    KEYS, key15..key17), and key15 again in batch 4."""
    pools = [[*KEYS[:4], "key11", "key15"], [*KEYS[2:6], "key14", "key15", "key16", "key17"]]
    return [[{"k": pool[i % len(pool)], "v": 7 * i - 20 + b} for i in range(2 * len(pool))]
            for b, pool in enumerate(pools)]


def expected_output(name: str, batches: list[Rows]) -> dict[int, list[tuple]]:
    """Per batch id, the rows the query emits over `batches` (batch id = index): for agg the keys
    the batch touched with their count and sum so far; for dedup each key never seen before, with
    its first row of the batch."""
    if name == "agg":
        return expected_updates([{"events": rows} for rows in batches])
    seen: set[str] = set()
    emitted = {}
    for batch_id, rows in enumerate(batches):
        first: dict[str, int] = {}
        for row in rows:
            if row["k"] not in seen:
                first.setdefault(row["k"], row["v"])
        seen |= set(first)
        emitted[batch_id] = sorted(first.items(), key=repr)
    return emitted


def expected_state(name: str, batches: list[Rows]) -> list[tuple]:
    """The state after `batches`: ((k,), (count, sum)) per key for agg, (k,) per key for dedup."""
    totals: dict[str, tuple[int, int]] = {}
    for row in (row for rows in batches for row in rows):
        n, s = totals.get(row["k"], (0, 0))
        totals[row["k"]] = (n + 1, s + row["v"])
    if name == "agg":
        return sorted(((k,), total) for k, total in totals.items())
    return sorted((k,) for k in totals)


# --------------------------------------------------------------------------------------------
# The checkpoint copy


def copy_checkpoint(name: str, work_dir: Path) -> Path:
    checkpoint = work_dir / "checkpoint"
    shutil.copytree(FIXTURE / name / "checkpoint", checkpoint)
    return checkpoint


def relocate_file_source_log(checkpoint: Path, input_dir: Path) -> None:
    """Points every entry of the copied file-source log at a file of the same name in input_dir
    (that file need not exist: Spark skips a missing file when it re-plans the logged batch)."""
    log_dir = checkpoint / "sources" / "0"
    for entry in (p for p in log_dir.iterdir() if p.name.isdigit()):
        header, *records = entry.read_text().splitlines()
        moved = []
        for line in records:
            record = json.loads(line)
            record["path"] = (input_dir / Path(urlparse(record["path"]).path).name).as_uri()
            moved.append(json.dumps(record, separators=(",", ":")))
        entry.write_text("\n".join([header, *moved]))
        # Hadoop's local file system checks a file against its .crc sidecar when there is one.
        (log_dir / f".{entry.name}.crc").unlink(missing_ok=True)


def restart(spark, name: str, checkpoint: Path, inputs: InputFiles, batch: int, output: RunOutput,
            conf: Mapping[str, str]) -> None:
    """Writes input file `batch`, then runs the fixture's query once (availableNow) on checkpoint."""
    build, mode = QUERIES[name]
    inputs.write_batch(batch, {"events": new_inputs()[batch - BATCHES]})
    collector = BatchCollector(output)
    with session_conf(spark, conf):
        events = read_sources(spark, inputs, {"events": EVENTS})["events"]
        query = (
            build(events).writeStream.queryName(f"upgrade_{name}_batch{batch}").outputMode(mode)
            .option("checkpointLocation", str(checkpoint)).foreachBatch(collector)
            .trigger(availableNow=True).start()
        )
    await_available_now(query, 180.0, f"{name}: restart for batch {batch}")
    output.run_batch_ids.append(collector.delivered)
    output.progress.update((p["batchId"], p) for p in query.recentProgress)


def read_state(spark, checkpoint: Path, **options: Any) -> list[tuple]:
    reader = spark.read.format("statestore")
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted_rows(reader.load(str(checkpoint)).select("key", "value", "partition_id").collect())


def state_rows(name: str, rows: list[tuple]) -> list[tuple]:
    """read_state's (key, value, partition_id) rows in expected_state's shape."""
    if name == "agg":
        return sorted((key, value) for key, value, _ in rows)
    return sorted(key for key, _, _ in rows)


def frame_format(path: Path) -> int:
    """The format version of a txstate checkpoint file (after its four magic bytes)."""
    return int.from_bytes(path.read_bytes()[4:8], "big")


def assert_rebuilt_from_0_1_0_snapshot(output: RunOutput) -> None:
    """Each restart's batch rebuilt every store, replaying the changelogs above version 2."""
    for batch_id, replayed_per_store in ((3, 1), (4, 2)):
        progress = output.progress[batch_id]
        metrics = json.dumps([op.get("customMetrics") for op in progress["stateOperators"]])
        assert custom_metric(progress, "txstateRebuilds") == STORES, f"batch {batch_id}: {metrics}"
        assert custom_metric(progress, "txstateChangelogsReplayed") == STORES * replayed_per_store, (
            f"batch {batch_id} did not load from the snapshot of version {SNAPSHOT_VERSION}: {metrics}")


# --------------------------------------------------------------------------------------------
# Tests


@pytest.mark.parametrize("name", list(QUERIES))
def test_the_fixture_is_0_1_0s_checkpoint_and_its_output_matches_the_model(name):
    """Without Spark: the fixture still holds what 0.1.0 wrote (changelogs 1..3 in its format, a
    snapshot of version 2) and each batch's recorded output equals the model of its input."""
    stores = list_checkpoint(FIXTURE / name / "checkpoint")
    listing = describe_listing(stores)
    assert len(stores) == STORES, listing
    for store in stores:
        assert sorted(store.changelogs) == [1, 2, 3] and sorted(store.snapshots) == [SNAPSHOT_VERSION], listing
        formats = {p.name: frame_format(p) for ps in store.changelogs.values() for p in ps}
        assert set(formats.values()) == {FORMAT_0_1_0}, f"{store.path}: not 0.1.0's changelogs: {formats}"
    recorded = {b: sorted_rows(tuple(row.values()) for row in
                               read_json_lines(FIXTURE / name / "output" / f"batch-{b}.json"))
                for b in range(BATCHES)}
    assert recorded == expected_output(name, fixture_inputs(name))


@pytest.mark.parametrize("name", list(QUERIES))
def test_the_state_data_source_reads_0_1_0s_snapshot_and_changelogs(spark, work_dir, name):
    """Batch 2's state, read plainly and from the snapshot of version 2 (snapshotStartBatchId 1)
    of each partition, equals the model of the fixture's input."""
    checkpoint = copy_checkpoint(name, work_dir)
    want = expected_state(name, fixture_inputs(name))
    assert state_rows(name, read_state(spark, checkpoint, batchId=2)) == want
    from_snapshot = [row for partition in range(STORES) for row in read_state(
        spark, checkpoint, batchId=2, snapshotStartBatchId=SNAPSHOT_VERSION - 1, snapshotPartitionId=partition)]
    assert state_rows(name, from_snapshot) == want


@pytest.mark.parametrize("name", list(QUERIES))
def test_a_0_1_0_checkpoint_restarts_twice_with_exact_output_and_state(spark, work_dir, name):
    """Two restarts, one new file each (batches 3 and 4). The first restart's providers get fresh
    local directories (the default), the second's an empty txstate.localDir; neither writes a
    snapshot. So both rebuild every store from 0.1.0's snapshot of version 2 plus the changelogs
    above it: 0.1.0's version 3, then also the current build's version 4. The emitted rows and the
    final state equal the model of all input."""
    checkpoint = copy_checkpoint(name, work_dir)
    inputs = InputFiles(work_dir / "input", ["events"])
    relocate_file_source_log(checkpoint, inputs.dirs["events"])
    output = RunOutput(provider=TXSTATE_PROVIDER)
    restart(spark, name, checkpoint, inputs, 3, output, NO_NEW_SNAPSHOT)
    empty_local_dir = work_dir / "local"
    restart(spark, name, checkpoint, inputs, 4, output, {**NO_NEW_SNAPSHOT, LOCAL_DIR_CONF: str(empty_local_dir)})

    all_batches = [*fixture_inputs(name), *new_inputs()]
    expected = expected_output(name, all_batches)
    assert output.run_batch_ids == [[3], [4]], output.run_batch_ids
    for batch_id in (3, 4):
        assert expected[batch_id], f"the model emits nothing in batch {batch_id}: a weak test"
        assert output.batches[batch_id] == expected[batch_id], f"batch {batch_id}"
    assert_rebuilt_from_0_1_0_snapshot(output)
    assert state_rows(name, read_state(spark, checkpoint)) == expected_state(name, all_batches)
    assert recorded_provider(checkpoint) == TXSTATE_PROVIDER
    assert list(empty_local_dir.glob("txstate/*/op0-part*")), f"the second restart did not use {empty_local_dir}"
