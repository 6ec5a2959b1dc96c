package txstate.spark

import java.util.Locale

import scala.util.Try

import org.apache.spark.sql.execution.streaming.state.StateStoreConf

import txstate.compat.StateApi
import txstate.engine.EngineOptions
import txstate.store.{StoreOptions, UncommittedLimits}

/**
 * Our settings, read once from the `spark.sql.streaming.stateStore.txstate.*` keys that Spark
 * hands every provider in `StateStoreConf.sqlConfs`. Unknown keys under our prefix are rejected,
 * so a typo never silently falls back to a default.
 *
 * @param localDir            a stable root for local databases, reused after restarts
 * @param store               what the store layer needs (engine tuning, file naming, snapshots, limits)
 * @param minVersionsToRetain versions cleanup keeps loadable (Spark's minBatchesToRetain)
 * @param ttl                 opt-in state TTL, for all operators or per operator
 * @param hotCacheBytes       the hot-state cache budget of the executor JVM (0: off), shared by its stores
 */
final case class TxStateConf(localDir: Option[String], store: StoreOptions, minVersionsToRetain: Int,
    ttl: StateTtl = StateTtl.off, hotCacheBytes: Long = TxStateConf.defaultHotCacheBytes)

object TxStateConf {
  val prefix = "spark.sql.streaming.stateStore.txstate."

  /** The hot-state cache's budget per executor JVM unless set (docs/ARCHITECTURE.md, "Hot-state cache"). */
  val defaultHotCacheBytes: Long = 64L << 20

  /** Every setting we define, with its meaning (also documented in conf/ and the README). */
  val settings: Map[String, String] = Map(
    "localDir" -> ("stable directory for the local RocksDB working copies, reused after a restart " +
      "(default: a fresh directory under the executor's SparkFiles root, deleted on close)"),
    "maxUncommittedRecords" -> ("uncommitted entries per store before an early commit moves them out of memory; " +
      "-1 = unbounded (default -1)"),
    "maxUncommittedBytes" -> ("uncommitted bytes per store (data plus index) before an early commit, e.g. 32m or 1g; " +
      "-1 = unbounded (default 64m)"),
    "snapshotInterval" -> ("versions between snapshots uploaded to the checkpoint " +
      "(default: spark.sql.streaming.stateStore.minDeltasForSnapshot)"),
    "blockCacheSizeMB" -> "RocksDB block cache per store instance, in MiB (default 8)",
    "hotCacheSizeMB" -> ("heap cache of hot committed values per executor JVM, shared by its stores, in MiB; " +
      "0 = off (default 64)"),
    "writeBufferSizeMB" -> "RocksDB memtable size per store instance, in MiB (default 64)",
    "maxWriteBufferNumber" -> "RocksDB memtables per store instance before writes wait for a flush (default 2)",
    StateTtl.key -> ("state TTL of every stateful operator, e.g. 30m or 7d: a row not written for that long, measured " +
      "against the batch's timestamp, is gone (default off)"),
    (StateTtl.operatorKeyPrefix + "<id>") -> "state TTL of one operator (its id under the checkpoint's state/), or off")

  def from(conf: StateStoreConf): TxStateConf = {
    val ours = conf.sqlConfs.collect { case (k, v) if k.startsWith(prefix) => k.stripPrefix(prefix) -> v.trim }
    val unknown = ours.keySet.filterNot(StateTtl.isTtlKey) -- settings.keySet
    if (unknown.nonEmpty) {
      throw TxStateErrors.badSetting(unknown.toSeq.sorted.map(prefix + _).mkString(", "),
        s"is not a txstate setting. Known settings: ${settings.keys.toSeq.sorted.map(prefix + _).mkString(", ")}")
    }
    val defaults = EngineOptions()
    TxStateConf(
      localDir = ours.get("localDir").filter(_.nonEmpty),
      store = StoreOptions(
        engine = EngineOptions(
          blockCacheBytes = mebibytes(ours, "blockCacheSizeMB", defaults.blockCacheBytes),
          writeBufferBytes = mebibytes(ours, "writeBufferSizeMB", defaults.writeBufferBytes),
          maxWriteBuffers = int(ours, "maxWriteBufferNumber", defaults.maxWriteBuffers, min = 2)),
        idsInFileNames = StateApi.checkpointIdsEnabled(conf),
        snapshotInterval = int(ours, "snapshotInterval", math.max(conf.minDeltasForSnapshot, 1), min = 1),
        limits = UncommittedLimits(
          maxRecords = limit(ours, "maxUncommittedRecords", None, sized = false),
          maxBytes = limit(ours, "maxUncommittedBytes", Some(64L << 20), sized = true))),
      minVersionsToRetain = math.max(conf.minVersionsToRetain, 1),
      ttl = StateTtl.from(ours, prefix),
      hotCacheBytes = mebibytes(ours, "hotCacheSizeMB", defaultHotCacheBytes, min = 0))
  }

  /** A positive limit, -1 for none; with `sized`, a byte size with an optional k/m/g suffix. */
  private def limit(ours: Map[String, String], key: String, default: Option[Long], sized: Boolean): Option[Long] =
    ours.get(key).fold(default) { raw =>
      val text = raw.toLowerCase(Locale.ROOT)
      val (digits, unit) =
        if (sized && text.nonEmpty && "kmg".contains(text.last)) (text.dropRight(1), text.last match {
          case 'k' => 1L << 10
          case 'm' => 1L << 20
          case _ => 1L << 30
        })
        else (text, 1L)
      Try(digits.toLong).toOption match {
        case Some(-1L) if unit == 1L => None
        case Some(n) if n > 0 && n <= Long.MaxValue / unit => Some(n * unit)
        case _ =>
          throw TxStateErrors.badSetting(prefix + key,
            s"must be a positive whole number${if (sized) " of bytes (optionally with k, m or g)" else ""} " +
              s"or -1 for no limit, got '$raw'")
      }
    }

  /** A size in MiB (at least `min`), as bytes. */
  private def mebibytes(ours: Map[String, String], key: String, default: Long, min: Int = 1): Long =
    ours.get(key).fold(default)(v => int(Map(key -> v), key, 0, min).toLong << 20)

  private def int(ours: Map[String, String], key: String, default: Int, min: Int): Int =
    ours.get(key).fold(default) { raw =>
      Try(raw.toLowerCase(Locale.ROOT).toInt).toOption.filter(_ >= min).getOrElse {
        throw TxStateErrors.badSetting(prefix + key, s"must be a whole number >= $min, got '$raw'")
      }
    }
}
