package txstate.spark

import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite

/** Spark 4.1+'s per-instance metric: the version of the newest snapshot a store instance uploaded. */
final class InstanceMetricsTest extends AnyFunSuite with ProviderFixture {
  private val keySchema = new StructType().add("k", StringType)
  private val valueSchema = new StructType().add("v", LongType)
  private val key = new RowMaker(keySchema)
  private val value = new RowMaker(valueSchema)

  test("the provider declares Spark's SnapshotLastUploaded metric and reports the uploaded version per instance") {
    withProvider(newProvider(newCheckpointRoot(), keySchema, valueSchema, partition = 3)) { p =>
      assert(p.supportedInstanceMetrics.map(_.metricPrefix) == Seq(InstanceMetrics.snapshotLastUploaded.metricPrefix))
      def reported(store: TxStateStore): Map[String, Long] = store.metrics.instanceMetrics.map { case (m, v) => m.name -> v }

      val first = p.getStore(0)
      first.put(key("a"), value(1L))
      first.commit()
      assert(reported(first).isEmpty, "no snapshot is uploaded yet, so there is no version to report")

      val forced = p.getStore(1, None, forceSnapshotOnCommit = true, loadEmpty = false)
      forced.put(key("b"), value(2L))
      forced.commit()
      p.doSnapshotMaintenance() // uploads the staged snapshot of version 2

      val next = p.getStore(2)
      next.put(key("c"), value(3L))
      next.commit()
      val metrics = reported(next)
      assert(metrics.size == 1, metrics)
      val (name, version) = metrics.head
      assert(name.contains("partition_3") && name.startsWith(InstanceMetrics.snapshotLastUploaded.metricPrefix), name)
      assert(version == 2L)
    }
  }
}
