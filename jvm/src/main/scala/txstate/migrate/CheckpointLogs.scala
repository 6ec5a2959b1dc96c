package txstate.migrate

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths, StandardCopyOption}
import java.util.UUID

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{ChecksumFileSystem, FileSystem, Path}
import org.json4s.{JObject, JString}
import org.json4s.jackson.JsonMethods

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using

/**
 * The query's own logs in a checkpoint: `offsets/<batch>` (what each batch read, and the settings
 * Spark re-applies at restart, among them the provider class) and `commits/<batch>` (which batches
 * finished). Files are read and written through Hadoop, so `.crc` side files stay consistent.
 */
final class CheckpointLogs(val root: Path, hadoopConf: Configuration) {
  val fs: FileSystem = root.getFileSystem(hadoopConf)
  val offsetsDir = new Path(root, "offsets")
  val commitsDir = new Path(root, "commits")

  def offsetBatches: Seq[Long] = batchFiles(offsetsDir)
  def commitBatches: Seq[Long] = batchFiles(commitsDir)

  def offsetFile(batch: Long): Path = new Path(offsetsDir, batch.toString)
  def commitFile(batch: Long): Path = new Path(commitsDir, batch.toString)

  def read(file: Path): String = Using.resource(fs.open(file))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))

  /**
   * Replaces `file` in one step: a reader, or a restart after the process is killed at any point,
   * finds the old text or the new one, never no file. Spark's own atomic write cannot promise that
   * on a local disk when the file exists: Hadoop's rename with overwrite there deletes the old file
   * before it renames, and a kill between the two leaves the batch without its offset entry.
   */
  def replace(file: Path, text: String): Unit =
    if (fs.getUri.getScheme == "file") replaceOnLocalDisk(file, text) else replaceThroughSpark(file, text)

  /**
   * Writes the new text aside through Hadoop (so it gets its `.crc`), then renames it over the file
   * with rename(2), which replaces in one step. The old `.crc` goes first: the old text without a
   * checksum still reads, where the new text beside the old checksum would not.
   */
  private def replaceOnLocalDisk(file: Path, text: String): Unit = {
    val temp = new Path(file.getParent, s".${file.getName}.${UUID.randomUUID()}.tmp")
    try Using.resource(fs.create(temp, false))(_.write(text.getBytes(UTF_8)))
    catch { case e: Throwable => Try(fs.delete(temp, false)); throw e }
    def onDisk(p: Path) = Paths.get(p.toUri.getPath)
    fs match {
      case checksummed: ChecksumFileSystem =>
        Files.deleteIfExists(onDisk(checksummed.getChecksumFile(file)))
        Files.move(onDisk(temp), onDisk(file), StandardCopyOption.ATOMIC_MOVE)
        val tempChecksum = onDisk(checksummed.getChecksumFile(temp))
        if (Files.exists(tempChecksum)) {
          Files.move(tempChecksum, onDisk(checksummed.getChecksumFile(file)), StandardCopyOption.ATOMIC_MOVE)
        }
      case _ => Files.move(onDisk(temp), onDisk(file), StandardCopyOption.ATOMIC_MOVE)
    }
  }

  /** Elsewhere Spark's atomic write is one step: HDFS renames over a file atomically, object stores put whole. */
  private def replaceThroughSpark(file: Path, text: String): Unit = {
    val files = txstate.compat.CheckpointFileManager.create(file.getParent, hadoopConf)
    try {
      val out = files.createAtomic(file, overwriteIfPossible = true)
      try out.write(text.getBytes(UTF_8))
      catch { case e: Throwable => out.cancel(); throw e }
      out.close()
    } finally txstate.compat.closeCheckpointFiles(files)
  }

  /** The newest modification among the log files, as (file, epoch ms). */
  def newestWrite: Option[(Path, Long)] =
    Seq(offsetsDir, commitsDir).filter(fs.exists).flatMap(d => fs.listStatus(d).toSeq)
      .filter(s => s.isFile && Try(s.getPath.getName.toLong).isSuccess)
      .map(s => s.getPath -> s.getModificationTime)
      .reduceOption((newest, next) => if (next._2 > newest._2) next else newest)

  private def batchFiles(dir: Path): Seq[Long] =
    if (!fs.exists(dir)) Nil
    else fs.listStatus(dir).toSeq.filter(_.isFile).flatMap(s => Try(s.getPath.getName.toLong).toOption).sorted
}

/**
 * One `offsets/<batch>` file: line 1 the log version, line 2 the batch metadata (watermark,
 * timestamp and `conf`), then one line per source. Only the `conf` entries are ever changed.
 */
final case class OffsetLogEntry(lines: Vector[String]) {
  private def metadata: JObject = JsonMethods.parse(lines(1)) match {
    case o: JObject => o
    case other => throw new IllegalArgumentException(s"the batch metadata is not a JSON object: $other")
  }

  def conf: Map[String, String] = (metadata \ "conf") match {
    case JObject(fields) => fields.collect { case (k, JString(v)) => k -> v }.toMap
    case _ => Map.empty
  }

  /** The same entry with `updates` applied to its `conf` (existing keys keep their place). */
  def withConf(updates: Map[String, String]): OffsetLogEntry = {
    val JObject(fields) = metadata
    val oldConf = (metadata \ "conf") match {
      case JObject(c) => c
      case _ => Nil
    }
    val kept = oldConf.map { case (k, v) => k -> updates.get(k).map(JString(_)).getOrElse(v) }
    val added = updates.toSeq.sortBy(_._1).filterNot(u => oldConf.exists(_._1 == u._1)).map { case (k, v) => k -> JString(v) }
    val newConf = JObject(kept ++ added)
    val newFields = if (fields.exists(_._1 == "conf")) fields.map { case ("conf", _) => "conf" -> newConf; case f => f }
      else fields :+ ("conf" -> newConf)
    OffsetLogEntry(lines.updated(1, JsonMethods.compact(JObject(newFields))))
  }

  def text: String = lines.mkString("\n")
}

object OffsetLogEntry {
  def parse(text: String, file: Path): OffsetLogEntry = {
    val lines = text.split("\n", -1).toVector
    if (lines.size < 2 || !lines(0).startsWith("v") || !lines(1).startsWith("{")) {
      throw MigrationErrors.badArgument(file.toString, "is not an offset log entry Spark wrote (expected a version " +
        "line, then the batch metadata as JSON)")
    }
    OffsetLogEntry(lines)
  }
}
