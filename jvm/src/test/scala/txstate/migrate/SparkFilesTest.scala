package txstate.migrate

import java.io.{DataOutputStream, File}
import java.nio.file.Files

import scala.util.Using

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.state.{OperatorStateMetadataV1, OperatorStateMetadataV1Reader,
  StateStoreId}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import txstate.spark.{CheckpointFixture, StoreSchemaFile}

/**
 * What migrate reads of Spark's own files: state schema files (SparkSchemaFile), operator metadata
 * (SparkOperatorMetadataFile, rewritten when rescaling) and the inventory of stores built from
 * them (StoreInventory), over the checkpoint of a real Spark run and files Spark's writers wrote.
 */
final class SparkFilesTest extends AnyFunSuite with CheckpointFixture {
  import CheckpointFixture._

  private val joinStores = Seq("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues",
    "right-keyWithIndexToValue")

  private def readSchema(file: Path): (StructType, StructType) = SparkSchemaFile.read(file.getFileSystem(hadoopConf), file)

  private def badSchemaFile(file: Path): String = intercept[IllegalStateException](readSchema(file)).getMessage

  private def writeBytes(file: Path)(body: DataOutputStream => Unit): Path = {
    val local = new File(file.toUri)
    local.getParentFile.mkdirs()
    Using.resource(new DataOutputStream(Files.newOutputStream(local.toPath)))(body)
    file
  }

  test("the schema file a real Spark run wrote reads as the schemas Spark gave the store's provider") {
    val ck = sparkRunCheckpoint("agg")
    val file = SparkSchemaFile.path(new Path(ck.stateRoot), 0, "default")
    val provided = StoreSchemaFile.load(ck.stateRoot, 0, "default", hadoopConf).get
    assert(readSchema(file) == ((provided.keySchema, provided.valueSchema)))
    assert(readSchema(file) == ((aggKeySchema, aggValueSchema)))
  }

  test("a store's schema file is where Spark keeps it: partition 0's _metadata, in the store's folder if named") {
    val root = new Path("file:/ck/state")
    for (store <- "default" +: joinStores) {
      val spark = new Path(new Path(StateStoreId(root.toString, 3, 0, store).storeCheckpointLocation(), "_metadata"), "schema")
      assert(SparkSchemaFile.path(root, 3, store) == spark, store)
    }
  }

  test("schema files of formats 1 and 2 from Spark's writers read back, even one too long for a single string") {
    val ck = newCheckpoint()
    val key = new StructType().add("user", StringType).add("window", new StructType().add("start", TimestampType))
    val value = new StructType().add("n", LongType).add("tags", ArrayType(StringType)).add("m", MapType(StringType, DoubleType))
    for (format <- Seq(1, 2)) assert(readSchema(writeSparkSchema(ck, format, "default", key, value, format)) == ((key, value)))
    // Format 2 splits JSON into chunks because one modified-UTF string holds at most 64 KiB.
    val wide = StructType((0 until 2000).map(i => StructField(f"a_rather_long_column_name_to_fill_the_schema_$i%04d", LongType)))
    assert(wide.json.length > 65535)
    assert(readSchema(writeSparkSchema(ck, 3, "default", key, wide)) == ((key, wide)))
  }

  test("a transformWithState schema file, a file cut short and a schema that is not a struct are refused") {
    val ck = sparkRunCheckpoint("agg")
    val real = Files.readAllBytes(ck.file("state/0/0/_metadata/schema").toPath)
    val cases = Seq(
      writeBytes(new Path(ck.root, "v3"))(_.writeUTF("v3")) -> "its format is 'v3'; this tool reads formats v1 and v2",
      writeBytes(new Path(ck.root, "cut"))(_.write(real, 0, 30)) -> "it ends early",
      writeBytes(new Path(ck.root, "chunks")) { out => out.writeUTF("v2"); out.writeInt(-1) } -> "implausible chunk count -1",
      writeBytes(new Path(ck.root, "string")) { out => Seq("v1", "\"string\"", "\"long\"").foreach(out.writeUTF) } ->
        "a schema is a string, not a struct")
    for ((file, problem) <- cases) {
      val message = badSchemaFile(file)
      assert(message.startsWith(s"[TXSTATE_MIGRATION_BAD_SCHEMA_FILE] the state schema file $file cannot be read: "))
      assert(message.contains(problem), message)
    }
  }

  test("rescaling changes only numPartitions in Spark's operator metadata, and Spark still reads the file") {
    val ck = newCheckpoint()
    val file = writeOperatorMetadata(ck, 0, "symmetricHashJoin", 4, joinStores.map(_ -> 0))
    val original = read(file)
    val rescaled = SparkOperatorMetadataFile.withPartitions(original, 7, file.toString)
    // Replaced the way migrate replaces it (Hadoop's checksum file follows).
    new CheckpointLogs(new Path(ck.root), hadoopConf).replace(new Path(file.toURI), rescaled)
    val spark = new OperatorStateMetadataV1Reader(new Path(ck.stateRoot, "0"), hadoopConf).read()
      .collect { case v1: OperatorStateMetadataV1 => v1 }.get
    assert(spark.operatorInfo.operatorId == 0 && spark.operatorInfo.operatorName == "symmetricHashJoin")
    assert(spark.stateStoreInfo.map(s => (s.storeName, s.numColsPrefixKey, s.numPartitions)).toSeq ==
      joinStores.map((_, 0, 7)))
    assert(SparkOperatorMetadataFile.withPartitions(rescaled, 4, file.toString) == original.trim)
  }

  test("a file that is not Spark's version-1 operator metadata is refused for rescaling") {
    for (text <- Seq("", "v2\n{\"operatorInfo\":{}}", "v1")) {
      val e = intercept[IllegalArgumentException](SparkOperatorMetadataFile.withPartitions(text, 3, "/ck/metadata"))
      assert(e.getMessage.startsWith("[TXSTATE_MIGRATION_BAD_ARGUMENT] /ck/metadata is not Spark's operator metadata " +
        "version 1"))
    }
    assert(SparkOperatorMetadataFile.path(new Path("file:/ck"), 2) == new Path("file:/ck/state/2/_metadata/metadata"))
  }

  test("the inventory of a real Spark run: its one store, with Spark's schemas and both partitions") {
    val ck = sparkRunCheckpoint("agg")
    val expected = Seq(StoreToCopy(0, "stateStoreSave", "default", 0, 2, Seq(0, 1), aggKeySchema, aggValueSchema, 0))
    assert(StoreInventory.read(new Path(ck.root), hadoopConf) == expected)
    // Without Spark's schema file, the one a txstate provider wrote describes the store.
    assert(ck.file("state/0/0/_metadata/schema").delete())
    assert(StoreInventory.read(new Path(ck.root), hadoopConf) == expected)
  }

  test("the inventory of a join: four stores in metadata order, each with its schema; a stray partition is refused") {
    val ck = newCheckpoint()
    writeOperatorMetadata(ck, 0, "symmetricHashJoin", 2, joinStores.map(_ -> 0))
    val key = new StructType().add("user", StringType)
    joinStores.foreach { s =>
      writeSparkSchema(ck, 0, s, if (s.contains("WithIndex")) key.add("index", LongType) else key, valueSchemaOf(s))
      Seq(0, 1).foreach(p => ck.file(s"state/0/$p/$s").mkdirs())
    }
    val stores = StoreInventory.read(new Path(ck.root), hadoopConf)
    assert(stores.map(s => (s.storeName, s.storeIndex, s.partitions, s.numPartitions)) ==
      joinStores.zipWithIndex.map { case (s, i) => (s, i, Seq(0, 1), 2) })
    assert(stores.map(_.valueSchema) == joinStores.map(valueSchemaOf))
    ck.file(s"state/0/2/${joinStores.head}").mkdirs()
    val e = intercept[IllegalStateException](StoreInventory.read(new Path(ck.root), hadoopConf))
    assert(e.getMessage.startsWith(s"[TXSTATE_MIGRATION_PARTITIONS] operator 0 (symmetricHashJoin), store " +
      s"${joinStores.head} should have partitions 0..1 but the checkpoint has directories for 0, 1, 2."))
  }

  private def valueSchemaOf(store: String): StructType =
    new StructType().add(if (store.endsWith("NumValues")) "count" else s"value of $store", LongType)

  test("operators migrate cannot describe exactly are refused, never guessed") {
    def refusal(ck: TestCheckpoint) = intercept[IllegalStateException](StoreInventory.read(new Path(ck.root), hadoopConf))
      .getMessage
    val tws = newCheckpoint()
    writeOperatorMetadata(tws, 0, "transformWithStateExec", 2)
    assert(refusal(tws).startsWith("[TXSTATE_MIGRATION_UNSUPPORTED_OPERATOR] operator 0 (transformWithStateExec)"))
    val noMetadata = newCheckpoint()
    noMetadata.file("state/4/0").mkdirs()
    assert(refusal(noMetadata).contains("operator 4 (unnamed)") && refusal(noMetadata).contains("no operator metadata"))
    val noSchema = newCheckpoint()
    writeOperatorMetadata(noSchema, 0, "dedupe", 1)
    noSchema.file("state/0/0").mkdirs()
    assert(refusal(noSchema).startsWith("[TXSTATE_MIGRATION_MISSING_SCHEMA] operator 0 (dedupe), store default has " +
      s"no schema file at ${SparkSchemaFile.path(new Path(noSchema.stateRoot), 0, "default")}"))
  }
}
