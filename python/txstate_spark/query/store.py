"""One store of a streaming query: how a caller names it (checkpoint location and operator, as
``StateQueryRequest.in_store`` and ``follow`` take them), and what the JVM says about it (where it
lives, how many partitions, its key and value schemas)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple, Union

from txstate_spark.errors import StateQueryError
from txstate_spark.query.conversion import StoreCodec, schema_from_json

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def checkpoint_location(path: Union[str, "os.PathLike[str]"]) -> str:
    """A checkpoint location as the JVM should read it: URIs as given, local paths made absolute.

    Raises:
        StateQueryError: ``path`` is empty or not a path.
    """
    text = os.fspath(path)
    if not isinstance(text, str) or not text:
        raise StateQueryError(f"a checkpoint location must be a non-empty path, got {path!r}")
    if _URI_SCHEME.match(text) and not _WINDOWS_DRIVE.match(text):
        return text
    return os.path.abspath(os.path.expanduser(text))


def operator_ref(operator: Union[int, str]) -> str:
    """A stateful operator as the protocol names it: its id (0 is the first) or its name in Spark's
    operator metadata (``stateStoreSave``, ``dedupe``, ...), as a string.

    Raises:
        StateQueryError: ``operator`` is neither an int nor a non-empty string.
    """
    if isinstance(operator, bool) or not isinstance(operator, (int, str)) or operator == "":
        raise StateQueryError(f"operator must be an operator id or name, got {operator!r}")
    return str(operator)


@dataclass(frozen=True)
class StoreDescription:
    """The protocol's store description (``StateQueryRequest.describe(spark)`` returns it)."""

    checkpoint: str
    operator_id: int
    operator_name: str
    store_name: str
    num_partitions: int
    key_schema: "StructType"
    value_schema: "StructType"
    prefix_key_columns: int = 0
    range_key_ordinals: Tuple[int, ...] = ()
    run_id: Optional[str] = None
    pending: bool = False
    """True while the query runs but has not committed its first batch: only ``checkpoint`` and
    ``num_partitions`` are known, and every partition answers NOT_UP_TO_BOUND."""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "StoreDescription":
        if obj.get("pending"):
            from pyspark.sql.types import StructType

            return cls(checkpoint=obj["checkpoint"], operator_id=-1, operator_name="", store_name="",
                       num_partitions=int(obj["numPartitions"]), key_schema=StructType(),
                       value_schema=StructType(), pending=True)
        return cls(
            checkpoint=obj["checkpoint"],
            operator_id=int(obj["operatorId"]),
            operator_name=obj.get("operatorName") or "",
            store_name=obj["storeName"],
            num_partitions=int(obj["numPartitions"]),
            key_schema=schema_from_json(obj["keySchema"]),
            value_schema=schema_from_json(obj["valueSchema"]),
            prefix_key_columns=int(obj.get("prefixKeyColumns") or 0),
            range_key_ordinals=tuple(obj.get("rangeKeyOrdinals") or ()),
            run_id=obj.get("runId"),
        )

    @cached_property
    def codec(self) -> StoreCodec:
        """Converts this store's keys and values."""
        return StoreCodec(self.key_schema, self.value_schema)
