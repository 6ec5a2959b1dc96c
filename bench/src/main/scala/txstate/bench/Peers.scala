package txstate.bench

import org.apache.spark.sql.execution.streaming.state.StateStoreConf
import org.apache.spark.sql.internal.SQLConf

/** One provider configuration under test, with the SQL settings that select and tune it. */
final case class Peer(
    name: String,
    label: String,
    providerClass: String,
    settings: Map[String, String],
    localDirKey: Option[String] = None) {

  /** The StateStoreConf Spark would hand this provider: our settings over Spark's defaults. */
  def storeConf(extra: Map[String, String] = Map.empty): StateStoreConf = {
    val sql = new SQLConf()
    (Peers.common ++ settings ++ extra + (Peers.providerKey -> providerClass)).foreach { case (k, v) => sql.setConfString(k, v) }
    new StateStoreConf(sql, Map.empty)
  }
}

object Peers {
  val providerKey = "spark.sql.streaming.stateStore.providerClass"
  private val changelogKey = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

  /**
   * Applied to every peer alike. Commit validation asks the driver's StateStoreCoordinator, which
   * only exists while a streaming query runs; the store-level benchmark has no query, so it is off
   * for everyone (it is one local RPC per commit in a real query).
   */
  val common: Map[String, String] = Map(
    "spark.sql.streaming.stateStore.commitValidation.enabled" -> "false")

  /**
   * txstate keeps its local RocksDB across provider restarts when `...txstate.localDir` is set; the
   * benchmark then runs it with that setting and measures both a warm and a cold reopen.
   */
  val txstate: Peer = Peer("txstate", "txstate", "txstate.spark.TxStateStoreProvider", Map.empty,
    localDirKey = Some(_root_.txstate.spark.TxStateConf.prefix + "localDir")
      .filter(_ => _root_.txstate.spark.TxStateConf.settings.contains("localDir")))
  /** txstate with its hot-state cache on (64 MiB; off by default): what the cache itself is worth, in the same run. */
  val txstateCache: Peer = Peer("txstate-cache", "txstate, hot-state cache 64 MiB", txstate.providerClass,
    Map(_root_.txstate.spark.TxStateConf.prefix + "hotCacheSizeMB" -> "64"))
  val rocksChangelog: Peer = Peer("rocksdb-changelog", "Spark RocksDB (changelog on)",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider", Map(changelogKey -> "true"))
  val rocksSnapshot: Peer = Peer("rocksdb-snapshot", "Spark RocksDB (changelog off)",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider", Map(changelogKey -> "false"))
  /**
   * Spark's RocksDB provider with one bounded native budget per executor (`boundedMemoryUsage`), at
   * txstate's default executor budget (`maxNativeMemoryMB`, 256 MiB): the two budgets compared alike.
   */
  val rocksBounded: Peer = Peer("rocksdb-bounded", "Spark RocksDB (changelog on, bounded 256 MiB)",
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider", Map(changelogKey -> "true",
      "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage" -> "true",
      "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB" -> "256"))
  val hdfs: Peer = Peer("hdfs", "Spark HDFS-backed",
    "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider", Map.empty)

  val providers: Seq[Peer] = Seq(txstate, txstateCache, rocksChangelog, rocksSnapshot, rocksBounded, hdfs)
}
