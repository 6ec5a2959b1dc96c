package txstate.spark

/**
 * Spark 4.0's (and 3.5's) memory manager has no way to be told of memory it does not manage (that
 * came in 4.1): neither the native memory budget nor the heap budget is reported to it, so Spark
 * cannot leave them out of what it hands to tasks (docs/ARCHITECTURE.md, "Native memory budget" and
 * "Heap budget"). Both calls return false: nothing was registered, and nothing ever will be; the
 * caller's next store asks again, at the cost of this call.
 */
private[spark] object UnmanagedMemory {
  def registerNative(usedBytes: () => Long): Boolean = false

  def registerHeap(usedBytes: () => Long): Boolean = false
}
