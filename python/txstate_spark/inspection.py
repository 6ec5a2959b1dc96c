"""``inspect()``: what a streaming query's checkpoint holds, operator by operator and partition by partition.

The reading happens in the driver JVM (``txstate.operate.Inspector``, in the txstate-spark jar),
through a read-only view of the checkpoint's file system. See docs/inspect-verify.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from txstate_spark.jvm_gateway import ProgressCallback, call_operate, session_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class LoadChain:
    """What a load of the newest version uses: a snapshot (None: an empty store), then changelogs."""

    snapshot_version: Optional[int]
    changelog_versions: Tuple[int, ...]
    problem: Optional[str]
    describe: str


@dataclass(frozen=True)
class PartitionInspection:
    """One store partition. ``keys``, formats and times are known for txstate stores only."""

    partition: int
    dir: str
    keys: Optional[int]
    snapshot_bytes: int
    shared_file_bytes: int
    changelog_bytes: int
    other_bytes: int
    total_bytes: int
    files: int
    oldest_version: Optional[int]
    newest_version: Optional[int]
    chain: Optional[LoadChain]
    storage_format: Optional[int]
    changelog_format: Optional[int]
    written_by: Optional[str]
    commit_time_ms: Optional[int]
    newest_write_ms: Optional[int]
    unreadable: Tuple[str, ...]


@dataclass(frozen=True)
class Skew:
    """The largest partition against the median (by ``measure``: keys or bytes); ``advice`` when flagged."""

    measure: str
    largest_partition: int
    largest: int
    median: int
    ratio: float
    flagged: bool
    advice: Optional[str]


@dataclass(frozen=True)
class StoreInspection:
    """One store of one stateful operator; ``operator_id`` is what per-operator settings name."""

    operator_id: int
    operator_name: str
    store_name: str
    provider: str
    num_partitions: Optional[int]
    keys: Optional[int]
    partitions: Tuple[PartitionInspection, ...]
    skew: Optional[Skew]
    cannot_read: Tuple[str, ...]


@dataclass(frozen=True)
class CheckpointInspection:
    """Everything ``inspect`` reports; ``state_version`` is the version a restart loads."""

    checkpoint: str
    provider_class: Optional[str]
    provider: str
    checkpoint_format: int
    last_committed_batch: Optional[int]
    last_commit_time_ms: Optional[int]
    state_version: int
    min_batches_to_retain: int
    stores: Tuple[StoreInspection, ...]
    notes: Tuple[str, ...]
    elapsed_ms: int
    raw: Dict[str, Any]

    @staticmethod
    def from_json(text: str) -> "CheckpointInspection":
        raw = json.loads(text)
        return CheckpointInspection(
            raw["checkpoint"], raw["providerClass"], raw["provider"], raw["checkpointFormat"],
            raw["lastCommittedBatch"], raw["lastCommitTimeMs"], raw["stateVersion"], raw["minBatchesToRetain"],
            tuple(_store(s) for s in raw["stores"]), tuple(raw["notes"]), raw["elapsedMs"], raw)


def _store(s: Dict[str, Any]) -> StoreInspection:
    skew = s["skew"]
    return StoreInspection(
        s["operatorId"], s["operatorName"], s["storeName"], s["provider"], s["numPartitions"], s["keys"],
        tuple(_partition(p) for p in s["partitions"]),
        None if skew is None else Skew(skew["measure"], skew["largestPartition"], skew["largest"], skew["median"],
                                       skew["ratio"], skew["flagged"], skew["advice"]),
        tuple(s["cannotRead"]))


def _partition(p: Dict[str, Any]) -> PartitionInspection:
    b, c, t = p["bytes"], p["chain"], p["txstate"] or {}
    chain = None if c is None else LoadChain(c["snapshotVersion"], tuple(c["changelogVersions"]), c["problem"],
                                             c["describe"])
    return PartitionInspection(
        p["partition"], p["dir"], p["keys"], b["snapshots"], b["sharedFiles"], b["changelogs"], b["other"],
        b["total"], b["files"], p["oldestVersion"], p["newestVersion"], chain, t.get("storageFormat"),
        t.get("changelogFormat"), t.get("writtenBy"), t.get("commitTimeMs"), t.get("newestWriteMs"),
        tuple(p["unreadable"]))


def inspect(
    spark: Optional["SparkSession"],
    checkpoint: str,
    *,
    progress: Optional[ProgressCallback] = None,
) -> CheckpointInspection:
    """Read what the checkpoint at ``checkpoint`` holds, changing nothing.

    ``spark``: a classic session with the txstate jar, or None to start a local one for the call.
    Works on checkpoints of txstate and of Spark's HDFS and RocksDB providers (for those: files,
    bytes, versions and load chains; ``StoreInspection.cannot_read`` says what is not readable).

    Raises:
        TxStateCheckpointError: ``checkpoint`` is not a streaming query's checkpoint.
    """
    with session_for(spark) as session:
        answer = call_operate(session, "inspect", {"checkpoint": str(checkpoint)}, progress)
        return CheckpointInspection.from_json(answer)
