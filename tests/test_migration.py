"""Migration between state store providers: `txstate_spark.migrate` and `python -m txstate_spark migrate`.

Each equivalence case runs its first three batches on one provider, is migrated while stopped, and
runs the rest, restarted unchanged (the session still names the first provider), on the other.
Every batch's rows and state counts must equal those of the reference run on Spark's HDFS provider
that never migrated. Then the tool's refusals, its dry run, undo, and SIGKILLs of the command line
at several points of a migration.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from harness.streaming_harness import (
    CHECKPOINT_FORMAT_CONF,
    HDFS_PROVIDER,
    REPO_ROOT,
    ROCKSDB_PROVIDER,
    TXSTATE_PROVIDER,
    StreamCase,
    assert_same_output,
    event_time,
    recorded_provider,
    run_case,
)
from test_operator_equivalence import (
    EVENTS,
    FORMAT_V2_CASES,
    OPERATOR_CASES,
    check_keyed_update,
    commit_log_checkpoint_ids,
    keyed_aggregation,
    run_reference,
)
from txstate_spark import MigrationReport, TxStateMigrationError, migrate

PROVIDERS = {"txstate": TXSTATE_PROVIDER, "rocksdb": ROCKSDB_PROVIDER, "hdfs": HDFS_PROVIDER}
CASES = {case.name: case for case in OPERATOR_CASES}

# Every case moves hdfs -> txstate (Spark's default provider to ours: the common move); in CI one
# case per state shape (aggregation, dedup with eviction, session windows, the four stores of a
# join) also moves txstate -> rocksdb, rocksdb -> txstate and txstate -> hdfs, and is rescaled both
# ways below. `make test-migration-full` (TXSTATE_MIGRATION_FULL=1) runs every case in every
# direction and rescales every case.
FULL_MATRIX = os.environ.get("TXSTATE_MIGRATION_FULL") == "1"
_OTHER_DIRECTIONS_CASES = tuple(CASES) if FULL_MATRIX else FORMAT_V2_CASES
DIRECTIONS = (
    [("hdfs", "txstate", name) for name in CASES]
    + [("txstate", "rocksdb", name) for name in _OTHER_DIRECTIONS_CASES]
    + [("rocksdb", "txstate", name) for name in _OTHER_DIRECTIONS_CASES]
    + [("txstate", "hdfs", name) for name in _OTHER_DIRECTIONS_CASES]
)


def migrate_after_first_run(spark, to: str, reports: list[MigrationReport]) -> Callable[[int, Path], None]:
    def after_run(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            reports.append(migrate(spark, str(checkpoint), to=to, active_window_seconds=0))

    return after_run


@pytest.mark.parametrize("source,destination,case_name", DIRECTIONS,
                         ids=[f"{s}-to-{d}-{c}" for s, d, c in DIRECTIONS])
def test_a_migrated_query_emits_what_the_unmigrated_reference_emits(spark, work_dir, source, destination,
                                                                      case_name):
    case = CASES[case_name]
    reference = run_reference(spark, case, work_dir)
    reports: list[MigrationReport] = []
    migrated = run_case(spark, case, PROVIDERS[source], work_dir / "migrated",
                        after_run=migrate_after_first_run(spark, destination, reports),
                        expect_provider=PROVIDERS[destination])
    assert_same_output(reference, migrated, f"{case_name} migrated from {source} to {destination}")
    (report,) = reports
    assert report.switched and not report.dry_run
    assert (report.source, report.destination) == (source, destination)
    first_run = migrated.run_batch_ids[0]
    assert report.last_committed_batch == max(first_run)
    # Single-store operators: the rows moved are the state rows Spark counted after that batch.
    if len(report.stores) == 1:
        (operator,) = migrated.state_progress[report.last_committed_batch]
        assert report.rows == operator[1], (report, operator)


# --------------------------------------------------------------------------------------------
# Checkpoint format 2: the commit log names the checkpoint id each store partition loads. A query
# on Spark's RocksDB provider moves to txstate, whose copies take exactly those ids, so the commit
# log is left as it was and the restarted query loads the migrated stores by the logged ids.


@pytest.mark.parametrize("case_name", FORMAT_V2_CASES)
def test_a_format_2_query_moves_from_rocksdb_to_txstate_keeping_its_commit_log(spark, work_dir, case_name):
    case = CASES[case_name]
    reference = run_reference(spark, case, work_dir)
    reports: list[MigrationReport] = []

    def migrate_keeping_ids(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        before = commit_log_checkpoint_ids(checkpoint)
        reports.append(migrate(spark, str(checkpoint), to="txstate", active_window_seconds=0))
        assert commit_log_checkpoint_ids(checkpoint) == before, "the migration must not touch the commit log"
        last = reports[0].last_committed_batch
        assert before.get(last), f"commits/{last} names no checkpoint ids: {before}"
        # Each logged id of the migrated version names a txstate changelog (`<version>_<id>.txlog`).
        for operator, partitions in before[last].items():
            for partition, store_ids in enumerate(partitions):
                store_dir = checkpoint / "state" / operator / str(partition)
                names = {f.name for f in store_dir.rglob(f"{last + 1}_*.txlog")}
                assert {f"{last + 1}_{i}.txlog" for i in store_ids} <= names, (operator, partition, store_ids, names)

    migrated = run_case(spark, case, ROCKSDB_PROVIDER, work_dir / "migrated",
                        extra_conf={CHECKPOINT_FORMAT_CONF: "2"}, after_run=migrate_keeping_ids,
                        expect_provider=TXSTATE_PROVIDER)
    # The restarted query loaded the migrated stores by the logged ids and ran on exactly their state.
    assert_same_output(reference, migrated, f"{case_name} at format 2 migrated from rocksdb to txstate")
    assert len(reports) == 1


def test_a_format_2_query_is_refused_where_the_destination_cannot_take_the_logged_ids(spark, work_dir):
    run_case(spark, first_run_only(CASES["aggregation_update"]), TXSTATE_PROVIDER, work_dir,
             extra_conf={CHECKPOINT_FORMAT_CONF: "2"})
    checkpoint = str(work_dir / "checkpoint")
    with pytest.raises(TxStateMigrationError, match="CHECKPOINT_FORMAT.*rocksdb cannot take given ids"):
        migrate(spark, checkpoint, to="rocksdb", active_window_seconds=0)
    with pytest.raises(TxStateMigrationError, match="CHECKPOINT_FORMAT.*hdfs cannot take given ids"):
        migrate(spark, checkpoint, to="hdfs", active_window_seconds=0)
    assert recorded_provider(work_dir / "checkpoint") == TXSTATE_PROVIDER


# --------------------------------------------------------------------------------------------
# Rescaling: a case grows from 3 to 5 partitions on its way to txstate, and shrinks from 5 to 2 on
# its way from txstate to Spark's RocksDB provider. The session keeps its first partition count;
# Spark takes the new one from the checkpoint, so the restart needs no other change. CI rescales one
# case per state shape both ways; `make test-migration-full` rescales every case.

_RESCALED_CASES = tuple(CASES) if FULL_MATRIX else FORMAT_V2_CASES
RESCALES = (
    [("hdfs", "txstate", 3, 5, name) for name in _RESCALED_CASES]
    + [("txstate", "rocksdb", 5, 2, name) for name in _RESCALED_CASES]
)


def shuffle_partitions_recorded(checkpoint: Path) -> int:
    newest = max((p for p in (checkpoint / "offsets").glob("[0-9]*") if p.name.isdigit()), key=lambda p: int(p.name))
    metadata = next(json.loads(line) for line in newest.read_text().splitlines() if '"conf"' in line)
    return int(metadata["conf"]["spark.sql.shuffle.partitions"])


@pytest.mark.parametrize("source,destination,before,after,case_name", RESCALES,
                         ids=[f"{s}-to-{d}-{b}-to-{a}-{c}" for s, d, b, a, c in RESCALES])
def test_a_rescaled_query_emits_what_the_unmigrated_reference_emits(spark, work_dir, source, destination, before,
                                                                     after, case_name):
    case = CASES[case_name]
    reference = run_reference(spark, case, work_dir)
    reports: list[MigrationReport] = []

    def rescale(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            reports.append(migrate(spark, str(checkpoint), to=destination, partitions=after,
                                   active_window_seconds=0))
            assert shuffle_partitions_recorded(checkpoint) == after
            operator_metadata = [json.loads(p.read_text().splitlines()[1])
                                 for p in (checkpoint / "state").glob("*/_metadata/metadata")]
            assert operator_metadata and all(store["numPartitions"] == after for m in operator_metadata
                                             for store in m["stateStoreInfo"])

    rescaled = run_case(spark, case, PROVIDERS[source], work_dir / "rescaled",
                        extra_conf={"spark.sql.shuffle.partitions": str(before)}, after_run=rescale,
                        expect_provider=PROVIDERS[destination])
    assert_same_output(reference, rescaled, f"{case_name} rescaled {before} -> {after} on the way to {destination}")
    (report,) = reports
    assert (report.partitions_from, report.partitions_to) == (before, after)
    # The batches after the restart ran their stateful operators on the new partition count.
    last_batch = max(rescaled.progress)
    operators = rescaled.progress[last_batch]["stateOperators"]
    assert operators and all(op["numShufflePartitions"] in (after, 1) for op in operators), operators


# --------------------------------------------------------------------------------------------
# Refusals, dry run, undo


def first_run_only(case: StreamCase) -> StreamCase:
    """The case's batches up to its first restart, as a case of one run."""
    return StreamCase(case.name, case.sources, case.batches[: case.restarts[0]], case.build, case.output_mode, ())


def checkpoint_digest(checkpoint: Path) -> dict[str, str]:
    """Every file's hash, except the HDFS provider's own state files and their temporary files: the
    stopped query's providers stay loaded in this session, and Spark's maintenance thread may still
    write (and rename) snapshots while this runs."""
    digest = {}
    for p in sorted(checkpoint.rglob("*")):
        if (not p.is_file() or p.name.endswith((".snapshot", ".snapshot.crc", ".delta", ".delta.crc"))
                or ".tmp" in p.name):  # `..4.snapshot.<uuid>.tmp.crc` and the like, renamed away soon
            continue
        try:
            digest[str(p.relative_to(checkpoint))] = hashlib.sha256(p.read_bytes()).hexdigest()
        except FileNotFoundError:  # a maintenance temp file renamed away meanwhile
            continue
    return digest


def test_dry_run_counts_rows_and_changes_nothing(spark, work_dir):
    case = first_run_only(CASES["stream_stream_left_outer_join"])
    output = run_case(spark, case, HDFS_PROVIDER, work_dir)
    checkpoint = work_dir / "checkpoint"
    before = checkpoint_digest(checkpoint)
    report = migrate(spark, str(checkpoint), to="txstate", dry_run=True, active_window_seconds=0)
    assert report.dry_run and not report.switched and report.backup is None
    assert checkpoint_digest(checkpoint) == before
    assert sorted(s.store_name for s in report.stores) == [
        "left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"]
    assert report.rows > 0
    assert recorded_provider(checkpoint) == HDFS_PROVIDER
    assert output.batches


def test_a_running_query_is_refused(spark, work_dir):
    source = work_dir / "input"
    source.mkdir()
    (source / "batch-0.json").write_text(json.dumps({"k": "a", "v": 1, "ts": event_time(1)}) + "\n")
    checkpoint = work_dir / "checkpoint"
    query = (keyed_aggregation({"events": spark.readStream.schema(EVENTS).json(str(source))})
             .writeStream.outputMode("update").format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="1 second").start())
    try:
        deadline = time.time() + 60
        while not list((checkpoint / "commits").glob("[0-9]*")) and time.time() < deadline:
            time.sleep(0.2)
        with pytest.raises(TxStateMigrationError, match=r"TXSTATE_MIGRATION_QUERY_ACTIVE.*looks active"):
            migrate(spark, str(checkpoint), to="txstate")
    finally:
        query.stop()
    assert recorded_provider(checkpoint) != TXSTATE_PROVIDER


def test_uncommitted_offsets_are_refused_then_the_batch_reruns_on_the_destination(spark, work_dir):
    case = CASES["aggregation_update"]
    reports: list[MigrationReport] = []

    def lose_the_last_commit_then_migrate(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        last = max(int(p.name) for p in (checkpoint / "commits").glob("[0-9]*"))
        (checkpoint / "commits" / str(last)).unlink()
        (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
        with pytest.raises(TxStateMigrationError, match=rf"UNCOMMITTED_OFFSETS.*batch\(es\) {last} without a commit"):
            migrate(spark, str(checkpoint), to="txstate", active_window_seconds=0)
        assert recorded_provider(checkpoint) == HDFS_PROVIDER
        reports.append(migrate(spark, str(checkpoint), to="txstate", active_window_seconds=0,
                               rollback_uncommitted=True))
        assert reports[0].rerun_batch == last and reports[0].last_committed_batch == last - 1
        assert recorded_provider(checkpoint) == TXSTATE_PROVIDER

    # The harness fails the query if the re-run batch delivers rows different from its first run:
    # the unfinished batch must repeat with the same id and the same input on txstate.

    output = run_case(spark, case, HDFS_PROVIDER, work_dir, after_run=lose_the_last_commit_then_migrate,
                      expect_provider=TXSTATE_PROVIDER)
    # Every key's final totals are still exact.
    check_keyed_update(output)


def test_undo_puts_the_query_back_on_its_provider(spark, work_dir):
    case = CASES["dedup_with_watermark"]
    reference = run_reference(spark, case, work_dir)

    def migrate_then_undo(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            metadata = checkpoint / "state" / "0" / "_metadata" / "metadata"
            original_metadata = metadata.read_text()
            migrate(spark, str(checkpoint), to="txstate", partitions=3, active_window_seconds=0)
            assert recorded_provider(checkpoint) == TXSTATE_PROVIDER
            assert shuffle_partitions_recorded(checkpoint) == 3 and metadata.read_text() != original_metadata
            undone = migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)
            assert undone.action == "undo" and undone.destination == "hdfs"
            assert shuffle_partitions_recorded(checkpoint) == 2 and metadata.read_text() == original_metadata
            with pytest.raises(TxStateMigrationError, match="NOTHING_TO_UNDO"):
                migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)

    output = run_case(spark, case, HDFS_PROVIDER, work_dir / "undone", after_run=migrate_then_undo)
    assert_same_output(reference, output, "dedup_with_watermark migrated and rescaled, then undone")


def test_transform_with_state_is_refused_naming_the_operator(spark, work_dir):
    """transformWithState runs only on Spark's RocksDB provider (Spark refuses any other class), and
    its state lives in column families described by its own schema files: the tool refuses it,
    before changing anything."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Counter(StatefulProcessor):
        def init(self, handle) -> None:
            self.count = handle.getValueState("count", "n long")

        def handleInputRows(self, key, rows, timerValues):
            n = (self.count.get()[0] if self.count.exists() else 0) + sum(len(batch) for batch in rows)
            self.count.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self) -> None:
            pass

    source = work_dir / "input"
    source.mkdir()
    (source / "batch-0.json").write_text("".join(json.dumps({"k": k, "v": 1, "ts": event_time(1)}) + "\n"
                                                  for k in "abca"))
    checkpoint = work_dir / "checkpoint"
    previous = spark.conf.get("spark.sql.streaming.stateStore.providerClass")
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
    try:
        query = (spark.readStream.schema(EVENTS).json(str(source)).groupBy("k")
                 .transformWithStateInPandas(statefulProcessor=Counter(), outputStructType="k string, n long",
                                             outputMode="Update", timeMode="None")
                 .writeStream.outputMode("update").format("noop").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination(180)
        assert query.exception() is None, query.exception()
    finally:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", previous)
    before = checkpoint_digest(checkpoint)
    with pytest.raises(TxStateMigrationError, match=r"UNSUPPORTED_OPERATOR.*transformWithState"):
        migrate(spark, str(checkpoint), to="txstate", active_window_seconds=0)
    assert checkpoint_digest(checkpoint) == before
    assert not (checkpoint / "_txstate_migration").exists()


def test_migrating_to_the_provider_in_use_is_refused(spark, work_dir):
    """Without --partitions there is nothing to do (rescaling in place is tests/test_rescale.py's)."""
    run_case(spark, first_run_only(CASES["aggregation_update"]), TXSTATE_PROVIDER, work_dir)
    with pytest.raises(TxStateMigrationError, match="NOTHING_TO_DO.*already runs on txstate"):
        migrate(spark, str(work_dir / "checkpoint"), to="txstate", active_window_seconds=0)
    with pytest.raises(TxStateMigrationError, match="BAD_ARGUMENT.*--partitions must be between 1"):
        migrate(spark, str(work_dir / "checkpoint"), to="hdfs", partitions=0, active_window_seconds=0)


# --------------------------------------------------------------------------------------------
# SIGKILL of the command line during a migration

KEYS = 60_000
MANY_KEYS = [
    {"events": [{"k": f"key{i:06d}", "v": i % 7, "ts": event_time(i % 100)} for i in range(KEYS)]},
    {"events": [{"k": f"key{i:06d}", "v": 1, "ts": event_time(200)} for i in range(0, KEYS, 3)]},
    {"events": [{"k": f"key{i:06d}", "v": 2, "ts": event_time(300)} for i in range(0, KEYS, 5)]},
    {"events": [{"k": f"new{i:03d}", "v": 3, "ts": event_time(400)} for i in range(50)]},
]
MANY_KEYS_CASE = StreamCase("many_keys_aggregation", {"events": EVENTS}, MANY_KEYS, keyed_aggregation, "update",
                            (2,))

# When to kill, by the command line's progress lines: once it has written its plan and started
# copying, once it has copied one of the two partitions, and once it reports the switch.
KILL_POINTS = {
    "copying": lambda p: p.get("phase") == "copy",
    "one-partition-copied": lambda p: p.get("phase") == "copy" and p.get("done", 0) >= 1,
    "switching": lambda p: p.get("phase") in ("switch", "done"),
}


def kill_migration_when(checkpoint: Path, point: Callable[[dict], bool], timeout_s: float = 120,
                        extra_args: tuple[str, ...] = ()) -> str:
    """Run the command line's migration to txstate (with `extra_args`, e.g. `--partitions 3`); SIGKILL
    it when `point` holds. Returns the phase it was killed in ('finished' if it ended first)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "python")}
    process = subprocess.Popen(
        [sys.executable, "-m", "txstate_spark", "migrate", str(checkpoint), "--to", "txstate",
         "--active-window", "0", *extra_args],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, start_new_session=True)
    deadline = time.time() + timeout_s
    killed_in = "finished"
    assert process.stderr is not None
    for line in process.stderr:
        if time.time() > deadline:
            break
        if not line.startswith("{"):
            continue
        progress = json.loads(line)
        if point(progress):
            os.killpg(process.pid, signal.SIGKILL)
            killed_in = f"{progress.get('phase')} {progress.get('done')}/{progress.get('total')}"
            break
    process.wait(timeout=60)
    return killed_in


@pytest.fixture(scope="module")
def many_keys_reference(spark, tmp_path_factory):
    return run_case(spark, MANY_KEYS_CASE, HDFS_PROVIDER, tmp_path_factory.mktemp("many-keys-reference"))


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_killed_migration_leaves_a_checkpoint_that_restarts_exactly(spark, work_dir, many_keys_reference, point):
    killed: list[str] = []
    providers_after: list[str | None] = []

    def migrate_and_kill(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            killed.append(kill_migration_when(checkpoint, KILL_POINTS[point]))
            providers_after.append(recorded_provider(checkpoint))

    output = run_case(spark, MANY_KEYS_CASE, HDFS_PROVIDER, work_dir, after_run=migrate_and_kill,
                      expect_provider=(HDFS_PROVIDER, TXSTATE_PROVIDER))
    print(f"killed at {point}: {killed[0]}; provider afterwards: {providers_after[0]}")
    assert providers_after[0] in (HDFS_PROVIDER, TXSTATE_PROVIDER)
    assert_same_output(many_keys_reference, output, f"restart after a migration killed at {point} ({killed[0]})")
