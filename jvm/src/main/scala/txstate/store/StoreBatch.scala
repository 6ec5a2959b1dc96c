package txstate.store

import txstate.engine.{CacheStats, CommitPoint, CommittedView, KeyRange, KeyValueIterator, TimeToLive, Transaction}

/**
 * One micro-batch of one store instance: the handle the Spark adapter reads and writes through.
 * Reads see the batch's own writes. Past the instance's [[UncommittedLimits]], a write moves the
 * buffer out of memory (an early commit). The batch ends exactly once: `commit`, `abort`, or
 * `discard` (a read-only batch); the instance may then close if Spark asked it to meanwhile.
 *
 * After `commit`, reads see the version it made, from the instance's committed view, until a
 * later batch moves the instance on (Spark 4.0 reads a store after committing it). Those reads
 * copy what they return; iterators hold their whole range in memory.
 *
 * The batch owns its early-commit bookkeeping (the attempt's checkpoint id and segment count);
 * the engine only holds the native view that undoing them needs.
 *
 * Used by one task thread at a time, like Spark's StateStore.
 */
final class StoreBatch private[store] (
    owner: StoreInstance,
    tx: Transaction,
    val loaded: LoadReport,
    limits: UncommittedLimits,
    ttl: Option[TimeToLive]) {

  private var ended: Option[String] = None
  private var attempt: Option[EarlyCommitAttempt] = None
  private var statsSoFar = BatchStats(expiredEntries = tx.expiredEntries)
  // The batch's cache counts are the instance's since here (expiry at begin read stamps, not values).
  private val cacheAtStart: CacheStats = owner.cacheStats
  // Peaks change on almost every write of a growing batch: plain counters on this hot path.
  private var peakEntries = 0L
  private var peakBytes = 0L

  /** When this batch's writes happen (their stamp). */
  def stamp: txstate.engine.WriteStamp = tx.stamp

  /** The version this batch started from; a commit writes `base.version + 1`. */
  def base: CommitPoint = tx.base
  def isOpen: Boolean = ended.isEmpty

  /** Exact live keys if this batch committed now. */
  def numKeys: Long = tx.numKeys
  def uncommittedEntries: Long = tx.uncommittedEntries
  def uncommittedBytes: Long = tx.uncommittedBytes

  /** What this batch did so far; after a commit, also the commit and the instance's state right after it. */
  def stats: BatchStats = statsSoFar.copy(peakEntries = peakEntries, peakBytes = peakBytes)

  /** Native memory of the instance now, or as of the commit once the batch has ended. */
  def nativeMemoryBytes: Long = if (isOpen) owner.nativeMemoryUsed else statsSoFar.nativeMemoryBytes

  def get(key: Array[Byte]): Option[Array[Byte]] = read("get")(tx.get(key), _.get(key))
  def exists(key: Array[Byte]): Boolean = get(key).isDefined

  /** Each key's value, in key order (see [[Transaction.getAll]]). */
  def getAll(keys: Seq[Array[Byte]]): Seq[Option[Array[Byte]]] = read("getAll")(tx.getAll(keys), view => keys.map(view.get))

  /** Live rows in `range`, in key order; closed for the caller when the batch ends. */
  def iterator(range: KeyRange): KeyValueIterator = read("iterator")(tx.iterator(range), { view =>
    val rows = view.range(range)
    try KeyValueIterator.of(rows.toVector) finally rows.close()
  })

  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    ensureOpen("put")
    tx.put(key, value)
    afterWrite()
  }

  def delete(key: Array[Byte]): Unit = {
    ensureOpen("delete")
    tx.delete(key)
    afterWrite()
  }

  /** Deletes every key in [from, until). */
  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    ensureOpen("deleteRange")
    tx.deleteRange(from, until)
    afterWrite()
  }

  /**
   * Makes the buffered writes durable as the next segment of the open version and moves them
   * into the local database (in flight), so the buffer starts empty again. None, doing nothing,
   * while an iterator is open (it would lose sight of buffered rows) or nothing is buffered; the
   * next write past the limit tries again.
   */
  def earlyCommit(): Option[EarlyCommitReport] = {
    ensureOpen("earlyCommit")
    if (tx.hasOpenIterators || tx.isEmpty) None
    else {
      val (next, report) = owner.earlyCommit(tx, attempt)
      attempt = Some(next)
      statsSoFar = statsSoFar.withEarlyCommit(report)
      Some(report)
    }
  }

  /** Makes the batch durable as version `base.version + 1` (changelog first, then the local commit). */
  def commit(forceSnapshot: Boolean = false): CommitReport = {
    ensureOpen("commit")
    val report = owner.commit(tx, attempt, forceSnapshot)
    statsSoFar = statsSoFar.copy(commit = Some(report), snapshotActivity = owner.drainSnapshotActivity(),
      snapshotLagVersions = owner.snapshotLag, nativeMemoryBytes = owner.nativeMemoryUsed,
      oldestWriteMs = ttl.flatMap(rule => owner.oldestWriteMs(rule.applies)),
      cache = owner.cacheStats.since(cacheAtStart), undoDropped = owner.drainUndoDropped())
    end("committed")
    report
  }

  /**
   * Makes this batch's commit (and its early commits) use `checkpointId` instead of a fresh one.
   * Only the migration asks for it, before any early commit: under checkpoint format v2 the new
   * store then carries the id the query's commit log already names for it.
   */
  def useCheckpointId(checkpointId: String): Unit = {
    ensureOpen("useCheckpointId")
    if (attempt.exists(_.segments > 0)) throw StoreErrors.checkpointIdAfterEarlyCommit(owner.label, checkpointId)
    attempt = Some(EarlyCommitAttempt(checkpointId, 0))
  }

  /** Drops the batch: its buffer and every early commit (undone from the pre-batch view). O(uncommitted). */
  def abort(): Unit = if (isOpen) {
    try owner.abort(tx, attempt)
    finally end("aborted")
  }

  /** Ends a batch that wrote nothing durable (a read-only store's release). */
  def discard(): Unit = if (isOpen) {
    try tx.discard()
    finally end("released")
  }

  private def afterWrite(): Unit = {
    val entries = tx.uncommittedEntries
    val bytes = tx.uncommittedBytes
    if (entries > peakEntries) peakEntries = entries
    if (bytes > peakBytes) peakBytes = bytes
    if (limits.exceededBy(entries, bytes)) earlyCommit()
  }

  private def end(how: String): Unit = {
    ended = Some(how)
    attempt = None
    owner.batchEnded()
  }

  /** `open` while the batch is open; after its commit, `committed` on the version it made. */
  private def read[T](operation: String)(open: => T, committed: CommittedView => T): T =
    if (isOpen) open
    else {
      val made = statsSoFar.commit.map(_.point)
      if (made.isEmpty) ensureOpen(operation)
      owner.readCommittedView(committedReadWaitMs)(view => if (made.contains(view.point)) Some(committed(view)) else None)
        .flatten.getOrElse(throw StoreErrors.batchEnded(owner.label, operation, "committed, and the store has moved on since"))
    }

  private def committedReadWaitMs = 10000L

  private def ensureOpen(operation: String): Unit =
    ended.foreach(how => throw StoreErrors.batchEnded(owner.label, operation, how))
}

/** The commit attempt a batch's early commits belong to: its checkpoint id and segments written so far. */
private[store] final case class EarlyCommitAttempt(checkpointId: String, segments: Int)
