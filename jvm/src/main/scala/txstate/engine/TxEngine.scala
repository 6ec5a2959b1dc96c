package txstate.engine

import java.io.File
import java.nio.file.{Files, Path}
import java.util.Comparator

import org.rocksdb.{Checkpoint, RocksDBException, WriteBatch}

import txstate.compat.ScalaLibrary.Using

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
 * This class is the transaction lifecycle: begin, commit, early commit, rollback, replay, snapshots.
 * Parts with state and rules of their own live beside it: the database's opens, reopens,
 * replacements and close ([[DatabaseLifetime]], over the option objects of [[NativeOptions]]), the
 * commit point and in-flight marker ([[CommitMarkers]]), the snapshots kept to undo writes and the
 * undoing ([[UndoSnapshots]]), the TTL index ([[TimeIndexUpkeep]]), what the hot-state cache is told
 * ([[CacheHandOff]]), and the committed views other threads read ([[ViewPublisher]]).
 *
 * Not thread-safe: the owner (one store provider) serialises transactions.
 */
final class TxEngine private (val dir: File, val options: EngineOptions, sharedCache: HotStateCache,
    budget: Option[NativeMemoryBudget], private[engine] val heap: Option[HeapMemoryBudget]) extends AutoCloseable {

  // What the database holds: set by every open (declared before `lifetime`, which opens it below),
  // then by each write that makes or starts a version.
  private var committedPoint: CommitPoint = CommitPoint.empty
  private var inFlightVersion: Option[Long] = None
  // The open version whose writes go to the database in the background (docs/ARCHITECTURE.md,
  // "Background writes"): the database holds part of it, under the in-flight marker.
  private var backgroundWriteOf: Option[Long] = None
  private val background = new BackgroundWrites
  private val views = new ViewPublisher
  // This store's part of the executor's hot-state cache: it mirrors what `database.get` answers, so
  // every write below either writes through to it or makes it forget (docs/ARCHITECTURE.md, "Hot-state cache").
  private val cache = new CacheHandOff(sharedCache.newStore())
  private val lifetime = new DatabaseLifetime(dir, options, budget, views, opened = markers => {
    committedPoint = markers.committed
    inFlightVersion = markers.inFlight
  })
  private val undo = new UndoSnapshots(dir, cache, lifetime.writeOptions, heap)
  private val timeIndex = new TimeIndexUpkeep(lifetime.writeOptions, options.replayChunkBytes)

  lifetime.openFirst()

  /** The version the local database holds. */
  def committed: CommitPoint = committedPoint

  /** Set when a multi-write sequence was interrupted: the data is not exactly any version. */
  def inFlight: Option[Long] = inFlightVersion.orElse(backgroundWriteOf)

  /** Point keys the last rollback read from its snapshot: those whose stored rows its batch had not read. */
  private[engine] def keysReadBackByLastRollback: Int = undo.keysReadBackByLastRollback

  /** Set after a write RocksDB refused: [[reopenAfterFailedWrite]] must run before the next batch. */
  def needsReopen: Boolean = lifetime.failure.isDefined

  /**
   * After a refused write: closes the database (a flush the disk still refuses is dropped: every
   * version it held is in the checkpoint) and opens the directory again, at the last commit point
   * that reached the disk; the caller catches up from the checkpoint. If the open fails too (the disk
   * is still full) it throws why, and a later call retries. Returns the dropped flush's failure, to log.
   */
  def reopenAfterFailedWrite(): Option[RocksDBException] = lifetime.reopenAfterFailedWrite(forgetDatabase())

  /** What [[rollbackLastCommit]] would restore, if the last commit can be undone. */
  def committedBeforeLastCommit: Option[CommitPoint] = undo.committedBefore

  /** Undo of this engine's last commits that the heap budget gave up since the last call. */
  def drainUndoDropped(): Long = undo.drainDropped()

  /**
   * A transaction on the committed version. Its writes carry `stamp`. With `ttl`, rows whose last
   * write is `ttl.ttlMs` or more before `stamp.timeMs` are expired first, as deletes of this
   * transaction: its reads never see them, and its commit (or changelog replay) deletes exactly
   * them. The first transaction with TTL builds the time index of the rows already stored.
   */
  def begin(stamp: WriteStamp = WriteStamp.unknown, ttl: Option[TimeToLive] = None): Transaction = {
    ensureOpen()
    lifetime.failure.foreach(e => throw e)
    inFlight.foreach(v => throw EngineErrors.interruptedWrite(dir, v))
    val indexSince = ttl.map { _ =>
      val now = stamp.knownTimeMs.getOrElse(throw EngineErrors.ttlWithoutBatchTime(dir))
      writing(timeIndex.startFor(database, committedPoint, now)) // may build the index: a write
    }
    val tx = new Transaction(this, committedPoint, stamp, indexSince)
    // Flink's rule: a row is gone once `ttl` has passed since its last write, so the age == ttl case expires.
    try ttl.foreach(rule => tx.expire(stamp.timeMs - rule.ttlMs + 1, rule))
    catch { case e: Throwable => tx.discard(); throw e } // no one else would end it (and its heap claim)
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
   * undoing a write of the key restores): from the hot-state cache or from RocksDB.
   */
  private[engine] def readCommitted(key: BytesKey): StoredRow = cache.read(database, key, admitting)

  /** Committed values of `keys`, in order: cached ones from the heap, the others in one native call. */
  private[engine] def getAllCommitted(keys: Seq[BytesKey]): Seq[Option[Array[Byte]]] =
    cache.readAll(database, keys, admitting)

  /** What this store's part of the hot-state cache did since the engine opened. */
  def cacheStats: CacheStats = cache.stats

  // A batch with early commits is a bulk load: caching what it reads would spend heap that its
  // memory bound exists to save (the 5M-key single batch grew its peak heap by the cache's budget).
  // Admission is optional, so the cache stays exact; write-through of keys already cached goes on.
  private def admitting: Boolean = inFlightVersion.isEmpty

  private[engine] def committedRange(range: KeyRange): KeyValueIterator = database.range(None, range)

  /** The committed write stamp of `key` (unknown for a format 1 row), if it exists. */
  private[engine] def committedStamp(key: Array[Byte]): Option[WriteStamp] = database.stampOf(key)

  /** TTL index entries written before `cutoffMs`, oldest first. */
  private[engine] def timeIndexBefore(cutoffMs: Long): KeyValueIterator = timeIndex.before(database, cutoffMs)

  /**
   * The oldest write time among the live rows TTL applies to, from the TTL index (None while TTL is
   * off or the store is empty). Skips at most `maxStale` index entries left behind by rewrites.
   */
  def oldestWriteMs(applies: Array[Byte] => Boolean, maxStale: Int = 10000): Option[Long] =
    timeIndex.oldestWriteMs(database, committedPoint, applies, maxStale)

  /**
   * Writes the transaction's changes and `point` in one atomic RocksDB write, keeping what is
   * needed to undo it. The caller makes the changelog durable first (docs/ARCHITECTURE.md,
   * "The life of a micro-batch").
   */
  def commit(tx: Transaction, point: CommitPoint): Unit = {
    ensureCurrent(tx)
    tx.closeIterators()
    val format = RowFormat.of(point)
    def write(clearsInFlight: Boolean): Unit =
      writeChanges(cache.telling(tx.changes, format), Long.MaxValue, format)(finishVersion(point, tx.indexCut, clearsInFlight))
    if (tx.writesInBackground) {
      writing(background.await())
      // The rows not handed over yet, or all of them again (the same rows) if the format differs.
      val rest = if (format == openVersionFormat(tx)) tx.notHandedOver() else tx.changes
      val keep = !timeIndex.dropping(committedPoint, point)
      undo.keepingUndoOfBackgroundWrites(tx, committedPoint, keep) {
        writeChanges(rest, Long.MaxValue, format)(finishVersion(point, tx.indexCut, clearsInFlight = true))
      }
      cache.tell(tx.changes, format) // the rows are written: keys already cached get them
      backgroundWriteOf = None
    } else if (undo.holdsEarlyCommits) {
      // The version's early commits are in the database already; this write finishes it and clears
      // the in-flight marker atomically. Such a version keeps no undo: a re-run rebuilds instead.
      undo.finishingEarlyCommits(write(clearsInFlight = true))
      inFlightVersion = None
    } else {
      // Dropping the whole TTL index (TTL switched off) is not worth undoing: a re-run rebuilds.
      val keep = !timeIndex.dropping(committedPoint, point)
      undo.keepingUndo(database, tx, committedPoint, keep)(write(clearsInFlight = false))
    }
    database.noteBatch(tx.uncommittedEntries)
    tx.afterCommit()
    versionWritten(point)
    givingBackMemtables()
    heap.foreach(_.settle()) // this commit's buffer is out of the count, its undo in (docs/ARCHITECTURE.md, "Heap budget")
  }

  /**
   * Under a native memory budget over its limit, this store flushes its memtables after its commit:
   * RocksDB's write-buffer manager flushes only the database being written, so idle stores'
   * memtables would stay over the limit (docs/ARCHITECTURE.md, "Native memory budget"). The version
   * is written already: a refused flush (a full disk) only marks the database for reopening.
   */
  private def givingBackMemtables(): Unit =
    if (lifetime.overBudget) {
      try writing(database.flushMemtables())
      catch { case e: LocalStateException if EngineErrors.isLocalWriteFailure(e) => () } // kept in `lifetime.failure`
    }

  /**
   * Early commit: moves the transaction's buffer into the database as a sub-batch of the
   * still-open version `base + 1`, under the in-flight marker, so memory stays bounded. The first
   * one keeps a RocksDB snapshot of the committed version: [[undoEarlyCommits]] restores from it.
   * The caller makes the sub-batch durable (a changelog segment) first.
   */
  def earlyCommit(tx: Transaction): Unit = {
    ensureCurrent(tx)
    // Background writes so far end here: this write holds every row of the buffer again (its net
    // changes), and the snapshot they kept becomes the one the early commits undo to.
    if (backgroundWriteOf.isDefined) {
      writing(background.await())
      backgroundWriteOf = None
    }
    undo.beforeEarlyCommit(database)
    val version = tx.base.version + 1
    val format = openVersionFormat(tx)
    writeChanges(cache.telling(tx.changes, format), Long.MaxValue, format)(CommitMarkers.putInFlight(database, _, version))
    inFlightVersion = Some(version)
    tx.afterEarlyCommit()
  }

  /**
   * Hands `changes` (rows of the open batch) to the background, to be written while it goes on. The
   * first hand-over of a version keeps a snapshot of the committed version (what an abort restores)
   * and writes the in-flight marker with its rows: a partly written version is never taken for one.
   */
  private[engine] def writeInBackground(tx: Transaction, changes: Iterable[ChangeRecord]): Unit = {
    ensureCurrent(tx)
    val db = database
    val version = tx.base.version + 1
    val first = backgroundWriteOf.isEmpty
    if (first) {
      undo.beforeBackgroundWrites(db)
      backgroundWriteOf = Some(version)
    }
    val format = openVersionFormat(tx)
    val options = lifetime.writeOptions
    background.submit { () =>
      Using.resource(new ChunkedWriter(db, options, Long.MaxValue, format)) { writer =>
        changes.foreach(writer(_))
        writer.finish(batch => if (first) CommitMarkers.putInFlight(db, batch, version))
      }
    }
  }

  /**
   * An abort of a batch whose writes went to the database in the background: the whole batch is
   * written first (then the database differs from the committed version exactly at the keys and
   * ranges the buffer touched), then each of them gets back its committed rows from the snapshot
   * taken before the first hand-over, and the in-flight marker goes.
   */
  private[engine] def undoBackgroundWrites(tx: Transaction): Unit = backgroundWriteOf.foreach { version =>
    backgroundWriteOf = None
    // Until the undo is done the database is not any version: if it fails, it stays marked so.
    try writing {
      background.await()
      writeChanges(tx.changes, options.replayChunkBytes, openVersionFormat(tx))(_ => ())
      // Rare (an aborted big batch): the cache forgets the whole store rather than each key.
      cache.forgetAll()
      undo.undoBackgroundWrites(tx.touchedKeys, options.replayChunkBytes)(CommitMarkers.clearInFlight(database, _))
    }
    catch { case e: Throwable => inFlightVersion = Some(version); throw e }
  }

  /** How the open version's rows are written before its commit point exists (early commits, background writes). */
  private def openVersionFormat(tx: Transaction): RowFormat =
    if (options.formatVersion == 1) RowFormat.Plain else RowFormat.Stamped(tx.stamp, tx.timeIndexSinceMs)

  /**
   * Undoes every early commit of the open version: each key they touched gets back its value in
   * the committed version, read from the snapshot taken before the first one; then the in-flight
   * marker is cleared. `earlyCommitted` lists their changes (read back from their segments, so the
   * keys never had to stay in memory).
   */
  def undoEarlyCommits(earlyCommitted: Iterator[ChangeRecord]): Unit = {
    ensureOpen()
    writing(undo.undoEarlyCommits(earlyCommitted, options.replayChunkBytes)(CommitMarkers.clearInFlight(database, _)))
    inFlightVersion = None
  }

  /**
   * Restores the version before the last commit (Spark re-runs a batch this store committed), in
   * one atomic write with its commit point (see [[UndoSnapshots.rollBackLastCommit]]).
   */
  def rollbackLastCommit(): CommitPoint = rollbackLastCommitIf(_ => true).getOrElse(throw EngineErrors.nothingToRollBack(dir))

  /**
   * [[rollbackLastCommit]] if the version it restores is `wanted`, checked and restored in one step:
   * None when it is not, or when no undo is kept (the heap budget may drop it at any moment).
   */
  def rollbackLastCommitIf(wanted: CommitPoint => Boolean): Option[CommitPoint] = {
    ensureOpen()
    val previous = writing(undo.rollBackLastCommit(wanted)(point => CommitMarkers.putCommitPoint(database, _, point)))
    previous.foreach(versionWritten)
    previous
  }

  /**
   * Applies a version's changes read from its changelog, in chunks bounded by
   * `options.replayChunkBytes`, under an in-flight marker that the last chunk clears together with
   * the new commit point.
   */
  def replay(changes: Iterator[ChangeRecord], point: CommitPoint): Unit = {
    ensureOpen()
    undo.releaseLastCommit()
    markInFlight(point.version)
    writing(timeIndex.buildForReplay(database, committedPoint, point))
    writeChanges(cache.forgetting(changes), options.replayChunkBytes, RowFormat.of(point))(
      finishVersion(point, cut = None, clearsInFlight = true))
    inFlightVersion = None
    versionWritten(point)
  }

  /**
   * A RocksDB checkpoint of the committed state in `target` (hard links where possible): the
   * memtables are flushed first, since the WAL is off. Returns the commit point it holds.
   */
  def checkpointTo(target: File): CommitPoint = {
    ensureOpen()
    inFlightVersion.foreach(v => throw EngineErrors.snapshotWhileInFlight(dir, v))
    writing {
      database.flushMemtables()
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
  def incarnation: String = lifetime.incarnation

  /** Drops every row and the commit point: the database becomes version 0. */
  def wipe(): Unit = replaceDatabase(() => ())

  /** Drops every row and makes the database an empty store at `version` (Spark's `loadEmpty`). */
  def startEmptyAt(version: Long): Unit = {
    wipe()
    val point = CommitPoint.empty.copy(version = version, commitTimeMs = System.currentTimeMillis())
    writing(CommitMarkers.writeCommitPoint(database, lifetime.writeOptions, point))
    versionWritten(point)
  }

  /** Live memtable and block cache bytes (under a budget, an even share of its use); 0 once closed. */
  def nativeMemoryUsed: Long = lifetime.nativeMemoryUsed

  /** Live memtable bytes of this instance's database (under a budget, charged to its shared cache); 0 once closed. */
  def memtableBytes: Long = lifetime.memtableBytes

  def close(): Unit = { closeReportingDroppedFlush(); () }
  /** Closes once; a close flush the disk refused is returned, its writes dropped (see [[DatabaseLifetime.close]]). */
  def closeReportingDroppedFlush(): Option[RocksDBException] = lifetime.close {
    background.abandon() // no write may still run on a database being closed
    backgroundWriteOf = None
    cache.close()
    undo.releaseAll()
  }

  /**
   * The last chunk's writes of a version: the TTL index upkeep (`cut`: the transaction's expiry
   * cutoff), the commit point, and the cleared in-flight marker when the version had one.
   */
  private def finishVersion(point: CommitPoint, cut: Option[Long], clearsInFlight: Boolean)(last: WriteBatch): Unit = {
    timeIndex.atCommit(database, committedPoint, point, cut, last)
    CommitMarkers.putCommitPoint(database, last, point)
    if (clearsInFlight) CommitMarkers.clearInFlight(database, last)
  }

  /**
   * The database holds `point` now: readers see it. A TTL index built by an aborted batch indexed
   * other rows than this version's, so a re-run at the same batch time builds it again.
   */
  private def versionWritten(point: CommitPoint): Unit = {
    timeIndex.forgetBuilt()
    committedPoint = point
    views.publish(database, point)
  }

  /** Before the database closes: what was kept of it (snapshots, index state, cached rows) goes. */
  private def forgetDatabase(): Unit = {
    background.abandon()
    backgroundWriteOf = None
    undo.releaseAll()
    timeIndex.forgetBuilt()
    cache.forgetAll()
  }

  /** Replaces the database (see [[DatabaseLifetime.replace]]) with what `fill` puts in its directory. */
  private def replaceDatabase(fill: () => Unit): Unit = lifetime.replace(forgetDatabase())(fill)

  /** Writes `changes` in chunks of `chunkBytes`; `last` adds the marker writes of the final chunk. */
  private def writeChanges(changes: Iterator[ChangeRecord], chunkBytes: Long, format: RowFormat)
      (last: WriteBatch => Unit): Unit =
    try writing {
      Using.resource(new ChunkedWriter(database, lifetime.writeOptions, chunkBytes, format)) { writer =>
        changes.foreach(writer(_))
        writer.finish(last)
      }
    }
    catch {
      case e: Throwable =>
        // The cache may already hold values the failed write never stored.
        cache.forgetAll()
        throw e
    }

  private def markInFlight(version: Long): Unit = {
    writing(CommitMarkers.writeInFlight(database, lifetime.writeOptions, version))
    inFlightVersion = Some(version)
  }

  private def ensureCurrent(tx: Transaction): Unit = {
    ensureOpen()
    if (tx.base != committedPoint) throw EngineErrors.staleTransaction(tx.base.version, committedPoint.version)
  }

  private def ensureOpen(): Unit = lifetime.ensureOpen()

  /** The open database; throws if there is none (the engine is closed, or a reopen failed). */
  private def database: LocalDatabase = lifetime.current

  /** Runs RocksDB writes; one it refuses marks the database for reopening (see [[needsReopen]]). */
  private def writing[T](write: => T): T = lifetime.writing(write)
}

object TxEngine {
  /**
   * Opens the engine of `dir`; its committed values may be cached in `cache` (shared with other
   * engines), its native memory bounded by `budget` (shared too; None: sized by `options` alone),
   * and its kept undo and buffers counted in `heap` (shared too; None: always kept).
   */
  def open(dir: File, options: EngineOptions = EngineOptions(), cache: HotStateCache = HotStateCache.off,
      budget: Option[NativeMemoryBudget] = None, heap: Option[HeapMemoryBudget] = None): TxEngine =
    new TxEngine(dir, options, cache, budget, heap)

  /** Deletes a local directory tree (staging areas, wiped databases); absent is fine. */
  def delete(dir: File): Unit = deleteRecursively(dir.toPath)

  private[engine] def deleteRecursively(path: Path): Unit = if (Files.exists(path)) {
    Using.resource(Files.walk(path)) { paths =>
      paths.sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.delete(p))
    }
  }
}
