package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.hadoop.conf.Configuration

/**
 * What a provider tells Spark's state store coordinator, and which query run it serves
 * (docs/ARCHITECTURE.md, "Spark lines"). Without the snapshot reports Spark reports the store as
 * lagging and forces snapshots. In Spark's package only for access.
 */
object TxStateCoordinator {
  /** The query run a provider serves; None outside a streaming query (Spark asserts it is set). */
  def runId(hadoopConf: Configuration): Option[UUID] =
    try Option(StateStoreProvider.getRunId(hadoopConf)).map(UUID.fromString)
    catch { case _: AssertionError => None }

  def reportSnapshotUploaded(storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    runId(hadoopConf).foreach { id =>
      val providerId = StateStoreProviderId(storeId, id)
      StateStoreProvider.coordinatorRef.foreach(_.snapshotUploaded(providerId, version, System.currentTimeMillis()))
    }

  /** Spark's commit validation (on by default from 4.1): the driver checks every partition committed. */
  def reportCommit(storeConf: StateStoreConf, storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    if (storeConf.commitValidationEnabled) StateStore.reportCommitToCoordinator(version, storeId, hadoopConf)
}
