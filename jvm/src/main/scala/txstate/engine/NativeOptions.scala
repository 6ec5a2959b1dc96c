package txstate.engine

import scala.util.control.NonFatal

import org.rocksdb.{BlockBasedTableConfig, BloomFilter, ColumnFamilyOptions, CompressionType, DBOptions, IndexType, LRUCache, RocksDB, WriteOptions}

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
 */
private[engine] final class NativeOptions private (
    blockCache: LRUCache,
    val dbOptions: DBOptions,
    val commitOptions: ColumnFamilyOptions,
    val dataOptions: ColumnFamilyOptions,
    val writeOptions: WriteOptions,
    closeOrder: List[AutoCloseable]) extends AutoCloseable {
  private var closed = false

  /** Bytes the block cache holds now (native memory). */
  def blockCacheUsage: Long = blockCache.getUsage

  def close(): Unit = if (!closed) {
    closed = true
    NativeOptions.closeAll(closeOrder)
  }
}

private[engine] object NativeOptions {

  /** Creates the option objects of an engine; if one cannot be created, those already made are closed. */
  def apply(options: EngineOptions): NativeOptions = {
    RocksDB.loadLibrary()
    var made = List.empty[AutoCloseable] // newest first: the order they close in
    def own[T <: AutoCloseable](created: T): T = { made = created :: made; created }
    try {
      val cache = own(new LRUCache(options.blockCacheBytes))
      val bloom = own(new BloomFilter(10, false))
      // Plain Java settings, no native handle of its own: RocksDB copies them into `dataOptions`.
      // Index and filter blocks live in the (bounded) block cache, partitioned with the top level
      // pinned: whole index/filter blocks competing with data blocks in a small cache made every get
      // at 1M keys reload them (about 150 us per get in the benchmark, against 9 us).
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
      val commitOptions = own(new ColumnFamilyOptions()).setWriteBufferSize(1L << 20)
      val dataOptions = own(new ColumnFamilyOptions())
        .setTableFormatConfig(tableConfig)
        .setWriteBufferSize(options.writeBufferBytes)
        .setMaxWriteBufferNumber(options.maxWriteBuffers)
        .setCompressionType(CompressionType.LZ4_COMPRESSION)
      // No slowdown: a stalled write returns at once and LocalDatabase.write waits, interruptibly.
      val writeOptions = own(new WriteOptions()).setDisableWAL(true).setNoSlowdown(true)
      new NativeOptions(cache, dbOptions, commitOptions, dataOptions, writeOptions, made)
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
