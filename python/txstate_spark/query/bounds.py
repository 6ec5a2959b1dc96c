"""Positions (which committed batch answered) and position bounds (how fresh an answer must be)."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from txstate_spark.errors import StateQueryError

_EMPTY: Mapping[int, "Position"] = types.MappingProxyType({})


@dataclass(frozen=True)
class Position:
    """The committed version a partition answered from, or (merged) the oldest over the partitions.

    ``batch_id`` is ``version - 1``. ``source_offsets`` are that batch's offset-log lines, one per
    source, as Spark wrote them. Only the merged position of a :class:`StateQueryResult` has
    ``partitions`` (each answering partition's own position); its fields are None when no partition
    answered.
    """

    version: Optional[int]
    batch_id: Optional[int]
    checkpoint_id: Optional[str] = None
    commit_time_ms: Optional[int] = None
    source_offsets: Tuple[str, ...] = ()
    partitions: Mapping[int, "Position"] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["Position"]:
        """A position from the protocol's POSITION or MERGED_POSITION object (None stays None)."""
        if obj is None:
            return None
        partitions = {int(p): cls.from_json(pos) for p, pos in (obj.get("partitions") or {}).items()}
        return cls(
            version=obj.get("version"),
            batch_id=obj.get("batchId"),
            checkpoint_id=obj.get("checkpointId"),
            commit_time_ms=obj.get("commitTimeMs"),
            source_offsets=tuple(obj.get("sourceOffsets") or ()),
            partitions=types.MappingProxyType({p: pos for p, pos in sorted(partitions.items()) if pos}),
        )

    def batch_of(self, partition: int) -> Optional[int]:
        """The batch id ``partition`` answered from (merged positions), else this position's batch."""
        own = self.partitions.get(partition)
        return own.batch_id if own is not None else self.batch_id


@dataclass(frozen=True)
class PositionBound:
    """How fresh an answer must be: a partition whose last committed batch is older than the bound
    answers ``NOT_UP_TO_BOUND`` instead of a value.

    ``PositionBound.unbounded()`` (the default) takes whatever each partition committed last;
    ``at_least_batch(n)`` needs batch ``n`` committed in every partition; ``at_least(position)``
    needs each partition at least where ``position`` saw it (e.g. the position of an earlier answer,
    so that a later answer never goes back).
    """

    batch_id: Optional[int] = None
    partition_batches: Mapping[int, int] = field(default_factory=lambda: _EMPTY)

    @staticmethod
    def unbounded() -> "PositionBound":
        """No freshness requirement."""
        return PositionBound()

    @staticmethod
    def at_least_batch(batch_id: int) -> "PositionBound":
        """Every queried partition must have committed batch ``batch_id`` (or a later one)."""
        if isinstance(batch_id, bool) or not isinstance(batch_id, int) or batch_id < 0:
            raise StateQueryError(f"at_least_batch expects a batch id >= 0, got {batch_id!r}")
        return PositionBound(batch_id=batch_id)

    @staticmethod
    def at_least(position: Position) -> "PositionBound":
        """Each partition at least at its batch in ``position`` (a merged position's ``partitions``),
        and every other partition at least at ``position.batch_id``."""
        if not isinstance(position, Position):
            raise StateQueryError(f"at_least expects a Position, got {type(position).__name__}")
        batches = {p: pos.batch_id for p, pos in position.partitions.items() if pos.batch_id is not None}
        if position.batch_id is None and not batches:
            return PositionBound()
        return PositionBound(
            batch_id=position.batch_id if position.batch_id is not None else min(batches.values()),
            partition_batches=types.MappingProxyType(dict(sorted(batches.items()))),
        )

    @property
    def is_unbounded(self) -> bool:
        return self.batch_id is None

    def to_json(self) -> Dict[str, Any]:
        """The protocol's ``bound`` object."""
        if self.batch_id is None:
            return {"type": "unbounded"}
        if not self.partition_batches:
            return {"type": "atLeastBatch", "batchId": self.batch_id}
        return {"type": "atLeast", "batchId": self.batch_id,
                "partitions": {str(p): b for p, b in self.partition_batches.items()}}
