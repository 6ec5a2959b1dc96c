package txstate.spark

import org.scalatest.funsuite.AnyFunSuite

/**
 * A checkpoint moves from Spark 3.5 to 4.x, not back: RocksDB 8 (Spark 3.5's) cannot read the SST
 * files RocksDB 9 (Spark 4's) writes. Loading such a snapshot on 3.5 is refused, naming the release
 * that wrote the version, never taken for damage (which would fall back to older, equally
 * unreadable snapshots, or rebuild from whatever changelogs are left).
 */
final class NewerLineCheckpointTest extends AnyFunSuite with CheckpointFixture {
  import CheckpointFixture._

  private def refusal(version: Long): String = {
    assert(org.rocksdb.RocksDB.rocksdbVersion().toString.startsWith("8."), "this suite runs on Spark 3.5's RocksDB")
    val ck = sparkRunCheckpointAsWritten("agg")
    val refused = intercept[Exception](storeRows(ck.stateRoot, 0, aggKeySchema, aggValueSchema, version))
    Iterator.iterate[Throwable](refused)(_.getCause).takeWhile(_ != null)
      .map(_.getMessage).find(m => m != null && m.contains("TXSTATE_CHECKPOINT_FROM_NEWER_SPARK"))
      .getOrElse(fail(s"not refused as written by a newer line: $refused"))
  }

  test("a snapshot of RocksDB files a newer Spark line wrote is refused, naming the release that wrote it") {
    val message = refusal(aggVersion)
    assert(message.contains("the snapshot of version 2") && message.contains("written by txstate-spark 0.1.0"), message)
    assert(message.contains("run the query on the Spark line that wrote it or a newer one"), message)
  }

  test("loading the snapshot's own version (no changelog above it) still names the release that wrote it") {
    val message = refusal(2)
    assert(message.contains("the snapshot of version 2") && message.contains("Version 2 was written by txstate-spark 0.1.0"),
      message)
  }

  test("without the snapshot, the same store loads exactly from its changelogs") {
    val ck = sparkRunCheckpoint("agg")
    assert(storeRows(ck.stateRoot, 0, aggKeySchema, aggValueSchema, aggVersion).keySet.nonEmpty)
    assert((0 to 1).map(p => storeRows(ck.stateRoot, p, aggKeySchema, aggValueSchema, aggVersion)).reduce(_ ++ _) == aggState)
  }
}
