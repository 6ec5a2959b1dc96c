package txstate.migrate

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStore, StateStoreConf, StateStoreId, StateStoreProvider}
import org.apache.spark.sql.internal.SQLConf

import txstate.checkpoint.SnapshotNames
import txstate.compat.StateApi
import txstate.spark.CheckpointIdChoice

/**
 * Moves a store from a source provider to a destination provider through Spark's provider API:
 * the source's read stores at the committed version are iterated, and every row is put into the
 * destination store of its partition (the same partition, or, when rescaling, the one Spark's
 * shuffle places its key in), whose commit lands exactly on that version. Each provider writes its
 * own files in its own format.
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

  /**
   * Copies `store` at `source`'s version from the partitions `sources` into the partitions
   * `targets`, sending each row to `placement(key)` (one of `targets`); returns the digest of the
   * rows read. Every target gets a store at `target`'s version, empty if no row goes there (Spark
   * loads each one). The versions are equal, except when rescaling in place: then the copies land
   * one version higher, beside the files the original query still loads (`RescaleBatch`).
   */
  def copy(from: String, to: String, store: StoreToCopy, sources: Seq[Int], targets: Seq[Int],
      placement: UnsafeRow => Int, source: StoreVersion, target: StoreVersion, onRow: () => Unit): StoreDigest = {
    val landings = scala.collection.mutable.LinkedHashMap.empty[Int, Landing]
    try {
      targets.foreach(q => landings(q) = openLanding(to, store, q, target.version, target.checkpointId(q)))
      val digest = new StoreDigest.Builder
      sources.foreach { p =>
        read(from, store, p, source.version, source.checkpointId(p)) { (key, value) =>
          digest.add(key, value)
          val q = placement(key)
          val landing = landings.getOrElse(q, throw MigrationErrors.misplaced(store.label, p, q, targets))
          // Spark's iterators reuse their rows, and a heap provider keeps what it is given.
          landing.out.put(key.copy(), value.copy())
          onRow()
        }
      }
      landings.values.foreach(_.finish())
      if (from == ProviderChoice.TxState.className && to == ProviderChoice.Hdfs.className) {
        targets.foreach(q => renameTxStateManifests(storeDir(stateRoot, store, q)))
      }
      digest.result
    } catch {
      case NonFatal(e) =>
        landings.values.foreach(l => try l.abort() catch { case NonFatal(suppressed) => e.addSuppressed(suppressed) })
        throw e
    } finally landings.values.foreach(_.close())
  }

  /** The digest of `store`'s `partition` at a version as `provider` reads it back; `check` sees each key. */
  def digest(provider: String, store: StoreToCopy, partition: Int, at: StoreVersion,
      check: UnsafeRow => Unit = _ => ()): StoreDigest = {
    val digest = new StoreDigest.Builder
    read(provider, store, partition, at.version, at.checkpointId(partition)) { (key, value) =>
      check(key)
      digest.add(key, value)
    }
    digest.result
  }

  /** One destination partition being written: its provider, its open store, and how it is committed. */
  private final class Landing(provider: StateStoreProvider, val out: StateStore, commit: () => Unit) {
    private var committed = false
    def finish(): Unit = { commit(); committed = true }
    def abort(): Unit = if (!committed) out.abort()
    def close(): Unit = provider.close()
  }

  /**
   * A store of `to` for `partition` whose commit lands on `version`: opened one version below with
   * `loadEmpty`, or, for Spark's HDFS provider, written as version 1 in the scratch folder, made a
   * snapshot by its own maintenance and moved to the wanted version's name.
   */
  private def openLanding(to: String, store: StoreToCopy, partition: Int, version: Long,
      checkpointId: Option[String]): Landing =
    if (to == ProviderChoice.Hdfs.className) {
      val hdfs = ProviderChoice.Hdfs.className
      val anyDeltaMakesASnapshot = storeConf + (SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.key -> "0")
      val provider = initProvider(hdfs, store, partition, scratch, anyDeltaMakesASnapshot)
      val out = try provider.getStore(0L) catch { case NonFatal(e) => provider.close(); throw e }
      new Landing(provider, out, () => {
        expectVersion(out.commit(), 1, hdfs, store, partition)
        provider.doMaintenance()
        moveSnapshot(store, partition, version)
      })
    } else {
      val provider = initProvider(to, store, partition, stateRoot, storeConf)
      val out = try {
        val opened = EmptyStoreAt.open(provider, version - 1, ProviderChoice.describe(to))
        checkpointId.foreach(CheckpointIdChoice.use(opened, _))
        opened
      } catch { case NonFatal(e) => provider.close(); throw e }
      new Landing(provider, out, () => expectVersion(out.commit(), version, to, store, partition))
    }

  private def moveSnapshot(store: StoreToCopy, partition: Int, version: Long): Unit = {
    val written = new Path(storeDir(scratch, store, partition), "1.snapshot")
    val target = new Path(storeDir(stateRoot, store, partition), s"$version.snapshot")
    val fs = target.getFileSystem(hadoopConf)
    fs.mkdirs(target.getParent)
    if (!fs.exists(written) || !fs.rename(written, target)) {
      throw new java.io.IOException(s"[TXSTATE_MIGRATION_HDFS_SNAPSHOT] ${store.label}, partition $partition: " +
        s"Spark's HDFS provider did not leave the snapshot $written to move to $target")
    }
  }

  /**
   * Spark's HDFS provider cannot list a directory holding txstate's `<version>_<id>.snapshot`
   * manifests; each is renamed (one atomic rename) to the form both providers accept, so the
   * original query can still load them should the migration stop here.
   */
  private def renameTxStateManifests(dir: Path): Unit = {
    val fs = dir.getFileSystem(hadoopConf)
    if (fs.exists(dir)) fs.listStatus(dir).toSeq.filter(_.isFile).foreach { status =>
      SnapshotNames.renamedBesideHdfs(status.getPath.getName).foreach { name =>
        val target = new Path(dir, name)
        if (!fs.rename(status.getPath, target)) {
          throw new java.io.IOException(s"[TXSTATE_MIGRATION_RENAME] could not rename ${status.getPath} to $target")
        }
      }
    }
  }

  private def expectVersion(committed: Long, expected: Long, provider: String, store: StoreToCopy, partition: Int): Unit =
    if (committed != expected) {
      throw new IllegalStateException(s"[TXSTATE_MIGRATION_WRONG_VERSION] ${store.label}, partition $partition: " +
        s"${ProviderChoice.describe(provider)} committed version $committed instead of $expected")
    }

  private def read(provider: String, store: StoreToCopy, partition: Int, version: Long, checkpointId: Option[String])
      (each: (UnsafeRow, UnsafeRow) => Unit): Unit =
    withProvider(provider, store, partition, stateRoot, storeConf) { source =>
      val in = StateApi.readStore(source, version, checkpointId)
      try in.iterator().foreach(pair => each(pair.key, pair.value))
      finally in.abort()
    }

  private def storeDir(root: Path, store: StoreToCopy, partition: Int): Path =
    StateStoreId(root.toString, store.operatorId, partition, store.storeName).storeCheckpointLocation()

  private def withProvider[T](className: String, store: StoreToCopy, partition: Int, root: Path,
      settings: Map[String, String])(use: StateStoreProvider => T): T = {
    val provider = initProvider(className, store, partition, root, settings)
    try use(provider) finally provider.close()
  }

  private def initProvider(className: String, store: StoreToCopy, partition: Int, root: Path,
      settings: Map[String, String]): StateStoreProvider = {
    val id = StateStoreId(root.toString, store.operatorId, partition, store.storeName)
    val provider = StateStoreProvider.create(className)
    try StateApi.initProvider(provider, id, store.keySchema, store.valueSchema, store.encoderSpec, storeConfOf(settings),
      hadoopConf)
    catch { case NonFatal(e) => provider.close(); throw e }
    provider
  }

  private def storeConfOf(settings: Map[String, String]): StateStoreConf = {
    val sqlConf = new SQLConf
    settings.foreach { case (k, v) => sqlConf.setConfString(k, v) }
    new StateStoreConf(sqlConf)
  }
}

/**
 * A version of a store's partitions, and under checkpoint format v2 the checkpoint id each
 * partition is read at or lands on (None under format v1).
 */
final case class StoreVersion(version: Long, checkpointId: Int => Option[String])
