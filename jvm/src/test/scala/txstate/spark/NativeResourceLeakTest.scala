package txstate.spark

import java.io.File
import java.nio.file.{Files, Path, Paths}

import org.apache.spark.sql.types._
import org.rocksdb.RocksDBException
import org.scalatest.funsuite.AnyFunSuite

import txstate.engine.{CommitPoint, KeyRange, TxEngine}

/**
 * Opening and closing engines and providers many times, abandoning iterators half-way as Spark does,
 * must give back every file descriptor and RocksDB's LOCK.
 */
final class NativeResourceLeakTest extends AnyFunSuite with ProviderFixture {
  private val engineCycles = 200
  // A provider cycle costs ~150 ms, mostly Hadoop's local file system forking chmod/readlink per checkpoint file.
  private val providerCycles = 100
  private val slack = 8

  // Descriptors, not disk speed, are under test: on tmpfs a RocksDB close (flush + fsync) costs ~10 ms, not ~70.
  override protected def tempParent: Option[Path] =
    Some(Paths.get("/dev/shm")).filter(p => Files.isDirectory(p) && Files.isWritable(p))

  private def openFds(): Int = {
    val list = new File("/proc/self/fd").list()
    assume(list != null, "needs /proc/self/fd (Linux)")
    list.length
  }

  /** Runs `cycle` a few times to load classes and caches, then `cycles` times, and compares descriptor counts. */
  private def assertNoFdGrowth(cycles: Int)(cycle: Int => Unit): Unit = {
    (0 until 5).foreach(cycle)
    System.gc()
    val baseline = openFds()
    val start = System.nanoTime()
    (5 until 5 + cycles).foreach(cycle)
    val perCycleMs = (System.nanoTime() - start) / 1e6 / cycles
    System.gc()
    val after = openFds()
    info(f"file descriptors: $baseline before, $after after $cycles cycles ($perCycleMs%.1f ms per cycle)")
    assert(after <= baseline + slack, s"open file descriptors grew from $baseline to $after over $cycles cycles")
  }

  private def b(s: String): Array[Byte] = s.getBytes("UTF-8")

  test(s"$engineCycles engine open/commit/close cycles on one directory with abandoned iterators leak no descriptors or LOCK") {
    val dir = newTempPath("engine")
    assertNoFdGrowth(engineCycles) { i =>
      val engine = TxEngine.open(dir)
      try {
        val base = engine.committed
        val tx = engine.begin()
        (0 until 50).foreach(k => tx.put(b(f"k$k%03d"), b(s"$i")))
        val abandoned = tx.iterator(KeyRange.all)
        abandoned.next()
        val point = CommitPoint(base.version + 1, Some(s"id-$i"), CommitPoint.currentFormatVersion, 0L, tx.numKeys)
        engine.commit(tx, point)                         // closes the abandoned iterator
        if (i % 3 == 0) engine.rollbackLastCommit()      // releases the undo snapshot
        val reader = engine.begin()
        val half = reader.iterator(KeyRange.all)
        (0 until 10).foreach(_ => if (half.hasNext) half.next())
        reader.deleteRange(b("k010"), b("k020"))
        reader.discard()                                 // closes the half-read iterator
      } finally engine.close()                           // releases the last undo snapshot too
    }
    val engine = TxEngine.open(dir)
    try {
      assert(engine.committed.version > 0, "the same directory reopens with its data")
      val second = intercept[RocksDBException](TxEngine.open(dir))
      assert(second.getMessage.toLowerCase.contains("lock"), "while open, RocksDB's LOCK keeps a second engine out")
    } finally engine.close()
    TxEngine.open(dir).close() // after close the LOCK is free again
  }

  test(s"$providerCycles provider cycles (write, abandon iterators, commit, read store, close) leak no descriptors") {
    val keySchema = StructType(Seq(StructField("k", StringType)))
    val valueSchema = StructType(Seq(StructField("v", LongType)))
    val key = new RowMaker(keySchema)
    val value = new RowMaker(valueSchema)
    val root = newCheckpointRoot()
    val local = newTempDir("stable-local") // the same local directory every cycle: its lock must be released
    var version = 0L
    assertNoFdGrowth(providerCycles) { i =>
      val p = newProvider(root, keySchema, valueSchema, localDir = local)
      try {
        val s = p.getStore(version)
        (0 until 20).foreach(k => s.put(key(s"k$k"), value(i.toLong), default))
        val abandoned = s.iterator(default)
        abandoned.next()
        version = s.commit()
        val read = p.getReadStore(version)
        val half = read.iterator(default)
        (0 until 5).foreach(_ => half.next())
        read.release()
        if (i % 4 == 0) {
          val aborted = p.getStore(version)
          aborted.remove(key("k1"), default)
          aborted.iterator(default).next()
          aborted.abort()
        }
        if (i % 10 == 0) p.doMaintenance()
      } finally p.close()
    }
    withProvider(newProvider(root, keySchema, valueSchema, localDir = local)) { p =>
      val s = p.getStore(version)
      assert(s.metrics.numKeys == 20)
      s.abort()
    }
  }
}
