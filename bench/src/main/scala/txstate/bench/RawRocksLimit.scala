package txstate.bench

import java.io.{BufferedOutputStream, DataOutputStream, File, FileOutputStream}
import java.nio.ByteBuffer

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.Platform
import org.rocksdb._

import txstate.compat.ScalaLibrary.Using

/**
 * The physical limit: the same get + put workload straight against rocksdbjni with the cheapest
 * reasonable buffer (a HashMap overlay in front of `db.get`; one WriteBatch + `db.write`, WAL off,
 * at commit). Same key and value bytes as the UnsafeRow encoding. RocksDB options mirror txstate's
 * engine (LZ4, 10-bit bloom filter, and txstate's default block cache and memtable sizes) except for `tuning`,
 * how index and filter blocks are cached: the limit keeps them outside the block cache, because
 * txstate's choice (in the 8 MiB cache, pinned for L0 only) makes gets reload those blocks again and
 * again once ~1M keys sit in one bottom-level file (`--only raw-txstate-options` shows by how much).
 *
 * With `changelog = true` each commit also writes every buffered entry to a local file first
 * (buffered stream, no fsync), the least a durable changelog costs.
 */
final class RawRocksLimit(plan: Workload.Plan, changelog: Boolean, tuning: RawRocksLimit.Tuning) {
  import ProviderRun.timed

  private val rows = new RowMaker
  private val previous = new UnsafeRow(Workload.valueSchema.length)

  def run(dir: File): Measurement = {
    RocksDB.loadLibrary()
    dir.mkdirs()
    Using.Manager { use =>
      val engine = _root_.txstate.engine.EngineOptions() // the same sizes as txstate's defaults
      val cache = use(tuning.cache(engine.blockCacheBytes))
      val bloom = use(new BloomFilter(10, false))
      val table = tuning.table(new BlockBasedTableConfig().setBlockCache(cache).setFilterPolicy(bloom))
      val options = use(new Options().setCreateIfMissing(true).setTableFormatConfig(table)
        .setWriteBufferSize(engine.writeBufferBytes).setMaxWriteBufferNumber(engine.maxWriteBuffers).setMaxBackgroundJobs(2)
        .setCompressionType(CompressionType.LZ4_COMPRESSION))
      val writeOptions = use(new WriteOptions().setDisableWAL(true))
      val db = use(RocksDB.open(options, new File(dir, "db").getAbsolutePath))
      val overlay = new java.util.HashMap[ByteBuffer, Array[Byte]](plan.batches.headOption.fold(16)(_.length * 2))

      def batch(ids: Array[Int], batchNo: Long, version: Long): ProviderRun.BatchTiming = {
        var getNs = 0L
        var putNs = 0L
        val cpu0 = ProviderRun.threadCpuNs()
        val t1 = System.nanoTime()
        var i = 0
        while (i < ids.length) {
          val id = ids(i)
          val key = bytesOf(rows.key(id))
          val a = System.nanoTime()
          val wrapped = ByteBuffer.wrap(key)
          var stored = overlay.get(wrapped)
          if (stored == null) stored = db.get(key)
          val prev = if (stored == null) null else { previous.pointTo(stored, stored.length); previous }
          val value = bytesOf(rows.nextValue(prev, id, batchNo))
          val b = System.nanoTime()
          overlay.put(wrapped, value)
          val c = System.nanoTime()
          getNs += b - a
          putNs += c - b
          i += 1
        }
        val t2 = System.nanoTime()
        if (changelog) writeChangelog(new File(dir, s"$version.changelog"), overlay)
        Using.resource(new WriteBatch()) { wb =>
          overlay.forEach((k, v) => wb.put(k.array(), v))
          db.write(writeOptions, wb)
        }
        overlay.clear()
        val t3 = System.nanoTime()
        ProviderRun.BatchTiming(version + 1, ids.length, 0L, t2 - t1, t3 - t2, getNs, putNs, ProviderRun.threadCpuNs() - cpu0)
      }

      val (_, preloadMs) = timed(batch(Array.range(0, plan.preloadKeys), 0L, 0L))
      val measured = plan.batches.zipWithIndex.map { case (ids, i) => batch(ids, i + 1L, i + 1L) }
      val (_, abortMs) = timed(overlay.clear()) // abort: drop the overlay
      val verified = verify(db)
      Measurement(
        batchRates = measured.map(t => t.rows / ((t.loopNs + t.commitNs) / 1e9)),
        cpuRates = measured.map(t => t.rows / (t.cpuNs / 1e9)),
        rowRates = measured.map(t => t.rows / (t.loopNs / 1e9)),
        getMicros = measured.map(t => t.getNs / 1e3 / t.rows),
        putMicros = measured.map(t => t.putNs / 1e3 / t.rows),
        openMs = measured.map(_ => 0.0),
        commitMs = measured.map(_.commitNs / 1e6),
        preloadMs = preloadMs,
        abortReopenMs = abortMs,
        rerunMs = Double.NaN,
        maintenanceMs = Double.NaN,
        coldReopenMs = Double.NaN,
        warmReopenMs = Double.NaN,
        checkpointBytes = ProviderRun.sizeOf(dir),
        loadAverage = ProviderRun.loadAverage(),
        verified = Some(verified))
    }.get
  }

  /** Same checks as the providers get: every distinct key once, and the counts of a sample of keys. */
  private def verify(db: RocksDB): Either[String, Unit] = {
    val distinct = math.max(plan.preloadKeys, plan.batches.iterator.map(b => if (b.isEmpty) 0 else b.max + 1).reduceOption(_ max _).getOrElse(0))
    var numKeys = 0L
    Using.resource(db.newIterator()) { it =>
      it.seekToFirst()
      while (it.isValid) { numKeys += 1; it.next() }
      it.status()
    }
    if (numKeys != distinct) Left(s"raw: $numKeys keys, expected $distinct")
    else ProviderRun.expectedCounts(plan, withAbortBatch = false).iterator.collectFirst {
      case (id, expected) if id < distinct && {
          val stored = db.get(bytesOf(rows.key(id)))
          val found = if (stored == null) 0L else { previous.pointTo(stored, stored.length); previous.getLong(0) }
          found != expected
        } => s"raw: key $id has the wrong count (expected $expected)"
    }.toLeft(())
  }

  /** A private copy of a row's bytes (`UnsafeRow.getBytes` may hand out the projection's reused buffer). */
  private def bytesOf(row: UnsafeRow): Array[Byte] = {
    val out = new Array[Byte](row.getSizeInBytes)
    row.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET)
    out
  }

  private def writeChangelog(file: File, entries: java.util.HashMap[ByteBuffer, Array[Byte]]): Unit =
    Using.resource(new DataOutputStream(new BufferedOutputStream(new FileOutputStream(file), 1 << 16))) { out =>
      entries.forEach { (k, v) =>
        out.writeInt(k.capacity()); out.write(k.array())
        out.writeInt(v.length); out.write(v)
      }
    }
}

object RawRocksLimit {
  /** How index and filter blocks are kept: the one RocksDB setting that decides get latency at 1M keys. */
  sealed trait Tuning {
    def table(t: BlockBasedTableConfig): BlockBasedTableConfig
    def cache(bytes: Long): LRUCache = new LRUCache(bytes)
  }

  /** txstate's engine: index and filter blocks in the 8 MiB block cache, pinned for L0 only. */
  case object TxstateDefaults extends Tuning {
    def table(t: BlockBasedTableConfig): BlockBasedTableConfig =
      t.setCacheIndexAndFilterBlocks(true).setPinL0FilterAndIndexBlocksInCache(true)
  }

  /**
   * txstate's table options with a single-shard cache. The default LRUCache splits 8 MiB into 16
   * shards of 512 KiB; a 1M-key file's filter block (~1.3 MiB) can never stay in one. This variant
   * tests that explanation of the collapse.
   */
  case object TxstateDefaultsOneShard extends Tuning {
    def table(t: BlockBasedTableConfig): BlockBasedTableConfig = TxstateDefaults.table(t)
    override def cache(bytes: Long): LRUCache = new LRUCache(bytes, 0)
  }

  /** Index and filter blocks held by the table readers, outside the block cache (RocksDB's default). */
  case object IndexOutsideCache extends Tuning {
    def table(t: BlockBasedTableConfig): BlockBasedTableConfig = t.setCacheIndexAndFilterBlocks(false)
  }

  /** In the cache but partitioned, top level pinned: bounded memory without whole-block reloads. */
  case object Partitioned extends Tuning {
    def table(t: BlockBasedTableConfig): BlockBasedTableConfig =
      t.setCacheIndexAndFilterBlocks(true).setCacheIndexAndFilterBlocksWithHighPriority(true)
        .setPinL0FilterAndIndexBlocksInCache(true).setPinTopLevelIndexAndFilter(true)
        .setIndexType(IndexType.kTwoLevelIndexSearch).setPartitionFilters(true).setMetadataBlockSize(4096)
  }
}
