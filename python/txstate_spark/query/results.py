"""What a query answers: one :class:`QueryResult` per partition, gathered in a
:class:`StateQueryResult` with the merged position (KIP-796's ``StateQueryResult``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from txstate_spark.errors import StateQueryError
from txstate_spark.query.bounds import MergedPosition, Position


class FailureReason(str, enum.Enum):
    """Why a partition did not answer (a partition failure is a result, not an exception)."""

    #: The JVM does not know the query's type.
    UNKNOWN_QUERY_TYPE = "UNKNOWN_QUERY_TYPE"
    #: ``require_active()`` was set and the partition's store is not loaded by a running query.
    NOT_ACTIVE = "NOT_ACTIVE"
    #: The partition's last committed batch is older than the request's position bound.
    NOT_UP_TO_BOUND = "NOT_UP_TO_BOUND"
    #: No running query holds the partition's store (and checkpoint reads were not allowed).
    NOT_PRESENT = "NOT_PRESENT"
    #: The partition index is outside ``[0, numPartitions)``.
    DOES_NOT_EXIST = "DOES_NOT_EXIST"
    #: Reading the store failed (e.g. a damaged checkpoint file); the message says what.
    STORE_EXCEPTION = "STORE_EXCEPTION"


@dataclass(frozen=True)
class QueryResult:
    """One partition's answer: a result and the position it was read at, or a failure."""

    partition: int
    is_success: bool
    failure_reason: Optional[FailureReason] = None
    failure_message: Optional[str] = None
    position: Optional[Position] = None
    execution_info: List[str] = field(default_factory=list)
    _result: Any = None

    @property
    def result(self) -> Any:
        """The partition's result (see the query type); raises :class:`StateQueryError` with the
        failure reason and message when the partition failed."""
        if not self.is_success:
            raise StateQueryError(
                f"{self.failure_reason.value if self.failure_reason else 'FAILED'}: partition "
                f"{self.partition} did not answer: {self.failure_message}"
            )
        return self._result

    @property
    def is_failure(self) -> bool:
        return not self.is_success

    def __repr__(self) -> str:
        if self.is_success:
            batch = self.position.batch_id if self.position else None
            return f"QueryResult(partition={self.partition}, batch_id={batch}, result={self._result!r})"
        return (f"QueryResult(partition={self.partition}, failure_reason={self.failure_reason}, "
                f"failure_message={self.failure_message!r})")


@dataclass(frozen=True)
class StateQueryResult:
    """Every queried partition's :class:`QueryResult`, the :class:`MergedPosition` (each
    partition's position and the oldest of them), and the continuation token of a paged query over
    every partition (None when no partition has more)."""

    partition_results: Dict[int, QueryResult]
    position: MergedPosition
    continuation: Optional[Any] = None

    def only_partition_result(self) -> QueryResult:
        """The one partition that answered, for queries whose answer lives in one partition (a key).

        With one queried partition, its result. With several (KIP-796's ``getOnlyPartitionResult``),
        the one successful partition whose result is not None; when every partition answered None
        (the key is in no partition), the answer at the merged position, whose ``result`` is None.

        Raises:
            StateQueryError: no partition was queried; several partitions have a result; or no
                partition has one and some partition failed (its reason is in the message), so the
                key may be there.
        """
        results = list(self.partition_results.values())
        if len(results) == 1:
            return results[0]
        if not results:
            raise StateQueryError("the query was answered by no partition")
        answered = [r for r in results if r.is_success and r._result is not None]
        if len(answered) == 1:
            return answered[0]
        if len(answered) > 1:
            raise StateQueryError(
                f"partitions {[r.partition for r in answered]} each have a result, not exactly one; "
                f"read partition_results"
            )
        failed = [r for r in results if not r.is_success]
        if failed:
            first = failed[0]
            raise StateQueryError(
                f"{first.failure_reason.value if first.failure_reason else 'FAILED'}: no partition has "
                f"a result, and partitions {[r.partition for r in failed]} did not answer (partition "
                f"{first.partition}: {first.failure_message})"
            )
        return min(results, key=lambda r: (r.position.version if r.position and r.position.version is not None
                                           else -1, r.partition))

    @property
    def is_success(self) -> bool:
        """Whether every queried partition answered."""
        return all(r.is_success for r in self.partition_results.values())

    def failures(self) -> Dict[int, QueryResult]:
        """The partitions that did not answer."""
        return {p: r for p, r in self.partition_results.items() if not r.is_success}

    @property
    def rows(self) -> List[Any]:
        """The rows of every partition's page (range, prefix and scan queries), partition by
        partition, as one list (a page's own ``rows`` is one partition's); raises
        :class:`StateQueryError` if a partition failed."""
        return [row for p in sorted(self.partition_results) for row in self.partition_results[p].result.rows]


def parse_response(response: Mapping[str, Any], decode: Any) -> StateQueryResult:
    """A :class:`StateQueryResult` from the protocol's response; ``decode(raw)`` converts one
    partition's RESULT into Python values."""
    results: Dict[int, QueryResult] = {}
    for entry in response.get("partitions") or []:
        partition = int(entry["partition"])
        success = bool(entry.get("success"))
        reason = entry.get("failureReason")
        results[partition] = QueryResult(
            partition=partition,
            is_success=success,
            failure_reason=None if success else _reason(reason),
            failure_message=None if success else entry.get("failureMessage"),
            position=Position.from_json(entry.get("position")),
            execution_info=list(entry.get("executionInfo") or []),
            _result=decode(entry.get("result")) if success else None,
        )
    return StateQueryResult(
        partition_results=dict(sorted(results.items())),
        position=MergedPosition.from_json(response.get("position")),
        continuation=response.get("continuation"),
    )


def _reason(name: Optional[str]) -> FailureReason:
    try:
        return FailureReason(name)
    except ValueError:
        raise StateQueryError(f"the JVM answered an unknown failure reason {name!r}") from None

