package txstate.engine

import java.util.Arrays

/**
 * One micro-batch's uncommitted work over the committed database (read-your-writes).
 *
 * Keeps the exact live key count: every write learns whether its key was visible before. Reads
 * remember the committed rows they looked up ([[RowsRead]]), because Spark's operators read a key
 * before they write it (deduplication and joins right before, aggregation after reading the whole
 * batch): the write then costs no second lookup.
 */
final class Transaction private[engine] (
    engine: TxEngine,
    val base: CommitPoint,
    val stamp: WriteStamp,
    val timeIndexSinceMs: Option[Long]) {
  private val buffer = new WriteBuffer
  private var expired = 0L
  private var cut: Option[Long] = None

  private var keyDelta = 0L
  private var probedKey: BytesKey = new BytesKey(Array.emptyByteArray)
  private var lastKey: BytesKey = probedKey
  private var probedRow: StoredRow = StoredRow.Absent
  private var probeValid = false
  // Stored rows of keys read, then written: the commit's undo. Not kept once the version has early
  // commits, since such a version is never undone (docs/ARCHITECTURE.md, "Early commits").
  private val priors = new PriorRows
  private var keepingPriors = true
  // Committed rows of keys read and not yet written: the write after a read costs no second lookup.
  private val reads = new RowsRead(RowsRead.LimitBytes)
  // Background writes (docs/ARCHITECTURE.md, "Background writes"): once the buffer holds
  // `backgroundRows` entries, the database starts receiving the batch's rows while it runs: the
  // buffer's rows of every `backgroundRows` keys written since the last hand-over (`dirty`; a key
  // written ten times goes once). A range delete stops them (`backgroundStopped`): the commit then
  // writes the whole buffer again. Off with TTL (its index reads the stored stamps at commit) and
  // after an early commit (its segments then say what to undo).
  private val backgroundRows = engine.options.backgroundWriteRows
  private var backgroundAllowed = backgroundRows > 0 && timeIndexSinceMs.isEmpty
  private var writingInBackground = false
  private var backgroundStopped = false
  private var dirty = new java.util.HashSet[BytesKey]()
  // Counted in the executor's heap budget while the transaction runs (docs/ARCHITECTURE.md, "Heap budget").
  private val heapClaim = engine.heap.map(_.buffering(() => uncommittedBytes + reads.byteSize))
  // Iterators Spark may abandon half-way: closed for it when the transaction ends.
  private val openIterators = java.util.Collections.newSetFromMap(
    new java.util.IdentityHashMap[KeyValueIterator, java.lang.Boolean]())

  /** Exact live keys if this transaction committed now. */
  def numKeys: Long = base.numKeys + keyDelta

  /** Rows TTL expired when this transaction began (deletes of this transaction). */
  def expiredEntries: Long = expired

  /** The expiry cutoff: TTL index entries older than it go with the commit. */
  private[engine] def indexCut: Option[Long] = cut

  def uncommittedEntries: Long = buffer.entryCount
  def uncommittedBytes: Long = buffer.byteSize + priors.byteSize
  def isEmpty: Boolean = buffer.isEmpty

  def get(key: Array[Byte]): Option[Array[Byte]] = get(keyOf(key))

  def exists(key: Array[Byte]): Boolean = get(key).isDefined

  /**
   * Each key's value, in key order: buffered keys answer from memory, the others in one RocksDB
   * multiGet (one native call instead of one per key).
   */
  def getAll(keys: Seq[Array[Byte]]): Seq[Option[Array[Byte]]] = {
    val hashed = keys.map(new BytesKey(_))
    val fromBuffer = hashed.map(bufferedAnswer)
    val missing = hashed.zip(fromBuffer).collect { case (k, None) => k }
    val committed = engine.getAllCommitted(missing).iterator
    fromBuffer.map(_.getOrElse(committed.next()))
  }

  def put(key: Array[Byte], value: Array[Byte]): Unit = {
    val k = keyOf(key)
    if (get(k).isEmpty) keyDelta += 1
    keepPrior(k)
    reads.forget(k)
    buffer.put(k, value)
    if (writingInBackground) written(k)
    else if (backgroundAllowed && buffer.entryCount >= backgroundRows) startBackgroundWrites()
  }

  /**
   * A key written and deleted in the same transaction that never existed before leaves no trace
   * (not even a tombstone), so the changelog holds this batch's net changes only. Once writes go
   * to the database in the background, it leaves a tombstone: the database may hold the write, and
   * the batch's reads of the key must not look there.
   */
  def delete(key: Array[Byte]): Unit = {
    val k = keyOf(key)
    if (get(k).isDefined) {
      keyDelta -= 1
      keepPrior(k)
      reads.forget(k)
      val onlyBuffered = !writingInBackground && buffer.holds(k) &&
        (buffer.hidesCommitted(key) || committedValue(k).isEmpty)
      if (onlyBuffered) buffer.forget(key) else buffer.delete(k)
      if (writingInBackground) written(k)
    }
  }

  /** Deletes every key in [from, until). Costs a scan of the range to keep the key count exact. */
  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    if (ByteKeys.compare(from, until) < 0) {
      var removed = 0L
      val it = iterator(KeyRange(from, Some(until)))
      try it.foreach(_ => removed += 1) finally it.close()
      keyDelta -= removed
      buffer.deleteRange(from, until)
      if (writingInBackground) {
        // The buffer no longer holds the rows of keys the range cleared: later hand-overs could not
        // say what to write for them. The commit writes the whole buffer, range deletes first.
        backgroundStopped = true
        dirty = new java.util.HashSet[BytesKey]()
      }
    }
  }

  /** Live rows in `range`, in key order, merging this transaction's writes over the committed rows. */
  def iterator(range: KeyRange): KeyValueIterator = {
    // An inverted range holds nothing (as in Spark's own RocksDB store), not an error.
    if (range.until.exists(ByteKeys.compare(_, range.from) <= 0)) return KeyValueIterator.empty
    val it = new MergedIterator(engine.committedRange(range), buffer, range, closed => openIterators.remove(closed))
    openIterators.add(it)
    it
  }

  /** Closes iterators the caller did not exhaust or close. Called when the transaction ends. */
  def closeIterators(): Unit = {
    val open = openIterators.toArray(new Array[KeyValueIterator](0))
    open.foreach(_.close())
    openIterators.clear()
  }

  /**
   * Drops all uncommitted work: O(buffered writes), never touches the checkpoint. The database is
   * touched only if writes went there in the background: each key they wrote gets back its
   * committed row.
   */
  def discard(): Unit = {
    closeIterators()
    val undoing = writingInBackground
    writingInBackground = false
    backgroundAllowed = false
    try if (undoing) engine.undoBackgroundWrites(this)
    finally {
      dirty = new java.util.HashSet[BytesKey]()
      buffer.clear()
      priors.clear()
      reads.clear()
      keyDelta = 0L
      probeValid = false
      heapClaim.foreach(_.close())
    }
  }

  /** True while an iterator is open: an early commit then would hide buffered rows from it. */
  def hasOpenIterators: Boolean = !openIterators.isEmpty

  /** After the engine moved the buffer into the database (an early commit): the buffer restarts empty. */
  private[engine] def afterEarlyCommit(): Unit = {
    writingInBackground = false
    backgroundAllowed = false
    dirty = new java.util.HashSet[BytesKey]()
    buffer.clear()
    probeValid = false // the committed view now includes the early-committed sub-batch
    reads.clear()
    priors.clear()
    keepingPriors = false
  }

  /**
   * Deletes, as writes of this transaction, every row `rule` applies to whose last write is before
   * `cutoffMs` (rows of unknown time count from when TTL was switched on). Reads the TTL index
   * entries before the cutoff only, never the whole store; entries a rewrite left behind are skipped.
   */
  private[engine] def expire(cutoffMs: Long, rule: TimeToLive): Unit = {
    val since = timeIndexSinceMs.getOrElse(throw new IllegalStateException("txstate: expiry without a time index"))
    val entries = engine.timeIndexBefore(cutoffMs)
    try entries.foreach { entry =>
      val key = TimeIndex.rowKeyOf(entry.key)
      lazy val hashed = new BytesKey(key) // hashed once, for the check and the delete
      if (rule.applies(key) && !buffer.holds(hashed) &&
          engine.committedStamp(key).exists(_.knownTimeMs.getOrElse(since) < cutoffMs)) {
        buffer.delete(hashed)
        keyDelta -= 1
        expired += 1
      }
    } finally entries.close()
    cut = Some(cutoffMs)
  }

  /** What undoing this transaction's commit must restore. */
  private[engine] def touchedKeys: TouchedKeys = buffer.touchedKeys

  /** The stored rows this transaction read of the keys it wrote (handed to the commit's undo). */
  private[engine] def priorRows: PriorRows = priors

  /** Changes in apply order (range deletes, then point writes). */
  def changes: Iterator[ChangeRecord] = buffer.changes

  /** [[changes]] as the buffer holds them, for a writer that copies them itself (a changelog). */
  def changeSource: ChangeSource = buffer.changeSource

  /** True once the batch's writes started going to the database in the background. */
  private[engine] def writesInBackground: Boolean = writingInBackground

  /**
   * What the commit still writes: the rows of the keys written since the last hand-over, or, after
   * a range delete stopped the hand-overs, every change again (range deletes first, then every row).
   */
  private[engine] def notHandedOver(): Iterator[ChangeRecord] = if (backgroundStopped) changes else handOver().iterator

  /**
   * At commit: the background writes are finished and the version is written; the next batch
   * starts afresh. The buffer leaves the heap budget's count: nothing reads it after the commit,
   * and its kept rows are the commit's undo now, counted as such.
   */
  private[engine] def afterCommit(): Unit = {
    writingInBackground = false
    backgroundAllowed = false
    reads.clear()
    heapClaim.foreach(_.close())
  }

  // The buffer as it is now (its net changes, no range delete yet) is the first hand-over.
  private def startBackgroundWrites(): Unit = {
    writingInBackground = true
    engine.writeInBackground(this, buffer.changes.toVector)
  }

  private def written(key: BytesKey): Unit =
    if (!backgroundStopped && dirty.add(key) && dirty.size >= backgroundRows) engine.writeInBackground(this, handOver())

  /** The buffered rows of the keys written since the last hand-over, read now (the buffer is this thread's). */
  private def handOver(): Vector[ChangeRecord] = {
    val rows = Vector.newBuilder[ChangeRecord]
    dirty.forEach { key =>
      rows += (buffer.lookup(key) match {
        case Some(BufferedWrite.Value(v)) => ChangeRecord.Put(key.bytes, v)
        case Some(BufferedWrite.Tombstone) => ChangeRecord.Delete(key.bytes)
        // Keys leave the buffer only by a range delete, which stops the hand-overs, or by `forget`,
        // which is off while writing in the background.
        case None => throw new IllegalStateException("txstate: a key written in the background left the buffer")
      })
    }
    dirty = new java.util.HashSet[BytesKey]()
    rows.result()
  }

  private def get(key: BytesKey): Option[Array[Byte]] = bufferedAnswer(key).getOrElse(committedValue(key))

  /**
   * `key` with its hash, reusing the last key's when the bytes are equal. Spark's operators read a
   * key right before they write it, so the write reuses the read's hash (for the buffer and the
   * hot-state cache) instead of computing it again; comparing bytes costs less than hashing them.
   */
  private def keyOf(key: Array[Byte]): BytesKey = {
    if (!lastKey.bytes.eq(key) && !Arrays.equals(lastKey.bytes, key)) lastKey = new BytesKey(key)
    lastKey
  }

  /** What the buffer alone says of `key` (its value, or that it is gone); None when the committed value decides. */
  private def bufferedAnswer(key: BytesKey): Option[Option[Array[Byte]]] = buffer.lookup(key) match {
    case Some(BufferedWrite.Value(v)) => Some(Some(v))
    case Some(BufferedWrite.Tombstone) => Some(None)
    case None => if (buffer.hidesCommitted(key.bytes)) Some(None) else None
  }

  private def committedValue(key: BytesKey): Option[Array[Byte]] = {
    if (!isProbed(key)) {
      val remembered = reads.get(key)
      probedRow = if (remembered != null) remembered else {
        val row = engine.readCommitted(key)
        reads.remember(key, row)
        row
      }
      probedKey = key
      probeValid = true
    }
    probedRow.value
  }

  private def isProbed(key: BytesKey): Boolean = probeValid && (probedKey.eq(key) || probedKey == key)

  /** Before `key` is written: keeps its stored row, which the read just before it found (the usual case). */
  private def keepPrior(key: BytesKey): Unit = if (keepingPriors && isProbed(key)) priors.keep(key, probedRow)
}
