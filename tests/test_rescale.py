"""Rescaling a txstate query in place: `migrate CHECKPOINT --to txstate --partitions N`.

Each equivalence case runs its first three batches on txstate with one partition count, is
rescaled in place while stopped, and runs the rest, restarted unchanged (the session still names the
first count). The rescale adds one batch that reads no input (its state is the rescaled stores), so
the restarted query's batch ids are one higher than the reference's; otherwise every batch's rows
and state counts must equal those of the reference run on Spark's HDFS provider that never
rescaled. The files the original query loads must be left byte for byte as they were. Then
checkpoint format v2, undo, an interrupted switch, and SIGKILLs of the command line.

CI runs every case 3 -> 5 and two 5 -> 2; `TXSTATE_RESCALE_FULL=1` (`make test-rescale-full`) shrinks
every case too.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from harness.streaming_harness import (
    CHECKPOINT_FORMAT_CONF,
    HDFS_PROVIDER,
    TXSTATE_PROVIDER,
    RunOutput,
    assert_same_output,
    recorded_provider,
    run_case,
)
from test_migration import (
    CASES,
    KILL_POINTS,
    MANY_KEYS_CASE,
    first_run_only,
    kill_migration_when,
    shuffle_partitions_recorded,
)
from test_operator_equivalence import commit_log_checkpoint_ids, run_reference
from txstate_spark import MigrationReport, TxStateMigrationError, migrate

FULL = os.environ.get("TXSTATE_RESCALE_FULL") == "1"
SHRINK_CASES = tuple(CASES) if FULL else ("aggregation_update", "stream_stream_left_outer_join")
RESCALES = [(3, 5, name) for name in CASES] + [(5, 2, name) for name in SHRINK_CASES]
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def shifted(output: RunOutput, added_batch: int) -> RunOutput:
    """`output` with the batch ids after the rescale's added batch lowered by one, as a query that
    never rescaled numbers them."""
    def key(batch_id: int) -> int:
        assert batch_id != added_batch, f"batch {added_batch} was added by the rescale and never runs"
        return batch_id - 1 if batch_id > added_batch else batch_id

    return replace(output, batches={key(b): rows for b, rows in output.batches.items()},
                   state_progress={key(b): p for b, p in output.state_progress.items()},
                   progress={key(b): p for b, p in output.progress.items()})


def file_hashes(root: Path) -> dict[str, str]:
    """Every file under `root` (relative path -> SHA-256). The stopped query's providers may still
    be in their last maintenance (a snapshot through a temporary file, a cleanup): temporary files
    are left out, and a file deleted between the listing and its read is as if listed after."""
    hashes = {}
    for p in sorted(root.rglob("*")):
        if p.name.startswith(".") and (p.name.endswith(".tmp") or p.name.endswith(".tmp.crc")):
            continue
        try:
            if p.is_file():
                hashes[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
        except FileNotFoundError:
            continue
    return hashes


def store_files(checkpoint: Path) -> dict[str, str]:
    """The files of every store instance (state/<op>/<partition>/...), which the query loads."""
    return {name: digest for name, digest in file_hashes(checkpoint / "state").items()
            if name.split("/")[1].isdigit()}


def query_logs(checkpoint: Path) -> dict[str, str]:
    """The query's logs and Spark's operator metadata: what a rescale and its undo rewrite."""
    hashes = {f"{d}/{n}": h for d in ("offsets", "commits") for n, h in file_hashes(checkpoint / d).items()}
    hashes.update({n: h for n, h in file_hashes(checkpoint / "state").items() if "/_metadata/" in n})
    return hashes


def batches(checkpoint: Path, log: str) -> list[int]:
    return sorted(int(p.name) for p in (checkpoint / log).iterdir() if p.name.isdigit())


def assert_original_intact(before: dict[str, str], after: dict[str, str], version: int) -> None:
    """No store file of the original query was rewritten, and none of the `version` it loads next
    went. (Older versions may go: the stopped query's providers, released by migrate, run their
    last cleanup, which keeps only minBatchesToRetain versions.)"""
    rewritten = sorted(n for n, digest in before.items() if after.get(n, digest) != digest)
    assert not rewritten, f"files the original query wrote were rewritten: {rewritten[:10]}"
    gone = sorted(n for n in before if n not in after and Path(n).name.startswith((f"{version}.", f"{version}_")))
    assert not gone, f"files of version {version}, which the original query loads, went: {gone[:10]}"


def rescale_in_place(spark, checkpoint: Path, partitions: int) -> MigrationReport:
    """Rescale, and check that no file the original query loads was rewritten or removed."""
    before = store_files(checkpoint)
    last = batches(checkpoint, "commits")[-1]
    report = migrate(spark, str(checkpoint), to="txstate", partitions=partitions, active_window_seconds=0)
    assert_original_intact(before, store_files(checkpoint), last + 1)
    assert report.switched and report.rescale_batch == last + 1, report
    assert (batches(checkpoint, "offsets")[-1], batches(checkpoint, "commits")[-1]) == (last + 1, last + 1)
    assert shuffle_partitions_recorded(checkpoint) == partitions
    return report


@pytest.mark.parametrize("before,after,case_name", RESCALES, ids=[f"{b}-to-{a}-{c}" for b, a, c in RESCALES])
def test_a_query_rescaled_in_place_emits_what_the_unrescaled_reference_emits(spark, work_dir, before, after,
                                                                              case_name):
    case = CASES[case_name]
    reference = run_reference(spark, case, work_dir)
    reports: list[MigrationReport] = []

    def rescale(run_index: int, checkpoint: Path) -> None:
        if run_index == 0:
            reports.append(rescale_in_place(spark, checkpoint, after))
            operator_metadata = [json.loads(p.read_text().splitlines()[1])
                                 for p in (checkpoint / "state").glob("*/_metadata/metadata")]
            assert operator_metadata and all(store["numPartitions"] == after for m in operator_metadata
                                             for store in m["stateStoreInfo"])

    rescaled = run_case(spark, case, TXSTATE_PROVIDER, work_dir / "rescaled",
                        extra_conf={SHUFFLE_PARTITIONS: str(before)}, after_run=rescale)
    (report,) = reports
    assert (report.source, report.destination, report.partitions_from, report.partitions_to) == (
        "txstate", "txstate", before, after)
    assert_same_output(reference, shifted(rescaled, report.rescale_batch),
                       f"{case_name} rescaled in place {before} -> {after}")
    operators = rescaled.progress[max(rescaled.progress)]["stateOperators"]
    assert operators and all(op["numShufflePartitions"] in (after, 1) for op in operators), operators


def test_a_format_2_query_rescales_in_place_onto_new_checkpoint_ids(spark, work_dir):
    """Under checkpoint format v2 the new partitions land on ids of their own, which the added
    batch's commit entry names; the ids the query loaded until then stay as they were."""
    case = CASES["aggregation_update"]
    reference = run_reference(spark, case, work_dir)
    reports: list[MigrationReport] = []

    def rescale(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        old = commit_log_checkpoint_ids(checkpoint)
        reports.append(rescale_in_place(spark, checkpoint, 5))
        ids = commit_log_checkpoint_ids(checkpoint)
        added = reports[0].rescale_batch
        assert {b: i for b, i in ids.items() if b != added} == old
        (operator, partitions), = ids[added].items()
        assert len(partitions) == 5 and all(len(stores) == 1 for stores in partitions)
        used_before = {i for batch in old.values() for ps in batch.values() for stores in ps for i in stores}
        assert not used_before & {i for stores in partitions for i in stores}
        for partition, (store_id,) in enumerate(partitions):
            assert (checkpoint / "state" / operator / str(partition) / f"{added + 1}_{store_id}.txlog").is_file()

    rescaled = run_case(spark, case, TXSTATE_PROVIDER, work_dir / "rescaled",
                        extra_conf={SHUFFLE_PARTITIONS: "3", CHECKPOINT_FORMAT_CONF: "2"}, after_run=rescale)
    assert_same_output(reference, shifted(rescaled, reports[0].rescale_batch), "aggregation_update at format 2, 3 -> 5")


def test_undo_restores_the_original_checkpoint_exactly(spark, work_dir):
    case = CASES["dedup_with_watermark"]
    reference = run_reference(spark, case, work_dir)

    def rescale_then_undo(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        logs, stores = query_logs(checkpoint), store_files(checkpoint)
        last = rescale_in_place(spark, checkpoint, 5).last_committed_batch
        assert query_logs(checkpoint) != logs
        undone = migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)
        assert undone.action == "undo" and (undone.partitions_from, undone.partitions_to) == (5, 3)
        assert query_logs(checkpoint) == logs, "undo must restore the logs and operator metadata byte for byte"
        assert_original_intact(stores, store_files(checkpoint), last + 1)
        assert not [p for p in (checkpoint / "state" / "0").iterdir() if p.name in ("3", "4")], \
            "undo must remove the partitions the rescale created"
        with pytest.raises(TxStateMigrationError, match="NOTHING_TO_UNDO"):
            migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)

    output = run_case(spark, case, TXSTATE_PROVIDER, work_dir / "undone", extra_conf={SHUFFLE_PARTITIONS: "3"},
                      after_run=rescale_then_undo)
    assert_same_output(reference, output, "dedup_with_watermark rescaled in place, then undone")
    assert all(op["numShufflePartitions"] in (3, 1) for op in output.progress[max(output.progress)]["stateOperators"])


def test_a_switch_interrupted_between_its_two_writes_is_refused_then_undone(spark, work_dir):
    """The added batch's offset entry is written before its commit entry (the switch). A rescale
    stopped between the two leaves an unfinished batch with another partition count: migrate names
    it and `--undo` removes it, back to the original exactly."""
    case = CASES["aggregation_update"]
    reference = run_reference(spark, case, work_dir)

    def rescale_and_lose_the_commit(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        logs = query_logs(checkpoint)
        report = rescale_in_place(spark, checkpoint, 5)
        added = report.rescale_batch
        # What a kill right before the commit entry leaves: no commit entry, no switched marker.
        (checkpoint / "commits" / str(added)).unlink()
        (checkpoint / "commits" / f".{added}.crc").unlink(missing_ok=True)
        (Path(report.backup.removeprefix("file:")) / "switched.json").unlink()
        with pytest.raises(TxStateMigrationError, match=rf"INTERRUPTED_RESCALE.*batch {added}.*--undo"):
            migrate(spark, str(checkpoint), to="txstate", partitions=4, active_window_seconds=0)
        migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)
        assert query_logs(checkpoint) == logs

    output = run_case(spark, case, TXSTATE_PROVIDER, work_dir / "interrupted", extra_conf={SHUFFLE_PARTITIONS: "3"},
                      after_run=rescale_and_lose_the_commit)
    assert_same_output(reference, output, "aggregation_update after an interrupted rescale was undone")


def test_rescaling_in_place_on_spark_providers_is_refused_naming_the_way_that_works(spark, work_dir):
    run_case(spark, first_run_only(CASES["aggregation_update"]), HDFS_PROVIDER, work_dir)
    checkpoint = work_dir / "checkpoint"
    logs = query_logs(checkpoint)
    with pytest.raises(TxStateMigrationError, match="RESCALE_IN_PLACE.*--to txstate --partitions 4"):
        migrate(spark, str(checkpoint), to="hdfs", partitions=4, active_window_seconds=0)
    assert query_logs(checkpoint) == logs and not (checkpoint / "_txstate_migration").exists()


# --------------------------------------------------------------------------------------------
# SIGKILL of the command line during an in-place rescale (2 -> 3 partitions, 60,000 keys)


@pytest.fixture(scope="module")
def many_keys_reference(spark, tmp_path_factory):
    return run_case(spark, MANY_KEYS_CASE, HDFS_PROVIDER, tmp_path_factory.mktemp("many-keys-reference"))


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_a_killed_rescale_leaves_the_old_or_the_new_checkpoint_and_either_restarts_exactly(
        spark, work_dir, many_keys_reference, point):
    killed: list[str] = []
    outcome: list[str] = []

    def rescale_and_kill(run_index: int, checkpoint: Path) -> None:
        if run_index != 0:
            return
        last = batches(checkpoint, "commits")[-1]
        stores = store_files(checkpoint)
        killed.append(kill_migration_when(checkpoint, KILL_POINTS[point], extra_args=("--partitions", "3")))
        assert_original_intact(stores, store_files(checkpoint), last + 1)
        offsets, commits = batches(checkpoint, "offsets")[-1], batches(checkpoint, "commits")[-1]
        if commits == last + 1:
            outcome.append("new")
            assert shuffle_partitions_recorded(checkpoint) == 3
        elif offsets == last + 1:
            # Killed between the switch's two writes: named, then undone.
            outcome.append("interrupted, undone")
            with pytest.raises(TxStateMigrationError, match="INTERRUPTED_RESCALE"):
                migrate(spark, str(checkpoint), to="txstate", partitions=3, active_window_seconds=0)
            migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)
        else:
            outcome.append("old")
            assert (offsets, commits) == (last, last) and shuffle_partitions_recorded(checkpoint) == 2
            # What the killed copy wrote beside the original (partition 2's directory) goes with --undo.
            migrate(spark, str(checkpoint), undo=True, active_window_seconds=0)
            assert not (checkpoint / "state" / "0" / "2").exists()

    output = run_case(spark, MANY_KEYS_CASE, TXSTATE_PROVIDER, work_dir, after_run=rescale_and_kill)
    print(f"killed at {point}: {killed[0]}; checkpoint afterwards: {outcome[0]}")
    first_run_last = max(output.run_batch_ids[0])
    restarted = shifted(output, first_run_last + 1) if outcome[0] == "new" else output
    assert_same_output(many_keys_reference, restarted, f"restart after a rescale killed at {point} ({killed[0]})")
    assert recorded_provider(work_dir / "checkpoint") == TXSTATE_PROVIDER
