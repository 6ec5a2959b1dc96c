package txstate.spark

import org.apache.spark.sql.execution.streaming.state.{StateStoreId, StateStoreMetrics}

/** Spark 4.0 and 3.5 have no per-instance metrics (they came in 4.1): nothing to declare or report. */
private[spark] object InstanceMetrics {
  def withSnapshotVersion(metrics: StateStoreMetrics, id: StateStoreId, lastSnapshot: Option[Long]): StateStoreMetrics =
    metrics
}

/** What the provider declares besides its custom metrics: nothing on Spark 4.0 and 3.5. */
trait ProviderInstanceMetrics
