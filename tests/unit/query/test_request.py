"""StateQueryRequest, the query types and how a request names its store
(txstate_spark.query.request, queries, store), without a JVM: immutable builders, the protocol JSON
of each query, checkpoint locations and operators, and the transport a session gets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.schemas import PAIR_KEY, WORD_KEY
from txstate_spark.query import (
    KeyQuery,
    MultiKeyQuery,
    PositionBound,
    PrefixQuery,
    RangeQuery,
    ScanQuery,
    StateQueryError,
    StateQueryRequest,
    follow,
)
from txstate_spark.query.conversion import StoreCodec
from txstate_spark.query.gateway import ConnectGateway, gateway_for
from txstate_spark.query.store import checkpoint_location, operator_ref

REPO = Path(__file__).resolve().parents[3]


def test_requests_and_queries_are_immutable_builders():
    base = StateQueryRequest.in_store("relative/ck", operator="stateStoreSave")
    assert base._target == os.path.abspath("relative/ck")
    assert StateQueryRequest.in_store("s3a://bucket/ck")._target == "s3a://bucket/ck"
    keyed = base.with_query(KeyQuery.with_key("spark"))
    derived = [keyed.with_partitions([1, 0]), keyed.require_active(), keyed.allow_checkpoint_reads(),
               keyed.enable_execution_info(), keyed.with_position_bound(PositionBound.at_least_batch(2))]
    assert base.query is None and keyed.query == KeyQuery("spark")
    assert all(d is not keyed and d != keyed for d in derived)
    assert derived[0].partitions == (0, 1) and derived[0].with_all_partitions().partitions is None
    assert not keyed.is_require_active and not keyed.is_checkpoint_reads_allowed and keyed.bound.is_unbounded

    scan = ScanQuery.all()
    assert scan.with_limit(5).limit == 5 and scan.limit == 1000 and scan.with_continuation("t").continuation == "t"
    codec = StoreCodec(PAIR_KEY, WORD_KEY)
    ranged = RangeQuery.with_range((1, "a"), {"a": 2, "b": "z"}).descending().with_limit(10)
    assert ranged.to_json(codec) == {"type": "range", "lower": [1, "a"], "upper": [2, "z"], "descending": True,
                                     "limit": 10, "continuation": None}
    assert RangeQuery.with_lower_bound((1, "a")).to_json(codec)["upper"] is None
    assert RangeQuery.with_upper_bound((1, "a")).to_json(codec)["lower"] is None
    assert RangeQuery.with_no_bounds().to_json(codec)["descending"] is False
    assert PrefixQuery.with_prefix(3).with_continuation("c").to_json(codec) == {
        "type": "prefix", "prefix": [3], "limit": 1000, "continuation": "c"}
    assert MultiKeyQuery.with_keys([(1, "a"), {"a": 2, "b": None}]).to_json(codec) == {
        "type": "multiKey", "keys": [[1, "a"], [2, None]]}
    assert ScanQuery.all().to_json(codec) == {"type": "scan", "limit": 1000, "continuation": None}
    for bad in (0, 100_001, "10", True):
        with pytest.raises(StateQueryError, match="with_limit"):
            ScanQuery.all().with_limit(bad)


def test_a_spark_connect_session_is_served_through_the_data_source_not_py4j():
    # The transport is chosen from the session's type alone (the real round trip under Connect is
    # in test_txstate_source_connect.py); anything but a StreamingQuery or a path is refused.
    connect_session = type("SparkSession", (), {"__module__": "pyspark.sql.connect.session"})()
    assert isinstance(gateway_for(connect_session), ConnectGateway)
    with pytest.raises(StateQueryError, match="StreamingQuery \\(classic or Spark Connect\\), a Follower or a checkpoint"):
        StateQueryRequest.in_store(object())


def test_importing_txstate_spark_does_not_import_pyspark():
    code = "import sys, txstate_spark, txstate_spark.query; print('pyspark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert done.stdout.strip() == "False"



def test_local_checkpoint_paths_become_absolute_and_uris_stay_as_given(tmp_path):
    assert checkpoint_location("relative/ck") == os.path.join(os.getcwd(), "relative", "ck")
    assert checkpoint_location(tmp_path / "ck") == str(tmp_path / "ck")
    assert checkpoint_location("~/ck") == os.path.join(os.path.expanduser("~"), "ck")
    for uri in ("s3a://bucket/ck", "hdfs://namenode:8020/ck", "file:/tmp/ck", "abfss://c@a.dfs.core.windows.net/ck"):
        assert checkpoint_location(uri) == uri
    # A Windows drive letter is a path, not a URI scheme.
    assert checkpoint_location("C:/ck") == os.path.abspath("C:/ck")


@pytest.mark.parametrize("bad", ["", b"/bytes/ck"])
def test_a_checkpoint_location_that_is_no_path_is_refused_naming_it(bad):
    with pytest.raises(StateQueryError) as raised:
        checkpoint_location(bad)
    assert str(raised.value) == f"a checkpoint location must be a non-empty path, got {bad!r}"


def test_operators_are_named_by_id_or_name_and_anything_else_is_refused():
    assert operator_ref(0) == "0" and operator_ref(3) == "3" and operator_ref("dedupe") == "dedupe"
    for bad in (True, "", 1.0, None):
        with pytest.raises(StateQueryError) as raised:
            operator_ref(bad)
        assert str(raised.value) == f"operator must be an operator id or name, got {bad!r}"


def test_requests_and_followers_check_the_operator_before_asking_the_jvm():
    # The session is never touched: the bad argument fails first, with the same message both ways.
    with pytest.raises(StateQueryError, match="operator must be an operator id or name, got False"):
        StateQueryRequest.in_store("/ck", operator=False)
    with pytest.raises(StateQueryError, match="operator must be an operator id or name, got False"):
        follow(None, "/ck", operator=False)  # type: ignore[arg-type]
    with pytest.raises(StateQueryError, match=r"partitions must be partition indexes \(ints\), got \['0'\]"):
        follow(None, "/ck", partitions=["0"])  # type: ignore[arg-type,list-item]
    with pytest.raises(StateQueryError, match="store must be a store name such as 'default', got ''"):
        StateQueryRequest.in_store("/ck", store="")
    assert StateQueryRequest.in_store("/ck", operator=2).operator == "2"


def test_with_partitions_sorts_and_dedups_and_refuses_non_indexes():
    request = StateQueryRequest.in_store("/ck")
    assert request.with_partitions([3, 1, 3]).partitions == (1, 3)
    with pytest.raises(StateQueryError, match=r"with_partitions expects partition indexes \(ints\), got \[1, True\]"):
        request.with_partitions([1, True])
    with pytest.raises(StateQueryError, match="with_query expects a txstate_spark.query Query, got str"):
        request.with_query("k")  # type: ignore[arg-type]
    with pytest.raises(StateQueryError, match="with_position_bound expects a PositionBound, got int"):
        request.with_position_bound(3)  # type: ignore[arg-type]
