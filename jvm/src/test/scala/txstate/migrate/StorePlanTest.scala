package txstate.migrate

import org.apache.spark.sql.catalyst.expressions.Murmur3HashFunction
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.CheckpointFixture

/**
 * How a store is copied (StorePlan): partition by partition, or, when rescaling, in one pass whose
 * every key goes where Spark's shuffle would put it with the new partition count (ShuffleColumns,
 * KeyPlacement).
 */
final class StorePlanTest extends AnyFunSuite with CheckpointFixture {
  private val keySchema = new StructType().add("user", StringType).add("day", IntegerType)
  private val valueSchema = new StructType().add("n", LongType)
  private val key = new RowMaker(keySchema)

  private def store(operator: String, storeName: String = "default", keys: StructType = keySchema, prefix: Int = 0,
      partitions: Seq[Int] = Seq(0, 1, 2, 3)) =
    StoreToCopy(0, operator, storeName, 0, 4, partitions, keys, valueSchema, prefix)

  /** Spark's HashPartitioning written out: Murmur3 (seed 42) over `values` column by column, then pmod. */
  private def sparkPartition(values: Seq[(Any, DataType)], n: Int): Int = {
    val hash = values.foldLeft(42) { case (seed, (v, t)) => Murmur3HashFunction.hash(v, t, seed).toInt }
    ((hash % n) + n) % n
  }

  test("without rescaling every partition is copied onto itself, and nothing is re-placed") {
    val plan = StorePlan(store("stateStoreSave", partitions = Seq(0, 2, 3)), rescaleTo = None)
    assert(plan.placement.isEmpty && plan.targets == Seq(0, 2, 3))
    assert(plan.units == Seq(("partition 0", Seq(0), Seq(0)), ("partition 2", Seq(2), Seq(2)),
      ("partition 3", Seq(3), Seq(3))))
  }

  test("rescaling reads every partition in one pass into every new partition") {
    val plan = StorePlan(store("stateStoreSave"), rescaleTo = Some(6))
    assert(plan.targets == (0 until 6))
    assert(plan.units == Seq(("partitions 0,1,2,3 -> 6 partitions", Seq(0, 1, 2, 3), 0 until 6)))
  }

  test("rescaling places each key by Spark's hash of its whole key for aggregations and deduplication") {
    for (operator <- Seq("stateStoreSave", "dedupe"); n <- Seq(1, 3, 7)) {
      val placement = StorePlan(store(operator), Some(n)).placement.get
      for (user <- Seq("ann", "bob", "", "zoë"); day <- Seq(-1, 0, 17, 20000)) {
        val expected = sparkPartition(Seq(UTF8String.fromString(user) -> StringType, day -> IntegerType), n)
        assert(placement.partitionOf(key(user, day)) == expected, s"$operator, ($user, $day) into $n partitions")
      }
    }
  }

  test("a join's key-with-index store is placed by its join key alone, with the key-to-count store") {
    val joinKey = new StructType().add("user", StringType)
    val withIndex = joinKey.add("index", LongType)
    val counts = StorePlan(store("symmetricHashJoin", "left-keyToNumValues", joinKey), Some(5)).placement.get
    val values = StorePlan(store("symmetricHashJoin", "left-keyWithIndexToValue", withIndex), Some(5)).placement.get
    val indexed = new RowMaker(withIndex)
    val single = new RowMaker(joinKey)
    for (user <- Seq("ann", "bob", "carl", "dora")) {
      val p = counts.partitionOf(single(user))
      assert((0L until 4L).map(i => values.partitionOf(indexed(user, i))).toSet == Set(p), user)
    }
  }

  test("session windows are placed by their grouping columns, the key prefix") {
    val placement = StorePlan(store("sessionWindowStateStoreSaveExec", prefix = 1), Some(4)).placement.get
    for (user <- Seq("ann", "bob", "carl")) {
      val expected = sparkPartition(Seq(UTF8String.fromString(user) -> StringType), 4)
      assert(Seq(1, 5, 9).map(start => placement.partitionOf(key(user, start))).toSet == Set(expected))
    }
  }

  test("a global aggregation (no key column) runs as one task, so rescaling keeps it in partition 0") {
    val plan = StorePlan(store("stateStoreSave", keys = new StructType(), partitions = Seq(0)), Some(8))
    assert(plan.targets == Seq(0) && plan.units.map(_._3) == Seq(Seq(0)))
    assert(plan.placement.get.partitionOf(new RowMaker(new StructType())()) == 0)
  }

  test("an operator whose shuffle placement is not known is refused, with what to do instead") {
    for ((operator, storeName, prefix) <- Seq(("transformWithStateExec", "default", 0),
        ("sessionWindowStateStoreSaveExec", "default", 0), ("symmetricHashJoin", "left-other", 0))) {
      val s = store(operator, storeName, prefix = prefix)
      assert(ShuffleColumns.of(s).isLeft)
      val e = intercept[IllegalStateException](StorePlan(s, Some(3)))
      assert(e.getMessage.startsWith(s"[TXSTATE_MIGRATION_CANNOT_RESCALE] ${s.label}: how Spark's shuffle places"))
      assert(e.getMessage.endsWith("cannot re-place its keys. Migrate without --partitions to keep the partition count."))
      assert(StorePlan(s, None).units.size == 4, "without rescaling the placement does not matter")
    }
  }

  test("every key of a real Spark run sits in the partition the placement computes for it") {
    import CheckpointFixture._
    val ck = sparkRunCheckpoint("agg")
    val plan = StorePlan(StoreToCopy(0, "stateStoreSave", "default", 0, 2, Seq(0, 1), aggKeySchema, aggValueSchema, 0),
      Some(2))
    val aggKey = new RowMaker(aggKeySchema)
    val found = Seq(0, 1).map(p => p -> storeRows(ck.stateRoot, p, aggKeySchema, aggValueSchema, aggVersion).keySet)
    assert(found.flatMap(_._2).toSet == aggState.keySet && found.forall(_._2.nonEmpty))
    for ((p, keys) <- found; k <- keys) assert(plan.placement.get.partitionOf(aggKey(k: _*)) == p, s"key $k")
  }
}
