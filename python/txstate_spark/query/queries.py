"""The query types: what to read from a store. Small immutable values with static factories,
mirroring Kafka Streams' ``KeyQuery.withKey`` & co. in snake_case.

Keys are kept as the caller gave them (dict, tuple/list, Row, or a single value for a one-column
key) and are converted with the store's key schema when the request executes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Dict, List, Optional, Sequence, Tuple, TypeVar

from txstate_spark.errors import StateQueryError

if TYPE_CHECKING:
    from txstate_spark.query.conversion import StoreCodec

#: The page size of range, prefix and scan queries unless ``with_limit`` says otherwise.
DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000

Q = TypeVar("Q", bound="PagedQuery")


class Query:
    """Base of every query type: a protocol ``type`` and its JSON form.

    A subclass with another ``type`` reaches the JVM as it is (which answers ``UNKNOWN_QUERY_TYPE``
    in every partition for a type it does not know) and its raw JSON result is returned as it is.
    """

    type: ClassVar[str] = ""

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

    @staticmethod
    def with_key(key: Any) -> "KeyQuery":
        """Look up ``key``: a dict, tuple, Row, or a single value when the key has one column."""
        return KeyQuery(key)

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, "key": codec.encode_key(self.key)}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Any:
        return codec.decode_value(raw)


@dataclass(frozen=True)
class MultiKeyQuery(Query):
    """The values of several keys: a list with a value ``Row`` (or None) per key, in key order."""

    type: ClassVar[str] = "multiKey"
    keys: Tuple[Any, ...]

    @staticmethod
    def with_keys(keys: Sequence[Any]) -> "MultiKeyQuery":
        """Look up each of ``keys`` (each as :meth:`KeyQuery.with_key` takes it)."""
        if isinstance(keys, (str, bytes)) or not hasattr(keys, "__iter__"):
            raise StateQueryError(f"with_keys expects a list of keys, got {type(keys).__name__}")
        return MultiKeyQuery(tuple(keys))

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type,
                "keys": [codec.encode_key(k, f"key #{i}") for i, k in enumerate(self.keys)]}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Any:
        return [codec.decode_value(v) for v in raw]


@dataclass(frozen=True)
class Page:
    """One page of a range, prefix or scan query: ``rows`` (Rows with ``key`` and ``value``) and the
    ``continuation`` to pass to ``with_continuation`` for the next page (None on the last page)."""

    rows: List[Any]
    continuation: Optional[Any]


@dataclass(frozen=True)
class PagedQuery(Query):
    """A query answering pages of rows; ``limit`` rows at most per partition and page."""

    limit: int = DEFAULT_LIMIT
    continuation: Optional[Any] = None

    def with_limit(self: Q, limit: int) -> Q:
        """The same query with at most ``limit`` rows per partition and page (1 to 100000)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise StateQueryError(f"with_limit expects an int from 1 to {MAX_LIMIT}, got {limit!r}")
        return dataclasses.replace(self, limit=limit)

    def with_continuation(self: Q, token: Optional[Any]) -> Q:
        """The same query, resuming where the page that returned ``token`` stopped (None: from the start)."""
        return dataclasses.replace(self, continuation=token)

    def _page_json(self) -> Dict[str, Any]:
        return {"limit": self.limit, "continuation": self.continuation}

    def decode_result(self, raw: Any, codec: "StoreCodec") -> Page:
        from pyspark.sql import Row

        key, value = codec.decode_key, codec.decode_value
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

    @staticmethod
    def with_range(lower: Any, upper: Any) -> "RangeQuery":
        """Keys from ``lower`` to ``upper``, both inclusive (full keys, as KeyQuery takes them)."""
        return RangeQuery(lower=lower, upper=upper)

    @staticmethod
    def with_lower_bound(lower: Any) -> "RangeQuery":
        """Keys from ``lower`` (inclusive) up."""
        return RangeQuery(lower=lower)

    @staticmethod
    def with_upper_bound(upper: Any) -> "RangeQuery":
        """Keys up to ``upper`` (inclusive)."""
        return RangeQuery(upper=upper)

    @staticmethod
    def with_no_bounds() -> "RangeQuery":
        """Every key, in key order."""
        return RangeQuery()

    def descending(self) -> "RangeQuery":
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

    @staticmethod
    def with_prefix(prefix: Any) -> "PrefixQuery":
        """Rows whose leading key columns equal ``prefix``."""
        if prefix is None:
            raise StateQueryError("with_prefix needs a prefix (the first key column's value at least)")
        return PrefixQuery(prefix=prefix)

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, "prefix": codec.encode_prefix(self.prefix), **self._page_json()}


@dataclass(frozen=True)
class ScanQuery(PagedQuery):
    """Every row of the store, page by page (``ScanQuery.all().with_limit(n)``)."""

    type: ClassVar[str] = "scan"

    @staticmethod
    def all() -> "ScanQuery":
        """Every row."""
        return ScanQuery()

    def to_json(self, codec: "StoreCodec") -> Dict[str, Any]:
        return {"type": self.type, **self._page_json()}
