package txstate.engine

import org.rocksdb.{Cache, LRUCache, RocksDB, WriteBufferManager}

/**
 * One bound on the native memory of many databases (docs/ARCHITECTURE.md, "Native memory budget"):
 * a block cache and a write-buffer manager charged to it, shared by every engine that holds a
 * [[NativeMemoryLease]]. Memtables reserve their bytes in the cache, so the cache's usage is the
 * databases' block cache and memtables together, and a busy database takes the room idle ones leave.
 *
 * - The native objects live while a lease is held: the first lease creates them, the last one
 *   released closes them (the write-buffer manager, then the cache it charges), each exactly once;
 *   a later lease creates new ones. An engine holds its lease until its last database closed, so
 *   they never close under a database that uses them.
 * - The limit is fixed while the objects live: [[resize]] with leases held applies when the next
 *   ones are created (RocksDB's Java API cannot resize a write-buffer manager).
 *
 * Thread-safe: engines on any thread take and release leases.
 */
final class NativeMemoryBudget(initialLimitBytes: Long) {
  require(initialLimitBytes > 0, s"a native memory budget needs a limit > 0 bytes, got $initialLimitBytes")

  // Guarded by `this`.
  private var wantedLimit = initialLimitBytes
  private var shared: Option[NativeMemoryBudget.Shared] = None
  private var leases = 0

  /** The limit of the objects alive now, or of the next ones when none are. */
  def limitBytes: Long = synchronized(shared.fold(wantedLimit)(_.limitBytes))

  /** The limit the next objects get; the live ones (if any) keep theirs. Returns whether it applies now. */
  def resize(limitBytes: Long): Boolean = synchronized {
    require(limitBytes > 0, s"a native memory budget needs a limit > 0 bytes, got $limitBytes")
    wantedLimit = limitBytes
    shared.forall(_.limitBytes == limitBytes)
  }

  /** Bytes the shared cache holds now: cached blocks plus the memtables charged to it; 0 while no lease is held. */
  def usedBytes: Long = synchronized(shared.fold(0L)(_.cache.getUsage))

  /**
   * Whether what the shared cache cannot evict (the memtables' reservations and pinned blocks) is
   * over the memtables' share of the limit: then the blocks reads need are being pushed out.
   */
  def overLimit: Boolean = synchronized(shared.exists(s => s.cache.getPinnedUsage > s.writeBufferBytes))

  /** Leases held now: the databases' engines sharing the budget. */
  def leasesHeld: Int = synchronized(leases)

  /** A share of the budget for one engine; it must be closed once the engine's last database closed. */
  def lease(): NativeMemoryLease = synchronized {
    val objects = shared.getOrElse {
      val created = NativeMemoryBudget.Shared(wantedLimit)
      shared = Some(created)
      created
    }
    leases += 1
    new NativeMemoryLease(this, objects.cache, objects.writeBuffers)
  }

  private[engine] def release(): Unit = synchronized {
    leases -= 1
    if (leases == 0) {
      val last = shared
      shared = None
      last.foreach(_.close())
    }
  }
}

object NativeMemoryBudget {
  /**
   * Memtables may take this share of the limit; past it RocksDB flushes the database being written.
   * Half keeps room for the index, filter and data blocks reads need (the rest of the cache).
   */
  val writeBufferShare: Double = 0.5

  /**
   * The cache's share reserved for high-priority blocks (index and filter blocks, see
   * [[NativeOptions]]): a scan's data blocks cannot push them out, so gets stay one block read.
   */
  val highPriorityShare: Double = 0.1

  /** The memtable arena block of the data families under a budget (see [[NativeOptions]]). */
  val arenaBlockBytes: Long = 64L << 10

  /** The commit family's: it holds two small keys. */
  val commitArenaBlockBytes: Long = 8L << 10

  private final case class Shared(limitBytes: Long) {
    RocksDB.loadLibrary()
    // Not a strict limit: a strict cache fails reads and writes when pinned blocks fill it, a
    // non-strict one goes over for as long as they are pinned.
    val cache: LRUCache = new LRUCache(limitBytes, -1, false, highPriorityShare)
    val writeBufferBytes: Long = (limitBytes * writeBufferShare).toLong
    // No stall: RocksDB would hold every writer until the memtables shrink, but only a write to a
    // database flushes it, so idle stores' memtables would never shrink and the writers wait for good.
    val writeBuffers: WriteBufferManager =
      try new WriteBufferManager(writeBufferBytes, cache, false)
      catch { case e: Throwable => cache.close(); throw e }

    /** The manager first (it charges the cache), then the cache; the cache closes even if the manager fails to. */
    def close(): Unit = NativeOptions.closeAll(List(writeBuffers, cache))
  }
}

/**
 * One engine's share of a [[NativeMemoryBudget]]: the shared cache and write-buffer manager, which
 * the lease does not own. Closing it (once; later calls do nothing) releases the share.
 */
final class NativeMemoryLease private[engine] (budget: NativeMemoryBudget, private[engine] val cache: Cache,
    private[engine] val writeBuffers: WriteBufferManager) extends AutoCloseable {
  private var released = false

  /** The budget's limit while this lease is held. */
  def limitBytes: Long = budget.limitBytes

  /** Whether the budget is over its limit now (see [[NativeMemoryBudget.overLimit]]). */
  private[engine] def overLimit: Boolean = budget.overLimit

  /** An even share of what the budget uses now: summed over the leases, the budget's use. */
  private[engine] def usedShare: Long = budget.synchronized {
    val held = budget.leasesHeld
    if (released || held == 0) 0L else budget.usedBytes / held
  }

  def close(): Unit = budget.synchronized {
    if (!released) {
      released = true
      budget.release()
    }
  }
}
