package txstate.spark

/**
 * Spark 4.0's memory manager has no way to be told of memory it does not manage (that came in
 * 4.1): the native memory budget is not reported to it (docs/ARCHITECTURE.md, "Native memory budget").
 */
private[spark] object UnmanagedMemory {
  /** Nothing to register: done. */
  def register(usedBytes: () => Long): Boolean = true
}
