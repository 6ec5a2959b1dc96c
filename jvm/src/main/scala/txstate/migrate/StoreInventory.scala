package txstate.migrate

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.StructType

import txstate.compat.StateApi.{KeyStateEncoderSpec, NoPrefixKeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec}
import txstate.spark.{SparkOperatorMetadata, StoreSchemaFile}

/**
 * One store of one stateful operator, with what a provider needs to open any of its partitions.
 * `partitions` are those with a directory: an operator that runs as one task (a global
 * aggregation) has state in partition 0 only, though Spark records the shuffle's partition count.
 * `storeIndex` is its place among its operator's stores (format-2 commit logs list ids in that order).
 */
final case class StoreToCopy(operatorId: Long, operatorName: String, storeName: String, storeIndex: Int,
    numPartitions: Int, partitions: Seq[Int], keySchema: StructType, valueSchema: StructType, numColsPrefixKey: Int) {
  def encoderSpec: KeyStateEncoderSpec =
    if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
    else NoPrefixKeyStateEncoderSpec(keySchema)

  def label: String = s"operator $operatorId ($operatorName), store $storeName"
}

/**
 * Every store of every stateful operator of a checkpoint, from Spark's operator metadata (names,
 * stores, partitions, prefix-key columns) and Spark's schema files. An operator this tool cannot
 * describe exactly is refused, never guessed.
 */
object StoreInventory {
  private val transformWithState = "transformWithState"

  def read(root: Path, hadoopConf: Configuration): Seq[StoreToCopy] = {
    val stateRoot = new Path(root, "state")
    val fs = stateRoot.getFileSystem(hadoopConf)
    val operators = numericDirs(fs, stateRoot)
    operators.flatMap { operatorId =>
      val operatorDir = new Path(stateRoot, operatorId.toString)
      val metadata = SparkOperatorMetadata.read(fs, operatorDir)
      val name = metadata.name.getOrElse("unnamed")
      def refuse(why: String) = MigrationErrors.unsupportedOperator(root.toString, operatorId, name, why)
      if (metadata.version == 2 || name.startsWith(transformWithState)) {
        throw refuse("transformWithState keeps its state in column families described by their own schema files, " +
          "and Spark runs it on its RocksDB provider only; migrate does not move it.")
      }
      if (metadata.stores.isEmpty) {
        throw refuse(s"it has no operator metadata ($operatorDir/_metadata/metadata), so its stores and key " +
          "layout are unknown. Run the query for one batch on Spark 4.0 or newer, which writes it, then migrate.")
      }
      metadata.stores.zipWithIndex.map { case (info, storeIndex) =>
        val label = s"operator $operatorId ($name), store ${info.name}"
        val (keySchema, valueSchema) = schemaOf(fs, stateRoot, operatorId, info.name, label, hadoopConf)
        val partitions = partitionsOf(fs, operatorDir, info.name, info.numPartitions, label)
        StoreToCopy(operatorId, name, info.name, storeIndex, info.numPartitions, partitions, keySchema, valueSchema,
          info.numColsPrefixKey)
      }
    }
  }

  private def schemaOf(fs: FileSystem, stateRoot: Path, operatorId: Long, storeName: String, label: String,
      hadoopConf: Configuration): (StructType, StructType) = {
    val sparkFile = SparkSchemaFile.path(stateRoot, operatorId, storeName)
    if (fs.exists(sparkFile)) SparkSchemaFile.read(fs, sparkFile)
    else StoreSchemaFile.load(stateRoot.toString, operatorId, storeName, hadoopConf)
      .map(s => (s.keySchema, s.valueSchema))
      .getOrElse(throw MigrationErrors.missingSchema(label, sparkFile.toString))
  }

  private def partitionsOf(fs: FileSystem, operatorDir: Path, storeName: String, expected: Int, label: String): Seq[Int] = {
    val found = numericDirs(fs, operatorDir).map(_.toInt).filter { p =>
      storeName == StateStoreId.DEFAULT_STORE_NAME || fs.exists(new Path(new Path(operatorDir, p.toString), storeName))
    }
    if (found.isEmpty || found.exists(p => p < 0 || p >= expected)) {
      throw MigrationErrors.partitionsMismatch(label, expected, found)
    }
    found
  }

  private def numericDirs(fs: FileSystem, dir: Path): Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isDirectory).flatMap(s => Try(s.getPath.getName.toLong).toOption).sorted
}
