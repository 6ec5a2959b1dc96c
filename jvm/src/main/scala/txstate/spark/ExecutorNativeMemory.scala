package txstate.spark

import org.slf4j.LoggerFactory

import txstate.engine.NativeMemoryBudget

/**
 * The executor JVM's one native memory budget, shared by every txstate store it hosts
 * (docs/ARCHITECTURE.md, "Native memory budget"): one RocksDB block cache and one write-buffer
 * manager charged to it, under `maxNativeMemoryMB`. This object lives as long as the JVM; the native
 * objects inside the budget live while a store's engine holds a lease on it (each engine takes one
 * when it opens and releases it after its database closed), so they are closed exactly once, after
 * the last store using them, and made anew by the next store.
 *
 * The limit is the newest setting a store opened with; a different one takes effect once the
 * stores using the current objects have all closed, and is logged.
 */
private[spark] object ExecutorNativeMemory {
  private val log = LoggerFactory.getLogger(getClass)
  private var budget: Option[NativeMemoryBudget] = None // guarded by `this`
  private var reported = false // to Spark's memory manager; guarded by `this`

  /** The budget for a store opened with `maxBytes` (0: none, the store sizes its own native memory). */
  def forStore(maxBytes: Long): Option[NativeMemoryBudget] = if (maxBytes <= 0) None else synchronized {
    if (!reported) reported = UnmanagedMemory.registerNative(() => usedBytes)
    budget match {
      case Some(b) =>
        if (b.limitBytes != maxBytes && !b.resize(maxBytes)) {
          log.info(s"txstate: native memory budget of this executor stays ${b.limitBytes} bytes while stores use " +
            s"it; $maxBytes bytes (${TxStateConf.prefix}maxNativeMemoryMB) applies once they have all closed")
        }
        Some(b)
      case None =>
        val b = new NativeMemoryBudget(maxBytes)
        budget = Some(b)
        Some(b)
    }
  }

  /** Native bytes the executor's stores use under the budget now (its shared cache's usage); 0 without one. */
  def usedBytes: Long = current.fold(0L)(_.usedBytes)

  /** The limit in force while stores use the budget; 0 while none does. */
  def limitBytes: Long = current.filter(_.leasesHeld > 0).fold(0L)(_.limitBytes)

  private def current: Option[NativeMemoryBudget] = synchronized(budget)
}
