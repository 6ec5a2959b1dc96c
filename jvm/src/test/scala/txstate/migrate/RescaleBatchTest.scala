package txstate.migrate

import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.CommitLogIds

/**
 * The new batch an in-place rescale commits: its commit entry keeps every field of the last one and
 * names, under format v2, one fresh id per store and new partition, in the order Spark lists them.
 */
final class RescaleBatchTest extends AnyFunSuite {
  private val keys = new StructType().add("k", StringType)
  private val values = new StructType().add("n", LongType)

  private def join(storeIndex: Int, name: String) =
    StoreToCopy(3, "symmetricHashJoin", name, storeIndex, 2, Seq(0, 1), keys, values, 0)

  test("the new batch's state is one version above it") {
    assert(RescaleBatch(7).stateVersion == 8)
  }

  test("a format-2 commit entry keeps its fields and names exactly the new ids") {
    val last = "v1\n{\"nextBatchWatermarkMs\":1234,\"stateUniqueIds\":{\"3\":[[\"a\",\"b\"],[\"c\",\"d\"]]}}"
    val ids = Map(3L -> Seq(Seq("p0s0", "p0s1"), Seq("p1s0", "p1s1"), Seq("p2s0", "p2s1")))
    val rewritten = RescaleBatch.withIds(last, ids)
    assert(rewritten.linesIterator.next() == "v1")
    assert(rewritten.contains("\"nextBatchWatermarkMs\":1234"))
    val parsed = CommitLogIds.parse(rewritten)
    assert((0 until 3).map(p => (0 until 2).flatMap(s => parsed.of(3, p, s))) == ids(3L))
    assert(parsed.of(3, 3, 0).isEmpty)
  }

  test("every store and new partition gets its own fresh id, listed per partition in store order") {
    val plans = Seq(join(1, "left-keyWithIndexToValue"), join(0, "left-keyToNumValues"))
      .map(store => StorePlan(store, 0 until 3, None))
    val fresh = NewCheckpointIds.of(plans)
    assert(fresh.ids.size == 6 && fresh.ids.values.toSet.size == 6)
    val listed = fresh.byOperator(3L)
    assert(listed.size == 3 && listed.forall(_.size == 2))
    for (p <- 0 until 3; (plan, s) <- plans.map(pl => pl -> pl.store.storeIndex)) {
      assert(fresh.of(plan.store)(p).contains(listed(p)(s)))
    }
    assert(fresh.of(plans.head.store)(3).isEmpty)
  }
}
