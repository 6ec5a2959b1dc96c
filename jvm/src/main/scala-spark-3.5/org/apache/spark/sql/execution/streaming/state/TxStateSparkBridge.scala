package org.apache.spark.sql.execution.streaming.state

import java.io.IOException
import java.util.UUID

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

/**
 * The errors `TxStateErrors` raises where Spark's provider contract expects Spark's own. Spark 3.5
 * has none of the state store error factories 4.x uses, so these are the exceptions its own
 * providers throw in those places, with 4.x's error class named in the message.
 */
object TxStateSparkBridge {
  /** A negative version (4.x: `CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION`). */
  def unexpectedVersion(version: Long): Throwable =
    new IllegalArgumentException(s"[CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION] Version cannot be less than 0: $version")

  /** A checkpoint file a load needed could not be read (4.x: `CANNOT_READ_STREAMING_STATE_FILE`). */
  def cannotReadStateFile(file: Path, cause: Throwable): Throwable =
    new IOException(s"[CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE] Error reading streaming state file $file", cause)

  /** Any other load failure (4.x: `CANNOT_LOAD_STATE_STORE.UNCATEGORIZED`). */
  def cannotLoadStore(cause: Throwable): Throwable =
    new IllegalStateException("[CANNOT_LOAD_STATE_STORE.UNCATEGORIZED] An error occurred during loading state", cause)

  /** A commit that could not be made durable (4.x: `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT`). */
  def cannotCommit(store: String, cause: Throwable): Throwable =
    new IllegalStateException(s"[CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT] Cannot commit $store", cause)

  /**
   * Where the driver's coordinator last saw `storeId` of run `runId` loaded, as a task location
   * (`executor_<host>_<executor id>`), if anywhere. 3.5 has one kind of session, which has the coordinator.
   */
  def storeLocation(spark: SparkSession, storeId: StateStoreId, runId: UUID): Option[String] =
    spark.streams.stateStoreCoordinator.getLocation(StateStoreProviderId(storeId, runId))
}
