package txstate.spark

import org.slf4j.LoggerFactory

import txstate.engine.HeapMemoryBudget

/**
 * The executor JVM's one heap budget, shared by every txstate store it hosts (docs/ARCHITECTURE.md,
 * "Heap budget"): it counts the hot-state cache ([[ExecutorHotCache]]), each store's kept undo and
 * the running transactions' buffers against `maxHeapMemoryMB`, and past it the stores' kept undo
 * goes, oldest commit first. It holds only counts, so it lives as long as the JVM and a store opened
 * with another limit changes it at once (and says so).
 */
private[spark] object ExecutorHeapMemory {
  private val log = LoggerFactory.getLogger(getClass)
  private var budget: Option[HeapMemoryBudget] = None // guarded by `this`
  private var reported = false // to Spark's memory manager; guarded by `this`

  /** The budget for a store opened with `maxBytes` (0: none, the store always keeps its undo). */
  def forStore(maxBytes: Long): Option[HeapMemoryBudget] = if (maxBytes <= 0) None else synchronized {
    if (!reported) reported = UnmanagedMemory.registerHeap(() => usedBytes)
    budget match {
      case Some(b) =>
        if (b.limitBytes != maxBytes) {
          log.info(s"txstate: heap budget of this executor changed from ${b.limitBytes} to $maxBytes bytes " +
            s"(${TxStateConf.prefix}maxHeapMemoryMB)")
          b.resize(maxBytes)
        }
        Some(b)
      case None =>
        val b = new HeapMemoryBudget(maxBytes, () => ExecutorHotCache.usedBytes)
        budget = Some(b)
        Some(b)
    }
  }

  /** Heap the executor's stores hold now under the budget (cache, kept undo, buffers); 0 without one. */
  def usedBytes: Long = current.fold(0L)(_.usedBytes)

  /** The budget's limit; 0 while there is none. */
  def limitBytes: Long = current.fold(0L)(_.limitBytes)

  private def current: Option[HeapMemoryBudget] = synchronized(budget)
}
