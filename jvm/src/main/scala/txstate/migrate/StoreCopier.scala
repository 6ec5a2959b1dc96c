package txstate.migrate

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.internal.SQLConf

import txstate.checkpoint.SnapshotNames

/**
 * Moves one partition of one store from a source provider to a destination provider through
 * Spark's provider API: the source's read store at the committed version is iterated, and every
 * row is put into a destination store whose commit lands exactly on that version. Each provider
 * writes its own files in its own format.
 *
 * Landing on a chosen version takes an empty store opened one version below it (`loadEmpty`):
 * txstate has one on every Spark line, Spark's RocksDB provider from Spark 4.2. Spark's HDFS
 * provider refuses it, so its store is written as version 1 in a scratch folder, where its own
 * maintenance turns it into a snapshot file; that file (rows only, no version inside) is then
 * moved to the name of the wanted version. Either way the result is read back through the
 * destination provider and compared before anything is switched.
 *
 * @param scratch a folder for the HDFS provider's scratch stores (inside the migration's backup folder)
 */
final class StoreCopier(stateRoot: Path, storeConf: Map[String, String], sessionHadoopConf: Configuration,
    scratch: Path) {
  // Spark's executors hand every provider the query run's id (StreamExecution.RUN_ID_KEY); the
  // providers use it to tell runs apart. The migration is a run of its own.
  private val hadoopConf = {
    val conf = new Configuration(sessionHadoopConf)
    conf.set("sql.streaming.runId", UUID.randomUUID().toString)
    conf
  }

  /** Copies `store`'s `partition` at `version`; returns the digest of the rows read from the source. */
  def copy(from: String, to: String, store: StoreToCopy, partition: Int, version: Long, onRow: () => Unit): StoreDigest =
    if (to == ProviderChoice.Hdfs.className) copyAsHdfsSnapshot(from, store, partition, version, onRow)
    else withProvider(to, store, partition, stateRoot, storeConf) { destination =>
      val out = EmptyStoreAt.open(destination, version - 1, ProviderChoice.describe(to))
      val digest = fill(out, from, store, partition, version, onRow)
      expectVersion(out.commit(), version, to, store, partition)
      digest
    }

  /** The digest of `store`'s `partition` at `version` as `provider` reads it back. */
  def digest(provider: String, store: StoreToCopy, partition: Int, version: Long): StoreDigest = {
    val digest = new StoreDigest.Builder
    read(provider, store, partition, version)((key, value) => digest.add(key, value))
    digest.result
  }

  private def copyAsHdfsSnapshot(from: String, store: StoreToCopy, partition: Int, version: Long,
      onRow: () => Unit): StoreDigest = {
    val hdfs = ProviderChoice.Hdfs.className
    val anyDeltaMakesASnapshot = storeConf + (SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.key -> "0")
    val digest = withProvider(hdfs, store, partition, scratch, anyDeltaMakesASnapshot) { destination =>
      val out = destination.getStore(0L)
      val digest = fill(out, from, store, partition, version, onRow)
      expectVersion(out.commit(), 1, hdfs, store, partition)
      destination.doMaintenance()
      digest
    }
    val written = new Path(storeDir(scratch, store, partition), "1.snapshot")
    val target = new Path(storeDir(stateRoot, store, partition), s"$version.snapshot")
    val fs = target.getFileSystem(hadoopConf)
    fs.mkdirs(target.getParent)
    if (!fs.exists(written) || !fs.rename(written, target)) {
      throw new java.io.IOException(s"[TXSTATE_MIGRATION_HDFS_SNAPSHOT] ${store.label}, partition $partition: " +
        s"Spark's HDFS provider did not leave the snapshot $written to move to $target")
    }
    if (from == ProviderChoice.TxState.className) renameTxStateManifests(target.getParent)
    digest
  }

  /**
   * Spark's HDFS provider cannot list a directory holding txstate's `<version>_<id>.snapshot`
   * manifests; each is renamed (one atomic rename) to the form both providers accept, so the
   * original query can still load them should the migration stop here.
   */
  private def renameTxStateManifests(dir: Path): Unit = {
    val fs = dir.getFileSystem(hadoopConf)
    fs.listStatus(dir).toSeq.filter(_.isFile).foreach { status =>
      SnapshotNames.renamedBesideHdfs(status.getPath.getName).foreach { name =>
        val target = new Path(dir, name)
        if (!fs.rename(status.getPath, target)) {
          throw new java.io.IOException(s"[TXSTATE_MIGRATION_RENAME] could not rename ${status.getPath} to $target")
        }
      }
    }
  }

  /** Puts every source row into `out`; aborts `out` on failure. */
  private def fill(out: StateStore, from: String, store: StoreToCopy, partition: Int, version: Long,
      onRow: () => Unit): StoreDigest =
    try {
      val digest = new StoreDigest.Builder
      read(from, store, partition, version) { (key, value) =>
        digest.add(key, value)
        // Spark's iterators reuse their rows, and a heap provider keeps what it is given.
        out.put(key.copy(), value.copy())
        onRow()
      }
      digest.result
    } catch {
      case NonFatal(e) =>
        try out.abort() catch { case NonFatal(suppressed) => e.addSuppressed(suppressed) }
        throw e
    }

  private def expectVersion(committed: Long, expected: Long, provider: String, store: StoreToCopy, partition: Int): Unit =
    if (committed != expected) {
      throw new IllegalStateException(s"[TXSTATE_MIGRATION_WRONG_VERSION] ${store.label}, partition $partition: " +
        s"${ProviderChoice.describe(provider)} committed version $committed instead of $expected")
    }

  private def read(provider: String, store: StoreToCopy, partition: Int, version: Long)
      (each: (UnsafeRow, UnsafeRow) => Unit): Unit =
    withProvider(provider, store, partition, stateRoot, storeConf) { source =>
      val in = source.getReadStore(version, None)
      try in.iterator().foreach(pair => each(pair.key, pair.value))
      finally in.abort()
    }

  private def storeDir(root: Path, store: StoreToCopy, partition: Int): Path =
    StateStoreId(root.toString, store.operatorId, partition, store.storeName).storeCheckpointLocation()

  private def withProvider[T](className: String, store: StoreToCopy, partition: Int, root: Path,
      settings: Map[String, String])(use: StateStoreProvider => T): T = {
    val id = StateStoreId(root.toString, store.operatorId, partition, store.storeName)
    val provider = StateStoreProvider.create(className)
    try {
      provider.init(id, store.keySchema, store.valueSchema, store.encoderSpec, false, storeConfOf(settings), hadoopConf,
        false, None)
      use(provider)
    } finally provider.close()
  }

  private def storeConfOf(settings: Map[String, String]): StateStoreConf = {
    val sqlConf = new SQLConf
    settings.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    new StateStoreConf(sqlConf)
  }
}
