package txstate.migrate

import java.nio.charset.StandardCharsets.UTF_8
import java.time.{Instant, ZoneOffset}
import java.time.format.DateTimeFormatter

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileUtil, Path}
import org.json4s.{JArray, JString}
import org.json4s.jackson.JsonMethods

import txstate.compat.ScalaLibrary.Using

/**
 * `CHECKPOINT/_txstate_migration/<time>/`: what one migration changed, written before it changes
 * anything. It holds `plan.json`, a copy of every log file the migration rewrites (same relative
 * path), then `switched.json` (the report, once the checkpoint runs on the destination) and
 * `undone.json` (once --undo restored it). Spark ignores this folder.
 */
final class MigrationBackup(val dir: Path, logs: CheckpointLogs, hadoopConf: Configuration) {
  private def fs = logs.fs

  def keep(file: Path): Unit = copy(file, relative(file))

  def kept(file: Path): Path = new Path(dir, relative(file))

  /** The checkpoint files this migration saved before rewriting them (the plan's `rewrites`). */
  def keptFiles: Seq[Path] = JsonMethods.parse(read("plan.json")) \ "rewrites" match {
    case JArray(items) => items.collect { case JString(rel) => new Path(logs.root, rel) }
    case _ => Nil
  }

  def write(name: String, text: String): Unit =
    Using.resource(fs.create(new Path(dir, name), true))(_.write(text.getBytes(UTF_8)))

  def has(name: String): Boolean = fs.exists(new Path(dir, name))

  def read(name: String): String = logs.read(new Path(dir, name))

  /** `file`'s path inside the checkpoint. */
  def relative(file: Path): String = {
    val root = logs.root.toUri.getPath.stripSuffix("/") + "/"
    file.toUri.getPath.stripPrefix(root)
  }

  private def copy(file: Path, relativePath: String): Unit = {
    val target = new Path(dir, relativePath)
    fs.mkdirs(target.getParent)
    if (!FileUtil.copy(fs, file, fs, target, false, true, hadoopConf)) {
      throw new java.io.IOException(s"could not copy $file to $target")
    }
  }
}

object MigrationBackup {
  val folderName = "_txstate_migration"
  private val stamp = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss.SSS'Z'").withZone(ZoneOffset.UTC)

  def create(logs: CheckpointLogs, hadoopConf: Configuration): MigrationBackup = {
    val dir = new Path(new Path(logs.root, folderName), stamp.format(Instant.now()))
    if (!logs.fs.mkdirs(dir)) throw new java.io.IOException(s"could not create $dir")
    new MigrationBackup(dir, logs, hadoopConf)
  }

  /** The migrations recorded in `logs`' checkpoint, oldest first. */
  def all(logs: CheckpointLogs, hadoopConf: Configuration): Seq[MigrationBackup] = {
    val parent = new Path(logs.root, folderName)
    if (!logs.fs.exists(parent)) Nil
    else logs.fs.listStatus(parent).toSeq.filter(_.isDirectory).map(_.getPath).sortBy(_.getName)
      .map(new MigrationBackup(_, logs, hadoopConf))
  }
}
