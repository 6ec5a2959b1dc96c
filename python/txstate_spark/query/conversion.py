"""Python values <-> the protocol's JSON form of Spark internal values, driven by a schema.

Keys go to the JVM and values come back as JSON arrays of Spark's *internal* values, in schema
order (docs/query-protocol.md, "Values"): dates as days, timestamps as microseconds, binary as
base64, decimals as strings, NaN and the infinities as strings, maps as ``{"keys", "values"}``.
Python values are checked against the schema on the way in, so a wrong key fails here with the
column and the type it expects, not somewhere in the JVM. Conversions are pyspark's own public
ones (``DateType().toInternal`` on the way in; ``StructType.fromInternal`` on the way back, the
conversion ``DataFrame.collect()`` applies), so values come back as ``DataFrame.collect()`` returns
them: ``Row``s with the schema's field names, timestamps as naive local datetimes. One exception:
binary comes back as ``bytearray`` (Spark's internal value), where pyspark 4's ``collect()`` gives
``bytes``; the two compare equal.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence

from txstate_spark.errors import StateQueryError

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, Row, StructType

JsonValue = Any  # what json.loads returns for one value

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}



def _types_of_newer_pyspark(types: Any, *names: str) -> tuple:
    """The named pyspark types this pyspark has (TimeType came with pyspark 4.1): none is an empty tuple."""
    return tuple(getattr(types, name) for name in names if hasattr(types, name))

def schema_from_json(obj: Mapping[str, Any]) -> "StructType":
    """A ``StructType`` from Spark's ``StructType.json`` form (as the store description carries it)."""
    from pyspark.sql.types import StructType

    return StructType.fromJson(dict(obj))


# ------------------------------------------------------------------------------------------------
# Python -> JSON


def encode_row(schema: "StructType", value: Any, what: str = "key") -> List[JsonValue]:
    """Encode a whole row for ``schema``: a dict, a tuple/list (schema order), a ``Row``, or, when the
    schema has a single column, that column's value alone.

    Raises:
        StateQueryError: a column is missing, unknown, or holds a value of the wrong type.
    """
    values = _row_values(schema, value, what, partial=False)
    return [_encode_field(field, v, what) for field, v in zip(schema.fields, values)]


def encode_prefix(schema: "StructType", value: Any, what: str = "prefix") -> List[JsonValue]:
    """Encode the first *n* columns of ``schema`` (1 <= n <= its width): a dict naming the leading
    columns, a tuple/list of the first n values, a ``Row``, or a single value for the first column."""
    values = _row_values(schema, value, what, partial=True)
    return [_encode_field(field, v, what) for field, v in zip(schema.fields, values)]


def _row_values(schema: "StructType", value: Any, what: str, partial: bool) -> List[Any]:
    names = [f.name for f in schema.fields]
    shape = schema.simpleString()
    if not names:
        raise StateQueryError(f"the {what} schema has no columns ({shape}); nothing can be looked up")
    mapping = _as_mapping(value)
    if mapping is not None:
        extra = [k for k in mapping if k not in names]
        if extra:
            raise StateQueryError(
                f"the {what} has an extra column {extra[0]!r}: the key schema is {shape} "
                f"(columns {', '.join(names)})"
            )
        if partial:
            count = max((names.index(k) + 1 for k in mapping), default=0)
            if count == 0:
                raise StateQueryError(f"the {what} names no column; give at least {names[0]!r} ({shape})")
        else:
            count = len(names)
        for field in schema.fields[:count]:
            if field.name not in mapping:
                raise StateQueryError(
                    f"the {what} is missing column {field.name!r} ({field.dataType.simpleString()}): "
                    f"the key schema is {shape}"
                    + (" and a prefix gives the leading columns in order" if partial else "")
                )
        return [mapping[n] for n in names[:count]]
    if isinstance(value, (tuple, list)):
        items = list(value)
        if partial and not 1 <= len(items) <= len(names):
            raise StateQueryError(
                f"the {what} has {len(items)} values; a prefix of {shape} has 1 to {len(names)}"
            )
        if not partial and len(items) != len(names):
            problem = (f"is missing column {names[len(items)]!r}" if len(items) < len(names)
                       else f"has {len(items) - len(names)} extra value(s)")
            raise StateQueryError(
                f"the {what} {problem}: it has {len(items)} values, the key schema {shape} has "
                f"{len(names)} columns"
            )
        return items
    if len(names) == 1 or partial:
        return [value]
    raise StateQueryError(
        f"a single value ({type(value).__name__} {value!r}) cannot be a {what} of {shape}: give a "
        f"dict, tuple or Row with the columns {', '.join(names)}"
    )


def _as_mapping(value: Any) -> Optional[Mapping[str, Any]]:
    """A dict, a Row with field names, or a namedtuple, as a mapping; None for anything else."""
    from pyspark.sql.types import Row

    if isinstance(value, Mapping):
        return value
    if isinstance(value, Row) and hasattr(value, "__fields__"):
        return value.asDict(recursive=False)
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return value._asdict()
    return None


def _encode_field(field: Any, value: Any, what: str) -> JsonValue:
    return _encode(field.dataType, value, f"{what} column {field.name!r}", field.nullable)


def _wrong(path: str, data_type: "DataType", value: Any, why: str = "") -> StateQueryError:
    return StateQueryError(
        f"{path} expects {data_type.simpleString()}, got {type(value).__name__} {value!r}"
        + (f" ({why})" if why else "")
    )


def _encode(data_type: "DataType", value: Any, path: str, nullable: bool) -> JsonValue:  # noqa: C901
    from pyspark.sql import types as T

    if value is None:
        if not nullable:
            raise StateQueryError(f"{path} expects {data_type.simpleString()} and is not nullable, got None")
        return None
    if isinstance(data_type, T.BooleanType):
        if isinstance(value, bool):
            return value
        raise _wrong(path, data_type, value)
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise _wrong(path, data_type, value)
        low, high = _INT_RANGES[data_type.typeName()]
        if not low <= value <= high:
            raise _wrong(path, data_type, value, f"out of range {low}..{high}")
        return int(value)
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _wrong(path, data_type, value)
        number = float(value)
        if math.isnan(number):
            return "NaN"
        if math.isinf(number):
            return "Infinity" if number > 0 else "-Infinity"
        return number
    if isinstance(data_type, (T.StringType, T.CharType, T.VarcharType)):
        if isinstance(value, str):
            return value
        raise _wrong(path, data_type, value)
    if isinstance(data_type, T.BinaryType):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(value)).decode("ascii")
        raise _wrong(path, data_type, value)
    if isinstance(data_type, T.DecimalType):
        return _encode_decimal(data_type, value, path)
    if isinstance(data_type, T.DateType):
        if isinstance(value, dt.date):
            return data_type.toInternal(value)
        raise _wrong(path, data_type, value)
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        if isinstance(value, dt.datetime):
            return data_type.toInternal(value)
        raise _wrong(path, data_type, value)
    if isinstance(data_type, T.DayTimeIntervalType):
        if isinstance(value, dt.timedelta):
            return data_type.toInternal(value)
        raise _wrong(path, data_type, value)
    if isinstance(data_type, _types_of_newer_pyspark(T, "TimeType")):
        if isinstance(value, dt.time):
            return data_type.toInternal(value)
        raise _wrong(path, data_type, value)
    if isinstance(data_type, T.StructType):
        if _as_mapping(value) is None and not isinstance(value, (tuple, list)):
            raise _wrong(path, data_type, value, "give a dict, tuple or Row")
        values = _row_values(data_type, value, path, partial=False)
        return [_encode(f.dataType, v, f"{path}.{f.name}", f.nullable) for f, v in zip(data_type.fields, values)]
    if isinstance(data_type, T.ArrayType):
        if not isinstance(value, (list, tuple)):
            raise _wrong(path, data_type, value)
        return [_encode(data_type.elementType, v, f"{path}[{i}]", data_type.containsNull)
                for i, v in enumerate(value)]
    if isinstance(data_type, T.MapType):
        if not isinstance(value, Mapping):
            raise _wrong(path, data_type, value)
        return {
            "keys": [_encode(data_type.keyType, k, f"{path} key", False) for k in value],
            "values": [_encode(data_type.valueType, v, f"{path}[{k!r}]", data_type.valueContainsNull)
                       for k, v in value.items()],
        }
    if isinstance(data_type, T.NullType):
        raise _wrong(path, data_type, value, "only None")
    raise StateQueryError(f"{path} has type {data_type.simpleString()}, which interactive queries do not support")


def _encode_decimal(data_type: Any, value: Any, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise _wrong(path, data_type, value, "give a decimal.Decimal or an int")
    number = decimal.Decimal(value)
    if not number.is_finite():
        raise _wrong(path, data_type, value, "not a finite number")
    exponent = decimal.Decimal(1).scaleb(-data_type.scale)
    context = decimal.Context(prec=max(data_type.precision, 1) + 40)
    quantized = number.quantize(exponent, context=context)
    if quantized != number:
        raise _wrong(path, data_type, value, f"more than {data_type.scale} digits after the point")
    digits = len(quantized.as_tuple().digits)
    integer_digits = max(digits - data_type.scale, 0) if quantized != 0 else 0
    if integer_digits > data_type.precision - data_type.scale:
        raise _wrong(path, data_type, value, f"more than {data_type.precision} digits in all")
    return format(quantized, "f")


# ------------------------------------------------------------------------------------------------
# JSON -> Python


def decode_row(schema: "StructType", data: Optional[Sequence[JsonValue]], what: str = "value") -> Optional["Row"]:
    """A ``Row`` with the schema's field names from a JSON array of internal values; None stays None."""
    return decoder(schema, what)(data)


Decoder = Callable[[JsonValue], Any]


def decoder(data_type: "DataType", path: str = "value") -> Decoder:
    """A function turning the JSON form of ``data_type`` into Python values (None stays None).

    The JSON becomes Spark's internal Python values first (what JSON cannot carry as it is:
    binary, decimals, NaN, maps), then ``data_type.fromInternal`` (pyspark's own conversion, the
    one ``DataFrame.collect()`` applies) makes the Python values and ``Row``s. Built once per
    schema (a store's scan decodes every row with the same one): the type dispatch happens here,
    not per value.
    """
    to_internal = _internal_decoder(data_type, path)
    if not data_type.needConversion():
        return to_internal
    from_internal = data_type.fromInternal
    return lambda data: from_internal(to_internal(data))


def _internal_decoder(data_type: "DataType", path: str) -> Decoder:  # noqa: C901
    """A function turning the JSON form of ``data_type`` into Spark's internal Python value: the
    form ``data_type.fromInternal`` reads (structs as lists in field order, dates as days, ...)."""
    from pyspark.sql import types as T

    def nullable(convert: Decoder) -> Decoder:
        return lambda data: None if data is None else convert(data)

    if isinstance(data_type, T.StructType):
        fields = [_internal_decoder(f.dataType, f"{path}.{f.name}") for f in data_type.fields]
        width = len(fields)
        converted = [(i, convert) for i, convert in enumerate(fields) if convert is not _identity]

        def struct(data: JsonValue) -> Any:
            if data is None:
                return None
            if not isinstance(data, list) or len(data) != width:
                raise StateQueryError(
                    f"the JVM sent {path} as {data!r}, expected an array of {width} values "
                    f"({data_type.simpleString()})"
                )
            if not converted:
                return data
            values = data.copy()
            for i, convert in converted:
                values[i] = convert(values[i])
            return values

        return struct
    if isinstance(data_type, T.ArrayType):
        element = _internal_decoder(data_type.elementType, f"{path}[]")
        if element is _identity:
            return _identity
        return nullable(lambda data: [element(v) for v in data])
    if isinstance(data_type, T.MapType):
        return _map_decoder(data_type, path)
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return nullable(lambda data: _SPECIAL_FLOATS[data] if isinstance(data, str) else float(data))
    if isinstance(data_type, T.BinaryType):
        return nullable(lambda data: bytearray(base64.b64decode(data)))
    if isinstance(data_type, T.DecimalType):
        return nullable(lambda data: decimal.Decimal(str(data)))
    if isinstance(data_type, (T.DateType, T.TimestampType, T.TimestampNTZType, T.DayTimeIntervalType)
                  + _types_of_newer_pyspark(T, "TimeType")):
        return nullable(int)
    if isinstance(data_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType, T.StringType,
                              T.CharType, T.VarcharType, T.NullType)):
        return _identity
    raise StateQueryError(f"{path} has type {data_type.simpleString()}, which interactive queries do not support")


def _map_decoder(data_type: Any, path: str) -> Decoder:
    """A map's ``{"keys", "values"}`` as a dict of internal values; array keys become tuples (a
    Python dict key must be hashable; ``DataFrame.collect()`` cannot return array keys at all)."""
    from pyspark.sql import types as T

    key = _internal_decoder(data_type.keyType, f"{path} key")
    value = _internal_decoder(data_type.valueType, f"{path} value")
    if isinstance(data_type.keyType, T.ArrayType) and data_type.keyType.needConversion():
        # fromInternal would turn the tuple back into a list, which cannot be a dict key.
        def unsupported(data: JsonValue) -> Any:
            if not data["keys"]:
                return {}
            raise StateQueryError(
                f"{path} has type {data_type.simpleString()}: its keys are arrays of values that "
                f"Python converts ({data_type.keyType.simpleString()}), which cannot be dict keys"
            )

        return lambda data: None if data is None else unsupported(data)
    return lambda data: None if data is None else {
        _hashable(key(k)): value(v) for k, v in zip(data["keys"], data["values"])
    }


def _identity(data: JsonValue) -> Any:
    return data


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreCodec:
    """Converts keys and values of one store, by its key and value schemas."""

    key_schema: "StructType"
    value_schema: "StructType"

    @cached_property
    def _key_decoder(self) -> Decoder:
        return decoder(self.key_schema, "key")

    @cached_property
    def _value_decoder(self) -> Decoder:
        return decoder(self.value_schema, "value")

    def encode_key(self, key: Any, what: str = "key") -> List[JsonValue]:
        """A key (dict, tuple/list, Row, or a single value for a one-column key) as a JSON array."""
        return encode_row(self.key_schema, key, what)

    def encode_prefix(self, prefix: Any) -> List[JsonValue]:
        """The first n key columns as a JSON array."""
        return encode_prefix(self.key_schema, prefix, "prefix")

    def decode_key(self, data: Optional[Sequence[JsonValue]]) -> Optional["Row"]:
        """A key ``Row`` from its JSON array (None stays None)."""
        return self._key_decoder(data)

    def decode_value(self, data: Optional[Sequence[JsonValue]]) -> Optional["Row"]:
        """A value ``Row`` from its JSON array (None stays None)."""
        return self._value_decoder(data)

