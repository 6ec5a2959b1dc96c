package txstate.engine

import java.util.concurrent.atomic.{AtomicLong, LongAdder}

/**
 * Committed values of hot keys in the JVM heap, in front of RocksDB (docs/ARCHITECTURE.md,
 * "Hot-state cache"). One byte budget per executor JVM is shared by every store on it, the way one
 * record cache is split between the stores of a Kafka Streams instance: busy stores take more of it.
 *
 * - Bounded: each of `shardCount` shards keeps at most `maxBytes / shardCount` bytes (keys, values
 *   and an estimated per-entry overhead) and drops entries not read lately beyond that (CLOCK: the
 *   oldest first, each read one passed over once).
 *   Shards keep the lock a lookup takes small when many tasks read at once.
 * - Choosy when full: a new key gets in only if it was looked up more often lately than the oldest
 *   entry, next in line to be pushed out ([[FrequencySketch]], TinyLFU's admission test). A scan
 *   or uniformly spread reads then leave the cache as it is, instead of replacing one cold entry by
 *   another at every miss.
 * - Stores see only their own entries ([[StoreCache]]): an entry is keyed by its store's scope.
 *   Forgetting a whole store is O(1): the store moves to a fresh scope, and the entries of the old
 *   one are never found or read again, and leave as others need room.
 * - Exactness is the engine's job: it tells its [[StoreCache]] about every write it makes.
 */
final class HotStateCache(initialMaxBytes: Long, shardCount: Int = 16) {
  require(initialMaxBytes >= 0, s"a hot-state cache needs a budget >= 0 bytes, got $initialMaxBytes")
  require(shardCount > 0 && Integer.bitCount(shardCount) == 1, s"shardCount must be a power of two, got $shardCount")

  @volatile private var budget: Long = initialMaxBytes
  private val shards = Array.fill(shardCount)(new HotStateCache.Shard)
  private val scopes = new AtomicLong
  shards.foreach(_.sizeFor(shardBudget))

  /** The byte budget of the whole cache; 0 means off. */
  def maxBytes: Long = budget

  def enabled: Boolean = budget > 0

  /** Changes the budget (a new setting); shards over their new share drop entries now. */
  def resize(maxBytes: Long): Unit = {
    require(maxBytes >= 0, s"a hot-state cache needs a budget >= 0 bytes, got $maxBytes")
    budget = maxBytes
    shards.foreach { shard =>
      shard.shrinkTo(shardBudget)
      shard.sizeFor(shardBudget)
    }
  }

  /** Bytes held by every store's entries, including entries of forgotten scopes not yet dropped. */
  def usedBytes: Long = shards.iterator.map(_.bytes).sum

  /** A view for one store; close it with the store. */
  def newStore(): StoreCache = new StoreCache(this)

  private[engine] def nextScope(): Long = scopes.incrementAndGet()

  private[engine] def lookup(key: HotStateCache.Key): Array[Byte] = shardOf(key).get(key)

  /** Caches `value` if there is room or the key is wanted more than what it would push out (never beyond a shard's share). */
  private[engine] def admit(key: HotStateCache.Key, value: Array[Byte], owner: StoreCache): Unit = {
    val size = HotStateCache.sizeOf(key.bytes, value)
    val share = shardBudget
    if (size <= share) shardOf(key).admit(key, new HotStateCache.Entry(value, size, owner), share)
  }

  /** Replaces `key`'s value only if it is cached (write-through of a commit); `value` is made only then. */
  private[engine] def update(key: HotStateCache.Key, value: => Array[Byte]): Unit = shardOf(key).replace(key, value, shardBudget)

  private[engine] def remove(key: HotStateCache.Key): Unit = shardOf(key).remove(key)

  private def shardBudget: Long = budget / shardCount

  // The shard comes from the top bits of a multiplicative mix of the hash: each shard's hash map
  // indexes its buckets by the low bits, and taking those for the shard too would leave 15 of every
  // 16 buckets empty (and the maps would turn their crowded buckets into trees).
  private val shardShift = 32 - Integer.numberOfTrailingZeros(shardCount)

  private def shardOf(key: HotStateCache.Key): HotStateCache.Shard =
    if (shardCount == 1) shards(0) else shards((key.hashCode * 0x9E3779B9) >>> shardShift)
}

object HotStateCache {
  /**
   * Estimated heap bytes per entry besides the key and value bytes: the linked hash map's entry and
   * table slot, the key and entry objects, and two array headers.
   */
  val entryOverhead: Long = 120L

  def sizeOf(key: Array[Byte], value: Array[Byte]): Long = key.length.toLong + value.length + entryOverhead

  // What the frequency sketch of a shard is sized for: entries of a small key and value.
  private val typicalEntryBytes = 160L

  /** A cache of no bytes: every lookup misses and nothing is kept. */
  def off: HotStateCache = new HotStateCache(0L, 1)

  /** A key of one store's scope: content equality; the hash is the bytes' (computed once, by the caller) and the scope's. */
  private[engine] final class Key(val scope: Long, val bytes: Array[Byte], bytesHash: Int) {
    override val hashCode: Int = bytesHash * 31 + java.lang.Long.hashCode(scope)
    override def equals(other: Any): Boolean = other match {
      case k: Key => k.hashCode == hashCode && k.scope == scope && java.util.Arrays.equals(k.bytes, bytes)
      case _ => false
    }
  }

  /** A cached value; mutable so a hit or a write-through changes a field instead of relinking the map. */
  private final class Entry(var value: Array[Byte], var size: Long, val owner: StoreCache) {
    var referenced = false
  }

  /**
   * One shard: entries in insertion order, each with a referenced bit (CLOCK, an approximation of
   * least recently used), its byte count and how often keys are looked up. A hit only sets the bit:
   * an access-ordered map relinked its nodes on every hit and every write-through, pointer writes into
   * long-lived objects that made the garbage collector's bookkeeping cost more than the cache saved.
   */
  private final class Shard {
    private val map = new java.util.LinkedHashMap[Key, Entry](256, 0.75f)
    private var sketch = new FrequencySketch(64)
    @volatile private var used = 0L

    def bytes: Long = used

    /** A sketch for about as many entries as `share` bytes hold (counts so far are dropped). */
    def sizeFor(share: Long): Unit = synchronized {
      sketch = new FrequencySketch(math.min(share / typicalEntryBytes, 1L << 24).toInt)
    }

    def get(key: Key): Array[Byte] = synchronized {
      sketch.increment(key.hashCode)
      val e = map.get(key)
      if (e == null) null
      else {
        e.referenced = true
        e.value
      }
    }

    /** Puts `entry` if it fits, or if its key was looked up more often than the eldest entry's. */
    def admit(key: Key, entry: Entry, share: Long): Unit = synchronized {
      if (used + entry.size <= share || wantedMoreThanEldest(key)) {
        forgetOld(map.put(key, entry))
        entry.owner.added(entry.size)
        used += entry.size
        shrinkTo(share)
      }
    }

    private def wantedMoreThanEldest(key: Key): Boolean = {
      val eldest = map.keySet.iterator
      !eldest.hasNext || sketch.frequency(key.hashCode) > sketch.frequency(eldest.next().hashCode)
    }

    /**
     * Gives a cached `key` its new value in place (a commit wrote it), or drops it if the value no
     * longer fits a shard's share; an uncached key stays out, and its `value` is never made.
     */
    def replace(key: Key, value: => Array[Byte], share: Long): Unit = synchronized {
      val e = map.get(key)
      if (e != null) {
        val v = value
        val size = HotStateCache.sizeOf(key.bytes, v)
        if (size > share) forgetOld(map.remove(key))
        else {
          used += size - e.size
          e.owner.resized(size - e.size)
          e.value = v
          e.size = size
          shrinkTo(share)
        }
      }
    }

    def remove(key: Key): Unit = synchronized(forgetOld(map.remove(key)))

    /** Drops entries, oldest first, skipping once each that was read since it was last passed over. */
    def shrinkTo(share: Long): Unit = synchronized {
      var rounds = 0
      while (used > share && rounds < 2) {
        val oldest = map.values.iterator
        while (used > share && oldest.hasNext) {
          val e = oldest.next()
          if (e.referenced && rounds == 0) e.referenced = false
          else {
            oldest.remove()
            used -= e.size
            e.owner.evicted(e.size)
          }
        }
        rounds += 1
      }
    }

    private def forgetOld(old: Entry): Unit = if (old != null) {
      used -= old.size
      old.owner.removed(old.size)
    }
  }
}

/**
 * One store's part of a [[HotStateCache]], used by its engine's owner thread only. It mirrors the
 * store's local database as the engine's own reads see it: the engine admits what it reads, writes
 * through what it commits, and forgets what it changes any other way.
 */
final class StoreCache private[engine] (cache: HotStateCache) {
  import HotStateCache.Key

  @volatile private var scope: Long = cache.nextScope()
  @volatile private var closed = false
  private val hitCount = new LongAdder
  private val missCount = new LongAdder
  private val evictionCount = new LongAdder
  private val heldBytes = new AtomicLong

  /** The cached value of `key`, or null when it is not cached (the caller reads the database). */
  def get(key: BytesKey): Array[Byte] =
    if (!cache.enabled || closed) null
    else {
      val v = cache.lookup(new Key(scope, key.bytes, key.hashCode))
      if (v == null) missCount.increment() else hitCount.increment()
      v
    }

  /**
   * Caches a value just read from the database. The key is copied: a caller may reuse its array
   * (a Spark projection's buffer), and an entry outlives the batch.
   */
  def admit(key: BytesKey, value: Array[Byte]): Unit =
    if (cache.enabled && !closed) cache.admit(new Key(scope, key.bytes.clone(), key.hashCode), value, this)

  /**
   * False when this store has nothing cached (the cache is off, the default, or every entry was
   * evicted): what the database does then needs no telling. Entries come only from the owner's
   * reads, so it stays false through a commit that starts with it false.
   */
  def holdsAny: Boolean = cache.enabled && !closed && heldBytes.get > 0

  /** The database now holds `value` for `key`: a cached entry takes it (new keys are not admitted; `value` is made only for a cached key). */
  def written(key: Array[Byte], value: => Array[Byte]): Unit = if (holdsAny) cache.update(keyOf(key), value)

  /** The database changed `key` in a way not written through: its entry, if any, goes. */
  def forget(key: Array[Byte]): Unit = if (holdsAny) cache.remove(keyOf(key))

  /** Forgets every entry of this store (its database was replaced, or changed over a range). */
  def forgetAll(): Unit = scope = cache.nextScope()

  def close(): Unit = if (!closed) {
    closed = true
    forgetAll()
  }

  def stats: CacheStats = CacheStats(hitCount.sum, missCount.sum, evictionCount.sum, heldBytes.get)

  private def keyOf(key: Array[Byte]): Key = new Key(scope, key, ByteKeys.hash(key))

  private[engine] def added(size: Long): Unit = heldBytes.addAndGet(size)
  private[engine] def removed(size: Long): Unit = heldBytes.addAndGet(-size)
  private[engine] def resized(change: Long): Unit = if (change != 0) heldBytes.addAndGet(change)
  private[engine] def evicted(size: Long): Unit = {
    heldBytes.addAndGet(-size)
    evictionCount.increment()
  }
}

/**
 * What one store's cache did since it opened: lookups answered from the heap (`hits`) or passed to
 * RocksDB (`misses`), entries dropped for room (`evictions`), and the heap bytes its entries hold,
 * including entries of scopes it has forgotten and that are not yet dropped.
 */
final case class CacheStats(hits: Long, misses: Long, evictions: Long, bytes: Long) {
  def hitRate: Double = if (hits + misses == 0) 0.0 else hits.toDouble / (hits + misses)

  /** The counts since `earlier`, with the bytes held now. */
  def since(earlier: CacheStats): CacheStats =
    CacheStats(hits - earlier.hits, misses - earlier.misses, evictions - earlier.evictions, bytes)
}

object CacheStats {
  val zero: CacheStats = CacheStats(0L, 0L, 0L, 0L)
}
