"""Answers (txstate_spark.query.results), without a JVM: each partition's result or failure, the
merged position of an answer, and the rows of paged queries, parsed from the protocol's response."""

from __future__ import annotations

import pytest
from pyspark.sql import Row

from harness.schemas import PAIR_KEY, WORD_KEY
from txstate_spark.query import FailureReason, MergedPosition, Position, ScanQuery, StateQueryError
from txstate_spark.query.conversion import StoreCodec, decode_row
from txstate_spark.query.results import parse_response


def test_a_failed_partition_result_raises_with_its_reason():
    response = {
        "partitions": [
            {"partition": 0, "success": True, "result": ["v"], "position": {"version": 3, "batchId": 2},
             "executionInfo": ["served on the driver"]},
            {"partition": 1, "success": False, "failureReason": "NOT_UP_TO_BOUND", "failureMessage": "at batch 1",
             "position": {"version": 2, "batchId": 1}, "executionInfo": []},
        ],
        "position": {"version": 2, "batchId": 1, "partitions": {"0": {"version": 3, "batchId": 2}}},
        "continuation": None,
    }
    result = parse_response(response, lambda raw: decode_row(WORD_KEY, raw))
    assert not result.is_success and list(result.failures()) == [1]
    assert result.partition_results[0].result == Row(word="v")
    assert result.partition_results[0].execution_info == ["served on the driver"]
    failed = result.partition_results[1]
    assert failed.failure_reason is FailureReason.NOT_UP_TO_BOUND and failed.position.batch_id == 1
    with pytest.raises(StateQueryError, match="NOT_UP_TO_BOUND.*partition 1.*at batch 1"):
        failed.result
    assert result.only_partition_result().partition == 0  # the one partition with a result
    both = parse_response({**response, "partitions": [response["partitions"][0], {**response["partitions"][0], "partition": 1}]},
                          lambda raw: raw)
    with pytest.raises(StateQueryError, match=r"partitions \[0, 1\] each have a result"):
        both.only_partition_result()
    none_failed = parse_response({**response, "partitions": [{**response["partitions"][0], "result": None},
                                                               response["partitions"][1]]}, lambda raw: raw)
    with pytest.raises(StateQueryError, match="NOT_UP_TO_BOUND: no partition has a result"):
        none_failed.only_partition_result()
    absent = parse_response({**response, "partitions": [{**response["partitions"][0], "result": None},
                                                          {**response["partitions"][0], "partition": 1, "result": None}]},
                            lambda raw: raw)
    assert absent.only_partition_result().result is None
    assert result.position.batch_id == 1 and result.position.batch_of(0) == 2


def test_partition_positions_and_the_merged_position_are_different_types():
    position = {"version": 5, "batchId": 4, "checkpointId": "c5", "commitTimeMs": 9, "sourceOffsets": ["4"]}
    newer = {**position, "version": 6, "batchId": 5, "checkpointId": "c6"}
    response = {
        "partitions": [{"partition": 0, "success": True, "result": None, "position": newer},
                       {"partition": 1, "success": True, "result": None, "position": position}],
        "position": {**position, "partitions": {"1": position, "0": newer}},
        "continuation": None,
    }
    result = parse_response(response, lambda raw: raw)
    merged = result.position
    assert isinstance(merged, MergedPosition) and not isinstance(merged, Position)
    assert all(type(r.position) is Position for r in result.partition_results.values())
    assert merged.oldest == result.partition_results[1].position == Position(5, 4, "c5", 9, ("4",))
    assert dict(merged.partitions) == {p: r.position for p, r in result.partition_results.items()}
    assert (merged.version, merged.batch_id, merged.checkpoint_id, merged.commit_time_ms, merged.source_offsets) == (
        5, 4, "c5", 9, ("4",))
    assert merged.batch_of(0) == 5 and merged.batch_of(1) == 4 and merged.batch_of(7) == 4
    # No partition answered: the JVM sends null fields and no partitions.
    nobody = parse_response({"partitions": [], "position": {
        "version": None, "batchId": None, "checkpointId": None, "commitTimeMs": None, "sourceOffsets": None,
        "partitions": {}}}, lambda raw: raw).position
    assert nobody == MergedPosition() and nobody.oldest is None and nobody.batch_id is None
    assert nobody.source_offsets == () and dict(nobody.partitions) == {}


def test_page_rows_and_result_rows_are_both_read_only_attributes():
    codec = StoreCodec(PAIR_KEY, WORD_KEY)

    def page(rows, token):
        return {"rows": [{"key": k, "value": v} for k, v in rows], "continuation": token}

    response = {
        "partitions": [{"partition": 1, "success": True, "position": {"version": 1, "batchId": 0},
                        "result": page([([2, "b"], ["y"])], None)},
                       {"partition": 0, "success": True, "position": {"version": 1, "batchId": 0},
                        "result": page([([1, "a"], ["x"]), ([1, None], [None])], "t0")}],
        "position": {"version": 1, "batchId": 0}, "continuation": "t",
    }
    result = parse_response(response, lambda raw: ScanQuery.all().decode_result(raw, codec))
    first = result.partition_results[0].result
    assert first.rows == [Row(key=Row(a=1, b="a"), value=Row(word="x")),
                          Row(key=Row(a=1, b=None), value=Row(word=None))]
    assert first.rows[0].__fields__ == ["key", "value"] and first.rows[0].key.__fields__ == ["a", "b"]
    assert first.continuation == "t0" and result.partition_results[1].result.continuation is None
    assert result.rows == first.rows + result.partition_results[1].result.rows  # partition by partition
    for owner in (first, result):
        with pytest.raises(AttributeError):
            owner.rows = []

