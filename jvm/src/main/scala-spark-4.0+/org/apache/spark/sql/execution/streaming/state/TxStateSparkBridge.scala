package org.apache.spark.sql.execution.streaming.state

import java.util.UUID

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.errors.QueryExecutionErrors

/**
 * The package-private Spark calls txstate needs that are the same on every Spark line: asking the
 * coordinator which executor holds a store (interactive queries), and Spark's own error classes
 * where its provider contract expects them (`TxStateErrors` decides when). What differs by line is
 * in `TxStateCoordinator`. Lives in Spark's package only for access.
 */
object TxStateSparkBridge {
  /** A negative version: Spark's `CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION`. */
  def unexpectedVersion(version: Long): Throwable = QueryExecutionErrors.unexpectedStateStoreVersion(version)

  /** A checkpoint file a load needed could not be read: `CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE`. */
  def cannotReadStateFile(file: Path, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToReadStreamingStateFileError(file, cause)

  /** Any other load failure: `CANNOT_LOAD_STATE_STORE.UNCATEGORIZED`. */
  def cannotLoadStore(cause: Throwable): Throwable = QueryExecutionErrors.cannotLoadStore(cause)

  /** A commit that could not be made durable: `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT`. */
  def cannotCommit(store: String, cause: Throwable): Throwable =
    QueryExecutionErrors.failedToCommitStateFileError(store, cause)

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
