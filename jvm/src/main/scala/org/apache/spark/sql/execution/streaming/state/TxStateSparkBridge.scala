package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession

/**
 * The package-private Spark calls txstate needs, and nothing else: which query run a provider
 * serves, telling the state store coordinator that a snapshot was uploaded (without it, Spark
 * reports the store as lagging and forces snapshots), and asking it which executor holds a store
 * (interactive queries). Lives in Spark's package only for access.
 */
object TxStateSparkBridge {
  /** The query run a provider serves; None outside a streaming query (Spark asserts it is set). */
  def runId(hadoopConf: Configuration): Option[UUID] =
    try Option(StateStoreProvider.getRunId(hadoopConf)).map(UUID.fromString)
    catch { case _: AssertionError => None }

  def reportSnapshotUploaded(storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit =
    runId(hadoopConf).foreach { id =>
      val providerId = StateStoreProviderId(storeId, id)
      StateStoreProvider.coordinatorRef.foreach(_.snapshotUploaded(providerId, version, System.currentTimeMillis()))
    }

  /**
   * Where the driver's coordinator last saw `storeId` of run `runId` loaded, as a task location
   * (`executor_<host>_<executor id>`), if anywhere.
   */
  def storeLocation(spark: SparkSession, storeId: StateStoreId, runId: UUID): Option[String] =
    spark match {
      case classic: org.apache.spark.sql.classic.SparkSession =>
        classic.streams.stateStoreCoordinator.getLocation(StateStoreProviderId(storeId, runId))
      case _ => None
    }
}
