package txstate.bench

import java.io.File

import org.apache.hadoop.conf.Configuration

import txstate.engine.WriteStamp

/**
 * Part 1 of the storage-format benchmark: storage format 2 (stamped rows) against format 1 (plain
 * rows, as 0.1.0 wrote them) on StoreBench's workload, through the store layer.
 *
 * Both formats' stores are open side by side and alternate batch by batch (ABBA: the one that goes
 * first switches every batch, and every repetition), so load from other processes hits both alike.
 * Each batch is stamped with its batch id and a batch time a minute after the previous one, as a
 * streaming query stamps them (about 8 bytes per row under format 2).
 */
final class FormatComparison(plan: Workload.Plan, hadoopConf: Configuration, scratch: File) {
  import FormatComparison._

  /** One repetition: both formats' preload and measured batches. */
  def run(rep: Int): Map[Int, Run] = withStores(s"rep$rep") { stores =>
    val ordered = (i: Int) => if ((i + rep) % 2 == 0) stores else stores.reverse
    val preloads = ordered(0).map(s => s.formatVersion -> s.batch(Array.range(0, plan.preloadKeys), stampOf(0))).toMap
    val batches = plan.batches.zipWithIndex.flatMap { case (ids, i) =>
      ordered(i + 1).map(s => s.formatVersion -> s.batch(ids, stampOf(i + 1L)))
    }
    stores.foreach(_.close())
    stores.map(s => s.formatVersion -> Run(preloads(s.formatVersion), batches.collect { case (s.formatVersion, t) => t },
      FormatStore.rocksLog(s.localDir))).toMap
  }

  /**
   * The first `maxBatches` measured batches of each format again, each format under its own stack
   * sampler (not part of the results): where each format's time goes, on the same workload.
   */
  def profile(maxBatches: Int): Map[Int, (Sampler, Seq[FormatStore.Timing])] = withStores("profile") { stores =>
    val samplers = stores.map(s => s.formatVersion -> new Sampler(Thread.currentThread(), intervalMicros = 1000L)).toMap
    try {
      stores.foreach(_.batch(Array.range(0, plan.preloadKeys), stampOf(0)))
      val timed = plan.batches.take(maxBatches).zipWithIndex.flatMap { case (ids, i) =>
        (if (i % 2 == 0) stores else stores.reverse).map(s =>
          s.formatVersion -> s.batch(ids, stampOf(i + 1L), sampler = samplers.get(s.formatVersion)))
      }
      stores.map(s => s.formatVersion -> (samplers(s.formatVersion), timed.collect { case (s.formatVersion, t) => t })).toMap
    } finally samplers.values.foreach(_.close())
  }

  /**
   * Bytes per entry: `keys` distinct keys written in `batches` batches of new keys (each its own
   * stamp), then the store is closed (its memtables flushed) and its SST files measured. No key
   * is written twice, so every SST entry is one live key.
   */
  def sizes(keys: Int, batches: Int): Map[Int, Sizes] = withStores("sizes") { stores =>
    val chunk = (keys + batches - 1) / batches
    val changelogs = (0 until batches).flatMap { b =>
      val ids = Array.range(b * chunk, math.min(keys, (b + 1) * chunk))
      stores.map(s => s.formatVersion -> s.batch(ids, stampOf(b + 1L)).changelogBytes)
    }
    stores.foreach(_.close())
    stores.map(s => s.formatVersion -> Sizes(keys, batches, FormatStore.sstSizes(s.localDir),
      changelogs.collect { case (s.formatVersion, bytes) => bytes })).toMap
  }

  private def withStores[A](name: String)(body: Seq[FormatStore] => A): A = {
    val dir = new File(scratch, name)
    val stores = scala.collection.mutable.ArrayBuffer.empty[FormatStore]
    try {
      formats.foreach(v => stores += new FormatStore(v, new File(dir, s"format-$v"), hadoopConf))
      body(stores.toSeq)
    } finally {
      stores.foreach(_.close())
      ProviderRun.deleteRecursively(dir)
    }
  }
}

object FormatComparison {
  /** The formats compared: 1 (0.1.0's plain rows, the baseline) and 2 (stamped rows). */
  val formats: Seq[Int] = Seq(1, 2)

  /** Batch times: a fixed epoch (2026) and one batch a minute, as a streaming query would stamp them. */
  val epochMs: Long = 1780000000000L
  def stampOf(batchId: Long): WriteStamp = WriteStamp(batchId, epochMs + batchId * 60000L)

  /** One format's repetition: the preload batch, the measured batches, and what RocksDB logged meanwhile. */
  final case class Run(preload: FormatStore.Timing, batches: Seq[FormatStore.Timing], log: FormatStore.RocksLog)

  /** One format's SST files after `keys` distinct keys in `batches` batches, and those batches' changelog sizes. */
  final case class Sizes(keys: Int, batches: Int, families: Seq[FormatStore.FamilySize], changelogBytes: Seq[Long]) {
    /** The column families user rows live in (`data`: format 1, `stamped`: format 2, `by_time`: the TTL index). */
    val rowFamilies: Seq[FormatStore.FamilySize] = families.filter(f => Set("data", "stamped", "by_time").contains(f.family))
    def sstBytesPerKey: Double = rowFamilies.map(_.sstBytes).sum.toDouble / keys
    def rawValueBytesPerKey: Double = rowFamilies.map(_.rawValueBytes).sum.toDouble / keys
    def rawKeyBytesPerKey: Double = rowFamilies.map(_.rawKeyBytes).sum.toDouble / keys
    def entries: Long = rowFamilies.map(_.entries).sum
  }
}
