"""Interactive queries (IQv2 / KIP-796 style): read a streaming query's state while it runs.

    from txstate_spark.query import StateQueryRequest, KeyQuery, PositionBound

    req = (StateQueryRequest.in_store(streaming_query, operator=0, store="default")
           .with_query(KeyQuery.with_key({"word": "spark"}))
           .with_position_bound(PositionBound.at_least_batch(3))
           .enable_execution_info())
    res = req.execute(spark)
    res.only_partition_result().result      # the value as a Row, or None
    res.position.batch_id                   # the oldest partition's batch (a MergedPosition)

    # KIP-258: when each row was last written, and only the rows changed since batch 3
    changed = req.with_query(TimestampedScanQuery.all().with_changed_since(batch=3)).execute(spark)
    [(r.key, r.last_written_batch, r.last_written_ms) for r in changed.rows]

Queries read the last committed version of each partition's store (READ_COMMITTED): in local mode
on the driver, on a cluster on the executor that holds the store, and, with
``allow_checkpoint_reads()``, from the checkpoint files when no running query holds it. The JVM side
is ``txstate.query.ProtocolCalls``; the protocol is in docs/query-protocol.md. From classic (py4j)
pyspark a request is one py4j call to the driver; from a Spark Connect session it is one read of the
``txstate`` data source on the Connect server (which must run with the txstate jar), with the same
results. A classic ``StreamingQuery`` cannot be asked through a Connect session.
"""

from txstate_spark.errors import StateQueryError
from txstate_spark.query.bounds import MergedPosition, Position, PositionBound
from txstate_spark.query.follower import Follower, FollowerLag, FollowerStatus, follow
from txstate_spark.query.queries import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    KeyQuery,
    MultiKeyQuery,
    Page,
    PagedQuery,
    PrefixQuery,
    Query,
    RangeQuery,
    ScanQuery,
    TimestampedKeyQuery,
    TimestampedMultiKeyQuery,
    TimestampedPrefixQuery,
    TimestampedRangeQuery,
    TimestampedScanQuery,
    TimestampedValue,
)
from txstate_spark.query.request import StateQueryRequest
from txstate_spark.query.results import FailureReason, QueryResult, StateQueryResult
from txstate_spark.query.store import StoreDescription

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "FailureReason",
    "Follower",
    "FollowerLag",
    "FollowerStatus",
    "KeyQuery",
    "MergedPosition",
    "MultiKeyQuery",
    "Page",
    "PagedQuery",
    "Position",
    "PositionBound",
    "PrefixQuery",
    "Query",
    "QueryResult",
    "RangeQuery",
    "ScanQuery",
    "StateQueryError",
    "StateQueryRequest",
    "StateQueryResult",
    "StoreDescription",
    "TimestampedKeyQuery",
    "TimestampedMultiKeyQuery",
    "TimestampedPrefixQuery",
    "TimestampedRangeQuery",
    "TimestampedScanQuery",
    "TimestampedValue",
    "follow",
]
