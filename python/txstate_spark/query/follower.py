"""Read-only followers (KIP-813): a local replica of one store of a streaming query, built from its
checkpoint and kept current by tailing Spark's commit log, in the driver JVM of a session.

    follower = txstate_spark.follow(spark, "/chk/counts", operator=0, store="default")
    StateQueryRequest.in_store(follower).with_query(KeyQuery.with_key(7)).execute(spark)
    follower.lag            # FollowerLag(applied_batch=41, leader_batch=41, batches=0, millis=0)
    spark.read.format("txstate").option("follower", follower.id).load()
    follower.close()

The follower never writes to the checkpoint, and publishes only batches the leader has committed.
The leader can be another application on another cluster: all the follower needs is read access to
the checkpoint. Under Spark Connect the follower lives in the Connect server's JVM.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional, Union

from txstate_spark.errors import StateQueryError
from txstate_spark.query.gateway import gateway_for
from txstate_spark.query.store import StoreDescription, checkpoint_location, operator_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class FollowerLag:
    """How far a follower is behind its leader."""

    applied_batch: Optional[int]
    """The newest batch every followed partition has applied (None: none yet)."""
    leader_batch: Optional[int]
    """The leader's newest batch in Spark's commit log (None: it has committed none)."""
    batches: int
    """``leader_batch - applied_batch``: batches committed by the leader and not applied yet."""
    millis: int
    """How long the oldest batch not applied yet has been committed (0 when current)."""


@dataclass(frozen=True)
class FollowerStatus:
    """A follower's lag and what it has done since it started."""

    lag: FollowerLag
    polls: int
    """Checks of the leader's commit log."""
    catch_ups: int
    """Partition steps that replayed the leader's changelogs."""
    reanchors: int
    """Partition steps that restored a snapshot after the first load (far behind, or files cleaned up)."""
    failures: int
    """Polls that failed (retried at the next poll; ``last_error`` says why)."""
    last_error: Optional[str]
    closed: bool
    native_memory_bytes: int


class Follower:
    """A follower started by :func:`follow`. Pass it to ``StateQueryRequest.in_store`` to query it,
    or its :attr:`id` to the ``txstate`` data source's ``follower`` option; close it when done (also
    a context manager)."""

    def __init__(self, spark: "SparkSession", answer: Dict[str, Any]) -> None:
        self._spark = spark
        self.id: str = answer["follower"]
        self.description: StoreDescription = StoreDescription.from_json(answer)

    @property
    def lag(self) -> FollowerLag:
        """The follower's lag now."""
        return self.status.lag

    @property
    def status(self) -> FollowerStatus:
        """Lag, counters and the last error of the follower, asked of the JVM now."""
        raw = gateway_for(self._spark).follower_status({"follower": self.id})
        lag = raw["lag"]
        return FollowerStatus(
            lag=FollowerLag(lag.get("appliedBatch"), lag.get("leaderBatch"), int(lag["batches"]), int(lag["millis"])),
            polls=int(raw["polls"]), catch_ups=int(raw["catchUps"]), reanchors=int(raw["reanchors"]),
            failures=int(raw["failures"]), last_error=raw.get("lastError"), closed=bool(raw["closed"]),
            native_memory_bytes=int(raw["nativeMemoryBytes"]),
        )

    def close(self) -> None:
        """Stops following and deletes the local replica. Closing twice is harmless."""
        gateway_for(self._spark).unfollow({"follower": self.id})

    def __enter__(self) -> "Follower":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        d = self.description
        return (f"Follower(id={self.id!r}, checkpoint={d.checkpoint!r}, operator={d.operator_id}, "
                f"store={d.store_name!r})")


def follow(
    spark: "SparkSession",
    checkpoint: Union[str, "os.PathLike[str]"],
    operator: Union[int, str] = 0,
    store: str = "default",
    partitions: Optional[Iterable[int]] = None,
    poll_interval_ms: int = 200,
    replay_limit: int = 20,
    local_dir: Optional[str] = None,
) -> Follower:
    """Start a read-only follower of one store of the streaming query checkpointed at ``checkpoint``.

    Args:
        spark: the session whose driver JVM keeps the replica (classic or Spark Connect).
        checkpoint: the leader query's checkpoint location (a path or URI it can read).
        operator: the stateful operator's id or name (as in ``StateQueryRequest.in_store``).
        store: the store name within the operator.
        partitions: the partitions to replicate (default: all).
        poll_interval_ms: how often the leader's commit log is checked for a newer batch.
        replay_limit: batches replayed to catch up; further behind, the follower re-anchors on a
            newer snapshot when the leader has one.
        local_dir: where the replicas' local databases go (default: the JVM's temporary directory).

    Returns the follower, current with the leader's newest committed batch. Its RocksDB memory is
    bounded by the session's ``spark.sql.streaming.stateStore.txstate.*`` settings, per partition.

    Raises:
        StateQueryError: the checkpoint, operator or store is unknown, a partition does not exist,
            or a newer txstate-spark wrote the checkpoint (the message names the release needed).
    """
    operator_id = operator_ref(operator)
    chosen = None if partitions is None else sorted(set(partitions))
    if chosen is not None and any(isinstance(p, bool) or not isinstance(p, int) for p in chosen):
        raise StateQueryError(f"partitions must be partition indexes (ints), got {chosen}")
    request = {
        "checkpoint": checkpoint_location(checkpoint),
        "operator": operator_id,
        "store": store,
        "partitions": chosen,
        "pollIntervalMs": int(poll_interval_ms),
        "replayLimit": int(replay_limit),
        "localDir": local_dir,
        "requestId": str(uuid.uuid4()),  # a request planned twice (Spark Connect) starts one follower
    }
    return Follower(spark, gateway_for(spark).follow(request))
