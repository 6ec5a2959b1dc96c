package txstate.spark

import java.util.concurrent.{Semaphore, TimeUnit}

import scala.util.Try
import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import txstate.compat.StateApi.{KeyStateEncoderSpec, RecordType, StateSchemaProvider}
import txstate.engine.{ChangeRecord, CommittedView, TimeToLive, WriteStamp}
import txstate.store.{BatchClock, LoadRequest, StoreInstance}

/**
 * Spark's entry point: `spark.sql.streaming.stateStore.providerClass=txstate.spark.TxStateStoreProvider`.
 *
 * One provider per store instance per executor. It opens the instance (the store layer owns the
 * engine, checkpoint files and local directory), opens one store (a batch) at a time for the task
 * that asks, and reports commits and snapshots to Spark's coordinator. Spark builds providers on
 * the driver only to read `supportedCustomMetrics`, so construction does nothing; all work waits
 * for `init`/`getStore`.
 *
 * The same class serves every Spark line: the members one line lacks are declared for it in
 * [[ProviderApiOfOtherLines]] (docs/ARCHITECTURE.md, "Spark lines"), so `getStore` and
 * `upgradeReadStoreToWriteStore` exist here in both their older and newer forms.
 */
class TxStateStoreProvider extends StateStoreProvider with ProviderApiOfOtherLines with ProviderInstanceMetrics
    with TxStateFineGrainedReplay {
  private val log = LoggerFactory.getLogger(classOf[TxStateStoreProvider])

  private var storeId: StateStoreId = _
  private var storeConf: StateStoreConf = _
  private var hadoopConf: Configuration = _
  private var conf: TxStateConf = _
  private var schema: StoreSchema = _
  private var codecs: RowCodecs = _
  @volatile private var instanceOpt: Option[StoreInstance] = None
  @volatile private var closed = false
  @volatile private var rescaleChecked = false
  private val inUse = new Semaphore(1)
  @volatile private var holder: Option[String] = None
  // The store the holder has open: a task that opens another one takes it over (Spark 4.0).
  @volatile private var held: Option[TxStateStore] = None

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
    this.codecs = new RowCodecs(schema.codec)
  }

  override def stateStoreId: StateStoreId = storeId

  /** Spark 4.2+ (and our own callers on every line). */
  override def getStore(version: Long, checkpointId: Option[String], forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): TxStateStore =
    open(if (loadEmpty) LoadRequest.Empty(version) else LoadRequest.AtVersion(version, checkpointId),
      readOnly = false, forceSnapshotOnCommit)

  /** Spark 4.0 and 4.1. */
  override def getStore(version: Long, checkpointId: Option[String]): TxStateStore =
    getStore(version, checkpointId, forceSnapshotOnCommit = false, loadEmpty = false)

  override def getReadStore(version: Long, checkpointId: Option[String]): TxStateStore =
    open(LoadRequest.AtVersion(version, checkpointId), readOnly = true, forceSnapshot = false)

  /** State data source with `snapshotStartBatchId`: the snapshot of `snapshotVersion`, then changelogs. */
  def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): StateStore =
    open(LoadRequest.FromSnapshot(snapshotVersion, endVersion, endVersionStateStoreCkptId), readOnly, forceSnapshot = false)

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
    val rowCodec = codecs.get(family).getOrElse(throw TxStateErrors.unknownColumnFamily(family, storeId, Nil))
    val familyRange = ColumnFamilies.familyRange(ColumnFamilies.defaultId)
    instance.changesBetween(startVersion, endVersion, endVersionStateStoreCkptId).collect {
      case (v, ChangeRecord.Put(k, value)) if familyRange.contains(k) =>
        (RecordType.PUT_RECORD, rowCodec.decodeKey(ColumnFamilies.stripPrefix(k)),
          TxStateStore.firstOrNull(rowCodec.decodeStored(value)), v - 1)
      case (v, ChangeRecord.Delete(k)) if familyRange.contains(k) =>
        (RecordType.DELETE_RECORD, rowCodec.decodeKey(ColumnFamilies.stripPrefix(k)), null: UnsafeRow, v - 1)
    }
  }

  /** Spark 4.2+: the batch of the read store goes on as a write store, nothing reloaded. */
  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, checkpointId: Option[String],
      forceSnapshotOnCommit: Boolean): TxStateStore = readStore match {
    case ours: TxStateStore if ours.version == version && ours.isOpen => upgrade(ours, forceSnapshotOnCommit)
    case ours: TxStateStore =>
      ours.release()
      getStore(version, checkpointId, forceSnapshotOnCommit, loadEmpty = false)
    case other =>
      throw TxStateErrors.unsupported("upgradeReadStoreToWriteStore", storeId,
        s"the read store is a ${other.getClass.getName}, not a txstate store")
  }

  /** Spark 4.1. */
  override def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long,
      checkpointId: Option[String]): TxStateStore =
    upgradeReadStoreToWriteStore(readStore, version, checkpointId, forceSnapshotOnCommit = false)

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = TxStateMetrics.all

  /** Uploads the newest staged snapshot (Spark's snapshot maintenance thread) and tells the coordinator. */
  override def doSnapshotMaintenance(): Unit = instanceOpt.foreach { inst =>
    // A failed upload only delays the next snapshot (changelogs keep every version loadable);
    // throwing would make Spark unload this provider.
    try inst.uploadSnapshot().foreach(report => reportSnapshotUploaded(report.version))
    catch { case NonFatal(e) => log.warn(s"txstate: snapshot upload of $storeId failed; will retry with the next one", e) }
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

  /**
   * Unloads the store instance. A task still using it keeps it: the instance closes when that
   * task's batch ends, never under it. This provider opens nothing after close.
   */
  override def close(): Unit = {
    closed = true
    if (storeId != null) LiveStores.unregister(storeId, this)
    instanceOpt.foreach(_.close())
    instanceOpt = None
  }

  /**
   * Runs `read` against the last committed version of the default column family, from any thread
   * (interactive queries); None when this provider has no committed view to offer.
   */
  def readCommittedView[T](waitMs: Long)(read: (RowCodec, CommittedView) => T): Option[T] =
    for {
      inst <- instanceOpt
      rowCodec <- codecs.get(ColumnFamilies.defaultName)
      answer <- inst.readCommittedView(waitMs)(view => read(rowCodec, view))
    } yield answer

  // ---- internals ----------------------------------------------------------------------------

  private def open(request: LoadRequest, readOnly: Boolean, forceSnapshot: Boolean): TxStateStore = {
    if (storeId == null) throw TxStateErrors.notInitialized()
    heldByCaller match {
      // Spark 4.0 has no upgradeReadStoreToWriteStore: an aggregation's task opens a read store,
      // then a write store of the same version, and closes neither before the task ends.
      case Some(read) if read.isReadOnly && !readOnly && loadsVersion(request, read.version) =>
        return upgrade(read, forceSnapshot)
      // The caller opens the store again without ending its earlier batch (Spark 4.0 has no
      // release() for read stores): as in Spark's own providers, the newer one replaces it.
      case Some(earlier) =>
        log.info(s"txstate: $storeId opened again by ${callerName}; its earlier batch of version " +
          s"${earlier.version} is dropped")
        earlier.abort()
      case None => ()
    }
    checkUnfinishedRescale()
    acquire()
    try {
      val batch =
        try instance.openBatch(request, clockOf(request))
        catch { case NonFatal(e) => throw TxStateErrors.cannotLoad(request.version, e) }
      hold(new TxStateStore(storeId, batch, codecs, conf.store.idsInFileNames, readOnly, forceSnapshot, batchEvents))
    } catch {
      case NonFatal(e) =>
        releaseHold()
        throw e
    }
  }

  /** The micro-batch of the streaming query's task that opens the store, if it is one. */
  private def streamingBatch: Option[Long] =
    Option(TaskContext.get()).flatMap(t => Option(t.getLocalProperty(streamingBatchIdProperty)))
      .flatMap(id => Try(id.toLong).toOption)

  /** Once per store instance, at its first batch of a streaming query (see [[UnfinishedRescale]]). */
  private def checkUnfinishedRescale(): Unit = if (!rescaleChecked) {
    streamingBatch.foreach(batch => UnfinishedRescale.check(new Path(storeId.checkpointRootLocation), batch, hadoopConf))
    rescaleChecked = true
  }

  /**
   * What the batch's writes are stamped with, and its TTL. In a streaming query's task (Spark sets
   * the batch id as a local property) the time is the batch's timestamp from the offset log, and
   * TTL applies; elsewhere (the state data source, migrations, Spark's own suites) the time is
   * unknown (batch and time) and nothing expires: those read or copy versions already committed.
   */
  private def clockOf(request: LoadRequest): BatchClock = {
    (request, streamingBatch) match {
      case (_: LoadRequest.FromSnapshot, _) => BatchClock.untimed
      case (_, Some(batch)) =>
        val time = BatchTimes.of(new Path(storeId.checkpointRootLocation), batch, hadoopConf)
        BatchClock(WriteStamp(batch, time), conf.ttl.forOperator(storeId.operatorId).map(timeToLive))
      // A migration copying rows, or a batch job: no batch of the query wrote them, so their age stays unknown.
      case (_, None) => BatchClock.untimed
    }
  }

  private def timeToLive(ttlMs: Long): TimeToLive = {
    if (storeId.storeName != StateStoreId.DEFAULT_STORE_NAME) {
      throw TxStateErrors.ttlOnJoin(storeId, TxStateConf.prefix + StateTtl.operatorKeyPrefix + storeId.operatorId)
    }
    TimeToLive(ttlMs, key => !ColumnFamilies.isRegistryKey(key))
  }

  private val batchEvents = new TxStateStore.Events {
    def committed(version: Long): Unit = TxStateCoordinator.reportCommit(storeConf, storeId, hadoopConf, version)
    def ended(): Unit = releaseHold()
  }

  private def upgrade(read: TxStateStore, forceSnapshotOnCommit: Boolean): TxStateStore =
    hold(read.upgrade(forceSnapshotOnCommit))

  /**
   * `store` is the one the holder has open now. A task that fails between getStore and commit
   * must not keep the store locked: the end of the task aborts it.
   */
  private def hold(store: TxStateStore): TxStateStore = {
    held = Some(store)
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
      if (store.isOpen) store.abort()
    })
    store
  }

  private def loadsVersion(request: LoadRequest, version: Long): Boolean = request match {
    case LoadRequest.AtVersion(v, _) => v == version
    case _ => false
  }

  /** The open store of the task (or, outside tasks, the thread) calling now, if it holds one. */
  private def heldByCaller: Option[TxStateStore] =
    if (holder.contains(callerName)) held.filter(_.isOpen) else None

  private def callerName: String =
    Option(TaskContext.get()).fold(s"thread ${Thread.currentThread().getName}")(t =>
      s"task ${t.taskAttemptId()} (stage ${t.stageId()}, partition ${t.partitionId()})")

  private def acquire(): Unit = {
    val waitMs = acquireWaitMs
    if (!inUse.tryAcquire(waitMs, TimeUnit.MILLISECONDS)) {
      throw TxStateErrors.busy(storeId, waitMs, holder.getOrElse("another task"))
    }
    holder = Some(callerName)
  }

  private def releaseHold(): Unit = {
    held = None
    holder = None
    inUse.release()
  }

  private def instance: StoreInstance = instanceOpt.getOrElse {
    if (closed) throw TxStateErrors.closedProvider(storeId)
    val inst = StoreInstance.open(LocalDirectories.claim(conf.localDir, storeId), storeId.storeCheckpointLocation(),
      hadoopConf, conf.store, storeId.toString, ExecutorHotCache.sized(conf.hotCacheBytes),
      ExecutorNativeMemory.forStore(conf.nativeMemoryBytes), ExecutorHeapMemory.forStore(conf.heapMemoryBytes))
    instanceOpt = Some(inst)
    LiveStores.register(storeId, TxStateCoordinator.runId(hadoopConf), this)
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
    try TxStateCoordinator.reportSnapshotUploaded(storeId, hadoopConf, version)
    catch {
      case NonFatal(e) => log.warn(s"txstate: could not report the snapshot of version $version of $storeId to " +
        "Spark's coordinator; it may report this store as lagging", e)
    }

  private def storedFileGraceMs: Long = 10L * 60 * 1000
  // Spark sets it on every task of a streaming query's micro-batch (all supported lines).
  private def streamingBatchIdProperty: String = "streaming.sql.batchId"
  private def acquireWaitMs: Long = 60000L
}
