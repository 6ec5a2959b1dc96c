"""Positions (which committed batch answered: per partition, and merged over the partitions of an
answer) and position bounds (how fresh an answer must be), as the JVM's ``Position``,
``MergedPosition`` and ``PositionBound``."""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from txstate_spark.errors import StateQueryError

_EMPTY: Mapping[int, Any] = types.MappingProxyType({})


@dataclass(frozen=True)
class Position:
    """The committed version one partition answered from (the protocol's POSITION).

    ``batch_id`` is ``version - 1``. ``source_offsets`` are that batch's offset-log lines, one per
    source, as Spark wrote them.
    """

    version: int
    batch_id: int
    checkpoint_id: Optional[str] = None
    commit_time_ms: Optional[int] = None
    source_offsets: Tuple[str, ...] = ()

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> Optional["Position"]:
        """A position from the protocol's POSITION object (None stays None)."""
        if obj is None:
            return None
        return cls(
            version=obj["version"],
            batch_id=obj["batchId"],
            checkpoint_id=obj.get("checkpointId"),
            commit_time_ms=obj.get("commitTimeMs"),
            source_offsets=tuple(obj.get("sourceOffsets") or ()),
        )


@dataclass(frozen=True)
class MergedPosition:
    """The positions of a whole answer (``StateQueryResult.position``): each answering partition's
    own :class:`Position` in ``partitions``, and the ``oldest`` of them. Partitions commit
    independently; every one answered from the oldest batch or a later one.

    The oldest position's fields read through (``batch_id``, ``version``, ...); they are None, and
    ``source_offsets`` empty, when no partition answered.
    """

    partitions: Mapping[int, Position] = field(default_factory=lambda: _EMPTY)
    oldest: Optional[Position] = None

    @classmethod
    def from_json(cls, obj: Optional[Mapping[str, Any]]) -> "MergedPosition":
        """A merged position from the protocol's MERGED_POSITION object (None: no partition answered)."""
        if obj is None:
            return cls()
        partitions = {int(p): Position.from_json(pos) for p, pos in (obj.get("partitions") or {}).items()}
        return cls(
            partitions=types.MappingProxyType({p: pos for p, pos in sorted(partitions.items()) if pos}),
            oldest=Position.from_json(obj) if obj.get("version") is not None else None,
        )

    @property
    def version(self) -> Optional[int]:
        """The oldest position's committed version."""
        return self.oldest.version if self.oldest else None

    @property
    def batch_id(self) -> Optional[int]:
        """The oldest position's batch: every answering partition is at least there."""
        return self.oldest.batch_id if self.oldest else None

    @property
    def checkpoint_id(self) -> Optional[str]:
        """The oldest position's checkpoint id."""
        return self.oldest.checkpoint_id if self.oldest else None

    @property
    def commit_time_ms(self) -> Optional[int]:
        """When the oldest position's version was committed."""
        return self.oldest.commit_time_ms if self.oldest else None

    @property
    def source_offsets(self) -> Tuple[str, ...]:
        """The source offsets of the oldest position's batch."""
        return self.oldest.source_offsets if self.oldest else ()

    def batch_of(self, partition: int) -> Optional[int]:
        """The batch ``partition`` answered from; the oldest batch for a partition not named."""
        own = self.partitions.get(partition)
        return own.batch_id if own is not None else self.batch_id


@dataclass(frozen=True)
class PositionBound:
    """How fresh an answer must be: a partition whose last committed batch is older than the bound
    answers ``NOT_UP_TO_BOUND`` instead of a value.

    ``PositionBound.unbounded()`` (the default) takes whatever each partition committed last;
    ``at_least_batch(n)`` needs batch ``n`` committed in every partition; ``at_least(position)``
    needs each partition at least where ``position`` saw it (e.g. the merged position of an earlier
    answer, so that a later answer never goes back).
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
    def at_least(position: Union[MergedPosition, Position]) -> "PositionBound":
        """At least where ``position`` saw each partition.

        A :class:`MergedPosition` (``StateQueryResult.position``): each partition it names at least
        at its own batch, every other partition at least at the oldest batch (no bound when no
        partition answered). A :class:`Position` (``QueryResult.position``): every partition at
        least at its batch.
        """
        if isinstance(position, MergedPosition):
            batches = {p: pos.batch_id for p, pos in position.partitions.items()}
        elif isinstance(position, Position):
            batches = {}
        else:
            raise StateQueryError(f"at_least expects a MergedPosition or a Position, got {type(position).__name__}")
        oldest = position.batch_id
        if oldest is None and not batches:
            return PositionBound()
        return PositionBound(
            batch_id=oldest if oldest is not None else min(batches.values()),
            partition_batches=types.MappingProxyType(dict(sorted(batches.items()))),
        )

    @property
    def is_unbounded(self) -> bool:
        """Whether the bound accepts any committed batch."""
        return self.batch_id is None

    def to_json(self) -> Dict[str, Any]:
        """The protocol's ``bound`` object."""
        if self.batch_id is None:
            return {"type": "unbounded"}
        if not self.partition_batches:
            return {"type": "atLeastBatch", "batchId": self.batch_id}
        return {"type": "atLeast", "batchId": self.batch_id,
                "partitions": {str(p): b for p, b in self.partition_batches.items()}}
