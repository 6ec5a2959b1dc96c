"""Snapshots, checkpoint cleanup and recovery of the txstate provider, on real Spark.

Every test runs a small running-count aggregation (`groupBy(k).agg(count, sum)`, update mode) with
the candidate provider through the shared harness (one JSON file per micro-batch, availableNow runs
split by restarts on one checkpoint), and checks every batch's output against counts computed here
from the input. What each test adds is what it does to the checkpoint between runs and what it
asserts about the files the provider left there and the custom metrics of the batch after a restart.

Checkpoint layout of one store (`<checkpoint>/state/<operator>/<partition>[/<storeName>]`):
  `<v>.txlog` (or `<v>_<id>.txlog` under checkpoint format v2) changelogs, `<v>_<id>.snapshot`
  manifests, and `sst/` with the RocksDB files the manifests reference.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping

import pytest
from pyspark.sql import functions as F

from harness.streaming_harness import (
    RunOutput,
    StoreFiles,
    StreamCase,
    custom_metric,
    describe_listing,
    held_locks,
    run_case,
    wait_for_quiet_checkpoint,
)

TXSTATE = "spark.sql.streaming.stateStore.txstate."
SNAPSHOT_INTERVAL_CONF = TXSTATE + "snapshotInterval"
LOCAL_DIR_CONF = TXSTATE + "localDir"
MIN_BATCHES_TO_RETAIN_CONF = "spark.sql.streaming.minBatchesToRetain"

EVENTS = "k string, v long"
# Keys of both shuffle partitions (pmod(hash(k), 2) is 0 for some, 1 for others).
KEYS = ["a", "b", "c", "d", "e", "f", "g", "h"]

UNLOAD_TIMEOUT_S = 90.0  # bound on waiting for Spark to unload a stopped query's providers


# --------------------------------------------------------------------------------------------
# The query and its expected output


def counting_batches(count: int, rows_per_batch: int = 5) -> list[dict[str, list[dict]]]:
    """Deterministic input: batch b holds rows_per_batch rows over a shifting subset of KEYS."""
    batches = []
    for b in range(count):
        rows = [{"k": KEYS[(3 * b + 5 * i) % len(KEYS)], "v": b * 10 + i - 7} for i in range(rows_per_batch)]
        batches.append({"events": rows})
    return batches


def running_counts(s: Mapping[str, Any]):
    return s["events"].groupBy("k").agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"))


def counting_case(name: str, batches, restarts: tuple[int, ...]) -> StreamCase:
    return StreamCase(name, {"events": EVENTS}, batches, running_counts, "update", restarts)


def expected_updates(batches) -> dict[int, list[tuple]]:
    """Per batch id, the update-mode rows (k, n, total) of the keys that batch touched."""
    totals: dict[str, tuple[int, int]] = {}
    expected = {}
    for batch_id, batch in enumerate(batches):
        for row in batch["events"]:
            n, s = totals.get(row["k"], (0, 0))
            totals[row["k"]] = (n + 1, s + row["v"])
        expected[batch_id] = sorted(((k, *totals[k]) for k in {r["k"] for r in batch["events"]}), key=repr)
    return expected


def assert_exact_counts(output: RunOutput, batches) -> None:
    expected = expected_updates(batches)
    assert sorted(output.batches) == sorted(expected), (
        f"batch ids {sorted(output.batches)} emitted, {sorted(expected)} expected"
    )
    wrong = {b: (expected[b], output.batches[b]) for b in expected if output.batches[b] != expected[b]}
    assert not wrong, "batches with wrong counts (expected, emitted): " + "; ".join(
        f"batch {b}: {w}" for b, w in sorted(wrong.items())[:5]
    )


def snapshot_of_latest_uploaded(stores: list[StoreFiles]) -> bool:
    return all(s.latest in s.snapshots for s in stores)


# --------------------------------------------------------------------------------------------
# Snapshots and cleanup


SNAPSHOT_EVERY = 10
RETAIN = 20
LONG_RUN_BATCHES = 60


def test_sixty_batches_keep_exactly_what_min_batches_to_retain_needs_and_restart_from_a_snapshot(
    spark, candidate_provider, work_dir
):
    """60 batches, a snapshot every 10 versions, minBatchesToRetain=20: cleanup leaves the newest
    snapshot at or below latest-19 and the changelogs above it, nothing older; a restart loads from
    a snapshot and replays at most 10 changelogs per store, with exact counts."""
    batches = counting_batches(LONG_RUN_BATCHES + 1)
    case = counting_case("sixty_batches", batches, restarts=(LONG_RUN_BATCHES,))
    listings: list[list[StoreFiles]] = []

    def inspect(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            # The unload's maintenance uploads the snapshot of the last version and cleans up.
            listings.append(wait_for_quiet_checkpoint(checkpoint, snapshot_of_latest_uploaded))

    started = time.monotonic()
    output = run_case(
        spark, case, candidate_provider, work_dir,
        extra_conf={SNAPSHOT_INTERVAL_CONF: str(SNAPSHOT_EVERY), MIN_BATCHES_TO_RETAIN_CONF: str(RETAIN)},
        timeout_s=400, after_run=inspect,
    )
    print(f"sixty batches ran in {time.monotonic() - started:.1f}s")
    assert_exact_counts(output, batches)

    (stores,) = listings
    print(f"after {LONG_RUN_BATCHES} batches: {describe_listing(stores)}")
    assert len(stores) == 2, describe_listing(stores)
    # Off the interval only where Spark forced a snapshot (forceSnapshotOnCommit: its coordinator
    # saw a store's uploads lag), and each forced commit makes at most one.
    forced = sum(custom_metric(output.progress[b], "forceSnapshotCount") for b in output.run_batch_ids[0])
    off_interval = [v for store in stores for v in store.snapshots if v % SNAPSHOT_EVERY]
    assert len(off_interval) <= forced, (
        f"snapshots off the interval {off_interval}, but Spark forced {forced}: {describe_listing(stores)}")
    for store in stores:
        where = f"{store.path}: {describe_listing([store])}"
        latest = store.latest
        assert latest == LONG_RUN_BATCHES, where
        assert store.snapshots, f"no snapshot manifest: {where}"
        oldest_to_keep = latest - RETAIN + 1
        versions = sorted(store.changelogs)
        # Every version from latest-19 on stays loadable from its changelog (or a snapshot below it).
        assert set(range(oldest_to_keep, latest + 1)) <= set(versions), f"a retained changelog is missing: {where}"
        assert versions == list(range(versions[0], latest + 1)), f"changelogs have a gap: {where}"
        # Cleanup anchors on the newest snapshot at or below latest-19: nothing below it remains,
        # and everything above it does (its changelogs rebuild every retained version).
        anchors = [v for v in store.snapshots if v <= oldest_to_keep]
        assert anchors, f"no snapshot at or below version {oldest_to_keep}: {where}"
        anchor = max(anchors)
        # The anchor's own changelog may stay (it names the id a format-v1 load of that version checks).
        assert versions[0] in (anchor, anchor + 1), f"changelogs older than snapshot {anchor} remain: {where}"
        assert min(store.snapshots) == anchor, f"manifests older than snapshot {anchor} remain: {where}"
        assert store.stored, f"snapshot manifests but no stored files: {where}"

    restart_batch = LONG_RUN_BATCHES
    assert output.run_batch_ids[1] == [restart_batch], output.run_batch_ids
    progress = output.progress[restart_batch]
    replayed = custom_metric(progress, "txstateChangelogsReplayed")
    rebuilds = custom_metric(progress, "txstateRebuilds")
    metrics = json.dumps([op.get("customMetrics") for op in progress["stateOperators"]])
    print(f"restart batch metrics: {metrics}")
    # New providers (new run id) without a stable local dir rebuild each store from the checkpoint.
    assert rebuilds == len(stores), f"expected {len(stores)} rebuilds: {metrics}"
    assert replayed <= SNAPSHOT_EVERY * len(stores), f"replayed {replayed} changelogs: {metrics}"


# --------------------------------------------------------------------------------------------
# Damaged snapshots


def flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    assert len(data) > 16, f"{path} is too small to damage meaningfully ({len(data)} bytes)"
    for i in range(len(data) // 2, min(len(data) // 2 + 8, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_manifest(store: StoreFiles) -> str:
    newest = max(store.snapshots)
    (manifest,) = store.snapshots[newest]
    flip_bytes(manifest)
    return f"flipped bytes in {manifest.name}"


def damage_stored_file(store: StoreFiles) -> str:
    # Files uploaded after the previous snapshot's manifest was written belong to the newest
    # snapshot alone (files it shares with older snapshots were uploaded before). Truncate the
    # newest non-empty one of them, an .sst file if there is one.
    previous = sorted(store.snapshots)[-2]
    (previous_manifest,) = store.snapshots[previous]
    since = previous_manifest.stat().st_mtime_ns
    own = [p for p in store.stored if p.stat().st_mtime_ns > since and p.stat().st_size > 0]
    assert own, f"no file was uploaded for the newest snapshot: {describe_listing([store])}"
    newest = max(own, key=lambda p: (p.name.endswith(".sst"), p.stat().st_mtime_ns, p.name))
    size = newest.stat().st_size
    with newest.open("r+b") as f:
        f.truncate(size // 2)
    return f"truncated sst/{newest.name} from {size} to {size // 2} bytes"


@pytest.mark.parametrize("damage", [damage_manifest, damage_stored_file], ids=["manifest", "stored-file"])
def test_a_damaged_newest_snapshot_is_skipped_and_the_restart_stays_exact(
    spark, candidate_provider, work_dir, damage
):
    """With the newest snapshot of every store damaged (its manifest, or the newest file it
    references), the restarted query falls back to the snapshot before it and replays the
    changelogs above that one: the counts stay exact."""
    batches = counting_batches(9)
    case = counting_case("damaged_snapshot", batches, restarts=(8,))
    plan: dict[str, int] = {}
    done: list[str] = []

    def corrupt(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        stores = wait_for_quiet_checkpoint(checkpoint, snapshot_of_latest_uploaded)
        expected_replay = 0
        for store in stores:
            older = sorted(store.snapshots)[:-1]
            assert older, f"only one snapshot left, nothing to fall back to: {describe_listing([store])}"
            fallback = older[-1]
            assert set(range(fallback + 1, store.latest + 1)) <= set(store.changelogs), describe_listing([store])
            expected_replay += store.latest - fallback
            done.append(f"{store.path.name}: {damage(store)}")
        plan["replay"] = expected_replay
        plan["stores"] = len(stores)
        print(f"before damage: {describe_listing(stores)}; {done}")

    output = run_case(
        spark, case, candidate_provider, work_dir,
        extra_conf={SNAPSHOT_INTERVAL_CONF: "2", MIN_BATCHES_TO_RETAIN_CONF: "4"}, after_run=corrupt,
    )
    assert_exact_counts(output, batches)
    progress = output.progress[8]
    metrics = json.dumps([op.get("customMetrics") for op in progress["stateOperators"]])
    print(f"restart batch metrics: {metrics}")
    assert custom_metric(progress, "txstateRebuilds") == plan["stores"], metrics
    # Not the damaged snapshot (0 changelogs to replay) but the one before it.
    assert custom_metric(progress, "txstateChangelogsReplayed") == plan["replay"], f"{done}: {metrics}"


# --------------------------------------------------------------------------------------------
# A stable local directory


def wait_for_released_locks(local_dir: Path, timeout_s: float = UNLOAD_TIMEOUT_S) -> None:
    """Wait until Spark has unloaded the stopped query's providers, which release their dirs."""
    started = time.monotonic()
    first = held = held_locks(local_dir)
    while held:
        if time.monotonic() - started > timeout_s:
            raise AssertionError(f"store locks still held {timeout_s:.0f}s after the query stopped: {held}")
        time.sleep(0.25)
        held = held_locks(local_dir)
    print(f"{len(first)} store locks were held after the query stopped; all released after "
          f"{time.monotonic() - started:.1f}s")


@pytest.mark.parametrize("stable_local_dir", [True, False], ids=["stable-local-dir", "fresh-local-dir"])
def test_a_restarted_query_reuses_a_stable_local_dir_instead_of_rebuilding(
    spark, candidate_provider, work_dir, stable_local_dir
):
    """With txstate.localDir set, the providers of a new query run open the local RocksDB the
    previous run left (no rebuild, no replay); without it (the control) they rebuild.

    The new run's providers live in the same JVM: the test waits until Spark has unloaded the
    stopped run's providers (they release the store directories' file locks), as after a process
    restart; a provider that found its directory locked would fall back to a fresh one."""
    batches = counting_batches(6)
    case = counting_case("local_dir", batches, restarts=(5,))
    local_dir = work_dir / "local"
    conf = {LOCAL_DIR_CONF: str(local_dir) if stable_local_dir else None}

    def between_runs(run_index: int, checkpoint: Path) -> None:
        if run_index == 0 and stable_local_dir:
            instance_dirs = [p for p in local_dir.glob("txstate/*/op*-default") if p.is_dir()]
            assert len(instance_dirs) == 2, f"expected one local dir per store: {instance_dirs}"
            wait_for_released_locks(local_dir)

    output = run_case(spark, case, candidate_provider, work_dir, extra_conf=conf, after_run=between_runs)
    assert_exact_counts(output, batches)
    progress = output.progress[5]
    metrics = json.dumps([op.get("customMetrics") for op in progress["stateOperators"]])
    rebuilds = custom_metric(progress, "txstateRebuilds")
    if stable_local_dir:
        assert rebuilds == 0, f"the restarted providers rebuilt instead of reusing {local_dir}: {metrics}"
        assert custom_metric(progress, "txstateChangelogsReplayed") == 0, metrics
        assert not [p for p in local_dir.glob("txstate/*/*-*-*-*-*") if p.is_dir()], (
            "a provider fell back to a fresh directory: the stable one was locked"
        )
    else:
        assert rebuilds == 2, f"without a stable local dir both stores must rebuild: {metrics}"
