package txstate.engine

import java.nio.file.Files

import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories
import txstate.compat.ScalaLibrary.Using

/**
 * Every way the engine changes its database, one at a time, with the key already cached: the next
 * read must give what RocksDB now holds, never the cached value from before. The cache is far larger
 * than the keys, so nothing is evicted and a missed invalidation shows as a stale read.
 */
final class TxEngineHotCacheTest extends AnyFunSuite with TempDirectories {
  import EngineTestKit._

  private def withCachedEngine[A](f: TxEngine => A): A =
    Using.resource(TxEngine.open(newTempPath("db"), EngineOptions(), new HotStateCache(1L << 20)))(f)

  /** `key` as a new batch reads it (then discarded). */
  private def read(engine: TxEngine, key: String): Option[String] = {
    val tx = engine.begin()
    try tx.get(b(key)).map(str) finally tx.discard()
  }

  /** Reads `key` twice: the first read caches it; the second must be a hit. */
  private def cache(engine: TxEngine, key: String): Option[String] = {
    read(engine, key)
    val hits = engine.cacheStats.hits
    val value = read(engine, key)
    assert(engine.cacheStats.hits == hits + 1, s"$key should now be cached")
    value
  }

  test("a commit writes its values through, and its deletes and range deletes make the cache forget") {
    withCachedEngine { engine =>
      commitWith(engine) { tx => Seq("a", "b", "c").foreach(k => tx.put(b(k), b(s"$k-1"))) }
      Seq("a", "b", "c").foreach(k => assert(cache(engine, k).contains(s"$k-1")))
      commitWith(engine) { tx => tx.put(b("a"), b("a-2")); tx.delete(b("b")) }
      val hits = engine.cacheStats.hits
      assert(read(engine, "a").contains("a-2"))
      assert(engine.cacheStats.hits == hits + 1, "the committed value was written through, so the read is a hit")
      assert(read(engine, "b").isEmpty)
      commitWith(engine)(_.deleteRange(b("a"), b("z")))
      assert(read(engine, "a").isEmpty && read(engine, "c").isEmpty)
    }
  }

  test("a commit does not cache keys nobody read (new keys of a deduplication stay out)") {
    withCachedEngine { engine =>
      commitWith(engine) { tx => (0 until 100).foreach(i => tx.put(b(s"k$i"), b("v"))) }
      assert(engine.cacheStats.bytes == 0)
    }
  }

  test("an aborted batch leaves cached values as they were") {
    withCachedEngine { engine =>
      commitWith(engine)(_.put(b("k"), b("v1")))
      cache(engine, "k")
      val tx = engine.begin()
      tx.put(b("k"), b("v2"))
      assert(tx.get(b("k")).map(str).contains("v2"))
      tx.discard()
      assert(read(engine, "k").contains("v1"))
    }
  }

  test("rolling back the last commit restores the cached keys it wrote") {
    withCachedEngine { engine =>
      commitWith(engine) { tx => tx.put(b("k"), b("v1")); tx.put(b("gone"), b("g1")) }
      cache(engine, "k")
      cache(engine, "gone")
      commitWith(engine) { tx => tx.put(b("k"), b("v2")); tx.delete(b("gone")); tx.put(b("new"), b("n")) }
      assert(read(engine, "k").contains("v2"))
      engine.rollbackLastCommit()
      assert(read(engine, "k").contains("v1"))
      assert(read(engine, "gone").contains("g1"))
      assert(read(engine, "new").isEmpty)
    }
  }

  test("early commits write through, and undoing them brings back the committed values") {
    withCachedEngine { engine =>
      commitWith(engine)(_.put(b("k"), b("v1")))
      cache(engine, "k")
      val tx = engine.begin()
      tx.put(b("k"), b("v2"))
      val segment = tx.changes.toVector
      engine.earlyCommit(tx)
      assert(tx.get(b("k")).map(str).contains("v2"), "the batch reads its early-committed write")
      tx.discard()
      engine.undoEarlyCommits(segment.iterator)
      assert(read(engine, "k").contains("v1"))
    }
  }

  test("a batch with early commits caches nothing it reads; after its commit, reads are cached again") {
    withCachedEngine { engine =>
      commitWith(engine)(_.put(b("k"), b("v1")))
      val tx = engine.begin()
      tx.put(b("x"), b("1"))
      engine.earlyCommit(tx)
      assert(tx.get(b("k")).map(str).contains("v1"))
      assert(tx.getAll(Seq(b("k"), b("x"))).map(_.map(str)) == Seq(Some("v1"), Some("1")))
      assert(engine.cacheStats.bytes == 0, "reads of a batch with early commits were cached")
      engine.commit(tx, pointOf(tx))
      assert(cache(engine, "k").contains("v1"))
      assert(engine.cacheStats.bytes > 0)
    }
  }

  test("a replayed changelog replaces cached values") {
    withCachedEngine { engine =>
      commitWith(engine)(_.put(b("k"), b("v1")))
      cache(engine, "k")
      engine.replay(Iterator(ChangeRecord.Put(b("k"), b("v3"))), point(2, 1))
      assert(read(engine, "k").contains("v3"))
      engine.replay(Iterator(ChangeRecord.DeleteRange(b("a"), b("z"))), point(3, 0))
      assert(read(engine, "k").isEmpty)
    }
  }

  test("restoring a snapshot, wiping, or starting empty forgets every cached value") {
    withCachedEngine { engine =>
      commitWith(engine)(_.put(b("k"), b("v1")))
      val snapshot = new java.io.File(newTempDir("snap"), "v1")
      engine.checkpointTo(snapshot)
      commitWith(engine)(_.put(b("k"), b("v2")))
      assert(cache(engine, "k").contains("v2"))
      engine.restore { dir =>
        snapshot.listFiles().foreach(f => Files.copy(f.toPath, dir.toPath.resolve(f.getName)))
      }
      assert(read(engine, "k").contains("v1"))
      cache(engine, "k")
      engine.startEmptyAt(7)
      assert(read(engine, "k").isEmpty)
      commitWith(engine)(_.put(b("k"), b("v8")))
      cache(engine, "k")
      engine.wipe()
      assert(read(engine, "k").isEmpty)
    }
  }

  test("a key TTL expires is gone for the batch that expires it and after its commit") {
    withCachedEngine { engine =>
      val ttl = Some(TimeToLive(100, _ => true))
      commitStamped(engine, WriteStamp(1, 1000), ttl)(_.put(b("k"), b("v1")))
      cache(engine, "k")
      val tx = engine.begin(WriteStamp(2, 1100), ttl)
      assert(tx.expiredEntries == 1)
      assert(tx.get(b("k")).isEmpty)
      engine.commit(tx, pointOf(tx))
      assert(read(engine, "k").isEmpty)
    }
  }

  test("multi-key reads mix cached and stored keys in the order asked") {
    withCachedEngine { engine =>
      commitWith(engine) { tx => Seq("a", "b", "c").foreach(k => tx.put(b(k), b(s"$k-1"))) }
      cache(engine, "b")
      val tx = engine.begin()
      try assert(tx.getAll(Seq(b("a"), b("b"), b("x"), b("c"))).map(_.map(str)) ==
        Seq(Some("a-1"), Some("b-1"), None, Some("c-1")))
      finally tx.discard()
      commitWith(engine)(_.put(b("a"), b("a-2")))
      val again = engine.begin()
      try assert(again.getAll(Seq(b("c"), b("a"))).map(_.map(str)) == Seq(Some("c-1"), Some("a-2")))
      finally again.discard()
    }
  }
}
