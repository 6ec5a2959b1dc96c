package txstate.operate

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import org.apache.hadoop.fs.{FileSystem, Path}
import org.json4s.{JObject, JString}
import org.json4s.jackson.JsonMethods

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using
import txstate.spark.CommitLogIds

/**
 * What Spark's own logs of a checkpoint say, read through a read-only view: the last committed
 * batch (`commits/<batch>`) and when it was written, the settings the query recorded in its newest
 * `offsets/<batch>` (provider, checkpoint format, retention), and the checkpoint ids a format-v2
 * commit names.
 */
final class QueryLogs(root: Path, fs: FileSystem) {
  private val offsetsDir = new Path(root, "offsets")
  private val commitsDir = new Path(root, "commits")

  val commitBatches: Seq[Long] = batchFiles(commitsDir)
  val offsetBatches: Seq[Long] = batchFiles(offsetsDir)

  def lastCommittedBatch: Option[Long] = commitBatches.lastOption

  def commitTimeMs(batch: Long): Option[Long] =
    Try(fs.getFileStatus(new Path(commitsDir, batch.toString)).getModificationTime).toOption

  /** The settings the newest offset entry records (empty when there is none). */
  lazy val conf: Map[String, String] = offsetBatches.lastOption.fold(Map.empty[String, String]) { batch =>
    val lines = read(new Path(offsetsDir, batch.toString)).split("\n")
    if (lines.length < 2) Map.empty
    else Try(JsonMethods.parse(lines(1)) \ "conf").toOption match {
      case Some(JObject(fields)) => fields.collect { case (k, JString(v)) => k -> v }.toMap
      case _ => Map.empty
    }
  }

  def providerClass: Option[String] = conf.get(QueryLogs.providerKey)

  /**
   * Spark's checkpoint format: 2 when the last commit log entry is of log version 2 (Spark writes
   * `v2` entries, with the state checkpoint ids, only under format 2), else the recorded setting, else 1.
   */
  lazy val checkpointFormat: Int = {
    val commitVersion = lastCommittedBatch.flatMap(b => read(new Path(commitsDir, b.toString)).split("\n").headOption)
    if (commitVersion.contains("v2")) 2
    else conf.get(QueryLogs.formatKey).flatMap(v => Try(v.trim.toInt).toOption).getOrElse(1)
  }

  /** The versions Spark keeps loadable: the recorded setting, else Spark's default. */
  def minBatchesToRetain: Int =
    conf.get(QueryLogs.retainKey).flatMap(v => Try(v.trim.toInt).toOption).getOrElse(QueryLogs.defaultRetain)

  /** The checkpoint ids `commits/<batch>` names (format v2; empty under v1 or when the file is gone). */
  def commitIds(batch: Long): CommitLogIds = {
    val file = new Path(commitsDir, batch.toString)
    if (!fs.exists(file)) CommitLogIds(Map.empty) else CommitLogIds.parse(read(file))
  }

  private def read(file: Path): String = Using.resource(fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))

  private def batchFiles(dir: Path): Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isFile).flatMap(s => Try(s.getPath.getName.toLong).toOption).sorted
}

object QueryLogs {
  val providerKey = "spark.sql.streaming.stateStore.providerClass"
  val formatKey = "spark.sql.streaming.stateStore.checkpointFormatVersion"
  val retainKey = "spark.sql.streaming.minBatchesToRetain"
  val defaultRetain = 100
}
