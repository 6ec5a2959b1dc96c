"""Positions and position bounds (txstate_spark.query.bounds), without a JVM: what the protocol's
POSITION and MERGED_POSITION objects become, and the ``bound`` each PositionBound sends."""

from __future__ import annotations

import types

import pytest

from txstate_spark.query import MergedPosition, Position, PositionBound, StateQueryError


def test_position_bounds_in_the_protocol():
    assert PositionBound.unbounded().to_json() == {"type": "unbounded"}
    assert PositionBound.at_least_batch(3).to_json() == {"type": "atLeastBatch", "batchId": 3}
    merged = MergedPosition.from_json({"version": 5, "batchId": 4, "checkpointId": None, "commitTimeMs": 1,
                                       "sourceOffsets": ["7"],
                                       "partitions": {"1": {"version": 6, "batchId": 5}, "0": {"version": 5, "batchId": 4}}})
    assert list(merged.partitions) == [0, 1] and merged.source_offsets == ("7",)
    assert PositionBound.at_least(merged).to_json() == {"type": "atLeast", "batchId": 4, "partitions": {"0": 4, "1": 5}}
    assert PositionBound.at_least(MergedPosition.from_json(None)).to_json() == {"type": "unbounded"}
    # One partition's position bounds every partition at its batch.
    assert PositionBound.at_least(merged.partitions[1]).to_json() == {"type": "atLeastBatch", "batchId": 5}
    with pytest.raises(StateQueryError, match="MergedPosition or a Position"):
        PositionBound.at_least(4)
    with pytest.raises(StateQueryError):
        PositionBound.at_least_batch(-1)



def test_a_position_reads_the_protocol_object_and_none_stays_none():
    assert Position.from_json(None) is None
    bare = Position.from_json({"version": 1, "batchId": 0})
    assert bare == Position(version=1, batch_id=0) and bare.source_offsets == () and bare.checkpoint_id is None
    full = Position.from_json({"version": 8, "batchId": 7, "checkpointId": "c8", "commitTimeMs": 1234,
                               "sourceOffsets": ['{"0": 5}', "17"]})
    assert full == Position(8, 7, "c8", 1234, ('{"0": 5}', "17"))
    assert Position.from_json({"version": 1, "batchId": 0, "sourceOffsets": None}).source_offsets == ()


def test_a_merged_position_keeps_only_partitions_that_answered_in_order_and_read_only():
    merged = MergedPosition.from_json({"version": 3, "batchId": 2, "partitions": {
        "3": {"version": 4, "batchId": 3}, "0": None, "1": {"version": 3, "batchId": 2}}})
    assert list(merged.partitions) == [1, 3]
    assert merged.batch_of(3) == 3 and merged.batch_of(0) == 2  # partition 0 sent no position: the oldest
    with pytest.raises(TypeError):
        merged.partitions[5] = Position(1, 0)  # type: ignore[index]
    assert MergedPosition.from_json({"version": None, "partitions": None}) == MergedPosition()
    assert MergedPosition().batch_of(0) is None


def test_batch_zero_is_a_bound_not_the_absence_of_one():
    first = PositionBound.at_least_batch(0)
    assert not first.is_unbounded and first.to_json() == {"type": "atLeastBatch", "batchId": 0}
    assert PositionBound.unbounded().is_unbounded and PositionBound() == PositionBound.unbounded()
    zero = Position(version=1, batch_id=0)
    assert PositionBound.at_least(zero).to_json() == {"type": "atLeastBatch", "batchId": 0}


@pytest.mark.parametrize("bad", [-1, True, 2.0, "3", None])
def test_at_least_batch_refuses_anything_but_a_batch_id_and_names_it(bad):
    with pytest.raises(StateQueryError) as raised:
        PositionBound.at_least_batch(bad)
    assert str(raised.value) == f"at_least_batch expects a batch id >= 0, got {bad!r}"


def test_at_least_refuses_anything_but_a_position_and_names_its_type():
    for bad in (4, {"batchId": 4}, None):
        with pytest.raises(StateQueryError, match=f"got {type(bad).__name__}$"):
            PositionBound.at_least(bad)


def test_partitions_without_an_oldest_position_are_bounded_at_their_smallest_batch():
    partitions = types.MappingProxyType({2: Position(7, 6), 0: Position(5, 4)})
    bound = PositionBound.at_least(MergedPosition(partitions=partitions, oldest=None))
    assert bound.batch_id == 4 and dict(bound.partition_batches) == {0: 4, 2: 6}
    assert bound.to_json() == {"type": "atLeast", "batchId": 4, "partitions": {"0": 4, "2": 6}}


def test_a_bound_from_an_answer_round_trips_the_answer_positions():
    answer = {"version": 10, "batchId": 9, "partitions": {
        str(p): {"version": 10 + p, "batchId": 9 + p} for p in range(4)}}
    bound = PositionBound.at_least(MergedPosition.from_json(answer)).to_json()
    assert bound["batchId"] == 9 and bound["partitions"] == {str(p): 9 + p for p in range(4)}
