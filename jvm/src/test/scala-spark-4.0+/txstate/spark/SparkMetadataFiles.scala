package txstate.spark

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataOutputStream, Path}
import org.apache.spark.sql.execution.streaming.state.{OperatorInfoV1, OperatorStateMetadataV1,
  OperatorStateMetadataV1Writer, SchemaHelper, StateStoreColFamilySchema, StateStoreMetadataV1}
import org.apache.spark.sql.types.StructType

/** The files Spark 4 writes beside its state, by Spark's own writers, for [[CheckpointFixture]]. */
object SparkMetadataFiles {
  /** `<operatorDir>/_metadata/metadata` (version 1); stores as (name, numColsPrefixKey). */
  def writeOperatorMetadata(operatorDir: Path, operatorId: Long, operatorName: String, numPartitions: Int,
      stores: Seq[(String, Int)], hadoopConf: Configuration): Unit =
    new OperatorStateMetadataV1Writer(operatorDir, hadoopConf).write(OperatorStateMetadataV1(
      OperatorInfoV1(operatorId, operatorName),
      stores.map { case (name, prefix) => StateStoreMetadataV1(name, prefix, numPartitions) }.toArray))

  /** The fixture checkpoints were written on Spark 4.3: every 4.x line loads them as they are. */
  def loadableOnThisLine(checkpoint: java.io.File): Unit = ()

  /** A store's state schema file of `format` 1, 2 or 3. */
  def writeSchema(storeName: String, keySchema: StructType, valueSchema: StructType, format: Int,
      out: FSDataOutputStream): Unit = {
    // Spark writes format 1 no more (its factory refuses it), but reads it, and old checkpoints have it.
    val writer = if (format == 1) new SchemaHelper.SchemaV1Writer else SchemaHelper.SchemaWriter.createSchemaWriter(format)
    writer.write(List(StateStoreColFamilySchema(storeName, 0, keySchema, 0, valueSchema)), out)
  }
}
