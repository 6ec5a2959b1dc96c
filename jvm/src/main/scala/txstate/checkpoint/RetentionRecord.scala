package txstate.checkpoint

import java.io.EOFException
import java.nio.charset.StandardCharsets.US_ASCII

import org.apache.hadoop.fs.Path

import txstate.compat.CheckpointFileManager

/**
 * `cleanup.retention.txstate`: the minBatchesToRetain of the cleanup that last deleted versions of a
 * store instance. Spark's offset log does not record that setting, so without this file a reader
 * of the checkpoint (`verify`, `inspect`) cannot tell a version the query's own cleanup deleted
 * from one that was lost.
 *
 * The name has three dot-separated parts because Spark's HDFS provider, whose files may share the
 * directory (docs/ARCHITECTURE.md, "Files in a checkpoint"), reads every two-part name as
 * `<version>.<kind>`.
 */
private[checkpoint] object RetentionRecord {
  val fileName = "cleanup.retention.txstate"
  val magic: Array[Byte] = "TXRT".getBytes(US_ASCII)
  val formatVersion = 1

  def write(files: CheckpointFileManager, path: Path, minVersionsToRetain: Int): Unit =
    FramedFile.write(files, path, magic, formatVersion)(_.writeInt(minVersionsToRetain))

  def read(reads: CheckpointReads, path: Path): Int = {
    val bytes = FramedFile.readAll(reads, path)(CheckpointErrors.corruptRetentionRecord(path, "it is missing", _))
    val (_, in) = FramedFile.open(bytes, magic, Seq(formatVersion), "retention record", path)(
      CheckpointErrors.corruptRetentionRecord(path, _))
    val retained = try in.readInt() catch {
      case e: EOFException => throw CheckpointErrors.corruptRetentionRecord(path, "it is truncated", e)
    }
    if (retained < 1) throw CheckpointErrors.corruptRetentionRecord(path, s"it records $retained retained versions")
    retained
  }
}
