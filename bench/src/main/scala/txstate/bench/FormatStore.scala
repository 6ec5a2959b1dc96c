package txstate.bench

import java.io.File


import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.rocksdb.{ColumnFamilyDescriptor, ColumnFamilyHandle, ColumnFamilyOptions, DBOptions, Options, RocksDB}

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using
import txstate.compat.StateApi.NoPrefixKeyStateEncoderSpec
import txstate.engine.{TimeToLive, WriteStamp}
import txstate.spark.{ColumnFamilies, RowCodec, TxStateConf}
import txstate.store.{BatchClock, LoadRequest, LocalDirectory, StoreBatch, StoreInstance}

/**
 * One txstate store instance driven through the store layer (`StoreInstance`/`StoreBatch`), in a
 * chosen storage format: the provider reads no setting for the format, which only benchmarks pick.
 * Everything else is what `TxStateStoreProvider` would run with: the store options come from the
 * same SQL settings StoreBench gives the provider, and rows are encoded by the provider's own
 * [[RowCodec]] under the default column family's prefix, so keys and values are the provider's bytes.
 *
 * The local directory is stable, so it outlives `close()` (which flushes the memtables) and its
 * SST files can be measured afterwards ([[FormatStore.sstSizes]]).
 */
final class FormatStore(val formatVersion: Int, root: File, hadoopConf: Configuration) extends AutoCloseable {
  import FormatStore._

  val localDir = new File(root, "local")
  private val instance = {
    val store = TxStateConf.from(Peers.txstate.storeConf()).store
    StoreInstance.open(LocalDirectory(localDir, stable = true, lock = None), new Path(new File(root, "checkpoint").toURI),
      hadoopConf, store.copy(engine = store.engine.copy(formatVersion = formatVersion)), s"format-$formatVersion bench store")
  }
  private val rows = new RowMaker
  private val codec = new RowCodec(Workload.keySchema, Workload.valueSchema, NoPrefixKeyStateEncoderSpec(Workload.keySchema),
    multiValued = false)
  private var version = 0L

  def numKeys: Long = instance.committed.numKeys

  /**
   * One timed batch: open on the current version (as `getStore(v)` does), per id `get` then
   * `put` of the aggregation's next value, commit. `ttlMs` switches TTL on for the batch.
   */
  def batch(ids: Array[Int], stamp: WriteStamp, ttlMs: Option[Long] = None, sampler: Option[Sampler] = None): Timing = {
    val clock = BatchClock(stamp, ttlMs.map(TimeToLive(_, key => !ColumnFamilies.isRegistryKey(key))))
    sampler.foreach(_.start())
    try {
      val cpu0 = ProviderRun.threadCpuNs()
      val t0 = System.nanoTime()
      val open = instance.openBatch(LoadRequest.AtVersion(version, None), clock)
      val t1 = System.nanoTime()
      val expired = open.stats.expiredEntries
      applyRows(open, ids, stamp.batchId)
      val t2 = System.nanoTime()
      val report = open.commit()
      val t3 = System.nanoTime()
      version = report.version
      Timing(ids.length, t1 - t0, t2 - t1, t3 - t2, ProviderRun.threadCpuNs() - cpu0, report.changelogBytes, expired,
        report.durationMs * 1000000L)
    } finally sampler.foreach(_.stop())
  }

  /** Whether the committed store holds `id` (read in a batch that is then dropped). */
  def holds(id: Int): Boolean = {
    val read = instance.openBatch(LoadRequest.AtVersion(version, None))
    try read.exists(keyOf(id)) finally read.discard()
  }

  def close(): Unit = instance.close()

  private def applyRows(batch: StoreBatch, ids: Array[Int], batchId: Long): Unit = {
    var i = 0
    while (i < ids.length) {
      val id = ids(i)
      val key = keyOf(id)
      val previous = batch.get(key).map(codec.decodeValue).orNull
      batch.put(key, codec.encodeValue(rows.nextValue(previous, id, batchId)))
      i += 1
    }
  }

  private def keyOf(id: Int): Array[Byte] = ColumnFamilies.withPrefix(ColumnFamilies.defaultId, codec.encodeKey(rows.key(id)))
}

object FormatStore {
  /**
   * One batch: rows, the open (`openBatch`, which runs TTL expiry and, the first time, builds the
   * TTL index), the get/put loop, the commit, the thread's CPU time, the changelog's size, the
   * rows TTL expired at the open, and the part of the commit that made it durable (changelog and
   * local write, whole milliseconds: the store's own `CommitReport`); the rest of the commit is the
   * batch's bookkeeping after it, such as the oldest write time TTL reports. Nanoseconds.
   */
  final case class Timing(rows: Int, openNs: Long, loopNs: Long, commitNs: Long, cpuNs: Long, changelogBytes: Long,
      expired: Long, durableNs: Long) {
    def wallNs: Long = openNs + loopNs + commitNs
    def updatesPerSec: Double = rows / (wallNs / 1e9)
    def updatesPerCpuSec: Double = rows / (cpuNs / 1e9)
  }

  /**
   * What RocksDB's info LOG of a store says: memtable flushes started, and the times writes were
   * stopped or slowed because every memtable was full and waiting for a flush.
   */
  final case class RocksLog(flushes: Int, writeStalls: Int)

  def rocksLog(localDir: File): RocksLog = {
    val logs = Option(localDir.listFiles).toSeq.flatten.filter(f => f.getName == "LOG" || f.getName.startsWith("LOG.old"))
    val lines = logs.flatMap(f => Using.resource(scala.io.Source.fromFile(f, "UTF-8"))(_.getLines().toVector))
    RocksLog(lines.count(_.contains("\"event\": \"flush_started\"")),
      lines.count(l => l.contains("Stopping writes because") || l.contains("Stalling writes because")))
  }

  /** One RocksDB column family's SST files: their size on disk and what their table properties count. */
  final case class FamilySize(family: String, sstBytes: Long, entries: Long, rawKeyBytes: Long, rawValueBytes: Long)

  /**
   * The SST files of a closed store's local database, per column family, read from a read-only
   * open (which neither flushes nor compacts).
   */
  def sstSizes(localDir: File): Seq[FamilySize] = {
    RocksDB.loadLibrary()
    Using.Manager { use =>
      val path = localDir.getAbsolutePath
      val names = RocksDB.listColumnFamilies(use(new Options()), path).asScala.toSeq
      val familyOptions = use(new ColumnFamilyOptions())
      val handles = new java.util.ArrayList[ColumnFamilyHandle]()
      val db = use(RocksDB.openReadOnly(use(new DBOptions()), path,
        names.map(new ColumnFamilyDescriptor(_, familyOptions)).asJava, handles))
      handles.asScala.foreach(use(_)) // closed before the database (Using.Manager closes in reverse order)
      names.zip(handles.asScala).map { case (name, handle) =>
        val tables = db.getPropertiesOfAllTables(handle).values.asScala
        FamilySize(new String(name, java.nio.charset.StandardCharsets.UTF_8), db.getLongProperty(handle, "rocksdb.total-sst-files-size"),
          tables.map(_.getNumEntries).sum, tables.map(_.getRawKeySize).sum, tables.map(_.getRawValueSize).sum)
      }
    }.get
  }
}
