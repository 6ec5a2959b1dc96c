package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.hadoop.conf.Configuration

/**
 * The two package-private Spark calls txstate needs, and nothing else: which query run a provider
 * serves, and telling the state store coordinator that a snapshot was uploaded (without it, Spark
 * reports the store as lagging and forces snapshots). Lives in Spark's package only for access.
 */
object TxStateSparkBridge {
  def reportSnapshotUploaded(storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    Option(StateStoreProvider.getRunId(hadoopConf)).foreach { runId =>
      val providerId = StateStoreProviderId(storeId, UUID.fromString(runId))
      StateStoreProvider.coordinatorRef.foreach(_.snapshotUploaded(providerId, version, System.currentTimeMillis()))
    }
}
