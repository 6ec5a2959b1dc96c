package txstate.spark

import java.io.File
import java.util.concurrent.{ConcurrentHashMap, Semaphore, TimeUnit}

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import txstate.checkpoint.StoreCheckpoint
import txstate.engine.{ChangeRecord, CommitPoint, CommittedView, Transaction, TxEngine}
import txstate.store.{CommitReport, LoadReport, SpillReport, StoreInstance}

/**
 * Spark's entry point: `spark.sql.streaming.stateStore.providerClass=txstate.spark.TxStateStoreProvider`.
 *
 * One provider per store instance per executor. It owns the instance's local transactional engine
 * and its checkpoint files, opens one store (transaction) at a time for the task that asks, and
 * reports commits to Spark's coordinator. Spark builds providers on the driver only to read
 * `supportedCustomMetrics`, so construction does nothing; all work waits for `init`/`getStore`.
 */
class TxStateStoreProvider extends StateStoreProvider with TxStateFineGrainedReplay {
  private val log = LoggerFactory.getLogger(classOf[TxStateStoreProvider])

  private var storeId: StateStoreId = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var conf: TxStateConf = _
  private var schema: StoreSchema = _
  private var localDir: Option[LocalDirectory] = None
  @volatile private var instanceOpt: Option[StoreInstance] = None
  private val snapshotActivity = new java.util.concurrent.atomic.AtomicReference(SnapshotActivity.none)
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
    this.schema = StoreSchema(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey)
    codecs.put(ColumnFamilies.defaultName, schema.codec)
  }

  override def stateStoreId: StateStoreId = storeId

  override def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore =
    open(version, readOnly = false, forceSnapshotOnCommit)(inst =>
      if (loadEmpty) inst.loadEmpty(version) else inst.load(version, uniqueId))

  override def getReadStore(version: Long, uniqueId: Option[String]): ReadStateStore =
    open(version, readOnly = true, forceSnapshot = false)(_.load(version, uniqueId))

  /** State data source with `snapshotStartBatchId`: the snapshot of `snapshotVersion`, then changelogs. */
  override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): StateStore =
    open(endVersion, readOnly, forceSnapshot = false)(
      _.loadFromSnapshot(snapshotVersion, endVersion, endVersionStateStoreCkptId))

  override def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): ReadStateStore =
    replayStateFromSnapshot(snapshotVersion, endVersion, readOnly = true, snapshotVersionStateStoreCkptId,
      endVersionStateStoreCkptId)

  /** State data source with `readChangeFeed`: the changes of each version, from the changelogs. */
  override def changeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] = {
    val family = colFamilyNameOpt.getOrElse(ColumnFamilies.defaultName)
    if (family != ColumnFamilies.defaultName) {
      throw TxStateErrors.unsupported("readChangeFeed", storeId,
        s"the change feed covers the default column family only, not '$family'")
    }
    val rowCodec = codec(family).getOrElse(throw TxStateErrors.unknownColumnFamily(family, storeId, Nil))
    val familyRange = ColumnFamilies.familyRange(ColumnFamilies.defaultId)
    instance.changesBetween(startVersion, endVersion, endVersionStateStoreCkptId).collect {
      case (v, ChangeRecord.Put(k, value)) if familyRange.contains(k) =>
        (TxStateChangeDataReader.put, rowCodec.decodeKey(ColumnFamilies.stripPrefix(k)),
          rowCodec.decodeStored(value).nextOption().orNull, v - 1)
      case (v, ChangeRecord.Delete(k)) if familyRange.contains(k) =>
        (TxStateChangeDataReader.delete, rowCodec.decodeKey(ColumnFamilies.stripPrefix(k)), null: UnsafeRow, v - 1)
    }
  }

  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore = readStore match {
    case ours: TxStateStore if ours.version == version && ours.isOpen => abortWhenTaskEnds(ours.upgrade())
    case ours: TxStateStore =>
      ours.release()
      getStore(version, uniqueId, forceSnapshotOnCommit, loadEmpty = false)
    case other =>
      throw TxStateErrors.unsupported("upgradeReadStoreToWriteStore", storeId,
        s"the read store is a ${other.getClass.getName}, not a txstate store")
  }

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = TxStateMetrics.all

  /** Uploads the newest staged snapshot (Spark's snapshot maintenance thread) and tells the coordinator. */
  override def doSnapshotMaintenance(): Unit = instanceOpt.foreach { inst =>
    // A failed upload only delays the next snapshot (changelogs keep every version loadable);
    // throwing would make Spark unload this provider.
    try inst.uploadSnapshot().foreach { report =>
      snapshotActivity.accumulateAndGet(SnapshotActivity(report.uploadedBytes, report.reusedBytes, report.version), _ + _)
      reportSnapshotUploaded(report.version)
    } catch { case NonFatal(e) => log.warn(s"txstate: snapshot upload of $storeId failed; will retry with the next one", e) }
  }

  /** Deletes checkpoint files older than what minBatchesToRetain needs (Spark's cleanup thread). */
  override def doCleanupMaintenance(): Unit = instanceOpt.foreach { inst =>
    try inst.cleanup(conf.minVersionsToRetain, storedFileGraceMs)
    catch { case NonFatal(e) => log.warn(s"txstate: checkpoint cleanup of $storeId failed; will retry", e) }
  }

  /** Before Spark unloads the provider: upload what is staged, then clean up. */
  override def doMaintenance(): Unit = {
    doSnapshotMaintenance()
    doCleanupMaintenance()
  }

  override def close(): Unit = {
    if (storeId != null) LiveStores.unregister(storeId, this)
    val acquired = inUse.tryAcquire(closeWaitMs, TimeUnit.MILLISECONDS)
    if (!acquired) log.warn(s"txstate: closing $storeId while ${holder.getOrElse("a task")} still uses it")
    try instanceOpt.foreach(_.close())
    finally {
      instanceOpt.foreach(_.checkpoint.close())
      instanceOpt = None
      localDir.foreach { d =>
        if (!d.stable) deleteQuietly(d.dir)
        d.release()
      }
      localDir = None
      if (acquired) inUse.release()
    }
  }

  /**
   * Runs `read` against the last committed version of the default column family, from any thread
   * (interactive queries); None when this provider has no committed view to offer.
   */
  def readCommitted[T](waitMs: Long)(read: (RowCodec, CommittedView) => T): Option[T] =
    for {
      inst <- instanceOpt
      rowCodec <- codec(ColumnFamilies.defaultName)
      answer <- inst.readCommitted(waitMs)(view => read(rowCodec, view))
    } yield answer

  // ---- used by TxStateStore -----------------------------------------------------------------

  private[spark] def codec(family: String): Option[RowCodec] = Option(codecs.get(family))

  private[spark] def registerCodec(family: String, codec: RowCodec): Unit = codecs.put(family, codec)

  private[spark] def nativeMemoryUsed: Long = instanceOpt.fold(0L)(_.nativeMemoryUsed)

  private[spark] def overLimit(entries: Long, bytes: Long): Boolean =
    conf.maxUncommittedRecords.exists(entries > _) || conf.maxUncommittedBytes.exists(bytes > _)

  private[spark] def spill(tx: Transaction): Option[SpillReport] = instance.spill(tx)

  private[spark] def abort(tx: Transaction): Unit = instance.abort(tx)

  private[spark] def drainSnapshotActivity(): SnapshotActivity = snapshotActivity.getAndSet(SnapshotActivity.none)

  private[spark] def snapshotLag: Long = instanceOpt.fold(0L)(i => math.max(i.committed.version - i.newestSnapshot, 0L))

  private[spark] def commit(tx: Transaction, forceSnapshot: Boolean): CommitReport = {
    val report = instance.commit(tx, forceSnapshot)
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

  private def open(version: Long, readOnly: Boolean, forceSnapshot: Boolean)(load: StoreInstance => LoadReport)
      : TxStateStore = {
    if (storeId == null) {
      throw new IllegalStateException("[TXSTATE_NOT_INITIALIZED] getStore called before init on TxStateStoreProvider")
    }
    acquire()
    try {
      val inst = instance
      val report = load(inst)
      abortWhenTaskEnds(new TxStateStore(this, storeId, version, inst.begin(), report, readOnly, forceSnapshot))
    } catch {
      case NonFatal(e) =>
        holder = None
        inUse.release()
        throw e
    }
  }

  /** A task that fails between getStore and commit must not keep the store locked. */
  private def abortWhenTaskEnds(store: TxStateStore): TxStateStore = {
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
      if (store.isOpen) store.abort()
    })
    store
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
    val claimed = LocalDirectories.claim(conf.localDir, storeId)
    localDir = Some(claimed)
    val checkpoint = new StoreCheckpoint(storeId.storeCheckpointLocation(), hadoopConf)
    val inst =
      try new StoreInstance(claimed.dir, checkpoint, conf.engine, conf.checkpointIdsInFileNames, conf.snapshotInterval,
        storeId.toString)
      catch {
        case NonFatal(e) =>
          checkpoint.close()
          claimed.release()
          localDir = None
          throw e
      }
    instanceOpt = Some(inst)
    LiveStores.register(storeId, TxStateSparkBridge.runId(hadoopConf), this)
    writeSchemaFile()
    inst
  }

  /** Lets readers without this provider (queries on the driver, checkpoint reads) decode the store. */
  private def writeSchemaFile(): Unit =
    try StoreSchemaFile.ensure(storeId, schema, hadoopConf)
    catch {
      case NonFatal(e) => log.warn(s"txstate: could not write ${StoreSchemaFile.path(storeId)}; " +
        "interactive queries of this store will fail until a later provider writes it", e)
    }

  private def reportSnapshotUploaded(version: Long): Unit =
    try TxStateSparkBridge.reportSnapshotUploaded(storeId, hadoopConf, version)
    catch { case NonFatal(e) => log.debug(s"txstate: could not report the snapshot of $storeId to Spark", e) }

  private def deleteQuietly(dir: File): Unit =
    try TxEngine.delete(dir)
    catch { case NonFatal(e) => log.warn(s"txstate: could not delete local state directory $dir", e) }

  private def storedFileGraceMs: Long = 10L * 60 * 1000
  private def acquireWaitMs: Long = 60000L
  private def closeWaitMs: Long = 10000L
}
