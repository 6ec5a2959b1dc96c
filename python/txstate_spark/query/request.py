"""``StateQueryRequest``: an immutable builder naming a store, a query and its options; ``execute``
sends it to the driver JVM and returns a :class:`StateQueryResult`."""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, Optional, Tuple, Union

from txstate_spark.errors import StateQueryError
from txstate_spark.query.bounds import PositionBound
from txstate_spark.query.follower import Follower
from txstate_spark.query.gateway import QueryGateway, gateway_for
from txstate_spark.query.queries import PagedQuery, Query
from txstate_spark.query.results import StateQueryResult, parse_response
from txstate_spark.query.store import StoreDescription, checkpoint_location, operator_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery


class _Resolved:
    """The target and store description, resolved once and shared by the copies a builder makes
    (they all name the same checkpoint, operator and store)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.target: Optional[Dict[str, Any]] = None
        self.description: Optional[StoreDescription] = None


@dataclass(frozen=True)
class StateQueryRequest:
    """Which store to ask, what, in which partitions, and how fresh the answer must be.

    Build one with :meth:`in_store`, then ``with_query(...)`` and the options; every ``with_*`` /
    ``enable_*`` / ``require_active`` / ``allow_checkpoint_reads`` call returns a new request.
    """

    _target: Any
    operator: str = "0"
    store: str = "default"
    query: Optional[Query] = None
    partitions: Optional[Tuple[int, ...]] = None
    bound: PositionBound = field(default_factory=PositionBound.unbounded)
    is_require_active: bool = False
    is_execution_info_enabled: bool = False
    is_checkpoint_reads_allowed: bool = False
    _resolved: _Resolved = field(default_factory=_Resolved, repr=False, compare=False)

    @staticmethod
    def in_store(
        target: Union["StreamingQuery", str, "os.PathLike[str]"],
        operator: Union[int, str] = 0,
        store: str = "default",
    ) -> "StateQueryRequest":
        """A request to one store of a streaming query.

        Args:
            target: a running (or stopped) pyspark ``StreamingQuery``, its checkpoint location (a
                path or URI), or a :class:`Follower` (whose operator and store are used). A stopped
                query's stores answer only with ``allow_checkpoint_reads()``.
            operator: the stateful operator's id (0 is the first), or its name in Spark's operator
                metadata (``stateStoreSave``, ``dedupe``, ``symmetricHashJoin``, ...).
            store: the store name within the operator (``default``; joins have several).
        """
        operator = operator_ref(operator)
        if not isinstance(store, str) or not store:
            raise StateQueryError(f"store must be a store name such as 'default', got {store!r}")
        if isinstance(target, (str, os.PathLike)):
            target = checkpoint_location(target)
        elif isinstance(target, Follower):
            operator, store = str(target.description.operator_id), target.description.store_name
        elif not (_is_classic_streaming_query(target) or _is_connect_streaming_query(target)):
            raise StateQueryError(
                f"in_store expects a pyspark StreamingQuery (classic or Spark Connect), a Follower or a "
                f"checkpoint path, got {type(target).__module__}.{type(target).__qualname__}"
            )
        return StateQueryRequest(_target=target, operator=operator, store=store)

    # -- the builder -----------------------------------------------------------------------------

    def with_query(self, query: Query) -> "StateQueryRequest":
        """The same request with ``query`` (KeyQuery, MultiKeyQuery, RangeQuery, PrefixQuery, ScanQuery,
        or their Timestamped... variants)."""
        if not isinstance(query, Query):
            raise StateQueryError(f"with_query expects a txstate_spark.query Query, got {type(query).__name__}")
        return dataclasses.replace(self, query=query)

    def with_partitions(self, partitions: Iterable[int]) -> "StateQueryRequest":
        """Ask only these partitions (indexes; one outside the store's range answers DOES_NOT_EXIST)."""
        chosen = tuple(partitions)
        if any(isinstance(p, bool) or not isinstance(p, int) for p in chosen):
            raise StateQueryError(f"with_partitions expects partition indexes (ints), got {list(chosen)}")
        return dataclasses.replace(self, partitions=tuple(sorted(set(chosen))))

    def with_all_partitions(self) -> "StateQueryRequest":
        """Ask every partition the query concerns (the default)."""
        return dataclasses.replace(self, partitions=None)

    def with_position_bound(self, bound: PositionBound) -> "StateQueryRequest":
        """Require answers at least as fresh as ``bound``."""
        if not isinstance(bound, PositionBound):
            raise StateQueryError(f"with_position_bound expects a PositionBound, got {type(bound).__name__}")
        return dataclasses.replace(self, bound=bound)

    def enable_execution_info(self) -> "StateQueryRequest":
        """Collect each partition's execution notes (where it was served, how long it took)."""
        return dataclasses.replace(self, is_execution_info_enabled=True)

    def require_active(self) -> "StateQueryRequest":
        """Only stores loaded by a running query answer; others answer NOT_ACTIVE."""
        return dataclasses.replace(self, is_require_active=True)

    def allow_checkpoint_reads(self) -> "StateQueryRequest":
        """Serve partitions that no running query holds from the checkpoint files (latest committed
        version) instead of answering NOT_PRESENT."""
        return dataclasses.replace(self, is_checkpoint_reads_allowed=True)

    # -- running it ------------------------------------------------------------------------------

    def describe(self, spark: "SparkSession") -> StoreDescription:
        """The store's description (partitions, key and value schemas); asked once, then cached."""
        return self._describe(gateway_for(spark))

    def execute(self, spark: "SparkSession") -> StateQueryResult:
        """Run the query on the driver JVM of ``spark`` and return every partition's answer.

        Raises:
            StateQueryError: no query was set; the key does not fit the key schema; the
                checkpoint, operator or store is unknown; or, under Spark Connect, the Connect
                server runs without the txstate jar.
        """
        if self.query is None:
            raise StateQueryError("the request has no query: call with_query(KeyQuery.with_key(...)) first")
        gateway = gateway_for(spark)
        description = self._describe(gateway)
        query = self.query
        request = {
            **self._target_json(gateway),
            # Before the query's first commit there is no schema to encode keys with: the JVM
            # answers every partition NOT_UP_TO_BOUND without reading the query.
            "query": None if description.pending else query.to_json(description.codec),
            "partitions": None if self.partitions is None else list(self.partitions),
            "bound": self.bound.to_json(),
            "requireActive": self.is_require_active,
            "executionInfo": self.is_execution_info_enabled,
            "checkpointReads": self.is_checkpoint_reads_allowed,
            # The Timestamped... queries: every row with when it was last written.
            "timestamped": query.timestamped,
        }
        response = gateway.execute(request)
        return parse_response(response, lambda raw: query.decode_result(raw, description.codec))

    def pages(self, spark: "SparkSession") -> Iterator[StateQueryResult]:
        """Execute a range, prefix or scan query page by page, following the continuation until
        no partition has more rows; yields each page's result."""
        query = self.query
        if not isinstance(query, PagedQuery):
            raise StateQueryError(f"pages() needs a range, prefix or scan query, got {type(query).__name__}")
        request = self
        while True:
            result = request.execute(spark)
            yield result
            if result.continuation is None:
                return
            request = request.with_query(query.with_continuation(result.continuation))

    # -- internals -------------------------------------------------------------------------------

    def _target_json(self, gateway: QueryGateway) -> Dict[str, Any]:
        resolved = self._resolved
        with resolved.lock:
            if resolved.target is None:
                if isinstance(self._target, Follower):
                    resolved.target = {"follower": self._target.id}
                    return {**resolved.target}
                if isinstance(self._target, str):
                    checkpoint, run_id = self._target, None
                elif _is_connect_streaming_query(self._target):
                    answer = gateway.query_target_of_run(str(self._target.runId))
                    checkpoint, run_id = answer["checkpoint"], answer.get("runId")
                else:
                    answer = gateway.query_target(self._target._jsq)
                    checkpoint, run_id = answer["checkpoint"], answer.get("runId")
                resolved.target = {"checkpoint": checkpoint, "runId": run_id}
            return {**resolved.target, "operator": self.operator, "store": self.store}

    def _describe(self, gateway: QueryGateway) -> StoreDescription:
        target = self._target_json(gateway)
        resolved = self._resolved
        with resolved.lock:
            if resolved.description is not None:
                return resolved.description
            described = StoreDescription.from_json(gateway.describe(target))
            if not described.pending:  # a pending store is described again once it has committed
                resolved.description = described
            return described


def _is_classic_streaming_query(target: Any) -> bool:
    """Whether ``target`` is a classic (py4j) pyspark ``StreamingQuery`` (a Spark Connect one is not)."""
    try:
        from pyspark.sql.streaming import StreamingQuery
    except ImportError:  # no pyspark here, so no StreamingQuery either
        return False
    return isinstance(target, StreamingQuery)


def _is_connect_streaming_query(target: Any) -> bool:
    """Whether ``target`` is a Spark Connect ``StreamingQuery`` (its module is only imported when the
    object comes from it: importing Spark Connect needs grpc)."""
    if not type(target).__module__.startswith("pyspark.sql.connect"):
        return False
    from pyspark.sql.connect.streaming.query import StreamingQuery

    return isinstance(target, StreamingQuery)
