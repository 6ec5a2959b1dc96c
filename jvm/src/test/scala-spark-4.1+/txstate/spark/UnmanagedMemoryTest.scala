package txstate.spark

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.memory.UnifiedMemoryManager
import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

/** Spark 4.1+: the executor's native memory and heap budgets are reported to Spark's memory manager. */
final class UnmanagedMemoryTest extends AnyFunSuite with ProviderFixture {
  test("inside Spark, the native memory and heap budgets are reported to Spark's memory manager as unmanaged memory, once each") {
    val sc = new SparkContext(new SparkConf().setMaster("local[1]").setAppName("txstate-unmanaged-memory")
      .set("spark.ui.enabled", "false"))
    try {
      val (keys, values) = (new StructType().add("k", StringType), new StructType().add("v", LongType))
      withProvider(newProvider(newCheckpointRoot(), keys, values)) { p =>
        val (key, value) = (new RowMaker(keys), new RowMaker(values))
        val store = p.getStore(0)
        (0 until 500).foreach(i => store.put(key(s"k$i"), value(i.toLong)))
        store.commit()
        val reported = UnifiedMemoryManager.getMemoryByComponentType(UnmanagedMemory.componentType)
        assert(reported > 0L, "Spark's memory manager sees no txstate memory")
        // One consumer per shared budget: what they report is the budgets' use, not a multiple.
        assert(ExecutorHeapMemory.usedBytes > 0L, "the commit's kept undo is not counted in the heap budget")
        assert(reported <= TxStateConf.defaultNativeMemoryBytes + ExecutorHeapMemory.limitBytes)
        assert(math.abs(reported - ExecutorNativeMemory.usedBytes - ExecutorHeapMemory.usedBytes) <= (1L << 20))
      }
    } finally sc.stop()
  }
}
