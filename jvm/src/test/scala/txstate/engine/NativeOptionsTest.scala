package txstate.engine

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

final class NativeOptionsTest extends AnyFunSuite {
  // Only named in RocksDB's log lines: no database is opened here.
  private val storeDir = new java.io.File("native-options-test")

  test("closing the option objects releases every native handle, and closing again does nothing") {
    val natives = NativeOptions(storeDir, EngineOptions(), None)
    val handles = Seq(natives.dbOptions, natives.commitOptions, natives.dataOptions, natives.writeOptions)
    assert(handles.forall(_.isOwningHandle))
    natives.close()
    assert(handles.forall(!_.isOwningHandle), "an option object kept its native handle after close")
    natives.close()
  }

  test("under a budget the option objects share its cache and release their lease on close, never closing the cache") {
    val budget = new NativeMemoryBudget(8L << 20)
    val first = NativeOptions(storeDir, EngineOptions(), Some(budget))
    val second = NativeOptions(storeDir, EngineOptions(), Some(budget))
    assert(budget.leasesHeld == 2)
    assert(first.memtablesInCache && second.memtablesInCache)
    first.close()
    first.close()
    assert(budget.leasesHeld == 1, "closing twice released the lease twice")
    assert(second.dbOptions.writeBufferManager().isOwningHandle, "the shared write-buffer manager closed under a user")
    second.close()
    assert(budget.leasesHeld == 0)
    assert(budget.usedBytes == 0L)
  }

  test("a close that throws does not stop the others: each is closed once, in order, and the first failure is rethrown") {
    val closed = mutable.ArrayBuffer.empty[String]
    def part(name: String, fails: Boolean = false): AutoCloseable = () => {
      closed += name
      if (fails) throw new IllegalStateException(s"$name failed")
    }
    val e = intercept[IllegalStateException] {
      NativeOptions.closeAll(List(part("write"), part("data", fails = true), part("db", fails = true), part("cache")))
    }
    assert(closed == Seq("write", "data", "db", "cache"))
    assert(e.getMessage == "data failed")
    assert(e.getSuppressed.map(_.getMessage).toSeq == Seq("db failed"))
  }
}
