package txstate.spark

import org.apache.spark.sql.execution.streaming.state._

/**
 * Per-instance metrics (Spark 4.1+): the version of each store instance's newest uploaded
 * snapshot, under Spark's own metric for it, so a query's progress names the partitions whose
 * snapshots lag the most (as it does for Spark's RocksDB provider).
 */
private[spark] object InstanceMetrics {
  val snapshotLastUploaded: StateStoreInstanceMetric =
    StateStoreSnapshotLastUploadInstanceMetric(None, StateStoreId.DEFAULT_STORE_NAME)

  def withSnapshotVersion(metrics: StateStoreMetrics, id: StateStoreId, lastSnapshot: Option[Long]): StateStoreMetrics =
    metrics.copy(instanceMetrics =
      lastSnapshot.map(v => snapshotLastUploaded.withNewId(id.partitionId, id.storeName) -> v).toMap)
}

/** What the provider declares besides its custom metrics. */
trait ProviderInstanceMetrics extends StateStoreProvider {
  override def supportedInstanceMetrics: Seq[StateStoreInstanceMetric] = Seq(InstanceMetrics.snapshotLastUploaded)
}
