"""Python values <-> the protocol's JSON of Spark internal values (txstate_spark.query.conversion),
without a JVM: round trips of every supported type, the JSON form, and the errors a value that does
not fit its schema gets (each names the column, the type it expects and the value it got)."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import math

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from harness.schemas import EVERY_TYPE, EVERY_VALUE, EVERY_VALUE_WITH_NULLS, PAIR_KEY, WORD_KEY, through_json
from txstate_spark.query import StateQueryError
from txstate_spark.query.conversion import StoreCodec, decode_row, decoder, encode_prefix, encode_row


def one_column(data_type: T.DataType) -> T.StructType:
    return T.StructType([T.StructField("c", data_type)])


def error_of(schema: T.StructType, value, what: str = "key") -> str:
    with pytest.raises(StateQueryError) as raised:
        encode_row(schema, value, what)
    return str(raised.value)


def error_of_prefix(value) -> str:
    with pytest.raises(StateQueryError) as raised:
        encode_prefix(PAIR_KEY, value)
    return str(raised.value)


def test_every_supported_type_round_trips_through_the_protocol_json():
    assert through_json(EVERY_TYPE, EVERY_VALUE) == EVERY_VALUE
    assert through_json(EVERY_TYPE, EVERY_VALUE.asDict()) == EVERY_VALUE
    assert through_json(EVERY_TYPE, tuple(EVERY_VALUE)) == EVERY_VALUE
    decoded = through_json(EVERY_TYPE, EVERY_VALUE)
    assert decoded.__fields__ == EVERY_TYPE.names and isinstance(decoded.inner, Row)
    assert isinstance(decoded.bytes, bytearray)


def test_the_json_form_is_spark_internal_values():
    encoded = encode_row(EVERY_TYPE, EVERY_VALUE, "value")
    by_name = dict(zip(EVERY_TYPE.names, encoded))
    assert by_name["day"] == -1
    assert by_name["ts_ntz"] == -2208988800 * 1_000_000 + 1
    assert by_name["ts"] == T.TimestampType().toInternal(EVERY_VALUE.ts)
    assert by_name["bytes"] == "AP9iaW4="
    assert by_name["money"] == "-12345678.90"
    assert by_name["span"] == (-3 * 86400) * 1_000_000 + 7
    assert by_name["inner"] == [7, "seven"]
    assert by_name["map"] == {"keys": ["a", "b"], "values": ["1.5", None]}
    assert by_name["nothing"] is None


def test_nan_and_infinities_travel_as_strings():
    schema = T.StructType([T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType()),
                           T.StructField("e", T.DoubleType())])
    encoded = encode_row(schema, (math.nan, math.inf, -math.inf))
    assert encoded == ["NaN", "Infinity", "-Infinity"]
    decoded = decode_row(schema, encoded)
    assert math.isnan(decoded.f) and decoded.d == math.inf and decoded.e == -math.inf


def test_map_keys_that_are_arrays_come_back_as_tuples_or_a_clear_error():
    by_ints = T.StructType([T.StructField("m", T.MapType(T.ArrayType(T.LongType()), T.StringType()))])
    assert decode_row(by_ints, [{"keys": [[1, 2]], "values": ["x"]}]) == Row(m={(1, 2): "x"})
    by_dates = T.StructType([T.StructField("m", T.MapType(T.ArrayType(T.DateType()), T.LongType()))])
    assert decode_row(by_dates, [{"keys": [], "values": []}]) == Row(m={})
    assert decode_row(by_dates, [None]) == Row(m=None)
    with pytest.raises(StateQueryError, match="cannot be dict keys"):
        decode_row(by_dates, [{"keys": [[0]], "values": [1]}])


def test_a_key_goes_in_as_dict_tuple_row_or_single_value():
    codec = StoreCodec(WORD_KEY, WORD_KEY)
    assert codec.encode_key({"word": "spark"}) == codec.encode_key(("spark",)) == ["spark"]
    assert codec.encode_key(Row(word="spark")) == codec.encode_key("spark") == ["spark"]
    assert codec.encode_key(["spark"]) == ["spark"]
    pair = StoreCodec(PAIR_KEY, WORD_KEY)
    assert pair.encode_key({"b": "x", "a": 1}) == pair.encode_key((1, "x")) == pair.encode_key(Row(a=1, b="x")) == [1, "x"]
    assert pair.encode_key({"a": 1, "b": None}) == [1, None]
    assert pair.encode_prefix(4) == pair.encode_prefix((4,)) == pair.encode_prefix({"a": 4}) == [4]
    assert pair.encode_prefix({"a": 4, "b": "y"}) == [4, "y"]


@pytest.mark.parametrize(
    "schema, key, words",
    [
        (PAIR_KEY, {"a": 1}, ["missing column 'b'", "string"]),
        (PAIR_KEY, (1,), ["missing column 'b'"]),
        (PAIR_KEY, {"a": 1, "b": "x", "c": 2}, ["extra column 'c'", "a, b"]),
        (PAIR_KEY, (1, "x", 2), ["1 extra value"]),
        (PAIR_KEY, {"a": "1", "b": "x"}, ["column 'a'", "expects int", "str '1'"]),
        (PAIR_KEY, (1.0, "x"), ["column 'a'", "expects int", "float"]),
        (PAIR_KEY, (True, "x"), ["column 'a'", "expects int", "bool"]),
        (PAIR_KEY, (2**31, "x"), ["column 'a'", "out of range"]),
        (PAIR_KEY, (None, "x"), ["column 'a'", "not nullable"]),
        (PAIR_KEY, 5, ["single value", "a, b"]),
        (WORD_KEY, {"word": 3}, ["column 'word'", "expects string", "int 3"]),
        (WORD_KEY, {"Word": "spark"}, ["extra column 'Word'"]),
        (T.StructType([T.StructField("m", T.DecimalType(5, 2))]), decimal.Decimal("1.234"), ["column 'm'", "decimal(5,2)", "2 digits"]),
        (T.StructType([T.StructField("m", T.DecimalType(5, 2))]), decimal.Decimal("1234.5"), ["column 'm'", "5 digits"]),
        (T.StructType([T.StructField("d", T.DateType())]), "2024-01-01", ["column 'd'", "expects date"]),
        (T.StructType([T.StructField("s", T.StructType([T.StructField("x", T.LongType())]))]), {"s": {"x": "1"}}, ["column 's'.x", "expects bigint"]),
    ],
)
def test_a_key_that_does_not_fit_the_schema_is_a_clear_error(schema, key, words):
    with pytest.raises(StateQueryError) as error:
        encode_row(schema, key, "key")
    for word in words:
        assert word in str(error.value), str(error.value)
    assert isinstance(error.value, ValueError)


def test_a_prefix_gives_the_leading_columns_in_order():
    with pytest.raises(StateQueryError, match="missing column 'a'"):
        encode_prefix(PAIR_KEY, {"b": "x"})
    with pytest.raises(StateQueryError, match="1 to 2"):
        encode_prefix(PAIR_KEY, (1, "x", 3))


def test_a_row_of_nulls_round_trips_and_an_absent_row_stays_none():
    assert through_json(EVERY_TYPE, EVERY_VALUE_WITH_NULLS) == EVERY_VALUE_WITH_NULLS
    assert decode_row(EVERY_TYPE, None) is None


@pytest.mark.parametrize(
    "data_type, low, high",
    [(T.ByteType(), -(2**7), 2**7 - 1), (T.ShortType(), -(2**15), 2**15 - 1),
     (T.IntegerType(), -(2**31), 2**31 - 1), (T.LongType(), -(2**63), 2**63 - 1)],
)
def test_integers_are_taken_up_to_their_type_bounds_and_refused_one_past(data_type, low, high):
    schema = one_column(data_type)
    assert through_json(schema, (low,)) == Row(c=low) and through_json(schema, (high,)) == Row(c=high)
    for outside in (low - 1, high + 1):
        message = error_of(schema, (outside,))
        assert f"column 'c' expects {data_type.simpleString()}" in message and str(outside) in message
        assert f"out of range {low}..{high}" in message


def test_decimals_keep_their_scale_and_refuse_digits_the_type_has_no_room_for():
    money = one_column(T.DecimalType(5, 2))
    assert encode_row(money, (decimal.Decimal("1.5"),)) == ["1.50"]
    assert encode_row(money, (7,)) == ["7.00"]  # an int is a decimal without digits after the point
    assert encode_row(money, (decimal.Decimal("-999.99"),)) == ["-999.99"]
    assert through_json(money, (decimal.Decimal("-0.05"),)) == Row(c=decimal.Decimal("-0.05"))
    fraction = one_column(T.DecimalType(3, 3))
    assert encode_row(fraction, (decimal.Decimal("0.125"),)) == ["0.125"]
    assert "more than 3 digits in all" in error_of(fraction, (1,))
    for bad, why in [(1.5, "give a decimal.Decimal or an int"), ("1.5", "give a decimal.Decimal or an int"),
                     (True, "give a decimal.Decimal or an int"), (decimal.Decimal("NaN"), "not a finite number"),
                     (decimal.Decimal("-Infinity"), "not a finite number")]:
        message = error_of(money, (bad,))
        assert "column 'c' expects decimal(5,2)" in message and why in message, message


def test_floats_take_ints_but_not_booleans():
    schema = one_column(T.DoubleType())
    assert encode_row(schema, (3,)) == [3.0] and isinstance(encode_row(schema, (3,))[0], float)
    message = error_of(schema, (False,))
    assert "column 'c' expects double, got bool False" in message


@pytest.mark.parametrize(
    "data_type, value, expected",
    [(T.BooleanType(), 1, "expects boolean, got int 1"),
     (T.StringType(), b"x", "expects string, got bytes b'x'"),
     (T.BinaryType(), "AP8=", "expects binary, got str 'AP8='"),
     (T.DateType(), "2024-01-01", "expects date, got str '2024-01-01'"),
     (T.TimestampType(), dt.date(2024, 1, 1), "expects timestamp, got date datetime.date(2024, 1, 1)"),
     (T.DayTimeIntervalType(), 5, "expects interval day to second, got int 5"),
     (T.ArrayType(T.LongType()), {1, 2}, "expects array<bigint>, got set"),
     (T.MapType(T.StringType(), T.LongType()), [("a", 1)], "expects map<string,bigint>, got list"),
     (T.StructType([T.StructField("x", T.LongType())]), 5, "give a dict, tuple or Row"),
     (T.NullType(), 0, "only None")],
)
def test_a_value_of_the_wrong_type_names_the_column_the_type_and_the_value(data_type, value, expected):
    message = error_of(one_column(data_type), (value,))
    assert message.startswith("key column 'c' ") and expected in message, message


def test_nested_values_name_their_path_in_errors():
    schema = T.StructType([
        T.StructField("xs", T.ArrayType(T.LongType(), containsNull=False)),
        T.StructField("m", T.MapType(T.StringType(), T.LongType())),
        T.StructField("s", T.StructType([T.StructField("inner", T.ArrayType(T.StringType()))])),
    ])
    good = ([1, 2], {"a": 1}, {"inner": ["x", None]})
    assert encode_row(schema, good) == [[1, 2], {"keys": ["a"], "values": [1]}, [["x", None]]]
    assert "value column 'xs'[1] expects bigint and is not nullable, got None" in error_of(
        schema, ([1, None], {}, None), "value")
    assert "key column 'm' key expects string and is not nullable" in error_of(schema, ([], {None: 1}, None))
    assert "key column 'm'['a'] expects bigint, got str 'one'" in error_of(schema, ([], {"a": "one"}, None))
    assert "key column 's'.inner[0] expects string, got int 3" in error_of(schema, ([], {}, {"inner": [3]}))


def test_types_queries_do_not_support_fail_both_ways_naming_the_type():
    schema = one_column(T.YearMonthIntervalType())
    assert "has type interval year to month, which interactive queries do not support" in error_of(schema, (1,))
    with pytest.raises(StateQueryError, match="value has type interval year to month, which interactive queries"):
        decoder(T.YearMonthIntervalType())


def test_a_key_schema_without_columns_cannot_be_looked_up():
    assert "schema has no columns" in error_of(T.StructType([]), ())


def test_rows_without_names_and_namedtuples_are_taken_like_tuples_and_dicts():
    pair = collections.namedtuple("Pair", "b a")  # by name, not by position
    assert encode_row(PAIR_KEY, pair(b="x", a=1)) == [1, "x"]
    assert encode_row(PAIR_KEY, Row(1, "x")) == [1, "x"]  # a Row without field names is a tuple
    assert "extra column 'c'" in error_of(PAIR_KEY, collections.namedtuple("Three", "a b c")(1, "x", 2))


def test_a_prefix_needs_its_leading_column_and_no_more_than_the_key_has():
    assert "the prefix names no column; give at least 'a'" in error_of_prefix({})
    assert "the prefix has 0 values; a prefix of struct<a:int,b:string> has 1 to 2" in error_of_prefix(())
    assert encode_prefix(PAIR_KEY, Row(a=3)) == [3]


def test_the_codec_names_what_a_key_is_for_in_its_errors():
    codec = StoreCodec(PAIR_KEY, WORD_KEY)
    with pytest.raises(StateQueryError, match="the lower bound is missing column 'b'"):
        codec.encode_key({"a": 1}, "lower bound")
    assert codec.decode_key([1, "x"]) == Row(a=1, b="x") and codec.decode_value(["v"]) == Row(word="v")
    assert codec.decode_key(None) is None


def test_a_row_the_jvm_sends_with_the_wrong_width_is_an_error_not_a_short_row():
    with pytest.raises(StateQueryError, match=r"the JVM sent value as \[1\], expected an array of 2 values"):
        decode_row(PAIR_KEY, [1])
    with pytest.raises(StateQueryError, match="expected an array of 2 values"):
        decode_row(PAIR_KEY, {"a": 1, "b": "x"})


def test_special_floats_decode_from_their_strings_and_plain_numbers_stay_floats():
    schema = T.StructType([T.StructField("f", T.FloatType()), T.StructField("d", T.DoubleType())])
    decoded = decode_row(schema, ["-Infinity", 2])
    assert decoded.f == -math.inf and decoded.d == 2.0 and isinstance(decoded.d, float)
