package txstate.engine

import java.io.File
import java.util.UUID

import scala.util.control.NonFatal

import org.rocksdb.{RocksDBException, WriteOptions}

/**
 * The one open database of an engine over the engine's life: the first open, the reopen after a
 * refused write, each replacement (a snapshot restored, a wipe) and the close.
 *
 * - Only an open database is handed out ([[current]]): once closed, or while reopening it failed
 *   (detached: the disk is still full), every caller gets why instead of a closed native handle.
 * - A write RocksDB refuses marks the database ([[failure]]) until it is reopened: after a failed
 *   flush (ENOSPC) RocksDB keeps a background error and refuses every later write, so this handle
 *   must not serve another batch (docs/ARCHITECTURE.md, "A failed local write").
 * - A database closes only once no reader of a committed view is inside it, and each database
 *   opened tells `opened` what it holds (its [[CommitMarkers]]) and shows that version to readers.
 * - The option objects ([[NativeOptions]]) outlive every database: they close with the engine, or
 *   at once when the first open fails or a later failure closes the engine.
 *
 * Owner's thread only.
 */
private[engine] final class DatabaseLifetime(dir: File, options: EngineOptions, budget: Option[NativeMemoryBudget],
    views: ViewPublisher, opened: CommitMarkers.Markers => Unit) {
  private val natives = NativeOptions(dir, options, budget)
  private var database: LocalDatabase = _
  @volatile private var closed = false
  private var detached = false
  private var failedWrite: Option[LocalStateException] = None
  private var incarnationId = UUID.randomUUID().toString

  /** Opens the directory the first time; if that fails, the option objects are closed before it throws. */
  def openFirst(): Unit =
    try open()
    catch { case e: Throwable => closeNativesAndThrow(e) }

  def writeOptions: WriteOptions = natives.writeOptions

  /** A fresh id each time the local database is created anew: RocksDB file names restart with it. */
  def incarnation: String = incarnationId

  /** The refused write that makes the database unfit for another batch until it is reopened. */
  def failure: Option[LocalStateException] = failedWrite

  /** The open database; throws when there is none (closed, or detached by a failed reopen). */
  def current: LocalDatabase = {
    ensureOpen()
    database
  }

  def ensureOpen(): Unit = {
    if (closed) throw EngineErrors.closed(dir)
    if (detached) throw failedWrite.getOrElse(EngineErrors.closed(dir))
  }

  /** Runs RocksDB writes; one it refuses marks the database for reopening (see [[failure]]). */
  def writing[T](write: => T): T =
    try write
    catch {
      case e: RocksDBException =>
        val error = EngineErrors.localWriteFailed(dir, e)
        failedWrite = Some(error)
        throw error
    }

  /**
   * After a refused write: `forget` drops what the engine kept of the database, which is then closed
   * (a flush the disk still refuses is dropped and returned, since every version it held is in the
   * checkpoint) and opened again. If the open fails with a refused write, the engine stays detached
   * until a later call succeeds.
   */
  def reopenAfterFailedWrite(forget: => Unit): Option[RocksDBException] = {
    if (closed) throw EngineErrors.closed(dir)
    forget
    val droppedFlush = views.excludingReaders {
      // The handles are closed even when the flush fails; the versions it held are in the checkpoint.
      val dropped = try { database.close(); None } catch { case e: RocksDBException => Some(e) }
      reopen()
      dropped
    }
    failedWrite = None
    droppedFlush
  }

  /**
   * `forget` drops what the engine kept of the database, which is then closed; its directory is
   * deleted, `fill` puts files there (or nothing: an empty database) and it opens again as a new
   * incarnation. If the reopen fails, no caller touches the closed native handle (see [[reopen]]).
   */
  def replace(forget: => Unit)(fill: () => Unit): Unit = {
    ensureOpen()
    forget
    views.excludingReaders {
      // No flush: the directory is deleted next, and a database that refused writes would refuse it too.
      database.close(flush = false)
      TxEngine.deleteRecursively(dir.toPath)
      // A new incarnation even when `fill` fails: the empty database opened then restarts RocksDB's
      // file numbers, and files must never be mistaken for the old incarnation's (snapshot reuse).
      incarnationId = UUID.randomUUID().toString
      try fill()
      catch {
        case e: Throwable =>
          TxEngine.deleteRecursively(dir.toPath)
          reopen()
          throw e
      }
      try open()
      catch {
        case e: LocalStateException
            if e.errorCode == EngineErrors.damagedDatabaseCode || e.errorCode == EngineErrors.newerRocksDbFilesCode =>
          // Files that passed the caller's checks but that RocksDB refuses (a snapshot uploaded from
          // an already damaged local file, whose checksum matches the damage, or one a newer RocksDB
          // wrote): the engine stays open on an empty database, and the caller decides what next.
          TxEngine.deleteRecursively(dir.toPath)
          reopen()
          throw e
        case e: Throwable => afterFailedOpen(e)
      }
    }
    failedWrite = None // a new database
  }

  /**
   * Live memtable and block cache bytes (native memory); 0 once closed or detached. Under a budget,
   * an even share of the shared cache, which the memtables are charged to.
   */
  def nativeMemoryUsed: Long =
    if (closed || detached) 0L
    else if (natives.memtablesInCache) natives.blockCacheUsage
    else memtableBytes + natives.blockCacheUsage

  /** Whether the shared native memory budget is over its limit (never without a budget). */
  def overBudget: Boolean = natives.overBudget

  /** Live memtable bytes of the open database, as RocksDB counts them; 0 once closed or detached. */
  def memtableBytes: Long = if (closed || detached) 0L else {
    val db = database.db
    database.families.map(db.getLongProperty(_, "rocksdb.cur-size-all-mem-tables")).sum
  }

  /**
   * Once: `forget` drops what the engine kept of the database, then the database and the options close.
   * A database that refused a write closes without a flush, which it would refuse too. A flush that
   * fails anyway (the disk filled after the last batch) still closes every handle, and what it dropped
   * is returned, not thrown: every version it held is in the checkpoint, and the next open of the
   * directory catches up from there.
   */
  def close(forget: => Unit): Option[RocksDBException] = if (closed) None else {
    closed = true
    try {
      forget
      views.excludingReaders {
        try { database.close(flush = failedWrite.isEmpty); None }
        catch { case e: RocksDBException => Some(e) }
      }
    } finally natives.close()
  }

  /**
   * Opens the directory again after its database was closed. A refused write (a full disk) leaves
   * the engine detached, to be reopened by [[reopenAfterFailedWrite]]; any other failure closes it.
   * Either way no caller touches the closed native handle.
   */
  private def reopen(): Unit =
    try {
      open()
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
      closeNativesAndThrow(e)
  }

  /** No database is open and none will be: closes the option objects, then throws `e` (with any close failure). */
  private def closeNativesAndThrow(e: Throwable): Nothing = {
    try natives.close()
    catch { case NonFatal(c) => e.addSuppressed(c) }
    throw e
  }

  private def open(): Unit = {
    // Opening writes too (a new MANIFEST and OPTIONS file): a full disk fails here first.
    val fresh =
      try LocalDatabase.open(dir, natives.dbOptions, natives.dataOptions, natives.commitOptions)
      catch {
        case e: RocksDBException if LocalDatabase.isNewerFormat(e) => throw EngineErrors.newerRocksDbFiles(dir, e)
        case e: RocksDBException if LocalDatabase.isDamage(e) => throw EngineErrors.damagedDatabase(dir, e)
        // Only a full disk is a refused write here: a held LOCK (another engine on the directory) is not.
        case e: RocksDBException if EngineErrors.isOutOfSpace(e) => throw EngineErrors.localWriteFailed(dir, e)
      }
    val markers =
      try CommitMarkers.read(dir, fresh)
      catch {
        case e: Throwable =>
          fresh.close() // releases RocksDB's LOCK, so the directory can be deleted or reopened
          e match {
            case r: RocksDBException if LocalDatabase.isNewerFormat(r) => throw EngineErrors.newerRocksDbFiles(dir, r)
            case r: RocksDBException if LocalDatabase.isDamage(r) => throw EngineErrors.damagedDatabase(dir, r)
            case _ => throw e
          }
      }
    opened(markers)
    database = fresh
    // A database holding an interrupted write is no version at all: nothing to show until a load.
    if (markers.inFlight.isEmpty) views.publish(database, markers.committed) else views.withdraw()
  }
}
