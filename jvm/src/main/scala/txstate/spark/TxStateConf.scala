package txstate.spark

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
 * @param nativeMemoryBytes   the RocksDB native memory budget of the executor JVM, shared by its stores
 *                            (0: off, each store sized by the engine options)
 * @param heapMemoryBytes     the heap budget of the executor JVM, shared by its stores (0: off, undo always kept)
 */
final case class TxStateConf(localDir: Option[String], store: StoreOptions, minVersionsToRetain: Int,
    ttl: StateTtl = StateTtl.off, hotCacheBytes: Long = TxStateConf.defaultHotCacheBytes,
    nativeMemoryBytes: Long = TxStateConf.defaultNativeMemoryBytes,
    heapMemoryBytes: Long = TxStateConf.defaultHeapMemoryBytes(TxStateConf.defaultHotCacheBytes))

object TxStateConf {
  val prefix: String = SettingSpec.prefix

  /** Every setting we define, with its meaning (the specification's, SettingSpec; also in conf/ and the README). */
  val settings: Map[String, String] = SettingSpec.all.map(s => s.name -> s.meaning).toMap

  /** The hot-state cache's budget per executor JVM unless set (docs/ARCHITECTURE.md, "Hot-state cache"). */
  lazy val defaultHotCacheBytes: Long = amount(Map.empty, "hotCacheSizeMB")

  /**
   * The native memory budget per executor JVM unless set (docs/ARCHITECTURE.md, "Native memory
   * budget"; the default itself is the specification's, 256 MiB). RocksDB's memory is outside the
   * heap: on YARN and Kubernetes it must fit in `spark.executor.memoryOverhead`, by default 10% of
   * the executor's memory and at least 384 MiB, next to the JVM's own native memory (metaspace,
   * thread stacks, Netty). 256 MiB fits a 4 GiB executor's 410 MiB overhead with room for that, and
   * on a 16 GiB one still caches the blocks of several GiB of state; a cache per store instead would
   * grow with the number of stores an executor hosts.
   */
  lazy val defaultNativeMemoryBytes: Long = amount(Map.empty, "maxNativeMemoryMB")

  /**
   * The heap budget per executor JVM unless set (docs/ARCHITECTURE.md, "Heap budget"): the hot-state
   * cache's budget plus a tenth of the JVM's maximum heap. Spark lends `spark.memory.fraction` (60%)
   * of the heap above 300 MiB to execution and storage; the rest, user memory, holds user code's
   * objects and ours, so a tenth of the heap is about a quarter of it: 410 MiB on a 4 GiB executor
   * (the running tasks' buffers, up to 64 MiB per store, and hundreds of stores' kept undo), 1.6 GiB
   * on a 16 GiB one. The cache is added because its user sized it: turning it on must not push every
   * undo out. Erring low costs little: a dropped undo costs a reload only when Spark re-runs that batch.
   */
  def defaultHeapMemoryBytes(hotCacheBytes: Long): Long = hotCacheBytes + Runtime.getRuntime.maxMemory / 10

  def from(conf: StateStoreConf): TxStateConf = {
    val ours = conf.sqlConfs.collect { case (k, v) if k.startsWith(prefix) => k.stripPrefix(prefix) -> v.trim }
    val unknown = ours.keySet.filterNot(StateTtl.isTtlKey) -- settings.keySet
    if (unknown.nonEmpty) {
      throw TxStateErrors.badSetting(unknown.toSeq.sorted.map(prefix + _).mkString(", "),
        s"is not a txstate setting. Known settings: ${settings.keys.toSeq.sorted.map(prefix + _).mkString(", ")}")
    }
    TxStateConf(
      localDir = ours.get("localDir").filter(_.nonEmpty),
      store = StoreOptions(
        engine = EngineOptions(
          blockCacheBytes = amount(ours, "blockCacheSizeMB"),
          writeBufferBytes = amount(ours, "writeBufferSizeMB"),
          maxWriteBuffers = amount(ours, "maxWriteBufferNumber").toInt),
        idsInFileNames = StateApi.checkpointIdsEnabled(conf),
        snapshotInterval = SettingSpec("snapshotInterval").in(ours).fold(math.max(conf.minDeltasForSnapshot, 1))(_.toInt),
        limits = UncommittedLimits(
          maxRecords = SettingSpec("maxUncommittedRecords").in(ours),
          maxBytes = SettingSpec("maxUncommittedBytes").in(ours))),
      minVersionsToRetain = math.max(conf.minVersionsToRetain, 1),
      ttl = StateTtl.from(ours),
      hotCacheBytes = amount(ours, "hotCacheSizeMB"),
      nativeMemoryBytes = amount(ours, "maxNativeMemoryMB"),
      heapMemoryBytes = SettingSpec("maxHeapMemoryMB").in(ours)
        .getOrElse(defaultHeapMemoryBytes(amount(ours, "hotCacheSizeMB"))))
  }

  /** A setting that always has a number: its value in `ours`, else the specification's default. */
  private def amount(ours: Map[String, String], name: String): Long = SettingSpec(name).in(ours).getOrElse(
    throw new IllegalStateException(s"${SettingSpec.resource} gives $name no default"))
}
