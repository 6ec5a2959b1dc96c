"""What the JVM says about one store: where it lives, how many partitions, its key and value schemas."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Mapping, Optional, Tuple

from txstate_spark.query.conversion import StoreCodec, schema_from_json

if TYPE_CHECKING:
    from pyspark.sql.types import StructType


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
