package txstate.engine

import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

/**
 * One bound on the heap the stores of an executor hold beside what Spark hands them
 * (docs/ARCHITECTURE.md, "Heap budget"): the hot-state cache, the kept undo of each store's last
 * commit and the running transactions' buffers, counted against one limit.
 *
 * Only the kept undo can go without losing anything but time: a store without it reloads from the
 * checkpoint when Spark re-runs its last batch, where it would have rolled back locally. So after a
 * commit that leaves the executor over the limit, [[settle]] drops kept undo, oldest commit first,
 * until the executor is under it or none is left. The cache keeps its own bound (`hotCacheSizeMB`)
 * and a buffer its store's (`maxUncommittedBytes`, then an early commit): the budget counts them
 * and never drops them, since a batch needs its buffer and a cache entry is cheap to keep.
 *
 * Thread-safe: engines on any thread claim, release and settle. A drop runs on the settling thread
 * and never waits for the store that owns the undo (see [[UndoSnapshots]]): a store busy with its
 * undo is passed over.
 */
final class HeapMemoryBudget(initialLimitBytes: Long, cacheBytes: () => Long) {
  require(initialLimitBytes > 0, s"a heap budget needs a limit > 0 bytes, got $initialLimitBytes")

  @volatile private var limit = initialLimitBytes
  // Guarded by `this`. Undo by commit order (a sequence number), so the oldest comes first.
  private val undos = mutable.TreeMap.empty[Long, HeapClaim]
  private var undoTotal = 0L
  private val buffers = mutable.Set.empty[HeapClaim]
  private val commits = new AtomicLong()
  private val dropped = new AtomicLong()

  def limitBytes: Long = limit

  /** A new limit, in force from the next [[settle]]: the budget holds only counts, nothing to rebuild. */
  def resize(limitBytes: Long): Unit = {
    require(limitBytes > 0, s"a heap budget needs a limit > 0 bytes, got $limitBytes")
    limit = limitBytes
  }

  /** What the executor's stores hold on the heap now: kept undo, running buffers and the hot-state cache. */
  def usedBytes: Long = undoBytes + bufferedBytes + cacheBytes()

  /** Heap held by the kept undo of the stores' last commits. */
  def undoBytes: Long = synchronized(undoTotal)

  /**
   * Heap held by running transactions' buffers. Each is read from its task's thread without a lock:
   * an estimate that may be a write or two old, which is all a budget needs.
   */
  def bufferedBytes: Long = synchronized(buffers.toList).map(_.bytes).sum

  /** Kept undo given up for this budget since it was made. */
  def undoDropped: Long = dropped.get

  /**
   * Counts a store's kept undo of `bytes`, its newest commit. `drop` gives that undo up (from any
   * thread) and returns whether it did; it is asked only while the claim is open.
   */
  private[engine] def keepUndo(bytes: Long)(drop: HeapClaim => Boolean): HeapClaim = synchronized {
    val claim = new HeapClaim(this, commits.incrementAndGet(), () => bytes, drop)
    undos.update(claim.order, claim)
    undoTotal += bytes
    claim
  }

  /** Counts a running transaction's buffer, whose bytes `bytes` reads at each look. */
  private[engine] def buffering(bytes: () => Long): HeapClaim = synchronized {
    val claim = new HeapClaim(this, 0L, bytes, _ => false)
    buffers += claim
    claim
  }

  /**
   * After a commit: while the executor is over the limit, kept undo goes, oldest commit first. The
   * candidates are taken under the lock and dropped outside it, so no store's lock is ever wanted
   * while this one is held.
   */
  private[engine] def settle(): Unit = if (usedBytes > limit) {
    val oldestFirst = synchronized(undos.values.toList)
    oldestFirst.iterator.takeWhile(_ => usedBytes > limit).foreach(claim => if (claim.drop()) dropped.incrementAndGet())
  }

  private[engine] def released(claim: HeapClaim): Unit = synchronized {
    if (undos.remove(claim.order).isDefined) undoTotal -= claim.bytes
    buffers -= claim
  }
}

/**
 * One engine's share of a [[HeapMemoryBudget]]: a kept undo or a running buffer. Closing it (once;
 * later calls do nothing) takes its bytes out of the count.
 */
final class HeapClaim private[engine] (budget: HeapMemoryBudget, private[engine] val order: Long,
    readBytes: () => Long, dropper: HeapClaim => Boolean) extends AutoCloseable {
  private val open = new java.util.concurrent.atomic.AtomicBoolean(true)

  def bytes: Long = readBytes()

  /** Asks the owner to give up what this claim counts; false when it is closed or the owner is busy. */
  private[engine] def drop(): Boolean = open.get && dropper(this)

  def close(): Unit = if (open.compareAndSet(true, false)) budget.released(this)
}
