package txstate.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataOutputStream, Path}
import org.apache.spark.sql.execution.streaming.state.SchemaHelper
import org.apache.spark.sql.types.StructType

/**
 * The files Spark 3.5 writes beside its state, by Spark's own writers, for [[CheckpointFixture]]:
 * a schema file per store (formats 1 and 2, one key and one value schema), and no operator metadata.
 */
object SparkMetadataFiles {
  /** Spark 3.5 writes no operator metadata: a checkpoint of 3.5 has none, so neither has the fixture's. */
  def writeOperatorMetadata(operatorDir: Path, operatorId: Long, operatorName: String, numPartitions: Int,
      stores: Seq[(String, Int)], hadoopConf: Configuration): Unit = ()

  /**
   * The fixture checkpoints were written on Spark 4.3, whose RocksDB writes SST files that 3.5's
   * cannot read (a load refuses them: NewerLineCheckpointTest). Without the snapshot manifests,
   * every load replays the changelogs from version 1 (all kept), as a checkpoint of 3.5 would load.
   */
  def loadableOnThisLine(checkpoint: java.io.File): Unit = {
    val manifests = java.nio.file.Files.walk(checkpoint.toPath)
    try manifests.filter(_.getFileName.toString.endsWith(".snapshot")).toArray.foreach {
      case p: java.nio.file.Path => java.nio.file.Files.delete(p)
    } finally manifests.close()
  }

  def writeSchema(storeName: String, keySchema: StructType, valueSchema: StructType, format: Int,
      out: FSDataOutputStream): Unit = {
    val writer = if (format == 1) new SchemaHelper.SchemaV1Writer else SchemaHelper.SchemaWriter.createSchemaWriter(format)
    writer.write(keySchema, valueSchema, out)
  }
}
