package txstate.engine

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.Using

/**
 * Undoing the last commit from the stored rows its batch read: keys read before they were written
 * get their rows back with no read, in the family (plain or stamped) and with the stamp they had.
 */
final class RollbackFromReadsTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private val before = WriteStamp(3, 3000)
  private val rerun = WriteStamp(4, 4000)

  /** Format 1 rows p0..p5 (plain), then format 2 rows s0..s5 stamped `before`. */
  private def twoFormats(engine: TxEngine): Unit = {
    val plain = engine.begin()
    (0 to 5).foreach(i => plain.put(b(s"p$i"), b(s"p$i-old")))
    engine.commit(plain, pointOf(plain, formatVersion = 1))
    commitStamped(engine, before)(tx => (0 to 5).foreach(i => tx.put(b(s"s$i"), b(s"s$i-old"))))
  }

  /** Reads then writes, blind puts, deletes and new keys, as Spark's operators do. */
  private def rewrite(tx: Transaction): Unit = {
    (0 to 2).foreach { i =>
      tx.get(b(s"p$i"))
      tx.put(b(s"p$i"), b(s"p$i-new"))
      tx.put(b(s"s$i"), b(s"s$i-new"))
    }
    tx.delete(b("p3"))
    tx.delete(b("s3"))
    (0 to 2).foreach(i => tx.put(b(s"n$i"), b(s"n$i")))
    tx.put(b("s4"), b("s4-new"))
    tx.delete(b("s4")) // written, then deleted: the undo must bring back the row as it was
  }

  test("a rollback writes back the rows its batch read, each in its family with its stamp, reading no key again") {
    Using.resource(TxEngine.open(newTempPath("db"))) { engine =>
      twoFormats(engine)
      val rows = committedStamped(engine)
      assert(rows.count(_._3 == WriteStamp.unknown) == 6, "format 1 rows carry no stamp")
      val previous = engine.committed
      commitStamped(engine, rerun)(rewrite)
      assert(committedStamped(engine) != rows)
      assert(engine.rollbackLastCommit() == previous)
      assert(committedStamped(engine) == rows)
      assert(engine.keysReadBackByLastRollback == 0, "every touched key was read before its write")
      // The plain rows are back in the plain family: a re-run reads and moves them as the first run did.
      commitStamped(engine, rerun)(rewrite)
      assert(committedStamped(engine).collect { case (k, v, s) if k.startsWith("p") => (k, v, s) } ==
        Vector(("p0", "p0-new", rerun), ("p1", "p1-new", rerun), ("p2", "p2-new", rerun),
          ("p4", "p4-old", WriteStamp.unknown), ("p5", "p5-old", WriteStamp.unknown)))
    }
  }

  test("keys the hot-state cache answered are restored from the stored rows it holds, reading no key again") {
    Using.resource(TxEngine.open(newTempPath("db"), EngineOptions(), new HotStateCache(1L << 20))) { engine =>
      twoFormats(engine)
      val warm = engine.begin()
      (0 to 2).foreach(i => warm.get(b(s"s$i")))
      warm.discard()
      val rows = committedStamped(engine)
      val hits = engine.cacheStats.hits
      commitStamped(engine, rerun)(rewrite)
      assert(engine.cacheStats.hits == hits + 3, "s0..s2 came from the cache")
      engine.rollbackLastCommit()
      assert(committedStamped(engine) == rows)
      assert(engine.keysReadBackByLastRollback == 0, "the cache holds stamped rows as stored")
    }
  }

  test("a batch that reads every key before writing any looks each up once, and its undo reads no key again") {
    // Spark's aggregation restores the state of every key of a batch, then saves them all.
    Using.resource(TxEngine.open(newTempPath("db"), EngineOptions(), new HotStateCache(1L << 20))) { engine =>
      twoFormats(engine)
      val rows = committedStamped(engine)
      val keys = (0 to 5).flatMap(i => Seq(s"p$i", s"s$i", s"n$i"))
      val before = engine.cacheStats
      commitStamped(engine, rerun) { tx =>
        val read = keys.map(k => k -> tx.get(b(k)).map(str))
        assert(read.count(_._2.isDefined) == 12 && read.filter(_._1.startsWith("n")).forall(_._2.isEmpty))
        keys.foreach(k => tx.put(b(k), b(s"$k-new")))
        assert(tx.numKeys == 18)
      }
      val lookups = engine.cacheStats.since(before)
      assert(lookups.hits + lookups.misses == keys.size, s"each key was looked up once: $lookups")
      engine.rollbackLastCommit()
      assert(committedStamped(engine) == rows)
      assert(engine.keysReadBackByLastRollback == 0, "every key was read before its write")
    }
  }

  test("a rollback after TTL expiry and a range delete restores what they removed") {
    Using.resource(TxEngine.open(newTempPath("db"))) { engine =>
      twoFormats(engine)
      val ttl = TimeToLive(500, _ => true)
      commitStamped(engine, WriteStamp(4, 3100), Some(ttl))(_.put(b("s0"), b("s0-kept")))
      val rows = committedStamped(engine)
      commitStamped(engine, WriteStamp(5, 3600), Some(ttl)) { tx =>
        tx.deleteRange(b("p0"), b("p3"))
        tx.put(b("p1"), b("p1-again"))
        tx.put(b("s0"), b("s0-new"))
      }
      assert(committedStamped(engine).map(_._1) == Vector("p1", "s0"), "expiry removed every row older than 500 ms")
      engine.rollbackLastCommit()
      assert(committedStamped(engine) == rows)
      assert(engine.keysReadBackByLastRollback > 0, "expired keys were never read: they come from the snapshot")
    }
  }
}
