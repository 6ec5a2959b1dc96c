package txstate.store

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.engine.NativeMemoryBudget

/**
 * One native memory budget for every store instance of an executor (docs/ARCHITECTURE.md,
 * "Native memory budget"): real RocksDB databases, real checkpoint files, one JVM.
 */
final class NativeMemoryBudgetTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)

  // Hundreds of databases: tmpfs keeps their flushes and changelog writes off the disk.
  override protected def tempParent: Option[JPath] =
    Some(Paths.get("/dev/shm")).filter(p => Files.isDirectory(p) && Files.isWritable(p))

  private def open(budget: NativeMemoryBudget, label: String): StoreInstance =
    StoreInstance.open(LocalDirectory(newTempPath("local"), stable = true, None), new Path(newTempPath("checkpoint").toURI),
      new Configuration(), StoreOptions(), label, budget = Some(budget))

  private def commitRows(inst: StoreInstance, prefix: String, rows: Int, valueBytes: Int): Unit = {
    val batch = inst.begin()
    (0 until rows).foreach(k => batch.put(b(f"$prefix-$k%06d"), Array.fill[Byte](valueBytes)(k.toByte)))
    batch.commit()
  }

  test("512 store instances under one budget keep the shared cache, and the memtables charged to it, under the limit") {
    val limit = 64L << 20
    val budget = new NativeMemoryBudget(limit)
    val instances = (0 until 512).map(i => open(budget, s"budget test store $i"))
    try {
      assert(budget.leasesHeld == instances.size)
      // Each store writes ~170 KB: unbounded, their memtables alone would hold ~85 MiB.
      instances.zipWithIndex.foreach { case (inst, i) => commitRows(inst, s"s$i", rows = 1000, valueBytes = 100) }
      // Reads of flushed rows fill the cache with blocks: the shared cache evicts to stay in bounds.
      instances.zipWithIndex.foreach { case (inst, i) =>
        val batch = inst.begin()
        try assert((0 until 1000 by 97).forall(k => batch.get(b(f"s$i-$k%06d")).exists(_.length == 100)))
        finally batch.discard()
      }
      val used = budget.usedBytes
      val memtables = instances.map(_.memtableBytes).sum
      info(f"shared cache ${used / 1048576.0}%.1f MiB, memtables ${memtables / 1048576.0}%.1f MiB, limit ${limit >> 20} MiB")
      assert(used <= limit, s"the shared cache holds $used bytes, over the budget's $limit")
      assert(memtables <= limit, s"the memtables hold $memtables bytes, over the budget's $limit")
      // RocksDB's own count of every database's memtables: charged to the shared cache, so inside its usage.
      assert(memtables <= used, s"the memtables hold $memtables bytes but the shared cache only $used: they are not charged to it")
      // Each store's reported share sums to the executor's use, not to 512 times it.
      val shares = instances.map(_.nativeMemoryUsed).sum
      assert(math.abs(shares - budget.usedBytes) <= instances.size.toLong * 2 + (used / 10),
        s"the stores' shares sum to $shares, the budget uses ${budget.usedBytes}")
    } finally instances.foreach(_.close())
    assert(budget.leasesHeld == 0)
    assert(budget.usedBytes == 0L, "the shared objects outlived the last store using them")
  }

  test("the shared cache closes after the last store using it, never under a store's open batch, and opens anew for the next") {
    val budget = new NativeMemoryBudget(16L << 20)
    val first = open(budget, "first")
    val second = open(budget, "second")
    commitRows(first, "a", rows = 100, valueBytes = 10)
    commitRows(second, "b", rows = 100, valueBytes = 10)
    first.close()
    assert(budget.leasesHeld == 1)
    val batch = second.begin()
    second.close() // deferred: a batch is open
    assert(budget.leasesHeld == 1, "the lease was released under an open batch")
    assert(batch.get(b("b-000007")).exists(_.length == 10))
    batch.discard() // the deferred close runs now
    assert(budget.leasesHeld == 0)
    assert(budget.usedBytes == 0L)

    val again = open(budget, "again")
    try {
      commitRows(again, "c", rows = 100, valueBytes = 10)
      assert(budget.usedBytes > 0L, "the next store found no shared cache")
    } finally again.close()
    assert(budget.leasesHeld == 0)
  }

  test("a store whose database cannot open gives its lease back") {
    val budget = new NativeMemoryBudget(16L << 20)
    val local = newTempPath("local")
    val holder = StoreInstance.open(LocalDirectory(local, stable = true, None), new Path(newTempPath("checkpoint").toURI),
      new Configuration(), StoreOptions(), "holder", budget = Some(budget))
    try {
      // RocksDB's LOCK on the directory is held: the second open fails.
      intercept[Exception] {
        StoreInstance.open(LocalDirectory(local, stable = true, None), new Path(newTempPath("checkpoint").toURI),
          new Configuration(), StoreOptions(), "second opener", budget = Some(budget))
      }
      assert(budget.leasesHeld == 1)
    } finally holder.close()
    assert(budget.leasesHeld == 0)
  }

  test("a new limit applies once the stores using the current objects have closed") {
    val budget = new NativeMemoryBudget(16L << 20)
    val inst = open(budget, "resized")
    try {
      assert(!budget.resize(32L << 20))
      assert(budget.limitBytes == (16L << 20))
    } finally inst.close()
    assert(budget.limitBytes == (32L << 20))
  }
}
