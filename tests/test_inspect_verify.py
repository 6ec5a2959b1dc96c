"""`inspect` and `verify` (txstate_spark.inspect / verify, python -m txstate_spark inspect|verify).

One real streaming aggregation on txstate builds a checkpoint with snapshots, shared SST files and
a cleanup (minBatchesToRetain=3); short runs on Spark's HDFS and RocksDB providers build theirs.
Every case of the corruption matrix damages its own copy of the txstate checkpoint and runs verify
in this process's JVM. The checkpoint's bytes must be identical after inspect and verify.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from contextlib import redirect_stdout
from pathlib import Path
from typing import Callable

import pytest

from harness.streaming_harness import (
    CHECKPOINT_FORMAT_CONF,
    HDFS_PROVIDER,
    ROCKSDB_PROVIDER,
    TXSTATE_PROVIDER,
    copy_of_stopped,
    list_checkpoint,
    run_case,
    wait_for_quiet_checkpoint,
)
from test_operator_equivalence import OPERATOR_CASES
from test_snapshots_and_recovery import KEYS, counting_batches, counting_case
from txstate_spark import TxStateCheckpointError, inspect, verify
from txstate_spark.cli import main

BATCHES = 8
RETAIN = 3  # the harness's spark.sql.streaming.minBatchesToRetain, which Spark does not record
# Early commits after 2 uncommitted entries: each batch's 5 rows leave early-commit segments (.txseg).
EARLY_COMMIT_CONF = "spark.sql.streaming.stateStore.txstate.maxUncommittedRecords"


@pytest.fixture(scope="module")
def txstate_checkpoint(spark, tmp_path_factory) -> Path:
    """8 batches on txstate: snapshots every 2 versions, cleanup below the anchor snapshot, early commits."""
    work_dir = tmp_path_factory.mktemp("inspect-txstate")
    case = counting_case("inspect_txstate", counting_batches(BATCHES), restarts=())
    run_case(spark, case, TXSTATE_PROVIDER, work_dir, extra_conf={EARLY_COMMIT_CONF: "2"},
             after_run=lambda _, cp: wait_for_quiet_checkpoint(
                 cp, lambda stores: all(s.latest in s.snapshots and min(s.changelogs) > 1 for s in stores)))
    return work_dir / "checkpoint"


def spark_provider_checkpoint(spark, tmp_path_factory, provider: str, name: str) -> Path:
    """A copy of a stopped query's checkpoint on `provider`: Spark's maintenance of the stopped
    query's providers may still write into the original (on the HDFS provider, a snapshot through a
    temporary file), and the tests compare the bytes before and after inspect and verify."""
    work_dir = tmp_path_factory.mktemp(f"inspect-{name}")
    run_case(spark, counting_case(f"inspect_{name}", counting_batches(4), restarts=()), provider, work_dir)
    return copy_of_stopped(work_dir / "checkpoint", work_dir / "stopped-copy")


def checkpoint_hash(root: Path) -> str:
    """Every file's relative name, size, modification time and bytes, and every directory's name."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}|{path.is_dir()}|{stat.st_mtime_ns}".encode())
        if path.is_file():
            digest.update(f"|{stat.st_size}|".encode() + path.read_bytes())
    return digest.hexdigest()


def run_cli(*argv: str) -> tuple[int, str]:
    """python -m txstate_spark in this process (it uses the active test session's JVM)."""
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


# --------------------------------------------------------------------------------------------
# inspect


def test_inspect_reports_the_keys_each_partition_holds_and_the_load_chain(spark, txstate_checkpoint):
    result = inspect(spark, str(txstate_checkpoint))
    assert result.provider == "txstate" and result.checkpoint_format == 1
    assert result.last_committed_batch == BATCHES - 1 and result.state_version == BATCHES
    (store,) = result.stores
    assert (store.operator_id, store.store_name, store.num_partitions) == (0, "default", 2)
    # What the stores hold, read through Spark: the txstate data source, one row per key.
    rows = spark.read.format("txstate").load(str(txstate_checkpoint)).collect()
    assert store.keys == len(rows) == len(KEYS)
    held = {p: sum(1 for r in rows if r.partition_id == p) for p in (0, 1)}
    assert {p.partition: p.keys for p in store.partitions} == held
    for p in store.partitions:
        assert p.chain is not None and p.chain.problem is None, p
        assert p.chain.snapshot_version == BATCHES, p.chain  # the unload's maintenance snapshots the last version
        assert p.storage_format == 2 and p.changelog_format == 3 and p.written_by
        assert p.snapshot_bytes > 0 and p.shared_file_bytes > 0 and p.changelog_bytes > 0
        assert p.newest_version == BATCHES and p.newest_write_ms is not None
    assert store.skew is not None and not store.skew.flagged
    assert any("oldest write" in c for c in store.cannot_read)


@pytest.mark.parametrize("provider,name", [(HDFS_PROVIDER, "hdfs"), (ROCKSDB_PROVIDER, "rocksdb")])
def test_inspect_reads_spark_providers_files_and_says_what_it_cannot(spark, tmp_path_factory, provider, name):
    checkpoint = spark_provider_checkpoint(spark, tmp_path_factory, provider, name)
    before = checkpoint_hash(checkpoint)
    result = inspect(spark, str(checkpoint))
    assert result.provider == name and result.last_committed_batch == 3
    (store,) = result.stores
    assert store.operator_id == 0 and store.keys is None and store.cannot_read
    for p in store.partitions:
        assert p.total_bytes > 0 and p.newest_version == 4, p
        assert p.chain is not None and p.chain.problem is None and p.keys is None, p
    status, text = run_cli("verify", str(checkpoint))
    assert status == 0 and "not checked" in text, text
    assert checkpoint_hash(checkpoint) == before


def test_a_format_v2_checkpoint_is_read_at_the_ids_its_commit_log_names(spark, tmp_path_factory):
    work_dir = tmp_path_factory.mktemp("inspect-v2")
    run_case(spark, counting_case("inspect_v2", counting_batches(4), restarts=(2,)), TXSTATE_PROVIDER, work_dir,
             extra_conf={CHECKPOINT_FORMAT_CONF: "2"})
    checkpoint = work_dir / "checkpoint"
    result = inspect(spark, str(checkpoint))
    assert result.checkpoint_format == 2 and result.state_version == 4
    (store,) = result.stores
    assert all(p.chain is not None and p.chain.problem is None and not p.unreadable for p in store.partitions), store
    found = verify(spark, str(checkpoint), min_batches_to_retain=RETAIN, deep=True)
    assert found.sound, found.findings
    assert all(c.deep is not None and c.deep.matches for c in found.checked), found.checked


def test_a_join_lists_its_four_stores_by_operator_id_and_verifies_sound(spark, tmp_path_factory):
    (join,) = [c for c in OPERATOR_CASES if c.name == "stream_stream_inner_join"]
    work_dir = tmp_path_factory.mktemp("inspect-join")
    run_case(spark, join, TXSTATE_PROVIDER, work_dir)
    result = inspect(spark, str(work_dir / "checkpoint"))
    stores = {(s.operator_id, s.store_name) for s in result.stores}
    assert stores == {(0, f"{side}-{kind}") for side in ("left", "right") for kind in ("keyToNumValues",
                                                                                      "keyWithIndexToValue")}
    assert all(p.keys is not None and p.chain.problem is None for s in result.stores for p in s.partitions)
    found = verify(spark, str(work_dir / "checkpoint"), min_batches_to_retain=RETAIN)
    assert found.sound and len(found.checked) == 8, found.findings


def test_inspect_cli_prints_a_table_and_json(spark, txstate_checkpoint):
    status, table = run_cli("inspect", str(txstate_checkpoint))
    assert status == 0 and "operator 0 (" in table and "load chain" in table, table
    print(table)
    status, text = run_cli("inspect", str(txstate_checkpoint), "--json")
    assert status == 0 and '"operatorId": 0' in text


def test_a_path_that_is_no_checkpoint_is_refused_with_exit_status_2(spark, tmp_path):
    with pytest.raises(TxStateCheckpointError, match="TXSTATE_OPERATE_NOT_A_CHECKPOINT"):
        inspect(spark, str(tmp_path / "absent"))
    assert run_cli("verify", str(tmp_path))[0] == 2


# --------------------------------------------------------------------------------------------
# verify


def test_inspect_and_verify_leave_every_byte_of_the_checkpoint_as_it_was(spark, txstate_checkpoint):
    before = checkpoint_hash(txstate_checkpoint)
    inspect(spark, str(txstate_checkpoint))
    sound = verify(spark, str(txstate_checkpoint), min_batches_to_retain=RETAIN)
    deep = verify(spark, str(txstate_checkpoint), min_batches_to_retain=RETAIN, deep=True)
    assert checkpoint_hash(txstate_checkpoint) == before
    assert sound.sound and deep.sound, (sound.findings, deep.findings)
    assert all(c.loadable == RETAIN for c in sound.checked), sound.checked
    for check in deep.checked:
        assert check.deep is not None and check.deep.matches and check.deep.keys > 0, check


def test_verify_of_an_undamaged_checkpoint_exits_0(spark, txstate_checkpoint):
    status, text = run_cli("verify", str(txstate_checkpoint), "--min-batches-to-retain", str(RETAIN))
    assert status == 0 and ": sound (" in text, text


RETENTION_RECORD = "cleanup.retention.txstate"


def test_verify_and_inspect_with_no_options_keep_to_the_retention_the_querys_cleanup_recorded(spark, txstate_checkpoint):
    """Spark does not record minBatchesToRetain; txstate's cleanup records the retention it deletes under."""
    partitions = [p for p in _store_dir(txstate_checkpoint).parent.iterdir() if p.name.isdigit()]
    assert partitions and all((p / RETENTION_RECORD).is_file() for p in partitions), partitions
    result = verify(spark, str(txstate_checkpoint))
    assert result.sound and result.min_batches_to_retain == RETAIN, result.findings
    assert inspect(spark, str(txstate_checkpoint)).min_batches_to_retain == RETAIN
    status, text = run_cli("verify", str(txstate_checkpoint))
    assert status == 0 and ": sound (" in text, text


def test_a_damaged_retention_record_is_named_and_no_state_is_called_lost(spark, txstate_checkpoint, tmp_path):
    copy = tmp_path / "checkpoint"
    shutil.copytree(txstate_checkpoint, copy)
    record = _store_dir(copy) / RETENTION_RECORD
    _flip(record)
    result = verify(spark, str(copy))
    named = [f for f in result.findings if Path(f.path).name == record.name and f"/{record.parent.name}/" in f.path]
    assert len(named) == 1 and "[TXSTATE_CORRUPT_RETENTION_RECORD]" in named[0].problem, result.findings
    assert "no state is lost" in named[0].consequence
    # The other partition's record still says what the query keeps.
    assert result.min_batches_to_retain == RETAIN


def _store_dir(checkpoint: Path) -> Path:
    return next(s.path for s in list_checkpoint(checkpoint))


def _changelog(store: Path) -> Path:
    """The changelog of the newest version that has no snapshot: the chain of that version reads it."""
    files = list_checkpoint(store.parents[2])[0]
    version = max(v for v in files.changelogs if v not in files.snapshots)
    return files.changelogs[version][0]


def _manifest(store: Path) -> Path:
    """The anchor snapshot's manifest: no changelog is left below it, so every older retained version needs it."""
    files = list_checkpoint(store.parents[2])[0]
    return files.snapshots[min(files.snapshots)][0]


def _stored_file(store: Path) -> Path:
    """The newest SST file: the newest snapshot lists it (stored files of older, cleaned-up snapshots
    stay unreferenced for cleanup's grace period, and damage to them harms nothing)."""
    return max((p for p in (store / "sst").iterdir() if p.name.endswith(".sst")), key=lambda p: p.stat().st_mtime_ns)


def _segment(store: Path) -> Path:
    """An early-commit segment of the newest version that has no snapshot: its load replays it."""
    changelog = _changelog(store)
    version = changelog.name.split(".")[0].split("_")[0]
    return sorted(store.glob(f"{version}_*-*.txseg"))[0]


def _schema_file(store: Path) -> Path:
    """The store's schema file beside its partitions (state/<op>/_txstate/<store>.schema.json)."""
    return store.parent / "_txstate" / "default.schema.json"


TARGETS: dict[str, Callable[[Path], Path]] = {"changelog": _changelog, "segment": _segment, "manifest": _manifest,
                                             "sst": _stored_file, "schema": _schema_file}


def _another_of_its_kind(target: Path) -> Path:
    """Another file of the same kind: what an older copy put back in its place holds."""
    suffix = target.suffix
    siblings = [p for p in target.parent.iterdir() if p != target and p.suffix == suffix and p.is_file()]
    return max(siblings, key=lambda p: p.stat().st_size)


def _flip(target: Path) -> None:
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x5A
    target.write_bytes(bytes(data))


DAMAGES: dict[str, Callable[[Path], None]] = {
    "flip": _flip,
    "truncate": lambda t: t.write_bytes(t.read_bytes()[: t.stat().st_size // 2]),
    "delete": lambda t: t.unlink(),
    "older": lambda t: t.write_bytes(_another_of_its_kind(t).read_bytes()),
    "empty": lambda t: t.write_bytes(b""),
}


# A store has one schema file: there is no other one to put in its place.
MATRIX = [(kind, damage) for kind in TARGETS for damage in DAMAGES if (kind, damage) != ("schema", "older")]


@pytest.mark.parametrize("kind,damage", MATRIX, ids=[f"{d}-{k}" for k, d in MATRIX])
def test_verify_names_every_damaged_file_of_the_corruption_matrix(spark, txstate_checkpoint, tmp_path, kind, damage):
    copy = tmp_path / "checkpoint"
    shutil.copytree(txstate_checkpoint, copy)
    target = TARGETS[kind](_store_dir(copy))
    DAMAGES[damage](target)
    before = checkpoint_hash(copy)
    result = verify(spark, str(copy), min_batches_to_retain=RETAIN)
    assert not result.sound, f"{damage} of {target} went unnoticed"
    named = [f for f in result.findings if Path(f.path).name == target.name]
    assert named, f"{damage} of {target}: no finding names it: {result.findings}"
    assert all(f.consequence for f in named)
    assert checkpoint_hash(copy) == before
    if damage == "delete" and kind != "sst":
        status, text = run_cli("verify", str(copy), "--min-batches-to-retain", str(RETAIN))
        assert status == 1 and target.name in text and "what Spark does" in text, text
