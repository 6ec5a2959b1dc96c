package txstate.engine

import java.nio.charset.StandardCharsets.UTF_8

import org.scalatest.funsuite.AnyFunSuite

/**
 * The shared cache's own rules: its byte bound, least-recently-used eviction, stores that never see
 * each other's entries, write-through that never admits, and forgetting. (That the engine keeps it
 * exact is checked by the model runs of [[TimeToLiveModelTest]] and [[TxEngineHotCacheTest]].)
 */
final class HotStateCacheTest extends AnyFunSuite {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)
  private def k(s: String): BytesKey = new BytesKey(b(s))
  private def str(bytes: Array[Byte]): Option[String] = Option(bytes).map(new String(_, UTF_8))
  private def entry(k: String, v: String): Long = HotStateCache.sizeOf(b(k), b(v))

  test("the cache never holds more than its budget, and each store's bytes add up to the total") {
    val cache = new HotStateCache(64L * 1024, shardCount = 4)
    val stores = Vector.fill(3)(cache.newStore())
    val rnd = new scala.util.Random(5)
    (0 until 20000).foreach { i =>
      val s = stores(rnd.nextInt(3))
      // As the engine does: a lookup, then the value read from RocksDB is offered (Zipf-like: low ids come back often).
      val key = k(s"key-${(rnd.nextDouble() * rnd.nextDouble() * 5000).toInt}")
      if (s.get(key) == null) s.admit(key, Array.fill(rnd.nextInt(200))(1.toByte))
      if (i % 1000 == 0) assert(cache.usedBytes <= cache.maxBytes, s"after $i admissions")
    }
    assert(cache.usedBytes <= cache.maxBytes)
    assert(cache.usedBytes > cache.maxBytes / 2, "the cache should be well used after 20k admissions")
    assert(stores.map(_.stats.bytes).sum == cache.usedBytes)
    assert(stores.map(_.stats.evictions).sum > 0)
  }

  test("when full, a key looked up more often than the least recently used entry replaces it") {
    val cache = new HotStateCache(3 * entry("a", "1"), shardCount = 1)
    val s = cache.newStore()
    Seq("a", "b", "c").foreach(key => s.admit(k(key), b("1")))
    assert(str(s.get(k("a"))).contains("1")) // a is now the most recent
    s.get(k("d"))
    s.get(k("d")) // d missed twice: wanted more than b, never looked up
    s.admit(k("d"), b("1"))
    assert(s.get(k("b")) == null, "b was the least recently used")
    assert(Seq("a", "c", "d").forall(key => s.get(k(key)) != null))
    assert(s.stats.evictions == 1)
  }

  test("when full, a key looked up no more often than the least recently used entry stays out (no churn)") {
    val cache = new HotStateCache(3 * entry("a", "1"), shardCount = 1)
    val s = cache.newStore()
    Seq("a", "b", "c").foreach { key => s.get(k(key)); s.admit(k(key), b("1")) }
    s.get(k("d")) // looked up once, as often as a, b and c
    s.admit(k("d"), b("1"))
    assert(s.get(k("d")) == null)
    assert(Seq("a", "b", "c").forall(key => s.get(k(key)) != null))
    assert(s.stats.evictions == 0)
  }

  test("stores see only their own entries, even for equal keys") {
    val cache = new HotStateCache(1L << 20)
    val one = cache.newStore()
    val two = cache.newStore()
    one.admit(k("k"), b("one"))
    assert(two.get(k("k")) == null)
    two.admit(k("k"), b("two"))
    assert(str(one.get(k("k"))).contains("one"))
    assert(str(two.get(k("k"))).contains("two"))
    one.forget(b("k"))
    assert(one.get(k("k")) == null)
    assert(str(two.get(k("k"))).contains("two"))
  }

  test("a write replaces a cached value but never admits a new key") {
    val cache = new HotStateCache(1L << 20)
    val s = cache.newStore()
    s.written(b("new"), b("v"))
    assert(s.get(k("new")) == null)
    s.admit(k("hot"), b("v1"))
    s.written(b("hot"), b("v2"))
    assert(str(s.get(k("hot"))).contains("v2"))
    assert(s.stats.bytes == entry("hot", "v2"))
  }

  test("forgetting a whole store hides its entries at once; a closed store caches nothing") {
    val cache = new HotStateCache(1L << 20)
    val s = cache.newStore()
    (0 until 100).foreach(i => s.admit(k(s"k$i"), b("v")))
    s.forgetAll()
    assert((0 until 100).forall(i => s.get(k(s"k$i")) == null))
    s.admit(k("k1"), b("fresh"))
    assert(str(s.get(k("k1"))).contains("fresh"))
    s.close()
    assert(s.get(k("k1")) == null)
    s.admit(k("k2"), b("v"))
    assert(s.get(k("k2")) == null)
  }

  test("the admitted key is a copy: a caller reusing its array cannot change a cached entry") {
    val s = new HotStateCache(1L << 20).newStore()
    val reused = b("aaaa")
    s.admit(new BytesKey(reused), b("v"))
    System.arraycopy(b("bbbb"), 0, reused, 0, 4)
    assert(str(s.get(k("aaaa"))).contains("v"))
    assert(s.get(k("bbbb")) == null)
  }

  test("an entry larger than a shard's share is not cached; shrinking the budget evicts; 0 switches the cache off") {
    val cache = new HotStateCache(1024, shardCount = 2)
    val s = cache.newStore()
    s.admit(k("big"), new Array[Byte](600))
    assert(s.get(k("big")) == null)
    (0 until 6).foreach(i => s.admit(k(s"k$i"), b("v")))
    val before = cache.usedBytes
    cache.resize(256)
    assert(cache.usedBytes <= 256 && cache.usedBytes < before)
    cache.resize(0)
    assert(cache.usedBytes == 0 && !cache.enabled)
    s.admit(k("k"), b("v"))
    assert(s.get(k("k")) == null)
    assert(s.stats.bytes == 0)
  }

  test("hits and misses count lookups, and a batch's counts are the difference of two readings") {
    val s = new HotStateCache(1L << 20).newStore()
    s.admit(k("k"), b("v"))
    val start = s.stats
    s.get(k("k"))
    s.get(k("k"))
    s.get(k("absent"))
    val batch = s.stats.since(start)
    assert((batch.hits, batch.misses) == (2L, 1L))
    assert(math.abs(batch.hitRate - 2.0 / 3) < 1e-9)
  }

  test("stores on several threads keep their own values under eviction pressure") {
    val cache = new HotStateCache(32L * 1024, shardCount = 4)
    val failures = new java.util.concurrent.ConcurrentLinkedQueue[String]()
    val threads = (0 until 4).map { t =>
      new Thread(() => {
        val s = cache.newStore()
        val rnd = new scala.util.Random(t)
        (0 until 50000).foreach { _ =>
          val i = rnd.nextInt(500)
          val got = s.get(k(s"k$i"))
          if (got != null && str(got) != Some(s"$t:$i")) failures.add(s"thread $t read ${str(got)} for k$i")
          else if (got == null) s.admit(k(s"k$i"), b(s"$t:$i"))
        }
      })
    }
    threads.foreach(_.start())
    threads.foreach(_.join())
    assert(failures.isEmpty, failures.toArray.take(3).mkString("; "))
    assert(cache.usedBytes <= cache.maxBytes)
  }
}
