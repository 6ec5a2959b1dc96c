package txstate.spark

import java.io.File
import java.nio.file.Files
import java.util.UUID
import java.util.concurrent.{ConcurrentHashMap, Semaphore, TimeUnit}

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.{SparkEnv, SparkFiles, TaskContext}
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import txstate.checkpoint.StoreCheckpoint
import txstate.engine.{CommitPoint, Transaction}
import txstate.store.{CommitReport, StoreInstance}

/**
 * Spark's entry point: `spark.sql.streaming.stateStore.providerClass=txstate.spark.TxStateStoreProvider`.
 *
 * One provider per store instance per executor. It owns the instance's local transactional engine
 * and its checkpoint files, opens one store (transaction) at a time for the task that asks, and
 * reports commits to Spark's coordinator. Spark builds providers on the driver only to read
 * `supportedCustomMetrics`, so construction does nothing; all work waits for `init`/`getStore`.
 */
class TxStateStoreProvider extends StateStoreProvider {
  private val log = LoggerFactory.getLogger(classOf[TxStateStoreProvider])

  private var storeId: StateStoreId = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var conf: TxStateConf = _
  private var localDir: File = _
  private var instanceOpt: Option[StoreInstance] = None
  private val codecs = new ConcurrentHashMap[String, RowCodec]()
  private val inUse = new Semaphore(1)
  @volatile private var holder: Option[String] = None

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConfs: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    this.storeId = stateStoreId
    this.storeConf = storeConfs
    this.hadoopConf = hadoopConf
    this.conf = TxStateConf.from(storeConfs)
    codecs.put(ColumnFamilies.defaultName, new RowCodec(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey))
  }

  override def stateStoreId: StateStoreId = storeId

  override def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore = open(version, uniqueId, loadEmpty, readOnly = false)

  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore =
    open(version, uniqueId, loadEmpty = false, readOnly = true)

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore = readStore match {
    case ours: TxStateStore if ours.version == version && ours.isOpen => ours.upgrade()
    case ours: TxStateStore =>
      ours.release()
      getStore(version, uniqueId, forceSnapshotOnCommit, loadEmpty = false)
    case other =>
      throw TxStateErrors.unsupported("upgradeReadStoreToWriteStore", storeId,
        s"the read store is a ${other.getClass.getName}, not a txstate store")
  }

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = TxStateMetrics.all

  override def close(): Unit = {
    val acquired = inUse.tryAcquire(closeWaitMs, TimeUnit.MILLISECONDS)
    if (!acquired) log.warn(s"txstate: closing $storeId while ${holder.getOrElse("a task")} still uses it")
    try instanceOpt.foreach(_.close())
    finally {
      instanceOpt.foreach(_.checkpoint.close())
      instanceOpt = None
      Option(localDir).foreach(dir => deleteQuietly(dir))
      if (acquired) inUse.release()
    }
  }

  // ---- used by TxStateStore -----------------------------------------------------------------

  private[spark] def codec(family: String): Option[RowCodec] = Option(codecs.get(family))

  private[spark] def registerCodec(family: String, codec: RowCodec): Unit = codecs.put(family, codec)

  private[spark] def nativeMemoryUsed: Long = instanceOpt.fold(0L)(_.nativeMemoryUsed)

  private[spark] def commit(store: TxStateStore, tx: Transaction): CommitReport = {
    val report = instance.commit(tx)
    if (storeConf.commitValidationEnabled) StateStore.reportCommitToCoordinator(report.version, storeId, hadoopConf)
    report
  }

  /** After a commit: the new version and id built on `base`; before it, the loaded version. */
  private[spark] def checkpointInfo(base: CommitPoint, committed: Boolean): StateStoreCheckpointInfo = {
    val point = if (committed) instance.committed else base
    if (conf.checkpointIdsInFileNames) {
      StateStoreCheckpointInfo(storeId.partitionId, point.version, point.checkpointId,
        if (committed) base.checkpointId else None)
    } else StateStoreCheckpointInfo(storeId.partitionId, point.version, None, None)
  }

  private[spark] def storeFinished(store: TxStateStore): Unit = {
    holder = None
    inUse.release()
  }

  // ---- internals ----------------------------------------------------------------------------

  private def open(version: Long, uniqueId: Option[String], loadEmpty: Boolean, readOnly: Boolean): TxStateStore = {
    if (storeId == null) {
      throw new IllegalStateException("[TXSTATE_NOT_INITIALIZED] getStore called before init on TxStateStoreProvider")
    }
    acquire()
    try {
      val inst = instance
      val load = if (loadEmpty) inst.loadEmpty(version) else inst.load(version, uniqueId)
      val store = new TxStateStore(this, storeId, version, inst.begin(), load, readOnly)
      // A task that fails between getStore and commit must not keep the store locked.
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
        if (store.isOpen) store.abort()
      })
      store
    } catch {
      case NonFatal(e) =>
        holder = None
        inUse.release()
        throw e
    }
  }

  private def acquire(): Unit = {
    val waitMs = acquireWaitMs
    if (!inUse.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
      throw TxStateErrors.busy(storeId, waitMs, holder.getOrElse("another task"))
    }
    holder = Some(Option(TaskContext.get()).fold(Thread.currentThread().getName)(t =>
      s"task ${t.taskAttemptId()} (stage ${t.stageId()}, partition ${t.partitionId()})"))
  }

  private def instance: StoreInstance = instanceOpt.getOrElse {
    localDir = newLocalDir()
    val checkpoint = new StoreCheckpoint(storeId.storeCheckpointLocation(), hadoopConf)
    val inst = new StoreInstance(localDir, checkpoint, conf.engine, conf.checkpointIdsInFileNames, storeId.toString)
    instanceOpt = Some(inst)
    inst
  }

  private def newLocalDir(): File = {
    val root = conf.localDir.map(new File(_)).getOrElse {
      val sparkRoot = if (SparkEnv.get != null) Some(new File(SparkFiles.getRootDirectory())) else None
      sparkRoot.getOrElse(new File(System.getProperty("java.io.tmpdir")))
    }
    val parent = new File(root, "txstate")
    if (!parent.isDirectory && !parent.mkdirs() && !parent.isDirectory) {
      throw TxStateErrors.badSetting(TxStateConf.prefix + "localDir", s"names $root, where $parent cannot be created")
    }
    val name = s"op${storeId.operatorId}-part${storeId.partitionId}-${storeId.storeName}-${UUID.randomUUID()}"
    new File(parent, name)
  }

  private def deleteQuietly(dir: File): Unit =
    try {
      if (dir.exists()) {
        val stream = Files.walk(dir.toPath)
        try stream.sorted(java.util.Comparator.reverseOrder()).forEach(p => Files.deleteIfExists(p))
        finally stream.close()
      }
    } catch { case NonFatal(e) => log.warn(s"txstate: could not delete local state directory $dir", e) }

  private def acquireWaitMs: Long = 60000L
  private def closeWaitMs: Long = 10000L
}
