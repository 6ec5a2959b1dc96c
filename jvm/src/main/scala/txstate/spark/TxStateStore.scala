package txstate.spark

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import txstate.compat.StateApi.{KeyStateEncoderSpec, StateStoreCheckpointInfo, StateStoreIterator}
import txstate.engine.{KeyRange, KeyValueIterator}
import txstate.store.{LoadPath, StoreBatch}

/**
 * One version of one store instance as Spark sees it, for one task: Spark's rows and column
 * families over a store-level [[StoreBatch]] (read-your-writes, early commits past the limits),
 * `commit()` makes it durable, `abort()` drops it.
 *
 * Read-only views (`getReadStore`) refuse writes; `upgradeReadStoreToWriteStore` hands their
 * batch to a writable store without reloading anything. After `commit()` the store still reads
 * the version it made (Spark 4.0's contract, and complete output mode reads its state after the
 * commit), as long as no later batch has moved the store on.
 *
 * One class for every Spark line: [[StoreApiOfOtherLines]] declares what a line's StateStore
 * lacks (docs/ARCHITECTURE.md, "Spark lines").
 *
 * @param codecs  the provider's row codecs by column family (they outlive one batch)
 * @param events  what the provider learns from this store: a commit (to report to Spark's
 *                coordinator) and the end of the batch (the next task may open one)
 */
private[spark] final class TxStateStore(
    val id: StateStoreId,
    tx: StoreBatch,
    codecs: RowCodecs,
    idsInFileNames: Boolean,
    readOnly: Boolean,
    forceSnapshot: Boolean,
    events: TxStateStore.Events) extends StateStore with StoreApiOfOtherLines {

  import TxStateStore._

  private var state: Lifecycle = Open
  private var familyIds: Map[String, Int] = ColumnFamilies.registered(tx)

  val version: Long = tx.base.version

  // ---- reads --------------------------------------------------------------------------------

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    val (familyId, codec) = family(colFamilyName, "get")
    tx.get(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key))) match {
      case Some(bytes) if codec.multiValued => firstOrNull(codec.decodeValues(bytes))
      case Some(bytes) => codec.decodeValue(bytes)
      case None => null
    }
  }

  /** Every key's value (null where absent) in key order, buffered keys from memory, the rest in one RocksDB multiGet. */
  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] = {
    val (familyId, codec) = family(colFamilyName, "multiGet")
    tx.getAll(keys.toSeq.map(k => ColumnFamilies.withPrefix(familyId, codec.encodeKey(k)))).iterator.map {
      case Some(bytes) if codec.multiValued => firstOrNull(codec.decodeValues(bytes))
      case Some(bytes) => codec.decodeValue(bytes)
      case None => null
    }
  }

  override def keyExists(key: UnsafeRow, colFamilyName: String): Boolean = {
    val (familyId, codec) = family(colFamilyName, "keyExists")
    tx.exists(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key)))
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] = {
    val (familyId, codec) = family(colFamilyName, "valuesIterator")
    tx.get(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key))).fold[Iterator[UnsafeRow]](Iterator.empty)(codec.decodeStored)
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    val (familyId, codec) = family(colFamilyName, "iterator")
    pairs(tx.iterator(ColumnFamilies.familyRange(familyId)), codec, multi = false)
  }

  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    val (familyId, codec) = family(colFamilyName, "iteratorWithMultiValues")
    pairs(tx.iterator(ColumnFamilies.familyRange(familyId)), codec, multi = true)
  }

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    prefixPairs(prefixKey, colFamilyName, "prefixScan", multi = false)

  override def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    prefixPairs(prefixKey, colFamilyName, "prefixScanWithMultiValues", multi = true)

  override def rangeScan(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = rangePairs(startKey, endKey, colFamilyName, "rangeScan", multi = false)

  override def rangeScanWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair] = rangePairs(startKey, endKey, colFamilyName, "rangeScanWithMultiValues", multi = true)

  override def allColumnFamilyNames: Set[String] = familyIds.keySet

  override def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit =
    codecs.register(colFamilyName, new RowCodec(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey))

  // ---- writes -------------------------------------------------------------------------------

  override def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit = {
    writable("createColFamilyIfAbsent")
    codecs.register(colFamilyName, new RowCodec(keySchema, valueSchema, keyStateEncoderSpec, useMultipleValuesPerKey))
    if (!familyIds.contains(colFamilyName)) {
      ColumnFamilies.create(tx, colFamilyName)
      familyIds = ColumnFamilies.registered(tx)
    }
  }

  override def removeColFamilyIfExists(colFamilyName: String): Boolean = {
    writable("removeColFamilyIfExists")
    if (colFamilyName == ColumnFamilies.defaultName) {
      throw TxStateErrors.unsupported("removeColFamilyIfExists", id, "the default column family cannot be removed")
    }
    val removed = ColumnFamilies.remove(tx, colFamilyName)
    familyIds = ColumnFamilies.registered(tx)
    removed
  }

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    writable("put")
    requireNonNull(key, value, "put")
    val (familyId, codec) = family(colFamilyName, "put")
    val stored = if (codec.multiValued) codec.encodeValues(Seq(value)) else codec.encodeValue(value)
    tx.put(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key)), stored)
  }

  override def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit = {
    writable("putList")
    val (familyId, codec) = multiFamily(colFamilyName, "putList")
    tx.put(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key)), codec.encodeValues(values.toSeq))
  }

  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    mergeList(key, Array(value), colFamilyName)

  override def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit = {
    writable("merge")
    val (familyId, codec) = multiFamily(colFamilyName, "merge")
    val storedKey = ColumnFamilies.withPrefix(familyId, codec.encodeKey(key))
    val existing = tx.get(storedKey).getOrElse(Array.emptyByteArray)
    tx.put(storedKey, codec.appendValues(existing, values.toSeq))
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    writable("remove")
    val (familyId, codec) = family(colFamilyName, "remove")
    tx.delete(ColumnFamilies.withPrefix(familyId, codec.encodeKey(key)))
  }

  override def deleteRange(beginKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit = {
    writable("deleteRange")
    val (familyId, codec) = family(colFamilyName, "deleteRange")
    if (!codec.supportsDeleteRange) {
      throw TxStateErrors.unsupported("deleteRange", id,
        s"column family '$colFamilyName' uses ${codec.spec.getClass.getSimpleName}, whose keys are not ordered")
    }
    tx.deleteRange(ColumnFamilies.withPrefix(familyId, codec.encodeKey(beginKey)),
      ColumnFamilies.withPrefix(familyId, codec.encodeKey(endKey)))
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  override def commit(): Long = {
    writable("commit")
    val report =
      try tx.commit(forceSnapshot)
      catch { case NonFatal(e) => throw TxStateErrors.cannotCommit(id, e) }
    finish(Committed)
    events.committed(report.version)
    report.version
  }

  /** See `StoreBatch.useCheckpointId`: the migration's way to keep a format-v2 commit log's ids. */
  private[txstate] def useCheckpointId(checkpointId: String): Unit = {
    writable("useCheckpointId")
    tx.useCheckpointId(checkpointId)
  }

  override def abort(): Unit = state match {
    case Open =>
      try tx.abort() finally finish(Aborted)
    case _ => () // Spark aborts from task completion listeners after a commit or a release too
  }

  override def release(): Unit = state match {
    case Open if readOnly =>
      try tx.discard() finally finish(Released)
    case Open => throw TxStateErrors.unsupported("release", id, "a write store ends with commit() or abort()")
    case _ => ()
  }

  override def hasCommitted: Boolean = state == Committed

  override def metrics: StateStoreMetrics = {
    val registryRows = familyIds.size - 1
    val stats = tx.stats
    val load = tx.loaded
    val nativeMemory = tx.nativeMemoryBytes
    val custom: Map[StateStoreCustomMetric, Long] = Map(
      TxStateMetrics.commitLatencyMs -> stats.commit.fold(0L)(_.durationMs),
      TxStateMetrics.changelogBytes -> stats.commit.fold(0L)(_.changelogBytes),
      TxStateMetrics.loadLatencyMs -> load.durationMs,
      TxStateMetrics.changelogsReplayed -> load.changelogsReplayed.toLong,
      TxStateMetrics.rollbacks -> (if (load.path == LoadPath.RolledBack) 1L else 0L),
      TxStateMetrics.rebuilds -> (if (load.path == LoadPath.Rebuilt && load.version > 0) 1L else 0L),
      TxStateMetrics.uncommittedEntries -> stats.peakEntries,
      TxStateMetrics.uncommittedBytes -> stats.peakBytes,
      TxStateMetrics.earlyCommits -> stats.earlyCommits,
      TxStateMetrics.earlyCommitEntries -> stats.earlyCommitEntries,
      TxStateMetrics.earlyCommitBytes -> stats.earlyCommitBytes,
      TxStateMetrics.nativeMemoryBytes -> nativeMemory,
      TxStateMetrics.snapshotUploadedBytes -> stats.snapshotActivity.uploadedBytes,
      TxStateMetrics.snapshotReusedBytes -> stats.snapshotActivity.reusedBytes,
      TxStateMetrics.snapshotLagVersions -> stats.snapshotLagVersions,
      TxStateMetrics.forceSnapshotCount -> (if (forceSnapshot && stats.commit.isDefined) 1L else 0L),
      TxStateMetrics.expiredEntries -> stats.expiredEntries,
      TxStateMetrics.oldestEntryAgeMs -> stats.oldestWriteMs.fold(0L)(oldest => math.max(tx.stamp.timeMs - oldest, 0L)),
      TxStateMetrics.cacheHits -> stats.cache.hits,
      TxStateMetrics.cacheMisses -> stats.cache.misses,
      TxStateMetrics.cacheEvictions -> stats.cache.evictions,
      TxStateMetrics.cacheBytes -> stats.cache.bytes,
      TxStateMetrics.executorNativeMemoryBytes -> ExecutorNativeMemory.usedBytes,
      TxStateMetrics.executorNativeMemoryLimitBytes -> ExecutorNativeMemory.limitBytes,
      TxStateMetrics.executorHeapBytes -> ExecutorHeapMemory.usedBytes,
      TxStateMetrics.executorHeapLimitBytes -> ExecutorHeapMemory.limitBytes,
      TxStateMetrics.undoDropped -> stats.undoDropped)
    // The newest uploaded snapshot once this batch committed (none uploaded yet: not reported).
    val lastSnapshot = stats.commit.map(_.point.version - stats.snapshotLagVersions).filter(_ > 0)
    InstanceMetrics.withSnapshotVersion(
      StateStoreMetrics(tx.numKeys - registryRows, tx.uncommittedBytes + nativeMemory + stats.cache.bytes, custom), id,
      lastSnapshot)
  }

  /** After a commit: the new version and id built on the base; before it, the loaded version. */
  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo = {
    val (point, baseId) = tx.stats.commit.fold((tx.base, Option.empty[String]))(c => (c.point, tx.base.checkpointId))
    if (idsInFileNames) StateStoreCheckpointInfo(id.partitionId, point.version, point.checkpointId, baseId)
    else StateStoreCheckpointInfo(id.partitionId, point.version, None, None)
  }

  // ---- internals ----------------------------------------------------------------------------

  private[spark] def isOpen: Boolean = state == Open
  private[spark] def isReadOnly: Boolean = readOnly

  /** Gives this (read-only) store's transaction to a writable store; this one is then done. */
  private[spark] def upgrade(forceSnapshotOnCommit: Boolean): TxStateStore = {
    if (state != Open) throw TxStateErrors.closedStore("upgradeReadStoreToWriteStore", id, state.toString)
    state = Upgraded
    new TxStateStore(id, tx, codecs, idsInFileNames, readOnly = false, forceSnapshotOnCommit, events)
  }

  private def finish(next: Lifecycle): Unit = {
    state = next
    events.ended()
  }

  private def family(name: String, operation: String): (Int, RowCodec) = {
    // An upgraded read store stays readable: Spark reads through it while the write store writes.
    // A committed store reads its new version (the batch refuses once the store has moved on).
    if (state != Open && state != Upgraded && state != Committed) {
      throw TxStateErrors.closedStore(operation, id, state.toString)
    }
    val familyId = familyIds.getOrElse(name, throw TxStateErrors.unknownColumnFamily(name, id, familyIds.keys))
    (familyId, codecs.get(name).getOrElse(
      throw TxStateErrors.unsupported(operation, id, s"column family '$name' has no schema registered in this task")))
  }

  private def multiFamily(name: String, operation: String): (Int, RowCodec) = {
    val f = family(name, operation)
    if (!f._2.multiValued) {
      throw TxStateErrors.unsupported(operation, id,
        s"column family '$name' was not created with useMultipleValuesPerKey = true")
    }
    f
  }

  private def writable(operation: String): Unit = {
    if (state != Open) throw TxStateErrors.closedStore(operation, id, state.toString)
    if (readOnly) throw TxStateErrors.readOnly(operation, id)
  }

  private def requireNonNull(key: UnsafeRow, value: UnsafeRow, operation: String): Unit = {
    if (key == null) throw TxStateErrors.nullRow(operation, id, "key")
    if (value == null) throw TxStateErrors.nullRow(operation, id, "value")
  }

  private def prefixPairs(prefixKey: UnsafeRow, name: String, operation: String, multi: Boolean)
      : StateStoreIterator[UnsafeRowPair] = {
    val (familyId, codec) = family(name, operation)
    if (!codec.supportsPrefixScan) {
      throw TxStateErrors.unsupported(operation, id,
        s"column family '$name' uses ${codec.spec.getClass.getSimpleName}, which has no prefix columns")
    }
    pairs(tx.iterator(KeyRange.prefix(ColumnFamilies.withPrefix(familyId, codec.encodePrefix(prefixKey)))), codec, multi)
  }

  private def rangePairs(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], name: String, operation: String,
      multi: Boolean): StateStoreIterator[UnsafeRowPair] = {
    val (familyId, codec) = family(name, operation)
    if (!codec.supportsRangeScan) {
      throw TxStateErrors.unsupported(operation, id,
        s"column family '$name' uses ${codec.spec.getClass.getSimpleName}, whose keys are not range-ordered")
    }
    val whole = ColumnFamilies.familyRange(familyId)
    val range = KeyRange(
      startKey.fold(whole.from)(k => ColumnFamilies.withPrefix(familyId, codec.encodeKey(k))),
      endKey.fold(whole.until)(k => Some(ColumnFamilies.withPrefix(familyId, codec.encodeKey(k)))))
    pairs(tx.iterator(range), codec, multi)
  }

  private def pairs(rows: KeyValueIterator, codec: RowCodec, multi: Boolean): StateStoreIterator[UnsafeRowPair] = {
    val decoded: Iterator[UnsafeRowPair] =
      if (multi) rows.flatMap { kv =>
        val key = codec.decodeKey(ColumnFamilies.stripPrefix(kv.key))
        codec.decodeStored(kv.value).map(v => new UnsafeRowPair(key, v))
      }
      else rows.map { kv =>
        val values = codec.decodeStored(kv.value)
        new UnsafeRowPair(codec.decodeKey(ColumnFamilies.stripPrefix(kv.key)), if (values.hasNext) values.next() else null)
      }
    new StateStoreIterator(decoded, () => rows.close())
  }
}

private[spark] object TxStateStore {
  /** The first of a key's values, or null (Spark's "no value") when it has none. */
  def firstOrNull(values: Iterator[UnsafeRow]): UnsafeRow = if (values.hasNext) values.next() else null

  /** The narrow way back from a store to the provider that opened it. */
  trait Events {
    /** The batch committed `version` (the provider reports it to Spark's coordinator). */
    def committed(version: Long): Unit
    /** The batch ended (committed, aborted, released): the provider may open the next one. */
    def ended(): Unit
  }

  sealed trait Lifecycle
  case object Open extends Lifecycle { override def toString = "open" }
  case object Committed extends Lifecycle { override def toString = "committed" }
  case object Aborted extends Lifecycle { override def toString = "aborted" }
  case object Released extends Lifecycle { override def toString = "released" }
  case object Upgraded extends Lifecycle { override def toString = "upgraded to a write store" }
}
