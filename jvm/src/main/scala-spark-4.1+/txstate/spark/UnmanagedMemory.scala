package txstate.spark

import org.apache.spark.SparkEnv
import org.apache.spark.memory.{MemoryMode, UnifiedMemoryManager, UnmanagedMemoryConsumer, UnmanagedMemoryConsumerId}

/**
 * Spark 4.1+: the executor's budgets are reported to Spark's memory manager as unmanaged memory,
 * so that (with `spark.memory.unmanagedMemoryPollingInterval` set) Spark leaves them out of what it
 * hands to tasks and cached blocks: the native memory budget as off-heap memory, the heap budget as
 * on-heap memory (docs/ARCHITECTURE.md, "Native memory budget" and "Heap budget").
 */
private[spark] object UnmanagedMemory {
  /** The component Spark's memory manager counts both budgets under. */
  val componentType: String = "txstate"

  /**
   * Registers the native budget's `usedBytes` inside a Spark executor or driver (SparkEnv set) and
   * returns true; outside one (a store opened without Spark) returns false, so the caller tries
   * again with its next store.
   */
  def registerNative(usedBytes: () => Long): Boolean =
    register("txstate-native-memory-budget", MemoryMode.OFF_HEAP, usedBytes)

  /** As [[registerNative]], for the heap budget. */
  def registerHeap(usedBytes: () => Long): Boolean = register("txstate-heap-budget", MemoryMode.ON_HEAP, usedBytes)

  private def register(key: String, mode: MemoryMode, usedBytes: () => Long): Boolean = SparkEnv.get != null && {
    UnifiedMemoryManager.registerUnmanagedMemoryConsumer(new UnmanagedMemoryConsumer {
      // One key per budget for the whole executor: a budget is shared, so it is counted once.
      override val unmanagedMemoryConsumerId: UnmanagedMemoryConsumerId = UnmanagedMemoryConsumerId(componentType, key)
      override def memoryMode: MemoryMode = mode
      override def getMemBytesUsed: Long = usedBytes()
    })
    true
  }
}
