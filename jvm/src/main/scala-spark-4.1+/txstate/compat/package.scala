package txstate

/**
 * Spark's names and abilities as Spark 4.1 and newer have them (docs/ARCHITECTURE.md, "Spark
 * lines"). Shared code uses these instead of Spark's packages, which moved in 4.1.
 */
package object compat {
  type CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  val CheckpointFileManager = org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager
  type StreamingQueryWrapper = org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper

  def closeCheckpointFiles(files: CheckpointFileManager): Unit = files.close()
}
