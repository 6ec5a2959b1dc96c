package txstate.checkpoint

import java.net.URI
import java.nio.file.{FileAlreadyExistsException, Files, Paths, StandardCopyOption}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FSDataInputStream, FileStatus, Path, PathFilter, RawLocalFileSystem}

import txstate.compat.CheckpointFileManager
import txstate.compat.CheckpointFileManager.CancellableFSDataOutputStream

/**
 * Checkpoint files on a local disk, written atomically with a temporary file and rename(2).
 *
 * Hadoop's local file systems set permissions on create and rename by running `chmod`/`ls` in a
 * child process when the native Hadoop library is absent (as with pyspark), and that fork/exec
 * costs more than writing the changelog. Our files carry their own checksums, so
 * the `.crc` side files Hadoop's checksummed file system writes are not needed either.
 */
final class LocalCheckpointFileManager(hadoopConf: Configuration) extends CheckpointFileManager with java.io.Closeable {
  private val raw = {
    val fs = new RawLocalFileSystem()
    fs.initialize(URI.create("file:///"), hadoopConf)
    fs
  }

  private def local(path: Path): java.nio.file.Path = Paths.get(path.toUri.getPath)

  override def createAtomic(path: Path, overwriteIfPossible: Boolean): CancellableFSDataOutputStream = {
    val target = local(path)
    Files.createDirectories(target.getParent)
    val temp = target.resolveSibling(s".${target.getFileName}.${UUID.randomUUID()}.tmp")
    new CancellableFSDataOutputStream(Files.newOutputStream(temp)) {
      private var finished = false

      override def cancel(): Unit = if (!finished) {
        finished = true
        try underlyingStream.close() finally Files.deleteIfExists(temp)
      }

      override def close(): Unit = if (!finished) {
        finished = true
        try super.close()
        catch {
          case e: Throwable =>
            Files.deleteIfExists(temp)
            throw e
        }
        if (!overwriteIfPossible && Files.exists(target)) {
          Files.deleteIfExists(temp)
          throw new FileAlreadyExistsException(target.toString)
        }
        Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE)
      }
    }
  }

  override def open(path: Path): FSDataInputStream = raw.open(path)

  override def list(path: Path, filter: PathFilter): Array[FileStatus] = raw.listStatus(path, filter)

  override def mkdirs(path: Path): Unit = Files.createDirectories(local(path))

  override def exists(path: Path): Boolean = Files.exists(local(path))

  override def delete(path: Path): Unit = raw.delete(path, true)

  override def isLocal: Boolean = true

  override def createCheckpointDirectory(): Path =
    throw new UnsupportedOperationException("txstate: the local checkpoint file manager serves one store directory")

  override def close(): Unit = raw.close()
}

object LocalCheckpointFileManager {
  /**
   * Ours for `file:` locations and for object stores that can abandon a write
   * ([[DirectPutCheckpointFileManager]]), Spark's (atomic on every Hadoop file system) for the rest.
   */
  def forLocation(root: Path, hadoopConf: Configuration): CheckpointFileManager =
    // getUri, not getScheme: some Hadoop file systems do not implement getScheme (SPARK-18342).
    if (root.getFileSystem(hadoopConf).getUri.getScheme == "file") new LocalCheckpointFileManager(hadoopConf)
    else {
      val spark = CheckpointFileManager.create(root, hadoopConf) // reads, lists and deletes, under ours too
      DirectPutCheckpointFileManager.forLocation(root, hadoopConf, spark).getOrElse(spark)
    }
}
