"""The query types: what to read from a store. Small immutable values with static factories,
mirroring Kafka Streams' ``KeyQuery.withKey`` & co. in snake_case.

Keys are kept as the caller gave them (dict, tuple/list, Row, or a single value for a one-column
key) and are converted with the store's key schema when the request executes.

The ``Timestamped...`` variants (Kafka Streams' ``TimestampedKeyQuery`` & co., KIP-258) answer
each row with when it was last written: the batch id and that batch's timestamp (Spark's offset
log ``batchTimestampMs``), None when not known (rows written by release 0.1.0, migrated, or written
outside a streaming query). Range, prefix and scan queries, plain or timestamped, can keep only
the rows written since a batch or a time: ``with_changed_since(batch=N)`` / ``(ms=T)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional, Sequence, Tuple, Type, TypeVar

from txstate_spark.errors import StateQueryError

if TYPE_CHECKING:
    from txstate_spark.query.conversion import StoreCodec

#: The page size of range, prefix and scan queries unless ``with_limit`` says otherwise.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000

Q = TypeVar("Q", bound="PagedQuery")
K = TypeVar("K", bound="KeyQuery")
M = TypeVar("M", bound="MultiKeyQuery")
R = TypeVar("R", bound="RangeQuery")
P = TypeVar("P", bound="PrefixQuery")
S = TypeVar("S", bound="ScanQuery")


class Query:
    """Base of every query type: a protocol ``type`` and its JSON form.

    A subclass with another ``type`` reaches the JVM as it is (which answers ``UNKNOWN_QUERY_TYPE``
    in every partition for a type it does not know) and its raw JSON result is returned as it is.
    """

    type: ClassVar[str] = ""
    #: Whether the request asks for each row's last write (the protocol's ``"timestamped"``).
    timestamped: ClassVar[bool] = False

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        """The protocol's QUERY object; ``codec`` converts keys with the store's schema."""
        return {"type": self.type}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Any:
        """A partition's RESULT as Python values."""
        return raw


@dataclass(frozen=True)
class KeyQuery(Query):
    """The value of one key: a value ``Row``, or None when the key is absent."""

    type: ClassVar[str] = "key"
    key: Any

    @classmethod
    def with_key(cls: Type[K], key: Any) -> K:
        """Look up ``key``: a dict, tuple, Row, or a single value when the key has one column."""
        return cls(key)

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, "key": codec.encode_key(self.key)}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Any:
        return codec.decode_value(raw)


@dataclass(frozen=True)
class MultiKeyQuery(Query):
    """The values of several keys: a list with a value ``Row`` (or None) per key, in key order."""

    type: ClassVar[str] = "multiKey"
    keys: Tuple[Any, ...]

    @classmethod
    def with_keys(cls: Type[M], keys: Sequence[Any]) -> M:
        """Look up each of ``keys`` (each as :meth:`KeyQuery.with_key` takes it)."""
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise StateQueryError(f"with_keys expects a list of keys, got {type(keys).__name__}")
        return cls(tuple(keys))

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type,
                "keys": [codec.encode_key(k, f"key #{i}") for i, k in enumerate(self.keys)]}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Any:
        return [codec.decode_value(v) for v in raw]


@dataclass(frozen=True)
class Page:
    """One page of a range, prefix or scan query: ``rows`` (Rows with ``key`` and ``value``, and for
    the timestamped queries ``last_written_batch`` and ``last_written_ms``) and the ``continuation``
    to pass to ``with_continuation`` for the next page (None on the last page)."""

    rows: List[Any]
    continuation: Optional[Any]


@dataclass(frozen=True)
class TimestampedValue:
    """A value with when it was last written (Kafka Streams' ``ValueAndTimestamp``): the result of
    a timestamped key lookup.

    ``last_written_batch`` is the id of the micro-batch that last wrote the row and
    ``last_written_ms`` that batch's timestamp (Spark's offset log ``batchTimestampMs``, ms since the
    epoch); each is None when the row's last write is not known (written by release 0.1.0,
    migrated, or written outside a streaming query)."""

    value: Any
    last_written_batch: Optional[int]
    last_written_ms: Optional[int]


@dataclass(frozen=True)
class PagedQuery(Query):
    """A query answering pages of rows; ``limit`` rows at most per partition and page; with
    ``changed_since_batch`` or ``changed_since_ms`` (see :meth:`with_changed_since`), only the rows
    last written since then."""

    limit: int = DEFAULT_LIMIT
    continuation: Optional[Any] = None
    changed_since_batch: Optional[int] = None
    changed_since_ms: Optional[int] = None

    def with_limit(self: Q, limit: int) -> Q:
        """The same query with at most ``limit`` rows per partition and page (1 to 100000)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise StateQueryError(f"with_limit expects an int from 1 to {MAX_LIMIT}, got {limit!r}")
        return dataclasses.replace(self, limit=limit)

    def with_continuation(self: Q, token: Optional[Any]) -> Q:
        """The same query, resuming where the page that returned ``token`` stopped (None: from the start)."""
        return dataclasses.replace(self, continuation=token)

    def with_changed_since(self: Q, *, batch: Optional[int] = None, ms: Optional[int] = None) -> Q:
        """The same query, returning only the rows last written by batch ``batch`` or a later one, or
        by a batch whose timestamp (Spark's ``batchTimestampMs``) is ``ms`` or later; give one of
        the two, or neither to drop the filter. Rows whose last write is not known (written by
        release 0.1.0, migrated, or outside a streaming query) are never returned by such a filter.
        Pages, positions and continuations are those of the filtered rows."""
        if batch is not None and ms is not None:
            raise StateQueryError("with_changed_since takes batch= or ms=, not both")
        for name, number in (("batch", batch), ("ms", ms)):
            if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
                raise StateQueryError(f"with_changed_since expects {name}= as an int >= 0, got {number!r}")
        return dataclasses.replace(self, changed_since_batch=batch, changed_since_ms=ms)

    def _page_json(self) -> Dict[str, Any]:
        page: Dict[str, Any] = {"limit": self.limit, "continuation": self.continuation}
        if self.changed_since_batch is not None:
            page["changedSince"] = {"batch": self.changed_since_batch}
        if self.changed_since_ms is not None:  # both: sent as they are, for the JVM to refuse
            page["changedSince"] = {**page.get("changedSince", {}), "ms": self.changed_since_ms}
        return page

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Page:
        from pyspark.sql import Row

        key, value = codec.decode_key, codec.decode_value
        if self.timestamped:
            rows = [Row(key=key(r["key"]), value=value(r["value"]), last_written_batch=r.get("lastWrittenBatch"),
                        last_written_ms=r.get("lastWrittenMs")) for r in raw["rows"]]
        else:
            rows = [Row(key=key(r["key"]), value=value(r["value"])) for r in raw["rows"]]
        return Page(rows, raw.get("continuation"))


@dataclass(frozen=True)
class RangeQuery(PagedQuery):
    """Rows whose key is within inclusive bounds, in Spark SQL key order (column by column) within
    each partition; ``descending()`` reverses the order. A missing bound is open."""

    type: ClassVar[str] = "range"
    lower: Optional[Any] = None
    upper: Optional[Any] = None
    is_descending: bool = False

    @classmethod
    def with_range(cls: Type[R], lower: Any, upper: Any) -> R:
        """Keys from ``lower`` to ``upper``, both inclusive (full keys, as KeyQuery takes them)."""
        return cls(lower=lower, upper=upper)

    @classmethod
    def with_lower_bound(cls: Type[R], lower: Any) -> R:
        """Keys from ``lower`` (inclusive) up."""
        return cls(lower=lower)

    @classmethod
    def with_upper_bound(cls: Type[R], upper: Any) -> R:
        """Keys up to ``upper`` (inclusive)."""
        return cls(upper=upper)

    @classmethod
    def with_no_bounds(cls: Type[R]) -> R:
        """Every key, in key order."""
        return cls()

    def descending(self: R) -> R:
        """The same range in descending key order."""
        return dataclasses.replace(self, is_descending=True)

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {
            "type": self.type,
            "lower": None if self.lower is None else codec.encode_key(self.lower, "lower bound"),
            "upper": None if self.upper is None else codec.encode_key(self.upper, "upper bound"),
            "descending": self.is_descending,
            **self._page_json(),
        }


@dataclass(frozen=True)
class PrefixQuery(PagedQuery):
    """Rows whose first key columns equal ``prefix`` (a dict naming the leading columns, a tuple of
    the first n values, or a single value for the first column)."""

    type: ClassVar[str] = "prefix"
    prefix: Any = None

    @classmethod
    def with_prefix(cls: Type[P], prefix: Any) -> P:
        """Rows whose leading key columns equal ``prefix``."""
        if prefix is None:
            raise StateQueryError("with_prefix needs a prefix (the first key column's value at least)")
        return cls(prefix=prefix)

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, "prefix": codec.encode_prefix(self.prefix), **self._page_json()}


@dataclass(frozen=True)
class ScanQuery(PagedQuery):
    """Every row of the store, page by page (``ScanQuery.all().with_limit(n)``)."""

    type: ClassVar[str] = "scan"

    @classmethod
    def all(cls: Type[S]) -> S:
        """Every row."""
        return cls()

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, **self._page_json()}


# ------------------------------------------------------------------------------------------------
# Timestamped queries (KIP-258): the same queries, each row with when it was last written


def _timestamped(raw: Any, codec: "StoreCodec") -> Optional[TimestampedValue]:
    """A timestamped lookup's ``{"value", "lastWrittenBatch", "lastWrittenMs"}``, or None when absent."""
    if raw is None:
        return None
    return TimestampedValue(codec.decode_value(raw["value"]), raw.get("lastWrittenBatch"), raw.get("lastWrittenMs"))


@dataclass(frozen=True)
class TimestampedKeyQuery(KeyQuery):
    """The value of one key with when it was last written: a :class:`TimestampedValue`, or None
    when the key is absent (``TimestampedKeyQuery.with_key(k)``)."""

    timestamped: ClassVar[bool] = True

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Optional[TimestampedValue]:
        return _timestamped(raw, codec)


@dataclass(frozen=True)
class TimestampedMultiKeyQuery(MultiKeyQuery):
    """The values of several keys with when each was last written: a list with a
    :class:`TimestampedValue` (or None) per key, in key order."""

    timestamped: ClassVar[bool] = True

    def decode_result(self, raw: Any, codec: "StoreCodec") -> List[Optional[TimestampedValue]]:
        return [_timestamped(v, codec) for v in raw]


@dataclass(frozen=True)
class TimestampedRangeQuery(RangeQuery):
    """:class:`RangeQuery` whose page rows also have ``last_written_batch`` and ``last_written_ms``."""

    timestamped: ClassVar[bool] = True


@dataclass(frozen=True)
class TimestampedPrefixQuery(PrefixQuery):
    """:class:`PrefixQuery` whose page rows also have ``last_written_batch`` and ``last_written_ms``."""

    timestamped: ClassVar[bool] = True


@dataclass(frozen=True)
class TimestampedScanQuery(ScanQuery):
    """:class:`ScanQuery` whose page rows also have ``last_written_batch`` and ``last_written_ms``."""

    timestamped: ClassVar[bool] = True
