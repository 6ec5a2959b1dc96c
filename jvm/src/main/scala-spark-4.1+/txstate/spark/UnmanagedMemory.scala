package txstate.spark

import org.apache.spark.SparkEnv
import org.apache.spark.memory.{MemoryMode, UnifiedMemoryManager, UnmanagedMemoryConsumer, UnmanagedMemoryConsumerId}

/**
 * Spark 4.1+: the executor's native memory budget is reported to Spark's memory manager as
 * unmanaged off-heap memory, so that (with `spark.memory.unmanagedMemoryPollingInterval` set) Spark
 * leaves it out of what it hands to tasks and cached blocks (docs/ARCHITECTURE.md, "Native memory budget").
 */
private[spark] object UnmanagedMemory {
  /** The component Spark's memory manager counts the budget under. */
  val componentType: String = "txstate"

  /**
   * Registers `usedBytes` inside a Spark executor or driver (SparkEnv set) and returns true; outside
   * one (a store opened without Spark) returns false, so the caller tries again with its next store.
   */
  def register(usedBytes: () => Long): Boolean = SparkEnv.get != null && {
    UnifiedMemoryManager.registerUnmanagedMemoryConsumer(new UnmanagedMemoryConsumer {
      // One key for the whole executor: the budget is shared, so it is counted once.
      override val unmanagedMemoryConsumerId: UnmanagedMemoryConsumerId =
        UnmanagedMemoryConsumerId(componentType, "txstate-native-memory-budget")
      override def memoryMode: MemoryMode = MemoryMode.OFF_HEAP
      override def getMemBytesUsed: Long = usedBytes()
    })
    true
  }
}
