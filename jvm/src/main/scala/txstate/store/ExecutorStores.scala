package txstate.store

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import txstate.engine.BackgroundWrites

/**
 * What the store instances of this JVM add up to, read by the executor's metrics
 * (`txstate.spark.TxStatePlugin`, docs/operations.md, "Executor metrics"). Instances report here as
 * they open, close and commit early; the figures are read, never pushed, so nothing here calls up.
 *
 * @param openInstances          store instances open in this JVM (each holds a local RocksDB)
 * @param earlyCommits           early commits made since the JVM started
 * @param undoDropped            undo of last commits the heap budget gave up since the JVM started,
 *                               as the stores' batches report it
 * @param backgroundWritesWaiting background writes submitted and not yet finished
 * @param maxSnapshotLagVersions the most versions any open instance committed since its newest snapshot
 */
final case class ExecutorStoreFigures(openInstances: Int, earlyCommits: Long, undoDropped: Long,
    backgroundWritesWaiting: Long, maxSnapshotLagVersions: Long)

object ExecutorStores {
  private val open = ConcurrentHashMap.newKeySet[StoreInstance]()
  private val earlyCommitCount = new AtomicLong()
  private val undoDroppedCount = new AtomicLong()

  private[store] def opened(instance: StoreInstance): Unit = open.add(instance)
  private[store] def closed(instance: StoreInstance): Unit = open.remove(instance)
  private[store] def earlyCommitted(): Unit = earlyCommitCount.incrementAndGet()
  private[store] def undoDropped(entries: Long): Unit = if (entries > 0) undoDroppedCount.addAndGet(entries)

  /** The figures now; each is read on its own, so they need not describe one instant together. */
  def figures: ExecutorStoreFigures =
    ExecutorStoreFigures(open.size, earlyCommitCount.get(), undoDroppedCount.get(), BackgroundWrites.waiting,
      open.stream().mapToLong((i: StoreInstance) => i.snapshotLag).max().orElse(0L))
}
