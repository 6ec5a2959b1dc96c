package txstate.spark

/**
 * Spark 4.0's (and 3.5's) memory manager has no way to be told of memory it does not manage (that
 * came in 4.1): neither the native memory budget nor the heap budget is reported to it, so Spark
 * cannot leave them out of what it hands to tasks (docs/ARCHITECTURE.md, "Native memory budget" and
 * "Heap budget"). Both calls answer true, "done": there is nothing to register on these lines, so
 * the caller need not ask again with each store it opens.
 */
private[spark] object UnmanagedMemory {
  def registerNative(usedBytes: () => Long): Boolean = true

  def registerHeap(usedBytes: () => Long): Boolean = true
}
