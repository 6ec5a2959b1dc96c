package txstate.engine

import java.io.File

import scala.util.control.NonFatal

import org.rocksdb.{BlockBasedTableConfig, BloomFilter, Cache, ColumnFamilyOptions, CompressionType, DBOptions, IndexType, LRUCache, RocksDB, WriteOptions}

/**
 * The native option objects of one engine. They are shared by every database the engine opens (the
 * first, a reopen after a failed write, each replacement), and an open database keeps using them
 * (its block cache, filter and write options), so they outlive every database: the engine closes
 * them after its last database, or at once when its first open fails.
 *
 * Each object is closed exactly once, in the reverse order of creation (what uses an object closes
 * before it: the options before the cache and the filter their table format points to), and a close
 * that throws does not stop the others: the first failure is rethrown once all were tried. Kafka
 * Streams' `RocksDBStore.close` stops at the first failure and leaks the rest.
 *
 * Under a [[NativeMemoryBudget]] the block cache and the write-buffer manager are the budget's: the
 * engine owns only its [[NativeMemoryLease]], taken first and released last, and never closes them.
 * Without one, the engine has a block cache of its own (`blockCacheBytes`) and no write-buffer manager.
 */
private[engine] final class NativeOptions private (
    blockCache: Cache,
    lease: Option[NativeMemoryLease],
    val dbOptions: DBOptions,
    val commitOptions: ColumnFamilyOptions,
    val dataOptions: ColumnFamilyOptions,
    val writeOptions: WriteOptions,
    closeOrder: List[AutoCloseable]) extends AutoCloseable {
  private var closed = false

  /**
   * This engine's bytes in the block cache (native memory): all of its own cache's, or under a
   * budget an even share of the shared cache's (memtables included, since they are charged to it).
   */
  def blockCacheUsage: Long = lease.fold(blockCache.getUsage)(_.usedShare)

  /** Whether the shared budget (if any) is over its limit: its memtables and pinned blocks fill it. */
  def overBudget: Boolean = lease.exists(_.overLimit)

  /** Whether memtables are charged to a shared budget's cache (then [[blockCacheUsage]] counts them). */
  def memtablesInCache: Boolean = lease.isDefined

  def close(): Unit = if (!closed) {
    closed = true
    NativeOptions.closeAll(closeOrder)
  }
}

private[engine] object NativeOptions {
  val manifestPreallocationBytes: Long = 64L << 10

  /**
   * Creates the option objects of an engine, under `budget`'s shared cache and write-buffer manager
   * if given; if one cannot be created, those already made are closed (the lease released).
   */
  def apply(dir: File, options: EngineOptions, budget: Option[NativeMemoryBudget]): NativeOptions = {
    RocksDB.loadLibrary()
    var made = List.empty[AutoCloseable] // newest first: the order they close in
    def own[T <: AutoCloseable](created: T): T = { made = created :: made; created }
    // Made from the options that use it, yet closed after them: last in the order.
    def ownLast[T <: AutoCloseable](created: T): T = { made = made :+ created; created }
    try {
      val lease = budget.map(b => own(b.lease()))
      val cache: Cache = lease.fold[Cache](own(new LRUCache(options.blockCacheBytes)))(_.cache)
      val bloom = own(new BloomFilter(10, false))
      // Plain Java settings, no native handle of its own: RocksDB copies them into `dataOptions`.
      // Index and filter blocks live in the (bounded) block cache, partitioned with the top level
      // pinned: whole index/filter blocks competing with data blocks in a small cache would make every
      // get on a large store reload them (the store benchmark's `--only raw-txstate-options` shows it).
      val tableConfig = new BlockBasedTableConfig()
        .setBlockCache(cache)
        .setFilterPolicy(bloom)
        .setCacheIndexAndFilterBlocks(true)
        .setCacheIndexAndFilterBlocksWithHighPriority(true)
        .setPinL0FilterAndIndexBlocksInCache(true)
        .setPinTopLevelIndexAndFilter(true)
        .setIndexType(IndexType.kTwoLevelIndexSearch)
        .setPartitionFilters(true)
        .setMetadataBlockSize(4096)
      val dbOptions = own(new DBOptions())
        .setCreateIfMissing(true)
        .setCreateMissingColumnFamilies(true)
        .setAtomicFlush(true)
        .setMaxBackgroundJobs(2)
        .setMaxOpenFiles(256)
        // RocksDB reserves 4 MiB of disk for each new MANIFEST; ours stay under a few KiB, and 500
        // stores on one executor would reserve 2 GiB (docs/ARCHITECTURE.md, "Local disk").
        .setManifestPreallocationSize(NativeOptions.manifestPreallocationBytes)
      ownLast(NativeLog.install(dir, dbOptions))
      lease.foreach(l => dbOptions.setWriteBufferManager(l.writeBuffers))
      // The commit family holds a few small rows, yet each flush adds a file to it: compacting after
      // every flush (a few hundred bytes) keeps one file open per store instead of up to five
      // (docs/ARCHITECTURE.md, "Open files").
      val commitOptions = own(new ColumnFamilyOptions()).setWriteBufferSize(1L << 20)
        .setLevel0FileNumCompactionTrigger(1)
      val dataOptions = own(new ColumnFamilyOptions())
        .setTableFormatConfig(tableConfig)
        .setWriteBufferSize(options.writeBufferBytes)
        .setMaxWriteBufferNumber(options.maxWriteBuffers)
        .setCompressionType(CompressionType.LZ4_COMPRESSION)
      // A memtable grows in arena blocks, 1 MiB each by default: 500 stores that each wrote a few
      // rows would hold 500 MiB of memtables the write-buffer manager cannot flush (it flushes only
      // the database being written). Small blocks make a store hold about what it wrote.
      if (lease.isDefined) {
        dataOptions.setArenaBlockSize(NativeMemoryBudget.arenaBlockBytes)
        commitOptions.setArenaBlockSize(NativeMemoryBudget.commitArenaBlockBytes)
      }
      // No slowdown: a stalled write returns at once and LocalDatabase.write waits, interruptibly.
      val writeOptions = own(new WriteOptions()).setDisableWAL(true).setNoSlowdown(true)
      new NativeOptions(cache, lease, dbOptions, commitOptions, dataOptions, writeOptions, made)
    } catch {
      case e: Throwable =>
        try closeAll(made) catch { case NonFatal(c) => e.addSuppressed(c) }
        throw e
    }
  }

  /** Closes every one of `objects`, in order, even past a failure; then throws the first failure. */
  private[engine] def closeAll(objects: List[AutoCloseable]): Unit = {
    var first: Option[Throwable] = None
    objects.foreach { o =>
      try o.close()
      catch {
        case NonFatal(e) =>
          if (first.isEmpty) first = Some(e) else first.foreach(_.addSuppressed(e))
      }
    }
    first.foreach(throw _)
  }
}
