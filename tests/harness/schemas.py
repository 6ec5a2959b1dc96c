"""Schemas and values the interactive-query tests share: a row of every type interactive queries
support and its round trip through the protocol's JSON, and two small key schemas.

The unit tests (unit/query/) check the conversion without Spark; test_interactive_queries.py checks
that the decoded rows are what `DataFrame.collect()` returns.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T

from txstate_spark.query.conversion import decode_row, encode_row

EVERY_TYPE = T.StructType([
    T.StructField("flag", T.BooleanType()),
    T.StructField("tiny", T.ByteType()),
    T.StructField("small", T.ShortType()),
    T.StructField("int", T.IntegerType()),
    T.StructField("long", T.LongType()),
    T.StructField("float", T.FloatType()),
    T.StructField("double", T.DoubleType()),
    T.StructField("text", T.StringType()),
    T.StructField("bytes", T.BinaryType()),
    T.StructField("money", T.DecimalType(10, 2)),
    T.StructField("day", T.DateType()),
    T.StructField("ts", T.TimestampType()),
    T.StructField("ts_ntz", T.TimestampNTZType()),
    T.StructField("span", T.DayTimeIntervalType()),
    T.StructField("inner", T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())])),
    T.StructField("list", T.ArrayType(T.LongType())),
    T.StructField("structs", T.ArrayType(T.StructType([T.StructField("z", T.DoubleType())]))),
    T.StructField("map", T.MapType(T.StringType(), T.DecimalType(5, 1))),
    T.StructField("nothing", T.StringType()),
])

EVERY_VALUE = Row(
    flag=True, tiny=-128, small=32767, int=-(2**31), long=2**63 - 1, float=1.5, double=-2.25e-300,
    text="héllo \"world\"", bytes=bytearray(b"\x00\xffbin"), money=decimal.Decimal("-12345678.90"),
    day=dt.date(1969, 12, 31), ts=dt.datetime(2024, 2, 29, 13, 14, 15, 123456),
    ts_ntz=dt.datetime(1900, 1, 1, 0, 0, 0, 1), span=dt.timedelta(days=-3, microseconds=7),
    inner=Row(x=7, y="seven"), list=[1, -2, 3], structs=[Row(z=0.5), Row(z=-1.0)],
    map={"a": decimal.Decimal("1.5"), "b": None}, nothing=None,
)

EVERY_VALUE_WITH_NULLS = Row(**{name: None for name in EVERY_TYPE.names})


def through_json(schema: T.StructType, value: Any) -> Row:
    """`value` encoded for `schema`, through `json.dumps`/`json.loads` as the protocol sends it, and decoded."""
    encoded = json.loads(json.dumps(encode_row(schema, value, "value"), allow_nan=False))
    decoded = decode_row(schema, encoded)
    assert decoded is not None
    return decoded




WORD_KEY = T.StructType([T.StructField("word", T.StringType(), False)])
PAIR_KEY = T.StructType([T.StructField("a", T.IntegerType(), False), T.StructField("b", T.StringType(), True)])
