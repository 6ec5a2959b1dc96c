package txstate.spark

import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/**
 * A batch whose offset entry changes the query's shuffle partition count (what an in-place rescale
 * writes, then commits) is refused if it runs again: the rescale stopped before its commit entry.
 */
final class UnfinishedRescaleTest extends AnyFunSuite with CheckpointFixture {
  private val partitions = "spark.sql.shuffle.partitions"

  private def check(ck: TestCheckpoint, batch: Long): Unit = UnfinishedRescale.check(new Path(ck.stateRoot), batch, hadoopConf)

  test("the batch a rescale added, left without its commit, is refused naming the undo") {
    val ck = newCheckpoint()
    logBatch(ck, 0, Map(partitions -> "3"))
    logBatch(ck, 1, Map(partitions -> "5"), committed = false)
    val refused = intercept[IllegalStateException](check(ck, 1)).getMessage
    assert(refused.startsWith("[TXSTATE_UNFINISHED_RESCALE] batch 1 "), refused)
    assert(refused.contains("runs with 5 shuffle partitions, the batch before with 3"), refused)
    assert(refused.contains(s"python -m txstate_spark migrate ${ck.root} --undo"), refused)
  }

  test("batches with the partition count of the batch before, the first batch and a cleaned-up log pass") {
    val ck = newCheckpoint()
    logBatch(ck, 0, Map(partitions -> "3"))
    logBatch(ck, 1, Map(partitions -> "3"))
    logBatch(ck, 2, Map(partitions -> "3"), committed = false)
    Seq(0L, 1L, 2L, 7L).foreach(check(ck, _))
    logBatch(ck, 9, Map(partitions -> "5"), committed = false) // batch 8's entry is gone: nothing to compare
    check(ck, 9)
  }
}
