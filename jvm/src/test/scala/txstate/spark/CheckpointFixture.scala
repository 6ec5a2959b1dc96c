package txstate.spark

import java.io.File
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import com.fasterxml.jackson.databind.ObjectMapper
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.StateStoreId
import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.json4s.{JObject, JString}
import org.json4s.jackson.JsonMethods
import org.scalatest.Suite

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.compat.ScalaLibrary.Using

/**
 * A streaming query's checkpoint as Spark lays it out, written without running a query: the
 * offset and commit logs in Spark's text format, Spark's operator metadata and state schema files
 * through Spark's own writers (`SparkMetadataFiles`, per Spark line), and state committed by real
 * txstate providers.
 */
trait CheckpointFixture extends ProviderFixture { this: Suite =>
  val hadoopConf = new Configuration()

  /** A checkpoint directory; `root` is how Spark spells its location (`file:/…`). */
  final class TestCheckpoint(val dir: File) {
    val root: String = new Path(dir.toURI).toString.stripSuffix("/")
    val stateRoot: String = s"$root/state"
    def file(relative: String): File = new File(dir, relative)
  }

  def newCheckpoint(): TestCheckpoint = new TestCheckpoint(newTempDir("checkpoint"))

  /**
   * A copy of the checkpoint of a real Spark run (`agg` or `dedup`, see [[CheckpointFixture.sparkRuns]]),
   * as this line's provider can load it (`SparkMetadataFiles.loadableOnThisLine`).
   */
  def sparkRunCheckpoint(query: String): TestCheckpoint = {
    val copy = sparkRunCheckpointAsWritten(query)
    SparkMetadataFiles.loadableOnThisLine(copy.dir)
    copy
  }

  /** A copy of the checkpoint of a real Spark run exactly as Spark 4.3 wrote it, snapshots included. */
  def sparkRunCheckpointAsWritten(query: String): TestCheckpoint = {
    val source = new File(CheckpointFixture.sparkRuns, s"$query/checkpoint").toPath
    val target = newTempDir(query).toPath
    val paths = Files.walk(source)
    try paths.forEach { p =>
      val copy = target.resolve(source.relativize(p).toString)
      if (Files.isDirectory(p)) Files.createDirectories(copy) else Files.copy(p, copy)
    } finally paths.close()
    new TestCheckpoint(target.toFile)
  }

  def write(file: File, text: String): File = {
    file.getParentFile.mkdirs()
    Files.write(file.toPath, text.getBytes(UTF_8))
    file
  }

  def read(file: File): String = new String(Files.readAllBytes(file.toPath), UTF_8)

  /** Spark's operator metadata of `operatorId`, by Spark's writer; stores as (name, numColsPrefixKey). */
  def writeOperatorMetadata(ck: TestCheckpoint, operatorId: Long, operatorName: String, numPartitions: Int,
      stores: Seq[(String, Int)] = Seq(StateStoreId.DEFAULT_STORE_NAME -> 0)): File = {
    SparkMetadataFiles.writeOperatorMetadata(new Path(ck.stateRoot, operatorId.toString), operatorId, operatorName,
      numPartitions, stores, hadoopConf)
    ck.file(s"state/$operatorId/_metadata/metadata")
  }

  /** Spark's state schema file of a store (in partition 0's folder), by Spark's writer of `format` 1 or 2. */
  def writeSparkSchema(ck: TestCheckpoint, operatorId: Long, storeName: String, keySchema: StructType,
      valueSchema: StructType, format: Int = 2): Path = {
    val storeDir = StateStoreId(ck.stateRoot, operatorId, 0, storeName).storeCheckpointLocation()
    val file = new Path(new Path(storeDir, "_metadata"), "schema")
    val fs = file.getFileSystem(hadoopConf)
    Using.resource(fs.create(file, true))(out => SparkMetadataFiles.writeSchema(storeName, keySchema, valueSchema, format, out))
    file
  }

  /** Batch `batchId` as Spark logs it: `offsets/<batch>` with `conf` and, when `committed`, `commits/<batch>`. */
  def logBatch(ck: TestCheckpoint, batchId: Long, conf: Map[String, String] = Map.empty, committed: Boolean = true,
      stateIds: Option[String] = None): Unit = {
    val metadata = JObject("batchWatermarkMs" -> org.json4s.JInt(0),
      "batchTimestampMs" -> org.json4s.JInt(1700000000000L + batchId * 1000),
      "conf" -> JObject(conf.toList.sortBy(_._1).map { case (k, v) => k -> JString(v) }))
    write(ck.file(s"offsets/$batchId"), s"""v1\n${JsonMethods.compact(metadata)}\n{"logOffset":$batchId}""")
    if (committed) commit(ck, batchId, stateIds)
  }

  /** `commits/<batch>`; `stateIds` is a format-2 entry's `stateUniqueIds` JSON. */
  def commit(ck: TestCheckpoint, batchId: Long, stateIds: Option[String] = None): File =
    write(ck.file(s"commits/$batchId"), stateIds.fold("v1\n{\"nextBatchWatermarkMs\":0}")(ids =>
      s"""v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":$ids}"""))

  /** Every row of partition `partition` of operator 0's default store at `version`, read by a txstate provider. */
  def storeRows(stateRoot: String, partition: Int, keySchema: StructType, valueSchema: StructType, version: Long)
      : Map[Seq[Any], Seq[Any]] =
    withProvider(newProvider(stateRoot, keySchema, valueSchema, partition = partition)) { provider =>
      val store = provider.getStore(version)
      try pairs(store.iterator(), keySchema, valueSchema).toMap finally store.abort()
    }

  /** Commits version `version` of partition `partition` of operator 0's default store with a txstate provider. */
  def commitState(ck: TestCheckpoint, partition: Int, keySchema: StructType, valueSchema: StructType, version: Long)
      (rows: Seq[(UnsafeRow, UnsafeRow)], deletes: Seq[UnsafeRow] = Nil): Unit =
    withProvider(newProvider(ck.stateRoot, keySchema, valueSchema, partition = partition)) { provider =>
      val store = provider.getStore(version - 1)
      rows.foreach { case (k, v) => store.put(k, v) }
      deletes.foreach(k => store.remove(k))
      assert(store.commit() == version)
    }
}

object CheckpointFixture {
  /**
   * tests/fixtures/checkpoint-0.1.0: checkpoints of real Spark runs (pyspark 4.3.0, txstate 0.1.0,
   * two shuffle partitions, three batches; its README). `agg` is `groupBy(k).agg(count, sum(v))`
   * (operator 0, `stateStoreSave`). Found above the test JVM's directory (its line's project folder).
   */
  lazy val sparkRuns: File =
    Iterator.iterate(new File(System.getProperty("user.dir")).getAbsoluteFile)(_.getParentFile).takeWhile(_ != null)
      .map(new File(_, "tests/fixtures/checkpoint-0.1.0")).find(_.isDirectory)
      .getOrElse(throw new IllegalStateException(s"no tests/fixtures/checkpoint-0.1.0 above ${System.getProperty("user.dir")}"))

  val aggKeySchema: StructType = new StructType().add("k", StringType)
  val aggValueSchema: StructType = new StructType().add("count", LongType).add("sum", LongType)
  /** The `agg` run's state versions: batches 0 to 2 committed, so version 3 is its last. */
  val aggVersion = 3L

  /** The state the `agg` run ended with: each key's last output row (update mode), from its output files. */
  lazy val aggState: Map[Seq[Any], Seq[Any]] = {
    val mapper = new ObjectMapper()
    (0 to 2).flatMap { b =>
      Files.readAllLines(new File(sparkRuns, s"agg/output/batch-$b.json").toPath).asScala.filter(_.nonEmpty).map { line =>
        val row = mapper.readTree(line)
        Seq[Any](row.get("k").asText) -> Seq[Any](row.get("n").asLong, row.get("total").asLong)
      }
    }.toMap
  }
}
