package txstate.engine

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path}
import java.util.{Comparator, UUID}

import scala.util.Using

import org.rocksdb.{BlockBasedTableConfig, BloomFilter, Checkpoint, ColumnFamilyOptions, CompressionType, DBOptions, FlushOptions, IndexType, LRUCache, RocksDB, RocksDBException, Snapshot, WriteOptions}

/**
 * The transactional RocksDB engine of one store instance (KIP-892 in bytes, no Spark types).
 *
 * - Data and the commit point live in separate column families and change in ONE atomic write,
 *   so the local database is never torn: whatever it holds, its commit point says which version.
 * - Multi-write sequences (changelog replay, early commits) first write an in-flight marker; a
 *   database found with the marker set is not trusted and is rebuilt by the caller.
 * - The WAL is off and flushes are atomic across column families: after a crash the database is
 *   at some earlier consistent commit point, and the caller replays changelogs from there.
 * - The last commit can be undone without touching the checkpoint: a RocksDB snapshot taken just
 *   before it plus the keys it touched restore the previous version (Spark re-runs batches).
 * - A write, flush or checkpoint that RocksDB refuses (a full disk) fails with
 *   [[EngineErrors.localWriteFailed]] and leaves the database to be reopened: RocksDB may have
 *   stopped accepting writes, so no batch begins until [[reopenAfterFailedWrite]] ran.
 *
 * Not thread-safe: the owner (one store provider) serialises transactions.
 */
final class TxEngine private (val dir: File, val options: EngineOptions, sharedCache: HotStateCache)
    extends AutoCloseable {
  import TxEngine._

  RocksDB.loadLibrary()

  // Option objects: owned here, closed last, shared by every database this engine opens. If the
  // first open of the database fails, they are closed again (the `try openDatabase()` below).
  private val cache = new LRUCache(options.blockCacheBytes)
  private val bloom = new BloomFilter(10, false)
  // Index and filter blocks live in the (bounded) block cache, partitioned with the top level
  // pinned: whole index/filter blocks competing with data blocks in a small cache made every get
  // at 1M keys reload them (about 150 us per get in the benchmark, against 9 us).
  private val tableConfig = new BlockBasedTableConfig()
    .setBlockCache(cache)
    .setFilterPolicy(bloom)
    .setCacheIndexAndFilterBlocks(true)
    .setCacheIndexAndFilterBlocksWithHighPriority(true)
    .setPinL0FilterAndIndexBlocksInCache(true)
    .setPinTopLevelIndexAndFilter(true)
    .setIndexType(IndexType.kTwoLevelIndexSearch)
    .setPartitionFilters(true)
    .setMetadataBlockSize(4096)
  private val dbOptions = new DBOptions()
    .setCreateIfMissing(true)
    .setCreateMissingColumnFamilies(true)
    .setAtomicFlush(true)
    .setMaxBackgroundJobs(2)
    .setMaxOpenFiles(256)
  private val dataOptions = new ColumnFamilyOptions()
    .setTableFormatConfig(tableConfig)
    .setWriteBufferSize(options.writeBufferBytes)
    .setMaxWriteBufferNumber(options.maxWriteBuffers)
    .setCompressionType(CompressionType.LZ4_COMPRESSION)
  private val commitOptions = new ColumnFamilyOptions().setWriteBufferSize(1L << 20)
  // No slowdown: a stalled write returns at once and LocalDatabase.write waits, interruptibly.
  private val writeOptions = new WriteOptions().setDisableWAL(true).setNoSlowdown(true)

  private var database: LocalDatabase = _
  private var committedPoint: CommitPoint = CommitPoint.empty
  private var inFlightVersion: Option[Long] = None
  private var undo: Option[Undo] = None
  private var keysReadBack = 0
  // The TTL index this database incarnation has built for a time-index start not yet committed
  // (a batch that switched TTL on and was aborted): the retry need not build it again.
  private var timeIndexBuiltSince: Option[Long] = None
  // The committed view from before the first early commit of the open version (what undoing them restores).
  private var beforeEarlyCommits: Option[Snapshot] = None
  @volatile private var closed = false
  private var incarnationId = UUID.randomUUID().toString
  // The error of a write RocksDB refused, until the database is reopened. After a failed flush
  // (ENOSPC) RocksDB keeps a background error and refuses every later write, so this handle must
  // not serve another batch (docs/ARCHITECTURE.md, "A failed local write").
  private var failedWrite: Option[LocalStateException] = None
  // Set while no database is open because reopening it failed (the disk is still full): every
  // operation fails with `failedWrite` until a reopen succeeds; the engine itself stays usable.
  private var detached = false
  private val views = new ViewPublisher
  // This store's part of the executor's hot-state cache: it mirrors what `database.get` answers, so
  // every write below either writes through to it or makes it forget (docs/ARCHITECTURE.md, "Hot-state cache").
  private val hot = sharedCache.newStore()

  try openDatabase()
  catch {
    case e: Throwable =>
      closeOptions()
      throw e
  }

  /** The version the local database holds. */
  def committed: CommitPoint = committedPoint

  /** Set when a multi-write sequence was interrupted: the data is not exactly any version. */
  def inFlight: Option[Long] = inFlightVersion

  /** Point keys the last rollback read from its snapshot: those whose stored rows its batch had not read. */
  private[engine] def keysReadBackByLastRollback: Int = keysReadBack

  /** Set after a write RocksDB refused: [[reopenAfterFailedWrite]] must run before the next batch. */
  def needsReopen: Boolean = failedWrite.isDefined

  /**
   * After a refused write: closes the database (flushing what it can; a flush the disk still
   * refuses is dropped, since every version it held is in the checkpoint) and opens the directory
   * again. The database then holds the last commit point that reached the disk (flushes are atomic,
   * the WAL is off), and the caller catches up from the checkpoint. If the open fails too (the disk
   * is still full), it throws why, and the engine stays without a database until a later call
   * succeeds: a store instance retried on the same executor recovers once space is back.
   * Returns the failure of the flush it dropped, for the caller to log.
   */
  def reopenAfterFailedWrite(): Option[RocksDBException] = {
    if (closed) throw EngineErrors.closed(dir)
    if (!detached) {
      releaseUndo()
      releaseEarlyCommits()
    }
    timeIndexBuiltSince = None
    hot.forgetAll()
    val droppedFlush = views.excludingReaders {
      // The handles are closed even when the flush fails; the versions it held are in the checkpoint.
      val dropped = try { database.close(); None } catch { case e: RocksDBException => Some(e) }
      reopen()
      dropped
    }
    failedWrite = None
    droppedFlush
  }

  /** What [[rollbackLastCommit]] would restore, if the last commit can be undone. */
  def committedBeforeLastCommit: Option[CommitPoint] = undo.map(_.previous)

  /**
   * A transaction on the committed version. Its writes carry `stamp`. With `ttl`, rows whose last
   * write is `ttl.ttlMs` or more before `stamp.timeMs` are expired first, as deletes of this
   * transaction: its reads never see them, and its commit (or changelog replay) deletes exactly
   * them. The first transaction with TTL builds the time index of the rows already stored.
   */
  def begin(stamp: WriteStamp = WriteStamp.unknown, ttl: Option[TimeToLive] = None): Transaction = {
    ensureOpen()
    failedWrite.foreach(e => throw e)
    inFlightVersion.foreach(v => throw EngineErrors.interruptedWrite(dir, v))
    val indexSince = ttl.map { _ =>
      val now = stamp.knownTimeMs.getOrElse(throw EngineErrors.ttlWithoutBatchTime(dir))
      committedPoint.timeIndexSinceMs.getOrElse {
        if (!timeIndexBuiltSince.contains(now)) buildTimeIndex(now)
        now
      }
    }
    val tx = new Transaction(this, committedPoint, stamp, indexSince)
    // Flink's rule: a row is gone once `ttl` has passed since its last write, so the age == ttl case expires.
    ttl.foreach(rule => tx.expire(stamp.timeMs - rule.ttlMs + 1, rule))
    tx
  }

  /**
   * Runs `read` against the last committed version, from any thread (interactive queries). None
   * when there is no committed view: the engine is closed, or its database is being replaced or
   * holds an interrupted write. Waits at most `waitMs` for a database replacement to finish.
   */
  def readCommittedView[T](waitMs: Long)(read: CommittedView => T): Option[T] = views.read(waitMs)(read)

  /**
   * A committed row, as transactions read it (the owner's thread only), with its stored bytes (what
   * undoing a write of the key restores): from the hot-state cache, which holds stamped rows as
   * stored, or from RocksDB.
   */
  private[engine] def readCommitted(key: BytesKey): StoredRow = {
    ensureOpen()
    val cached = hot.get(key)
    if (cached != null) StoredRow.Stamped(cached)
    else {
      val stored = database.stored(key.bytes)
      admit(key, stored)
      stored
    }
  }

  /** Committed values of `keys`, in order: cached ones from the heap, the others in one native call. */
  private[engine] def getAllCommitted(keys: Seq[BytesKey]): Seq[Option[Array[Byte]]] = {
    ensureOpen()
    val cached = keys.map(k => Option(hot.get(k)).map(StoredRow.Stamped(_): StoredRow))
    val missing = keys.zip(cached).collect { case (k, None) => k }
    val stored = database.storedAll(missing.map(_.bytes))
    missing.zip(stored).foreach { case (k, row) => admit(k, row) }
    val fromDatabase = stored.iterator
    cached.map(_.getOrElse(fromDatabase.next()).value)
  }

  // Stamped rows only: format 1 rows (0.1.0's) move to the stamped family when written, and a cached
  // row must carry its stamp, so a cached read can be undone and TTL needs no second look.
  private def admit(key: BytesKey, row: StoredRow): Unit = row match {
    case StoredRow.Stamped(stored) if admitting => hot.admit(key, stored)
    case _ => ()
  }

  /** What this store's part of the hot-state cache did since the engine opened. */
  def cacheStats: CacheStats = hot.stats

  // A batch that has spilled (early commits) is a bulk load: caching what it reads would spend heap that
  // its memory bound exists to save (the 5M-key single batch grew its peak heap by the cache's budget).
  // Admission is optional, so the cache stays exact; write-through of keys already cached goes on.
  private def admitting: Boolean = inFlightVersion.isEmpty

  private[engine] def committedRange(range: KeyRange): KeyValueIterator = {
    ensureOpen()
    database.range(None, range)
  }

  /** The committed write stamp of `key` (unknown for a format 1 row), if it exists. */
  private[engine] def committedStamp(key: Array[Byte]): Option[WriteStamp] = {
    ensureOpen()
    database.stampOf(key)
  }

  /** TTL index entries written before `cutoffMs`, oldest first. */
  private[engine] def timeIndexBefore(cutoffMs: Long): KeyValueIterator = {
    ensureOpen()
    database.familyRange(database.byTime, None, TimeIndex.before(cutoffMs), stampedValues = false)
  }

  /**
   * The oldest write time among the live rows TTL applies to, from the TTL index (None while TTL is
   * off or the store is empty). Skips at most `maxStale` index entries left behind by rewrites.
   */
  def oldestWriteMs(applies: Array[Byte] => Boolean, maxStale: Int = 10000): Option[Long] = {
    ensureOpen()
    committedPoint.timeIndexSinceMs.flatMap { since =>
      Using.resource(database.familyRange(database.byTime, None, TimeIndex.before(Long.MaxValue), stampedValues = false)) {
        entries =>
          entries.take(maxStale).map(e => (TimeIndex.timeOf(e.key), TimeIndex.rowKeyOf(e.key))).collectFirst {
            case (time, key) if applies(key) && database.stampOf(key).exists(_.knownTimeMs.getOrElse(since) == time) => time
          }
      }
    }
  }

  /**
   * Writes the transaction's changes and `point` in one atomic RocksDB write, keeping what is
   * needed to undo it. The caller makes the changelog durable first (docs/ARCHITECTURE.md,
   * "The life of a micro-batch").
   */
  def commit(tx: Transaction, point: CommitPoint): Unit = {
    ensureCurrent(tx)
    tx.closeIterators()
    releaseUndo()
    beforeEarlyCommits match {
      case Some(before) =>
        // The version's early commits are in the database already; this write finishes it and
        // clears the in-flight marker atomically. Undoing it would need every early-committed
        // key, so such a version is not kept for rollback: a re-run rebuilds instead.
        writeChanges(tellingCache(tx.changes, RowFormat.of(point)), Long.MaxValue, RowFormat.of(point)) { last =>
          timeIndexUpkeep(tx, point, last)
          last.put(database.commit, committedKey, point.toBytes)
          last.delete(database.commit, inFlightKey)
        }
        database.db.releaseSnapshot(before)
        beforeEarlyCommits = None
        inFlightVersion = None
      case None =>
        val snapshot = database.db.getSnapshot
        val touched = tx.touchedKeys
        try writeChanges(tellingCache(tx.changes, RowFormat.of(point)), Long.MaxValue, RowFormat.of(point)) { last =>
          timeIndexUpkeep(tx, point, last)
          last.put(database.commit, committedKey, point.toBytes)
        }
        catch {
          case e: Throwable =>
            database.db.releaseSnapshot(snapshot)
            throw e
        }
        // Dropping the whole TTL index (TTL switched off) is not worth undoing: a re-run rebuilds.
        if (droppingTimeIndex(point)) database.db.releaseSnapshot(snapshot)
        else undo = Some(Undo(snapshot, touched, tx.priorRows, committedPoint, tx.indexCut))
    }
    timeIndexBuiltSince = None
    committedPoint = point
    views.publish(database, point)
  }

  /**
   * Early commit: moves the transaction's buffer into the database as a sub-batch of the
   * still-open version `base + 1`, under the in-flight marker, so memory stays bounded. The first
   * one keeps a RocksDB snapshot of the committed version: [[undoEarlyCommits]] restores from it.
   * The caller makes the sub-batch durable (a changelog segment) first.
   */
  def earlyCommit(tx: Transaction): Unit = {
    ensureCurrent(tx)
    if (beforeEarlyCommits.isEmpty) {
      releaseUndo()
      beforeEarlyCommits = Some(database.db.getSnapshot)
    }
    val version = tx.base.version + 1
    val format = if (options.formatVersion == 1) RowFormat.Plain else RowFormat.Stamped(tx.stamp, tx.timeIndexSinceMs)
    writeChanges(tellingCache(tx.changes, format), Long.MaxValue, format)(
      _.put(database.commit, inFlightKey, versionBytes(version)))
    inFlightVersion = Some(version)
    tx.afterEarlyCommit()
  }

  /**
   * Undoes every early commit of the open version: each key they touched gets back its value in
   * the committed version, read from the snapshot taken before the first one; then the in-flight
   * marker is cleared. `earlyCommitted` lists their changes (read back from their segments, so the
   * keys never had to stay in memory).
   */
  def undoEarlyCommits(earlyCommitted: Iterator[ChangeRecord]): Unit = {
    ensureOpen()
    val before = beforeEarlyCommits.getOrElse(throw EngineErrors.noEarlyCommitToUndo(dir))
    val keys = earlyCommitted.map {
      case ChangeRecord.Put(k, _) => Left(k)
      case ChangeRecord.Delete(k) => Left(k)
      case ChangeRecord.DeleteRange(from, until) => Right(KeyRange(from, Some(until)))
    }
    // Rare (an aborted batch that spilled): the cache forgets the whole store rather than each key.
    hot.forgetAll()
    restoreFrom(before, Nil, keys, options.replayChunkBytes, None)(_.delete(database.commit, inFlightKey))
    database.db.releaseSnapshot(before)
    beforeEarlyCommits = None
    inFlightVersion = None
  }

  /**
   * Restores the version before the last commit (Spark re-runs a batch this store committed). Keys
   * whose stored rows the transaction read before writing them get those rows back with no read;
   * the others (answered by the hot-state cache, expired, or under a range delete) are read from the
   * pre-commit snapshot, in multiGets.
   */
  def rollbackLastCommit(): CommitPoint = {
    ensureOpen()
    val u = undo.getOrElse(throw EngineErrors.nothingToRollBack(dir))
    val (known, unknown) = u.touched.points.partitionMap(k => u.priors.get(k).map(k -> _).toLeft(k))
    keysReadBack = unknown.size
    val keys = unknown.iterator.map(Left(_)) ++ u.touched.ranges.iterator.map(Right(_))
    u.touched.points.foreach(hot.forget)
    if (u.touched.ranges.nonEmpty) hot.forgetAll()
    // One atomic write: the restored rows and the previous commit point land together.
    restoreFrom(u.snapshot, known, keys, Long.MaxValue, u.indexCut.map(TimeIndex.before))(
      _.put(database.commit, committedKey, u.previous.toBytes))
    releaseUndo()
    // An index built by an aborted batch that switched TTL on indexed the rows of the version just
    // undone, not the restored ones: a re-run at the same batch time must build it again.
    timeIndexBuiltSince = None
    committedPoint = u.previous
    views.publish(database, committedPoint)
    committedPoint
  }

  /**
   * Applies a version's changes read from its changelog, in chunks bounded by
   * `options.replayChunkBytes`, under an in-flight marker that the last chunk clears together with
   * the new commit point.
   */
  def replay(changes: Iterator[ChangeRecord], point: CommitPoint): Unit = {
    ensureOpen()
    releaseUndo()
    markInFlight(point.version)
    // The version switched TTL on: build the index as its batch did, before its rows (which index themselves).
    point.timeIndexSinceMs.filter(_ => committedPoint.timeIndexSinceMs.isEmpty).foreach(buildTimeIndex)
    writeChanges(forgettingInCache(changes), options.replayChunkBytes, RowFormat.of(point)) { last =>
      if (droppingTimeIndex(point)) dropTimeIndex(last)
      last.put(database.commit, committedKey, point.toBytes)
      last.delete(database.commit, inFlightKey)
    }
    inFlightVersion = None
    timeIndexBuiltSince = None
    committedPoint = point
    views.publish(database, point)
  }

  /**
   * A RocksDB checkpoint of the committed state in `target` (hard links where possible): the
   * memtables are flushed first, since the WAL is off. Returns the commit point it holds.
   */
  def checkpointTo(target: File): CommitPoint = {
    ensureOpen()
    inFlightVersion.foreach(v => throw EngineErrors.snapshotWhileInFlight(dir, v))
    writing {
      Using.resource(new FlushOptions().setWaitForFlush(true)) { fo =>
        database.db.flush(fo, java.util.List.of(database.data, database.stamped, database.byTime, database.commit))
      }
      Using.resource(Checkpoint.create(database.db))(_.createCheckpoint(target.getAbsolutePath))
    }
    committedPoint
  }

  /**
   * Replaces the database with files that `fill` puts into the (emptied) directory, e.g. a
   * snapshot from the checkpoint, and returns the commit point they hold.
   */
  def restore(fill: File => Unit): CommitPoint = {
    replaceDatabase { () =>
      if (!dir.mkdirs()) throw EngineErrors.cannotCreateDirectory(dir)
      fill(dir)
    }
    committedPoint
  }

  /** A fresh id each time the local database is created anew: RocksDB file names restart with it. */
  def incarnation: String = incarnationId

  /** Drops every row and the commit point: the database becomes version 0. */
  def wipe(): Unit = replaceDatabase(() => ())

  /** Drops every row and makes the database an empty store at `version` (Spark's `loadEmpty`). */
  def startEmptyAt(version: Long): Unit = {
    wipe()
    val point = CommitPoint.empty.copy(version = version, commitTimeMs = System.currentTimeMillis())
    writing(database.put(writeOptions, database.commit, committedKey, point.toBytes))
    committedPoint = point
    views.publish(database, point)
  }

  /** Live memtable and block cache bytes of this instance (native memory); 0 once closed. */
  def nativeMemoryUsed: Long = if (closed || detached) 0L else {
    val db = database.db
    Seq(database.data, database.stamped, database.byTime, database.commit)
      .map(db.getLongProperty(_, "rocksdb.cur-size-all-mem-tables")).sum + cache.getUsage
  }

  def close(): Unit = if (!closed) {
    closed = true
    try {
      hot.close()
      releaseUndo()
      releaseEarlyCommits()
      views.excludingReaders(database.close())
    } finally closeOptions()
  }

  private def closeOptions(): Unit = {
    writeOptions.close()
    dataOptions.close()
    commitOptions.close()
    dbOptions.close()
    bloom.close()
    cache.close()
  }

  /**
   * Closes the database, deletes its directory, lets `fill` put files there (or nothing: an empty
   * database) and opens it again as a new incarnation. If the reopen fails, no caller touches the
   * closed native handle (see [[reopen]]).
   */
  private def replaceDatabase(fill: () => Unit): Unit = {
    ensureOpen()
    releaseUndo()
    releaseEarlyCommits()
    timeIndexBuiltSince = None
    hot.forgetAll()
    views.excludingReaders {
      // No flush: the directory is deleted next, and a database that refused writes would refuse it too.
      database.close(flush = false)
      deleteRecursively(dir.toPath)
      // A new incarnation even when `fill` fails: the empty database opened then restarts RocksDB's
      // file numbers, and files must never be mistaken for the old incarnation's (snapshot reuse).
      incarnationId = UUID.randomUUID().toString
      try fill()
      catch {
        case e: Throwable =>
          deleteRecursively(dir.toPath)
          reopen()
          throw e
      }
      try openDatabase()
      catch {
        case e: LocalStateException if e.errorCode == EngineErrors.damagedDatabaseCode =>
          // Files that passed the caller's checks but that RocksDB refuses (a snapshot uploaded from
          // an already damaged local file, whose checksum matches the damage): the engine stays open
          // on an empty database, so the caller can fall back to another source.
          deleteRecursively(dir.toPath)
          reopen()
          throw e
        case e: Throwable => afterFailedOpen(e)
      }
    }
    failedWrite = None // a new database
  }

  /**
   * Opens the directory again after its database was closed. A refused write (a full disk) leaves
   * the engine detached, to be reopened by [[reopenAfterFailedWrite]]; any other failure closes it.
   * Either way no caller touches the closed native handle.
   */
  private def reopen(): Unit =
    try {
      openDatabase()
      detached = false
      failedWrite = None
    } catch { case e: Throwable => afterFailedOpen(e) }

  /** A refused write (a full disk) detaches the engine until a later load reopens it; anything else closes it. */
  private def afterFailedOpen(e: Throwable): Nothing = e match {
    case refused: LocalStateException if EngineErrors.isLocalWriteFailure(refused) =>
      detached = true
      failedWrite = Some(refused)
      throw refused
    case _ =>
      closed = true
      closeOptions()
      throw e
  }

  private def openDatabase(): Unit = {
    // Opening writes too (a new MANIFEST and OPTIONS file): a full disk fails here first.
    val opened =
      try LocalDatabase.open(dir, dbOptions, dataOptions, commitOptions)
      catch {
        case e: RocksDBException if LocalDatabase.isDamage(e) => throw EngineErrors.damagedDatabase(dir, e)
        // Only a full disk is a refused write here: a held LOCK (another engine on the directory) is not.
        case e: RocksDBException if EngineErrors.isOutOfSpace(e) => throw EngineErrors.localWriteFailed(dir, e)
      }
    try {
      committedPoint = Option(opened.db.get(opened.commit, committedKey)).map(readCommitPoint).getOrElse(CommitPoint.empty)
      inFlightVersion = Option(opened.db.get(opened.commit, inFlightKey)).map(b => java.nio.ByteBuffer.wrap(b).getLong)
    } catch {
      case e: Throwable =>
        opened.close() // releases RocksDB's LOCK, so the directory can be deleted or reopened
        e match {
          case r: RocksDBException if LocalDatabase.isDamage(r) => throw EngineErrors.damagedDatabase(dir, r)
          case _ => throw e
        }
    }
    database = opened
    // A database holding an interrupted write is no version at all: nothing to show until a load.
    if (inFlightVersion.isEmpty) views.publish(database, committedPoint) else views.withdraw()
  }

  private def readCommitPoint(bytes: Array[Byte]): CommitPoint = {
    val point =
      try CommitPoint.fromBytes(bytes)
      catch { case e: Exception => throw EngineErrors.unreadableCommitPoint(dir, e) }
    if (!CommitPoint.readableFormatVersions.contains(point.formatVersion)) {
      throw EngineErrors.newerStorageFormat(dir, point.formatVersion, point.writtenBy, CommitPoint.readableFormatVersions)
    }
    point
  }

  /** Writes `changes` in chunks of `chunkBytes`; `last` adds the marker writes of the final chunk. */
  private def writeChanges(changes: Iterator[ChangeRecord], chunkBytes: Long, format: RowFormat)
      (last: org.rocksdb.WriteBatch => Unit): Unit =
    try writing {
      Using.resource(new ChunkedWriter(database, writeOptions, chunkBytes, format)) { writer =>
        changes.foreach(writer(_))
        writer.finish(last)
      }
    }
    catch {
      case e: Throwable =>
        // The cache may already hold values the failed write never stored.
        hot.forgetAll()
        throw e
    }

  /**
   * `changes`, telling the cache of each as it goes by: the database will hold exactly these rows,
   * written in `format`. A put gives a cached key its new stored row (stamped: the cache holds
   * stamped rows only, so a format 1 write makes it forget the key); deletes make it forget.
   */
  private def tellingCache(changes: Iterator[ChangeRecord], format: RowFormat): Iterator[ChangeRecord] =
    format match {
      case RowFormat.Stamped(stamp, _) => changes.map { change =>
        change match {
          // Encoded only for a key that is cached: most written keys are not.
          case ChangeRecord.Put(k, v) => hot.written(k, StampedValues.encode(stamp, v))
          case other => forgetIn(other)
        }
        change
      }
      case _ => forgettingInCache(changes)
    }

  /** `changes`, making the cache forget each key they touch (a replay: its rows are not known to be hot). */
  private def forgettingInCache(changes: Iterator[ChangeRecord]): Iterator[ChangeRecord] =
    changes.map { change => forgetIn(change); change }

  private def forgetIn(change: ChangeRecord): Unit = change match {
    case ChangeRecord.Put(k, _) => hot.forget(k)
    case ChangeRecord.Delete(k) => hot.forget(k)
    case _: ChangeRecord.DeleteRange => hot.forgetAll()
  }

  /**
   * The TTL index writes of a commit: entries older than the transaction's expiry cutoff go (every
   * row they could name is expired by it or has a newer entry), or the whole index when TTL was
   * switched off.
   */
  private def timeIndexUpkeep(tx: Transaction, point: CommitPoint, last: org.rocksdb.WriteBatch): Unit =
    if (droppingTimeIndex(point)) dropTimeIndex(last)
    else tx.indexCut.foreach { cut =>
      val range = TimeIndex.before(cut)
      last.deleteRange(database.byTime, range.from, range.until.get)
    }

  private def droppingTimeIndex(point: CommitPoint): Boolean =
    point.timeIndexSinceMs.isEmpty && committedPoint.timeIndexSinceMs.isDefined

  private def dropTimeIndex(last: org.rocksdb.WriteBatch): Unit =
    last.deleteRange(database.byTime, TimeIndex.everything.from, TimeIndex.everything.until.get)

  /**
   * Indexes every stored row by its write time, rows of unknown time at `sinceMs` (TTL switched on
   * at that batch time). O(rows), once per switch-on; the entries are derived data, so they are
   * written ahead of the commit that records the switch, and a batch that aborts leaves only
   * entries the index may hold anyway.
   */
  private def buildTimeIndex(sinceMs: Long): Unit = {
    writing(Using.resource(new ChunkedWriter(database, writeOptions, options.replayChunkBytes, RowFormat.Raw)) { writer =>
      Using.resource(database.range(None, KeyRange.all)) { rows =>
        rows.foreach(row => writer.raw(database.byTime, TimeIndex.key(row.written.knownTimeMs.getOrElse(sinceMs), row.key),
          Some(Array.emptyByteArray)))
      }
      writer.finish(_ => ())
    })
    timeIndexBuiltSince = Some(sinceMs)
  }

  /**
   * Writes back the rows in `known` (keys whose stored rows were kept when they were read) and, for
   * every key or range in `keys`, what `snapshot` holds there (deleting keys it does not hold), in
   * chunks of `chunkBytes`; `last` adds the final marker writes.
   */
  private def restoreFrom(snapshot: Snapshot, known: Seq[(Array[Byte], StoredRow)],
      keys: Iterator[Either[Array[Byte], KeyRange]], chunkBytes: Long, indexRange: Option[KeyRange])
      (last: org.rocksdb.WriteBatch => Unit): Unit = writing {
    Using.resource(new ChunkedWriter(database, writeOptions, chunkBytes, RowFormat.Raw)) { writer =>
      // Each family's bytes as they were: a key goes back to the family (stamped or plain) it was in.
      val families = (database.stamped -> StoredRow.StampedFamily) +:
        (if (database.mayHoldPlainRows) Seq(database.data -> StoredRow.PlainFamily) else Nil)
      def putBack(family: org.rocksdb.ColumnFamilyHandle, range: KeyRange): Unit =
        Using.resource(database.familyRange(family, Some(snapshot), range, stampedValues = false)) {
          _.foreach(kv => writer.raw(family, kv.key, Some(kv.value)))
        }
      known.foreach { case (key, row) => families.foreach { case (f, name) => writer.raw(f, key, row.bytesIn(name)) } }
      // In groups, so undoing early commits of any size streams their keys (read back from segments).
      keys.grouped(restoreGroup).foreach { group =>
        val (points, ranges) = group.partitionMap(identity)
        families.foreach { case (f, _) =>
          points.zip(database.rawGetAll(f, snapshot, points)).foreach { case (key, value) => writer.raw(f, key, value) }
        }
        ranges.foreach(range => families.foreach { case (f, _) => putBack(f, range) })
      }
      indexRange.foreach(putBack(database.byTime, _))
      writer.finish(last)
    }
  }

  private def markInFlight(version: Long): Unit = {
    writing(database.put(writeOptions, database.commit, inFlightKey, versionBytes(version)))
    inFlightVersion = Some(version)
  }

  private def releaseUndo(): Unit = {
    undo.foreach(u => database.db.releaseSnapshot(u.snapshot))
    undo = None
  }

  /** Forgets abandoned early commits (the database is being replaced or closed). */
  private def releaseEarlyCommits(): Unit = {
    beforeEarlyCommits.foreach(database.db.releaseSnapshot)
    beforeEarlyCommits = None
  }

  private def ensureCurrent(tx: Transaction): Unit = {
    ensureOpen()
    if (tx.base != committedPoint) throw EngineErrors.staleTransaction(tx.base.version, committedPoint.version)
  }

  private def ensureOpen(): Unit = {
    if (closed) throw EngineErrors.closed(dir)
    if (detached) throw failedWrite.getOrElse(EngineErrors.closed(dir))
  }

  /** Runs RocksDB writes; one it refuses marks the database for reopening (see [[needsReopen]]). */
  private def writing[T](write: => T): T =
    try write
    catch {
      case e: RocksDBException =>
        val error = EngineErrors.localWriteFailed(dir, e)
        failedWrite = Some(error)
        throw error
    }
}

object TxEngine {
  private val committedKey = "committed".getBytes(UTF_8)
  private val inFlightKey = "in_flight".getBytes(UTF_8)
  // Keys read from a snapshot per multiGet when undoing: big enough to amortise the native call.
  private val restoreGroup = 4096

  /** The previous version's view, the keys the last commit changed, and the stored rows it read of them. */
  private final case class Undo(snapshot: Snapshot, touched: TouchedKeys, priors: PriorRows, previous: CommitPoint,
      indexCut: Option[Long])

  private def versionBytes(version: Long): Array[Byte] = java.nio.ByteBuffer.allocate(8).putLong(version).array()

  /** Opens the engine of `dir`; its committed values may be cached in `cache` (shared with other engines). */
  def open(dir: File, options: EngineOptions = EngineOptions(), cache: HotStateCache = HotStateCache.off): TxEngine =
    new TxEngine(dir, options, cache)

  /** Deletes a local directory tree (staging areas, wiped databases); absent is fine. */
  def delete(dir: File): Unit = deleteRecursively(dir.toPath)

  private[engine] def deleteRecursively(path: Path): Unit = if (Files.exists(path)) {
    Using.resource(Files.walk(path)) { paths =>
      paths.sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }
  }
}
