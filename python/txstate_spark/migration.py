"""``migrate()``: move a stopped query's state to another state store provider (or back).

The work happens in the driver JVM (``txstate.migrate.MigrationGateway``, in the txstate-spark jar):
it reads every store of the checkpoint with the provider the query ran on, writes it with the
destination provider through Spark's own provider API, verifies it, and only then switches the
provider the checkpoint records. See docs/migration.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Tuple

from txstate_spark.errors import TxStateMigrationError
from txstate_spark.jvm_gateway import ProgressCallback, driver_class, progress_polled, txstate_error_message

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

GATEWAY_CLASS = "txstate.migrate.MigrationGateway"
DESTINATIONS = ("txstate", "rocksdb", "hdfs")
DEFAULT_ACTIVE_WINDOW_SECONDS = 60

# Progress callbacks get the JVM's phase, current, done, total, rows, rowsPerSecond and etaSeconds.


@dataclass(frozen=True)
class StoreMigration:
    """One store of one stateful operator, summed over its partitions."""

    operator_id: int
    operator_name: str
    store_name: str
    partitions: int
    rows: int
    hash: str
    seconds: float


@dataclass(frozen=True)
class MigrationReport:
    """What a migration did (``dry_run``: would do). ``switched`` is True once the checkpoint names
    the destination provider; ``backup`` is the folder holding the plan and the saved metadata."""

    action: str
    checkpoint: str
    source: str
    destination: str
    last_committed_batch: int
    state_version: int
    dry_run: bool
    switched: bool
    rows: int
    stores: Tuple[StoreMigration, ...]
    backup: Optional[str]
    rerun_batch: Optional[int]
    partitions_from: int
    partitions_to: int
    seconds: float
    # The batch an in-place rescale added to carry the new partitions (None for other migrations).
    rescale_batch: Optional[int] = None

    def summary(self) -> str:
        """A few human-readable lines."""
        if self.action == "undo":
            return (f"undone: {self.checkpoint} runs on {self.destination} again from batch "
                    f"{self.last_committed_batch + 1} (saved metadata in {self.backup})")
        verb = "would move" if self.dry_run else "moved"
        lines = [f"{verb} {self.rows} rows from {self.source} to {self.destination} "
                 f"(checkpoint {self.checkpoint}, last committed batch {self.last_committed_batch}, "
                 f"{self.seconds:.1f}s)"]
        if self.partitions_to != self.partitions_from:
            lines.append(f"  rescaled from {self.partitions_from} to {self.partitions_to} partitions"
                         + (f", committed as batch {self.rescale_batch}" if self.rescale_batch is not None else ""))
        for s in self.stores:
            lines.append(f"  operator {s.operator_id} ({s.operator_name}) store {s.store_name}: "
                         f"{s.rows} rows in {s.partitions} partitions, hash {s.hash}")
        if self.switched:
            lines.append(f"the query now runs on {self.destination}; restart it unchanged. "
                         f"Undo: python -m txstate_spark migrate {self.checkpoint} --undo")
        return "\n".join(lines)

    @staticmethod
    def from_json(text: str) -> "MigrationReport":
        raw = json.loads(text)
        stores = tuple(
            StoreMigration(s["operatorId"], s["operatorName"], s["storeName"], s["partitions"], s["rows"],
                           s["hash"], s["seconds"])
            for s in raw["stores"]
        )
        return MigrationReport(raw["action"], raw["checkpoint"], raw["from"], raw["to"], raw["lastCommittedBatch"],
                               raw["stateVersion"], raw["dryRun"], raw["switched"], raw["rows"], stores,
                               raw["backup"], raw["rerunBatch"], raw["partitionsFrom"],
                               raw["partitionsTo"], raw["seconds"], raw.get("rescaleBatch"))


def migrate(
    spark: "SparkSession",
    checkpoint: str,
    to: Optional[str] = None,
    partitions: Optional[int] = None,
    dry_run: bool = False,
    *,
    undo: bool = False,
    active_window_seconds: int = DEFAULT_ACTIVE_WINDOW_SECONDS,
    rollback_uncommitted: bool = False,
    progress: Optional[ProgressCallback] = None,
) -> MigrationReport:
    """Move the state of the stopped query at ``checkpoint`` to provider ``to`` (txstate, rocksdb, hdfs).

    Restart the query unchanged afterwards: its next batch runs on ``to`` with exactly the state it
    had. ``dry_run`` only counts rows; ``undo`` restores the provider the newest migration replaced
    (if no batch ran since). ``active_window_seconds``: refuse when the query's logs were written
    more recently than this (0 skips the check). ``rollback_uncommitted``: when the query stopped in
    the middle of a batch, migrate the state of the last commit instead of refusing; the query then
    re-runs that unfinished batch (same id, same input) on ``to``. ``partitions``: rescale the state
    to this many partitions (the query's ``spark.sql.shuffle.partitions`` from then on), placing
    every key where Spark's shuffle will look for it. A query that already runs on txstate is
    rescaled in place with ``to="txstate"``: the new partitions are committed as a new batch that
    reads no input, beside the files the query loads until then.

    Raises:
        TxStateMigrationError: the migration was refused or failed; the message names the file,
            operator or setting and what to do. The checkpoint is then unchanged (or, once switched,
            complete).
    """
    if not undo and to not in DESTINATIONS:
        raise TxStateMigrationError(f"to must be one of {', '.join(DESTINATIONS)}, got {to!r}")
    options = {"checkpoint": str(checkpoint), "to": to, "partitions": partitions, "dryRun": dry_run,
               "undo": undo, "activeWindowSeconds": int(active_window_seconds),
               "rollbackUncommitted": rollback_uncommitted}
    gateway = _gateway(spark)
    try:
        with progress_polled(gateway, progress):
            answer = gateway.run(spark._jsparkSession, json.dumps(options))
    except Exception as error:  # Py4JJavaError or pyspark's CapturedException
        message = txstate_error_message(error)
        if message is None:
            raise
        raise TxStateMigrationError(message) from None
    return MigrationReport.from_json(answer)


def _gateway(spark: Any) -> Any:
    return driver_class(spark, GATEWAY_CLASS, "migrate", "or run `python -m txstate_spark migrate CHECKPOINT --to ...`, "
                        "which starts its own local session", TxStateMigrationError)
