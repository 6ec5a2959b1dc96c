package txstate.checkpoint

import scala.util.Try

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{Abortable, FSDataInputStream, FSDataOutputStream, FileStatus, FileSystem, Path, PathFilter}

import txstate.compat.CheckpointFileManager
import txstate.compat.CheckpointFileManager.CancellableFSDataOutputStream

/**
 * Checkpoint files on an object store whose output streams can be abandoned (S3A): each file is
 * written straight to its final name, which shows it whole or not at all, because the store
 * publishes an object only when its upload completes. Spark's manager writes a temporary object
 * and renames it, which on S3 is a copy and a delete plus a dozen status checks per file
 * (docs/ARCHITECTURE.md, "Writes on object stores"). A failed write is abandoned, never
 * completed, so nothing half-written appears. Everything but writing goes to Spark's manager.
 */
final class DirectPutCheckpointFileManager private (fs: FileSystem, spark: CheckpointFileManager)
    extends CheckpointFileManager with java.io.Closeable {
  import DirectPutCheckpointFileManager._

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream =
    if (!overwriteIfPossible) spark.createAtomic(path, overwriteIfPossible)
    else {
      // Our names are never directories, and a store writes under its own directory: the checks
      // S3A makes before a create (is the name a directory, is a parent a file) are skipped.
      val upload = fs.createFile(path).overwrite(true).recursive().opt(createPerformance, true).build()
      new CancellableFSDataOutputStream(upload) {
        private var finished = false

        override def cancel(): Unit = if (!finished) {
          finished = true
          abandon(upload)
        }

        override def close(): Unit = if (!finished) {
          finished = true
          super.close()
        }
      }
    }

  override def open(path: Path): FSDataInputStream = spark.open(path)
  override def list(path: Path, filter: PathFilter): Array[FileStatus] = spark.list(path, filter)
  override def mkdirs(path: Path): Unit = spark.mkdirs(path)
  override def exists(path: Path): Boolean = spark.exists(path)
  override def delete(path: Path): Unit = spark.delete(path)
  override def isLocal: Boolean = false
  override def createCheckpointDirectory(): Path = spark.createCheckpointDirectory()
  override def close(): Unit = txstate.compat.closeCheckpointFiles(spark)
}

object DirectPutCheckpointFileManager {
  // Hadoop's CommonPathCapabilities.ABORTABLE_STREAM and S3A's Constants.FS_S3A_CREATE_PERFORMANCE,
  // by value: the second is an option S3A reads and every other file system ignores.
  private val abortableStreams = "fs.capability.outputstream.abortable"
  private val createPerformance = "fs.s3a.create.performance"
  // A user who names Spark's checkpoint file manager class chose how files are written: theirs is used.
  private val sparkManagerClass = "spark.sql.streaming.checkpointFileManagerClass"

  /**
   * Ours, over `spark` (Spark's manager for `root`, which serves everything but writing), where
   * `root`'s file system abandons streams and the user chose no manager of their own.
   */
  def forLocation(root: Path, hadoopConf: Configuration, spark: CheckpointFileManager): Option[CheckpointFileManager] = {
    val fs = root.getFileSystem(hadoopConf)
    val abortable = Try(fs.hasPathCapability(root, abortableStreams)).getOrElse(false)
    if (abortable && hadoopConf.get(sparkManagerClass) == null) Some(new DirectPutCheckpointFileManager(fs, spark))
    else None
  }

  /** Abandons an upload: Hadoop 3.4 streams abort themselves, 3.3's (Spark 3.5) through the wrapped stream. */
  private def abandon(out: FSDataOutputStream): Unit = out match {
    case abortable: Abortable if Try(abortable.abort()).isSuccess => ()
    case _ => out.getWrappedStream match {
      case abortable: Abortable => abortable.abort()
      case other => throw new IllegalStateException(s"txstate: cannot abandon a write to ${other.getClass.getName}")
    }
  }
}
