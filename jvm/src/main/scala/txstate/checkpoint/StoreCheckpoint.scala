package txstate.checkpoint

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager

import txstate.engine.ChangeRecord

/**
 * The durable files of one store instance, in Spark's per-instance state directory:
 * `<version>.txlog` (checkpoint format v1) or `<version>_<checkpointId>.txlog` (format v2).
 */
final class StoreCheckpoint(val root: Path, hadoopConf: Configuration) extends AutoCloseable {
  private val files = CheckpointFileManager.create(root, hadoopConf)

  def changelogPath(version: Long, checkpointId: Option[String]): Path =
    new Path(root, checkpointId.fold(s"$version.txlog")(id => s"${version}_$id.txlog"))

  def writeChangelog(header: ChangelogHeader, checkpointId: Option[String], changes: Iterator[ChangeRecord]): Long = {
    if (!files.exists(root)) files.mkdirs(root)
    ChangelogFile.write(files, changelogPath(header.version, checkpointId), header, changes)
  }

  def readChangelog(version: Long, checkpointId: Option[String]): Changelog =
    ChangelogFile.read(files, changelogPath(version, checkpointId))

  def readChangelogHeader(version: Long, checkpointId: Option[String]): ChangelogHeader =
    ChangelogFile.readHeader(files, changelogPath(version, checkpointId))

  def hasChangelog(version: Long, checkpointId: Option[String]): Boolean =
    files.exists(changelogPath(version, checkpointId))

  def close(): Unit = files.close()
}
