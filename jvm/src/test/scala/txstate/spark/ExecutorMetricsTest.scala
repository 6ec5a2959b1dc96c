package txstate.spark

import com.codahale.metrics.{Counter, Gauge, MetricRegistry}
import org.scalatest.funsuite.AnyFunSuite

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.store.ExecutorStores

/** The metrics TxStatePlugin registers, as a registry of Spark's metrics system holds them. */
class ExecutorMetricsTest extends AnyFunSuite {
  test("every executor metric registers under a name of its own, gauges as gauges and counts as counters") {
    val registry = new MetricRegistry
    ExecutorMetrics.all.foreach(m => registry.register(m.name, m.toMetric))
    assert(registry.getNames.asScala.toSet == ExecutorMetrics.all.map(_.name).toSet)
    assert(ExecutorMetrics.all.map(_.name).distinct.size == ExecutorMetrics.all.size)
    assert(registry.getCounters.asScala.keySet == Set("earlyCommits", "undoDropped"))
    assert(registry.getGauges.asScala.keySet == ExecutorMetrics.all.map(_.name).toSet -- Set("earlyCommits", "undoDropped"))
  }

  test("the metrics read the figures of the store layer and the executor's budgets when the sink asks") {
    val registry = new MetricRegistry
    ExecutorMetrics.all.foreach(m => registry.register(m.name, m.toMetric))
    val figures = ExecutorStores.figures
    assert(registry.getCounters.get("earlyCommits").asInstanceOf[Counter].getCount == figures.earlyCommits)
    assert(registry.getGauges.get("openStoreInstances").asInstanceOf[Gauge[java.lang.Long]].getValue.longValue ==
      figures.openInstances.toLong)
    assert(registry.getGauges.get("nativeMemoryLimitBytes").asInstanceOf[Gauge[java.lang.Long]].getValue.longValue ==
      ExecutorNativeMemory.limitBytes)
    assert(registry.getGauges.get("heapLimitBytes").asInstanceOf[Gauge[java.lang.Long]].getValue.longValue ==
      ExecutorHeapMemory.limitBytes)
  }
}
