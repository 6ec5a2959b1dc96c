package txstate.query.follow

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

import txstate.compat.JavaLibrary
import txstate.compat.ScalaLibrary.Using
import txstate.spark.CommitLogIds
import txstate.store.ReadOnlyFileSystem

/** The leader's newest finished batch: its id, when Spark wrote its commit, and its state checkpoint ids (format v2). */
private[query] final case class LeaderCommit(batchId: Long, committedAtMs: Long, ids: CommitLogIds)

/**
 * What a follower reads of the leader's own logs: Spark's commit log (`commits/<batch>`), whose
 * newest entry is the newest batch a follower may publish. Read through a read-only view.
 */
private[query] final class LeaderLog(checkpoint: String, hadoopConf: Configuration) {
  private val commits = new Path(checkpoint, "commits")
  private val fs: FileSystem = new ReadOnlyFileSystem(commits.getFileSystem(hadoopConf))

  /** The newest committed batch, if the leader has finished one. */
  def newest(): Option[LeaderCommit] = {
    val entries = if (!fs.exists(commits)) Nil else fs.listStatus(commits).toSeq.filter(_.isFile)
      .flatMap(s => Try(s.getPath.getName.toLong).toOption.map(_ -> s))
    entries.sortBy(_._1).lastOption.map { case (batch, status) =>
      val text = Using.resource(fs.open(status.getPath))(in => new String(JavaLibrary.readAllBytes(in), UTF_8))
      LeaderCommit(batch, status.getModificationTime, CommitLogIds.parse(text))
    }
  }

  /** When Spark committed `batchId` (None: not committed, or cleaned up already). */
  def committedAtMs(batchId: Long): Option[Long] = {
    val file = new Path(commits, batchId.toString)
    if (fs.exists(file)) Some(fs.getFileStatus(file).getModificationTime) else None
  }
}
