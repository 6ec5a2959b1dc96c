package txstate.engine

import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}
import java.util.concurrent.locks.ReentrantReadWriteLock

import scala.collection.mutable
import org.rocksdb.Snapshot

/**
 * Hands the last committed version of an engine to readers on other threads, without ever making
 * the owner wait for more than one reader's read.
 *
 * - The owner publishes a RocksDB snapshot right after each commit (and after loads); readers use
 *   whichever snapshot is current. A snapshot is reference counted: the owner's reference goes
 *   when the next one is published, each reader's when its read ends, and the last one releases it.
 * - Closing or replacing the database first withdraws the view, then takes the write side of a
 *   lock whose read side every reader holds for the length of its read, so no reader is inside a
 *   database that is going away. Readers only try that lock briefly: during a close or restore
 *   they get no view rather than delaying the owner.
 */
private[engine] final class ViewPublisher {
  private val lifetime = new ReentrantReadWriteLock()
  private val current = new AtomicReference[Option[PublishedView]](None)

  // The newest version ever shown: readers never see an older one after it (positions only move
  // forward). Owner thread only.
  private var newestShown = -1L

  /**
   * Owner: `point` is what the database holds now; readers see it from here on, unless it is older
   * than a version already shown. Then the view stays (a rolled-back commit stays visible until its
   * re-run commits) or, after a database replacement, stays empty until the database catches up.
   */
  def publish(database: LocalDatabase, point: CommitPoint): Unit = if (point.version >= newestShown) {
    newestShown = point.version
    current.getAndSet(Some(new PublishedView(database, database.db.getSnapshot, point))).foreach(_.release())
  }

  /** Owner: readers get no view until the next publish. */
  def withdraw(): Unit = current.getAndSet(None).foreach(_.release())

  /** Owner: runs `body` (closing or replacing the database) once no reader is inside it. */
  def excludingReaders[T](body: => T): T = {
    withdraw()
    lifetime.writeLock().lock()
    try body
    finally lifetime.writeLock().unlock()
  }

  /** Any thread: `read` against the current view; None when there is none or the database is going away. */
  def read[T](waitMs: Long)(read: CommittedView => T): Option[T] =
    if (!lifetime.readLock().tryLock(waitMs, TimeUnit.MILLISECONDS)) None
    else {
      try retainCurrent().map { view =>
        val lease = new Lease(view)
        try read(lease)
        finally {
          lease.close()
          view.release()
        }
      } finally lifetime.readLock().unlock()
    }

  private def retainCurrent(): Option[PublishedView] = {
    var found: Option[PublishedView] = None
    var done = false
    while (!done) {
      current.get() match {
        case None => done = true
        case some @ Some(view) => if (view.retain()) { found = some; done = true } // else: replaced meanwhile, look again
      }
    }
    found
  }
}

/** One published snapshot and its reference count (starts at 1: the publisher's). */
private final class PublishedView(database: LocalDatabase, snapshot: Snapshot, val point: CommitPoint) {
  private val references = new AtomicInteger(1)

  /** False once the last reference is gone: the snapshot is released and must not be used. */
  def retain(): Boolean = {
    var n = references.get()
    while (n > 0 && !references.compareAndSet(n, n + 1)) n = references.get()
    n > 0
  }

  def release(): Unit = if (references.decrementAndGet() == 0) database.db.releaseSnapshot(snapshot)

  def get(key: Array[Byte]): Option[Array[Byte]] = database.get(Some(snapshot), key)

  def row(key: Array[Byte]): Option[KeyValue] = database.row(Some(snapshot), key)

  def range(range: KeyRange): KeyValueIterator = database.range(Some(snapshot), range)
}

/** A reader's handle on a view for one read: closes whatever iterators the reader left open. */
private final class Lease(view: PublishedView) extends CommittedView with AutoCloseable {
  private val iterators = mutable.ArrayBuffer.empty[KeyValueIterator]
  private var closed = false

  def point: CommitPoint = view.point
  def get(key: Array[Byte]): Option[Array[Byte]] = { ensureOpen(); view.get(key) }
  def row(key: Array[Byte]): Option[KeyValue] = { ensureOpen(); view.row(key) }
  def range(range: KeyRange): KeyValueIterator = {
    ensureOpen()
    val it = view.range(range)
    iterators += it
    it
  }
  def close(): Unit = {
    closed = true
    iterators.foreach(_.close())
  }

  // A view kept past its read would use a released snapshot: fail instead.
  private def ensureOpen(): Unit =
    if (closed) throw EngineErrors.viewUsedAfterRead()
}
