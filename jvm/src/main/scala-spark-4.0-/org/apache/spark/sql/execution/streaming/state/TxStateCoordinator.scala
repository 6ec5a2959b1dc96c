package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext

/**
 * What a provider tells Spark 4.0's and 3.5's state store coordinator, and which query run it serves
 * (docs/ARCHITECTURE.md, "Spark lines"). Their coordinator tracks neither snapshot uploads nor
 * commits (both came in 4.1), so there is nothing to report.
 */
object TxStateCoordinator {
  /**
   * Spark 4.0 sets the run id as a task property, and tests (like 4.1+) in the Hadoop configuration.
   * 3.5 sets neither, but its streaming thread names every job's group by the run id (so that
   * stopping the query cancels them): a task's job group, when it is a UUID, is its run's id.
   */
  def runId(hadoopConf: Configuration): Option[UUID] = {
    def ofTask(key: String) = Option(TaskContext.get()).flatMap(task => Option(task.getLocalProperty(key)))
    Option(hadoopConf.get(runIdKey)).orElse(ofTask(runIdKey)).orElse(ofTask(jobGroupKey))
      .flatMap(id => Try(UUID.fromString(id)).toOption)
  }

  def reportSnapshotUploaded(storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit = ()

  def reportCommit(storeConf: StateStoreConf, storeId: StateStoreId, hadoopConf: Configuration, version: Long): Unit = ()

  /** StreamExecution.RUN_ID_KEY. */
  private val runIdKey = "sql.streaming.runId"
  /** SparkContext.SPARK_JOB_GROUP_ID. */
  private val jobGroupKey = "spark.jobGroup.id"
}
