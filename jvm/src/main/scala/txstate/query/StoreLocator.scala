package txstate.query

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using
import txstate.spark.{KeyPlacement, LiveStores, ShufflePartitions, SparkOperatorMetadata, StoreSchema, StoreSchemaFile}

/** A resolved store set: where it lives, how many partitions it has, and how its rows are encoded. */
final case class StoreDescription(
    checkpoint: String,
    stateRoot: String,
    operatorId: Long,
    operatorName: Option[String],
    storeName: String,
    numPartitions: Int,
    schema: StoreSchema,
    hashedColumns: Option[Int]) {
  /** The partition that holds `key`, when Spark's shuffle places this store's rows by known columns. */
  @transient lazy val placement: Option[KeyPlacement] = hashedColumns.map(new KeyPlacement(schema.keySchema, _, numPartitions))
}

/**
 * Finds a store set from a checkpoint location, an operator (id or name) and a store name, using
 * the checkpoint's files only: Spark's operator metadata (`state/<op>/_metadata`) for names and
 * partition counts, and the schema file txstate providers write. Every failure names what was
 * looked for and what exists.
 */
object StoreLocator {
  // Queries come in bursts against the same store: its description is read from files at most
  // once a second, and a batch's offsets (immutable once written) once.
  private val descriptionTtlMs = 1000L
  private val descriptions = new BoundedCache[(String, String, String), (Long, StoreDescription)](64)
  private val offsets = new BoundedCache[(String, Long), Seq[String]](1024)

  /** [[describeNow]], reusing a description read less than a second ago. */
  def describe(checkpoint: String, operator: String, storeName: String, hadoopConf: => Configuration): StoreDescription = {
    val key = (checkpoint, operator, storeName)
    val now = System.currentTimeMillis()
    descriptions.get(key).filter(_._1 > now).map(_._2).getOrElse {
      val d = describeNow(checkpoint, operator, storeName, hadoopConf)
      descriptions.put(key, (now + descriptionTtlMs, d))
      d
    }
  }

  def describeNow(checkpoint: String, operator: String, storeName: String, hadoopConf: Configuration): StoreDescription = {
    val root = qualify(checkpoint, hadoopConf)
    val fs = root.getFileSystem(hadoopConf)
    if (!fs.exists(root)) {
      throw QueryErrors.unknownCheckpoint(root.toString)
    }
    val stateRoot = new Path(root, "state")
    val operators = numericChildren(fs, stateRoot).map(id => id -> SparkOperatorMetadata.read(fs, new Path(stateRoot, id.toString)))
    if (operators.isEmpty) {
      throw QueryErrors.unknownOperator(
        s"checkpoint $root has no state yet ($stateRoot has no operator directories); " +
          "is the query stateful, and has its first batch run?")
    }
    def known = operators.map { case (id, m) => m.name.fold(id.toString)(n => s"$id ($n)") }.mkString(", ") +
      (if (operators.exists(_._2.name.isDefined)) ""
       else " (this checkpoint records no operator names: Spark 3.5 writes no operator metadata; name the operator " +
         "by its id)")
    val (operatorId, metadata) = Try(operator.trim.toLong).toOption match {
      case Some(id) => operators.find(_._1 == id).getOrElse(throw QueryErrors.unknownOperator(
        s"checkpoint $root has no stateful operator $id; its operators are: $known"))
      case None => operators.filter(_._2.name.exists(_.equalsIgnoreCase(operator.trim))) match {
        case Seq(only) => only
        case Seq() => throw QueryErrors.unknownOperator(
          s"checkpoint $root has no stateful operator named '$operator'; " +
            s"its operators are: $known")
        case several => throw QueryErrors.ambiguousOperator(
          s"checkpoint $root has ${several.size} operators named '$operator' " +
            s"(ids ${several.map(_._1).mkString(", ")}); pass the operator id")
      }
    }
    val stores = metadata.partitionsByStore
    if (stores.nonEmpty && !stores.contains(storeName)) {
      throw QueryErrors.unknownStore(
        s"operator $operatorId of $root has no store '$storeName'; " +
          s"its stores are: ${stores.keys.toSeq.sorted.mkString(", ")}")
    }
    val schema = StoreSchemaFile.load(stateRoot.toString, operatorId, storeName, hadoopConf).getOrElse {
      throw QueryErrors.notATxStateStore(
        s"store '$storeName' of operator $operatorId in $root has no " +
          s"${StoreSchemaFile.path(stateRoot.toString, operatorId, storeName)}: either no txstate provider has " +
          "opened it yet (wait for the query's first batch), or another state store provider wrote it (only " +
          "stores of txstate.spark.TxStateStoreProvider can be queried)")
    }
    // Without operator metadata (Spark 3.5), the offset log says; partition folders appear as tasks
    // first open their stores, so counting them during the first batch would miss some.
    val numPartitions = stores.get(storeName).orElse(recordedShufflePartitions(root.toString, hadoopConf))
      .getOrElse(numericChildren(fs, new Path(stateRoot, operatorId.toString)).size)
    val hashed = metadata.name.flatMap(name => KeyPlacement.hashedColumns(name, storeName, schema.keySchema.length,
      metadata.stores.find(_.name == storeName).fold(0)(_.numColsPrefixKey)).toOption)
    StoreDescription(LiveStores.normalize(root.toString), LiveStores.normalize(stateRoot.toString), operatorId,
      metadata.name, storeName, numPartitions, schema, hashed)
  }

  /** A checkpoint location as Spark spells it once resolved (`file:/…`, `hdfs://nn/…`). */
  def qualify(checkpoint: String, hadoopConf: Configuration): Path = {
    val path = new Path(checkpoint)
    path.getFileSystem(hadoopConf).makeQualified(path)
  }

  /** The newest batch in the query's commit log: the last batch Spark finished. */
  def latestCommittedBatch(checkpoint: String, hadoopConf: Configuration): Option[Long] = {
    val commits = new Path(checkpoint, "commits")
    numericChildren(commits.getFileSystem(hadoopConf), commits, files = true).reduceOption(_ max _)
  }

  /** The source offsets of batch `batchId` from the query's offset log, one JSON string per source. */
  def sourceOffsets(checkpoint: String, batchId: Long, hadoopConf: => Configuration): Seq[String] =
    if (batchId < 0) Nil
    else offsets.get((checkpoint, batchId)).getOrElse {
      val read = readOffsets(checkpoint, batchId, hadoopConf)
      if (read.nonEmpty) offsets.put((checkpoint, batchId), read)
      read
    }

  private def readOffsets(checkpoint: String, batchId: Long, hadoopConf: Configuration): Seq[String] =
    // Line 1: the log's format version; line 2: the batch's metadata; then one line per source.
    offsetLogLines(checkpoint, batchId, hadoopConf).drop(2).filter(_.nonEmpty)

  /** The lines of the query's offset log entry for `batchId`; empty when it has none. */
  def offsetLogLines(checkpoint: String, batchId: Long, hadoopConf: Configuration): Seq[String] = {
    val file = new Path(new Path(checkpoint, "offsets"), batchId.toString)
    val fs = file.getFileSystem(hadoopConf)
    if (!fs.exists(file)) Nil
    else Using.resource(fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8)).split("\n").toSeq
  }

  /**
   * The shuffle partition count the query runs with, as its newest offset log entry records it
   * (every Spark line records it there; 3.5 has no operator metadata to say it).
   */
  def recordedShufflePartitions(checkpoint: String, hadoopConf: Configuration): Option[Int] = {
    val offsets = new Path(checkpoint, "offsets")
    Try(numericChildren(offsets.getFileSystem(hadoopConf), offsets, files = true).lastOption).toOption.flatten
      .flatMap(batch => ShufflePartitions.recorded(new Path(offsets, batch.toString), hadoopConf))
  }

  private def numericChildren(fs: FileSystem, dir: Path, files: Boolean = false): Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(s => if (files) s.isFile else s.isDirectory)
      .flatMap(s => Try(s.getPath.getName.toLong).toOption).sorted
}
