package txstate.store

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path => JPath, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.engine.{HeapMemoryBudget, HotStateCache, KeyRange}

/**
 * One heap budget for every store instance of an executor (docs/ARCHITECTURE.md, "Heap budget"):
 * real RocksDB databases, real checkpoint files, one JVM.
 */
final class HeapBudgetTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def str(a: Array[Byte]): String = new String(a, UTF_8)

  // Dozens of databases: tmpfs keeps their flushes and changelog writes off the disk.
  override protected def tempParent: Option[JPath] =
    Some(Paths.get("/dev/shm")).filter(p => Files.isDirectory(p) && Files.isWritable(p))

  private def open(heap: HeapMemoryBudget, label: String, cache: HotStateCache = HotStateCache.off): StoreInstance =
    StoreInstance.open(LocalDirectory(newTempPath("local"), stable = true, None), new Path(newTempPath("checkpoint").toURI),
      new Configuration(), StoreOptions(), label, cache = cache, heap = Some(heap))

  private val rows = 200
  private val value = "v" * 100

  /** Version 1 of store `i`: `rows` keys. */
  private def version1(i: Int): Map[String, String] = (0 until rows).map(k => f"s$i-$k%04d" -> s"$value-1-$k").toMap

  /** Version 2 reads every key first (as Spark's operators do, so its undo keeps their rows), rewrites, deletes and adds. */
  private def writeVersion2(i: Int, batch: StoreBatch): Unit = (0 until rows).foreach { k =>
    val key = b(f"s$i-$k%04d")
    assert(batch.get(key).isDefined)
    if (k % 5 == 0) batch.delete(key) else batch.put(key, b(s"$value-2-$k"))
    batch.put(b(f"s$i-new-$k%04d"), b("added"))
  }

  /** What [[writeVersion2]] makes of version 1. */
  private def version2(i: Int): Map[String, String] = (0 until rows).flatMap { k =>
    val kept = if (k % 5 == 0) None else Some(f"s$i-$k%04d" -> s"$value-2-$k")
    kept.toList :+ (f"s$i-new-$k%04d" -> "added")
  }.toMap

  private def contents(batch: StoreBatch): Map[String, String] = {
    val it = batch.iterator(KeyRange.all)
    try it.map(kv => str(kv.key) -> str(kv.value)).toMap finally it.close()
  }

  test("stores committing under a tiny heap budget drop kept undo oldest first, stay under it, and a re-run of a dropped batch reloads exactly") {
    val limit = 512L << 10
    val heap = new HeapMemoryBudget(limit, () => 0L)
    val stores = (0 until 40).map(i => open(heap, s"heap budget test store $i"))
    var reported = 0L // what the stores' batches report (the txstateUndoDropped metric)
    try {
      stores.zipWithIndex.foreach { case (inst, i) =>
        val first = inst.begin()
        version1(i).foreach { case (k, v) => first.put(b(k), b(v)) }
        first.commit()
        reported += first.stats.undoDropped
      }
      stores.zipWithIndex.foreach { case (inst, i) =>
        val second = inst.begin()
        writeVersion2(i, second)
        assert(heap.bufferedBytes > 0, "a running batch's buffer is not counted")
        second.commit()
        reported += second.stats.undoDropped
        assert(heap.bufferedBytes == 0L, "a committed batch's buffer is still counted")
        assert(heap.usedBytes <= limit, s"after store $i's commit the executor holds ${heap.usedBytes} bytes, over $limit")
      }
      val dropped = heap.undoDropped
      info(s"undo dropped $dropped times; kept undo holds ${heap.undoBytes} bytes under a limit of $limit")
      // Each undo holds ~80 KB here: every store's second commit pushed an older undo out.
      assert(dropped >= stores.size, s"only $dropped kept undo dropped for 80 commits of ~80 KB under $limit bytes")
      assert(heap.undoBytes > 0L, "the newest commits' undo should fit and be kept")
      assert(reported + stores.map(_.drainUndoDropped()).sum == dropped,
        "each drop is reported once, by the store whose undo went, with its next batch")

      // Spark re-runs each store's last batch: version 1 again, exactly, whichever way it is loaded.
      val paths = stores.zipWithIndex.map { case (inst, i) =>
        val rerun = inst.openBatch(LoadRequest.AtVersion(1, None))
        try assert(contents(rerun) == version1(i), s"store $i's version 1 is not what it committed")
        finally rerun.abort()
        rerun.loaded.path
      }
      // Oldest first: the first stores' undo went (their re-run reloaded from the checkpoint), the last store's stayed.
      assert(paths.head == LoadPath.Rebuilt, s"the oldest commit's undo was not dropped: ${paths.head}")
      assert(paths.last == LoadPath.RolledBack, s"the newest commit's undo was dropped: ${paths.last}")
      val firstKept = paths.indexOf(LoadPath.RolledBack)
      assert(paths.drop(firstKept).forall(_ == LoadPath.RolledBack) && paths.take(firstKept).forall(_ == LoadPath.Rebuilt),
        s"undo was not dropped oldest first: $paths")
      // The re-run batches commit version 2 again, under the budget, and every store holds exactly it.
      stores.zipWithIndex.foreach { case (inst, i) =>
        val again = inst.begin()
        writeVersion2(i, again)
        again.commit()
        assert(heap.usedBytes <= limit, s"after store $i's re-run the executor holds ${heap.usedBytes} bytes, over $limit")
        val check = inst.begin()
        try assert(contents(check) == version2(i), s"store $i's re-run version 2 is not exact") finally check.discard()
      }
    } finally stores.foreach(_.close())
    assert(heap.undoBytes == 0L && heap.bufferedBytes == 0L, "closed stores still count in the heap budget")
  }

  test("the hot-state cache counts in the heap budget, and an abort gives its buffer back") {
    val cache = new HotStateCache(8L << 20)
    val heap = new HeapMemoryBudget(64L << 20, () => cache.usedBytes)
    val inst = open(heap, "heap budget cache store", cache)
    try {
      val first = inst.begin()
      version1(0).foreach { case (k, v) => first.put(b(k), b(v)) }
      first.commit()
      val reads = inst.begin()
      (0 until rows).foreach(k => assert(reads.get(b(f"s0-$k%04d")).isDefined)) // misses admit the rows
      reads.put(b("extra"), b("row"))
      assert(heap.bufferedBytes > 0L)
      reads.abort()
      assert(heap.bufferedBytes == 0L, "an aborted batch's buffer is still counted")
      assert(cache.usedBytes > 0L && heap.usedBytes == heap.undoBytes + cache.usedBytes,
        s"the budget counts ${heap.usedBytes} bytes, the cache holds ${cache.usedBytes} and the undo ${heap.undoBytes}")
    } finally inst.close()
  }
}
