package txstate.engine

import java.io.File
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock

import org.rocksdb.{ColumnFamilyHandle, Snapshot, WriteBatch, WriteOptions}

import txstate.compat.ScalaLibrary.Using

/**
 * The RocksDB snapshots an engine keeps to undo its own writes, and the undoing
 * (docs/ARCHITECTURE.md, "Undoing the last commit" and "Early commits"):
 * - after an ordinary commit, the snapshot taken just before it, with what the commit touched
 *   (an [[UndoSnapshots.Undo]]): [[rollBackLastCommit]] restores the version before it;
 * - while the open version has early commits, the snapshot of the committed version taken before
 *   the first one: [[undoEarlyCommits]] restores it, and the version's final commit gives it up.
 *
 * - while the open version's writes go to the database in the background, the snapshot of the
 *   committed version taken before the first: an abort restores it ([[undoBackgroundWrites]]), and the
 *   commit keeps it as its undo.
 *
 * Invariant: at most one snapshot is kept, or two while a version writes in the background (its
 * committed view and the last commit's undo, which its commit or first early commit gives up; a
 * version with early commits keeps none), and each is released exactly once, on the database it
 * was taken from. The engine calls [[releaseAll]] before it closes or replaces that database.
 *
 * Under a heap budget each last commit's undo is counted there (docs/ARCHITECTURE.md, "Heap
 * budget"), and the budget may give it up from another thread when the executor is over its limit
 * ([[dropForBudget]]): the rollback is then impossible, and a re-run of that batch reloads.
 *
 * The owner's thread calls everything else. Each call holds `lock`, which a drop only tries (it
 * never waits, so a store busy with its snapshots is passed over): a snapshot is never released
 * under a restore reading it, nor after its database closed. Restores throw RocksDB's exceptions as
 * they are (the engine turns them into its refused-write error), and a restore that fails keeps its snapshot.
 */
private[engine] final class UndoSnapshots(dir: File, cache: CacheHandOff, writeOptions: WriteOptions,
    heap: Option[HeapMemoryBudget]) {
  import UndoSnapshots._

  private val lock = new ReentrantLock()
  private var kept: Kept = Kept.Empty // guarded by `lock`
  private var keysReadBack = 0
  private val dropped = new AtomicLong()

  /** What [[rollBackLastCommit]] would restore, if the last commit can be undone. */
  def committedBefore: Option[CommitPoint] = guarded {
    kept match {
      case Kept.LastCommit(_, undo, _) => Some(undo.previous)
      case Kept.BeforeBackgroundWrites(_, _, Some(Kept.LastCommit(_, undo, _))) => Some(undo.previous)
      case _ => None
    }
  }

  /** True while the open version has early commits (the database holds them under the in-flight marker). */
  def holdsEarlyCommits: Boolean = guarded(kept.isInstanceOf[Kept.BeforeEarlyCommits])

  /** Last commits' undo the heap budget gave up since the last call. */
  def drainDropped(): Long = dropped.getAndSet(0L)

  /** Point keys the last rollback read from its snapshot: those whose stored rows its batch had not read. */
  def keysReadBackByLastRollback: Int = keysReadBack

  /**
   * Runs `write`, the ordinary commit of `tx` on top of `previous`, keeping what undoing it needs: a
   * snapshot taken just before it, the keys it touches and the stored rows it read of them. The undo
   * of the commit before goes first. With `keep` false (the commit drops the whole TTL index: not
   * worth undoing, a re-run rebuilds) the snapshot is released once the write is done.
   */
  def keepingUndo(database: LocalDatabase, tx: Transaction, previous: CommitPoint, keep: Boolean)(write: => Unit)
      : Unit = guarded {
    releaseAll()
    val snapshot = database.db.getSnapshot
    val touched = tx.touchedKeys
    try write
    catch {
      case e: Throwable =>
        database.db.releaseSnapshot(snapshot)
        throw e
    }
    if (keep) kept = keptLastCommit(database, Undo(snapshot, touched, tx.priorRows, previous, tx.indexCut))
    else database.db.releaseSnapshot(snapshot)
  }

  /** Before an early commit: the first one of a version gives up the last commit's undo and keeps the committed view. */
  def beforeEarlyCommit(database: LocalDatabase): Unit = guarded {
    kept match {
      case _: Kept.BeforeEarlyCommits => ()
      case Kept.BeforeBackgroundWrites(db, before, lastCommit) =>
        kept = Kept.BeforeEarlyCommits(db, before) // the same committed view; the last commit's undo goes
        lastCommit.foreach(release)
      case _ =>
        releaseAll()
        kept = Kept.BeforeEarlyCommits(database, database.db.getSnapshot)
    }
  }

  /**
   * Before a version's first background write: the committed view is kept, and so is the last
   * commit's undo until this version commits (an abort leaves the last commit undoable).
   */
  def beforeBackgroundWrites(database: LocalDatabase): Unit = guarded {
    val lastCommit = kept match {
      case l: Kept.LastCommit => Some(l)
      case _ => releaseAll(); None
    }
    kept = Kept.BeforeBackgroundWrites(database, database.db.getSnapshot, lastCommit)
  }

  /**
   * Runs `write`, the last write of a version whose other writes went to the database in the
   * background, and keeps the undo of the whole version: the snapshot taken before the first of
   * them, the keys `tx` touched and the stored rows it read. If `write` fails, the snapshot stays
   * for the abort that follows ([[undoBackgroundWrites]]).
   */
  def keepingUndoOfBackgroundWrites(tx: Transaction, previous: CommitPoint, keep: Boolean)(write: => Unit): Unit =
    guarded {
      kept match {
        case Kept.BeforeBackgroundWrites(database, snapshot, lastCommit) =>
          write
          kept = Kept.Empty
          lastCommit.foreach(release)
          if (keep) kept = keptLastCommit(database, Undo(snapshot, tx.touchedKeys, tx.priorRows, previous, tx.indexCut))
          else database.db.releaseSnapshot(snapshot)
        case _ => throw EngineErrors.nothingToRollBack(dir)
      }
    }

  /**
   * Undoes a version's background writes (all of them written by now): each key or range in
   * `touched` gets back what the snapshot from before the first one holds; `last` adds the marker writes.
   */
  def undoBackgroundWrites(touched: TouchedKeys, chunkBytes: Long)(last: WriteBatch => Unit): Unit = guarded {
    kept match {
      case Kept.BeforeBackgroundWrites(database, before, lastCommit) =>
        val keys = touched.points.iterator.map(Left(_)) ++ touched.ranges.iterator.map(Right(_))
        restore(database, before, Nil, keys, chunkBytes, None)(last)
        kept = lastCommit.getOrElse(Kept.Empty)
        database.db.releaseSnapshot(before)
      case _ => throw EngineErrors.nothingToRollBack(dir)
    }
  }

  /**
   * Runs `write`, the final commit of a version with early commits, then gives up the snapshot from
   * before them. Undoing such a version would need every early-committed key, so it keeps no undo:
   * a re-run rebuilds instead. If `write` fails, the early commits can still be undone.
   */
  def finishingEarlyCommits(write: => Unit): Unit = guarded {
    write
    releaseAll()
  }

  /**
   * Undoes every early commit of the open version: each key or range they touched gets back what
   * the snapshot from before the first one holds, in chunks of `chunkBytes`; `last` adds the final
   * marker writes. `earlyCommitted` lists their changes (read back from their segments, so the keys
   * never had to stay in memory).
   */
  def undoEarlyCommits(earlyCommitted: Iterator[ChangeRecord], chunkBytes: Long)(last: WriteBatch => Unit): Unit =
    guarded(kept match {
      case Kept.BeforeEarlyCommits(database, before) =>
        val keys = earlyCommitted.map {
          case ChangeRecord.Put(k, _) => Left(k)
          case ChangeRecord.Delete(k) => Left(k)
          case ChangeRecord.DeleteRange(from, until) => Right(KeyRange(from, Some(until)))
        }
        // Rare (an aborted batch with early commits): the cache forgets the whole store rather than each key.
        cache.forgetAll()
        restore(database, before, Nil, keys, chunkBytes, None)(last)
        releaseAll()
      case _ => throw EngineErrors.noEarlyCommitToUndo(dir)
    })

  /**
   * Restores the version before the last commit in one atomic write, whose last writes `last` adds
   * for that version, and returns it; None, doing nothing, when no undo is kept (the heap budget may
   * have dropped it a moment ago) or `wanted` refuses the version it would restore. Keys whose
   * stored rows the transaction read before writing them get those rows back with no read; the
   * others (answered by the hot-state cache, expired, or under a range delete) are read from the
   * pre-commit snapshot, in multiGets.
   */
  def rollBackLastCommit(wanted: CommitPoint => Boolean)(last: CommitPoint => WriteBatch => Unit)
      : Option[CommitPoint] = guarded(kept match {
    case Kept.LastCommit(database, undo, _) if wanted(undo.previous) =>
      val looked = undo.touched.points.iterator.map(k => k -> undo.priors.get(k)).toVector
      val known = looked.collect { case (k, Some(row)) => k -> row }
      val unknown = looked.collect { case (k, None) => k }
      keysReadBack = unknown.size
      val keys = unknown.iterator.map(Left(_)) ++ undo.touched.ranges.iterator.map(Right(_))
      cache.forgetTouched(undo.touched)
      restore(database, undo.snapshot, known, keys, Long.MaxValue, undo.indexCut.map(TimeIndex.before))(last(undo.previous))
      releaseAll()
      Some(undo.previous)
    case _ => None
  })

  /** Gives up the last commit's undo, keeping an early-commit snapshot (a replay moves the version on). */
  def releaseLastCommit(): Unit = guarded {
    kept match {
      case _: Kept.LastCommit => releaseAll()
      case _ => ()
    }
  }

  /** Releases whatever snapshot is kept (the database is being closed or replaced). */
  def releaseAll(): Unit = guarded {
    val was = kept
    kept = Kept.Empty // first: even if releasing fails, no snapshot is released twice
    was match {
      case l: Kept.LastCommit => release(l)
      case Kept.BeforeEarlyCommits(database, before) => database.db.releaseSnapshot(before)
      case Kept.BeforeBackgroundWrites(database, before, lastCommit) =>
        try database.db.releaseSnapshot(before) finally lastCommit.foreach(release)
      case Kept.Empty => ()
    }
  }

  /**
   * For the heap budget, on any thread: gives up the last commit's undo that `claim` counts, if it
   * is still the one kept, and returns whether it did. Never waits: while the owner holds its
   * snapshots (a commit, a rollback, a close) the budget passes this store over.
   */
  private def dropForBudget(claim: HeapClaim): Boolean = lock.tryLock() && {
    try {
      val gone = kept match {
        case l: Kept.LastCommit if l.claim.contains(claim) =>
          kept = Kept.Empty
          release(l)
          true
        case Kept.BeforeBackgroundWrites(database, before, Some(l)) if l.claim.contains(claim) =>
          kept = Kept.BeforeBackgroundWrites(database, before, None) // an abort of the open version then keeps no undo
          release(l)
          true
        case _ => false
      }
      if (gone) dropped.incrementAndGet()
      gone
    } finally lock.unlock()
  }

  /** The last commit's undo, counted by the heap budget if there is one. */
  private def keptLastCommit(database: LocalDatabase, undo: Undo): Kept.LastCommit =
    Kept.LastCommit(database, undo, heap.map(_.keepUndo(heapBytesOf(undo))(dropForBudget)))

  /** Releases a last commit's snapshot, on its database, and takes it out of the heap budget's count. */
  private def release(l: Kept.LastCommit): Unit =
    try l.database.db.releaseSnapshot(l.undo.snapshot) finally l.claim.foreach(_.close())

  private def guarded[T](body: => T): T = {
    lock.lock()
    try body finally lock.unlock()
  }

  /**
   * Writes back the rows in `known` (keys whose stored rows were kept when they were read) and, for
   * every key or range in `keys`, what `snapshot` holds there (deleting keys it does not hold), in
   * chunks of `chunkBytes`; `last` adds the final marker writes.
   */
  private def restore(database: LocalDatabase, snapshot: Snapshot, known: Seq[(Array[Byte], StoredRow)],
      keys: Iterator[Either[Array[Byte], KeyRange]], chunkBytes: Long, indexRange: Option[KeyRange])
      (last: WriteBatch => Unit): Unit =
    Using.resource(new ChunkedWriter(database, writeOptions, chunkBytes, RowFormat.Raw)) { writer =>
      // Each family's bytes as they were: a key goes back to the family (stamped or plain) it was in.
      val families = (database.stamped -> StoredRow.StampedFamily) +:
        (if (database.mayHoldPlainRows) Seq(database.data -> StoredRow.PlainFamily) else Nil)
      def putBack(family: ColumnFamilyHandle, range: KeyRange): Unit =
        Using.resource(database.familyRange(family, Some(snapshot), range, stampedValues = false)) {
          _.foreach(kv => writer.raw(family, kv.key, Some(kv.value)))
        }
      known.foreach { case (key, row) => families.foreach { case (f, name) => writer.raw(f, key, row.bytesIn(name)) } }
      // In groups, so undoing early commits of any size streams their keys (read back from segments).
      keys.grouped(restoreGroup).foreach { group =>
        val points = group.collect { case Left(key) => key }
        val ranges = group.collect { case Right(range) => range }
        families.foreach { case (f, _) =>
          points.zip(database.rawGetAll(f, snapshot, points)).foreach { case (key, value) => writer.raw(f, key, value) }
        }
        ranges.foreach(range => families.foreach { case (f, _) => putBack(f, range) })
      }
      indexRange.foreach(putBack(database.byTime, _))
      writer.finish(last)
    }
}

private[engine] object UndoSnapshots {
  // Keys read from a snapshot per multiGet when undoing: big enough to amortise the native call.
  private val restoreGroup = 4096

  /**
   * What undoing the last commit needs: the previous version's view, the keys the commit changed,
   * the stored rows it read of them, and its TTL index cutoff (the entries it cut come back).
   */
  private final case class Undo(snapshot: Snapshot, touched: TouchedKeys, priors: PriorRows, previous: CommitPoint,
      indexCut: Option[Long])

  /**
   * Heap an undo holds (the snapshot itself is native): the touched keys' packed rows, each range's
   * arrays with the range and its `Some`, the kept rows ([[PriorRows.heapBytes]]), and the few
   * objects around them.
   */
  private def heapBytesOf(undo: Undo): Long = {
    var bytes = 128L + undo.touched.points.heapBytes
    undo.touched.ranges.foreach { r =>
      bytes += 40L + StoredRow.arrayBytes(r.from.length) + r.until.fold(0L)(u => StoredRow.arrayBytes(u.length))
    }
    bytes + undo.priors.heapBytes
  }

  /** The one snapshot kept, with the database it was taken from (and must be released on). */
  private sealed trait Kept
  private object Kept {
    case object Empty extends Kept
    /** `claim`: its count in the heap budget, if there is one. */
    final case class LastCommit(database: LocalDatabase, undo: Undo, claim: Option[HeapClaim]) extends Kept
    final case class BeforeEarlyCommits(database: LocalDatabase, snapshot: Snapshot) extends Kept
    /** The committed view before a version's background writes, and the last commit's undo while it lasts. */
    final case class BeforeBackgroundWrites(database: LocalDatabase, snapshot: Snapshot, lastCommit: Option[LastCommit])
      extends Kept
  }
}
