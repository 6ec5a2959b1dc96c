package txstate.spark

import java.util.{Map => JMap}

import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}

/**
 * txstate's executor metrics in Spark's metrics system (`spark.plugins=txstate.spark.TxStatePlugin`;
 * `configure()` and `submit-args` set it): each executor registers [[ExecutorMetrics.all]], and every
 * sink configured for the executor instance (JMX, Prometheus, CSV, Graphite) reports them. The
 * figures are the ones the stores' custom metrics carry per query, here per executor JVM.
 */
final class TxStatePlugin extends SparkPlugin {
  // Spark's contract for a plugin without a driver side.
  override def driverPlugin(): DriverPlugin = null

  override def executorPlugin(): ExecutorPlugin = new TxStatePlugin.OnExecutor
}

object TxStatePlugin {
  private final class OnExecutor extends ExecutorPlugin {
    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit =
      ExecutorMetrics.all.foreach(m => ctx.metricRegistry().register(m.name, m.toMetric))
  }
}
