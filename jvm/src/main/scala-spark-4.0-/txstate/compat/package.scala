package txstate

/**
 * Spark's names and abilities as Spark 4.0 and 3.5 have them (docs/ARCHITECTURE.md, "Spark lines").
 * Shared code uses these instead of Spark's packages, which moved in 4.1.
 */
package object compat {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.CheckpointFileManager
  type StreamingQueryWrapper = org.apache.spark.sql.execution.streaming.StreamingQueryWrapper

  /** 4.0's and 3.5's managers have no close() (it came in 4.1); ours holds a file system handle. */
  def closeCheckpointFiles(files: CheckpointFileManager): Unit = files match {
    case closeable: java.io.Closeable => closeable.close()
    case _ => ()
  }
}
