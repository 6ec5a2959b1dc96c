"""``verify()``: is every txstate file of a checkpoint sound, and does every retained version load?

The reading happens in the driver JVM (``txstate.operate.Verifier``), through a read-only view of
the checkpoint's file system, so it writes nothing. See docs/inspect-verify.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from txstate_spark.jvm_gateway import ProgressCallback, call_operate, session_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Finding:
    """A damaged or missing file: what is wrong, and what Spark would do with it (``partition`` is None
    for a file of the whole store, its schema file)."""

    store: str
    partition: Optional[int]
    path: str
    problem: str
    consequence: str


@dataclass(frozen=True)
class DeepCheck:
    """``--deep``: the replayed newest version's key count and digest against its commit point's count."""

    version: int
    keys: int
    committed_keys: int
    digest: str
    matches: bool
    oldest_write_ms: Optional[int]
    newest_write_ms: Optional[int]


@dataclass(frozen=True)
class PartitionCheck:
    """What was read of one txstate store partition; versions ``versions_from``..``versions_to`` were checked."""

    store: str
    partition: int
    dir: str
    files_read: int
    bytes_read: int
    versions_from: int
    versions_to: int
    loadable: int
    unreferenced_stored_files: int
    deep: Optional[DeepCheck]


@dataclass(frozen=True)
class Verification:
    """``sound`` when there is no finding. ``not_checked`` names what verify does not read."""

    checkpoint: str
    provider: str
    version: int
    min_batches_to_retain: int
    sound: bool
    findings: Tuple[Finding, ...]
    checked: Tuple[PartitionCheck, ...]
    not_checked: Tuple[str, ...]
    elapsed_ms: int

    @staticmethod
    def from_json(text: str) -> "Verification":
        raw = json.loads(text)
        return Verification(
            raw["checkpoint"], raw["provider"], raw["version"], raw["minBatchesToRetain"], raw["sound"],
            tuple(Finding(f["store"], f["partition"], f["path"], f["problem"], f["consequence"])
                  for f in raw["findings"]),
            tuple(_check(c) for c in raw["checked"]), tuple(raw["notChecked"]), raw["elapsedMs"])


def _check(c: Dict[str, Any]) -> PartitionCheck:
    d = c["deep"]
    deep = None if d is None else DeepCheck(d["version"], d["keys"], d["committedKeys"], d["digest"], d["matches"],
                                            d["oldestWriteMs"], d["newestWriteMs"])
    return PartitionCheck(c["store"], c["partition"], c["dir"], c["filesRead"], c["bytesRead"], c["versionsFrom"],
                          c["versionsTo"], c["loadable"], c["unreferencedStoredFiles"], deep)


def verify(
    spark: Optional["SparkSession"],
    checkpoint: str,
    *,
    deep: bool = False,
    min_batches_to_retain: Optional[int] = None,
    progress: Optional[ProgressCallback] = None,
) -> Verification:
    """Read every txstate file of ``checkpoint`` and check that each retained version loads; write nothing.

    ``min_batches_to_retain``: how many versions back must load (default: the
    ``spark.sql.streaming.minBatchesToRetain`` the query's cleanup recorded in the checkpoint, else
    Spark's default 100). ``deep``: also replay each partition's newest version and compare
    its key count with the commit point's.

    Raises:
        TxStateCheckpointError: ``checkpoint`` is not a streaming query's checkpoint, or a bad option.
    """
    options: Dict[str, Any] = {"checkpoint": str(checkpoint), "deep": bool(deep)}
    if min_batches_to_retain is not None:
        options["minBatchesToRetain"] = int(min_batches_to_retain)
    with session_for(spark) as session:
        return Verification.from_json(call_operate(session, "verify", options, progress))
