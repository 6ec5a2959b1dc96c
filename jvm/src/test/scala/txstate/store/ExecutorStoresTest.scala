package txstate.store

import java.nio.charset.StandardCharsets.UTF_8

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

import txstate.TempDirectories

/**
 * The executor-wide figures the metrics plugin reads (ExecutorStores): they follow the instances
 * of the JVM as they open, commit early and close. Other suites of the same JVM may hold instances
 * too, so each figure is checked as a change from before.
 */
class ExecutorStoresTest extends AnyFunSuite with TempDirectories {
  private def b(s: String): Array[Byte] = s.getBytes(UTF_8)

  private def open(label: String): StoreInstance =
    StoreInstance.open(LocalDirectory(newTempPath(label), stable = true, None),
      new Path(newTempPath(s"$label-checkpoint").toURI), new Configuration(), StoreOptions(), label)

  test("open instances, early commits and the snapshot lag follow the instances of the JVM") {
    val before = ExecutorStores.figures
    val first = open("first")
    val second = open("second")
    try {
      assert(ExecutorStores.figures.openInstances == before.openInstances + 2)
      (1 to 3).foreach { v =>
        val tx = first.begin()
        (0 until 20).foreach(i => tx.put(b(s"k$i"), b(s"v$v")))
        if (v == 3) assert(tx.earlyCommit().isDefined && tx.earlyCommit().isEmpty, "an empty buffer has nothing to commit early")
        tx.commit()
      }
      val during = ExecutorStores.figures
      assert(during.earlyCommits == before.earlyCommits + 1)
      assert(during.maxSnapshotLagVersions >= 3, "first committed three versions and uploaded no snapshot")
      assert(during.backgroundWritesWaiting >= 0)
    } finally {
      first.close()
      second.close()
    }
    assert(ExecutorStores.figures.openInstances == before.openInstances)
    assert(ExecutorStores.figures.earlyCommits == before.earlyCommits + 1, "a counter does not fall when instances close")
  }
}
