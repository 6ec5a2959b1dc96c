package txstate.checkpoint

import java.io.IOException

import org.apache.hadoop.fs.Path

/** A checkpoint file that cannot be used: typed by what is wrong, always naming the file. */
sealed abstract class CheckpointFileException(val path: Path, message: String, cause: Throwable)
    extends IOException(message, cause)

/** A changelog or segment whose bytes are damaged (checksum, magic, format, truncation). */
final class CorruptChangelogException(path: Path, why: String, cause: Throwable)
    extends CheckpointFileException(path,
      s"[TXSTATE_CORRUPT_CHANGELOG] the changelog $path is corrupt: $why. The state of this version cannot be " +
        "rebuilt from it; restore the file from a backup or restart the query from a new checkpoint.", cause)

/** A changelog or segment that a load needs and that is not there. */
final class MissingChangelogException(path: Path, cause: Throwable)
    extends CheckpointFileException(path,
      s"[TXSTATE_MISSING_CHANGELOG] the changelog $path is missing. The checkpoint lacks a version that must be " +
        "replayed; it may have been deleted by hand or by a cleanup with a smaller minBatchesToRetain. To load " +
        "this version, restore the file from a backup or restart the query from a new checkpoint.", cause)

/** A snapshot manifest or one of its stored files whose bytes are damaged or missing. */
final class CorruptSnapshotException(path: Path, why: String, cause: Throwable)
    extends CheckpointFileException(path,
      s"[TXSTATE_CORRUPT_SNAPSHOT] the snapshot file $path is unusable: $why. Loads fall back to an older " +
        "snapshot and the changelogs.", cause)

/** The record of the retention a cleanup deleted versions under ([[RetentionRecord]]), damaged. */
final class CorruptRetentionRecordException(path: Path, why: String, cause: Throwable)
    extends CheckpointFileException(path,
      s"[TXSTATE_CORRUPT_RETENTION_RECORD] the retention record $path is unusable: $why. It says how many " +
        "versions the query's cleanup keeps, which verify and inspect need to tell a version the cleanup deleted " +
        "from a lost one; pass --min-batches-to-retain to verify, or delete the file: the next cleanup that deletes " +
        "versions writes it again.", cause)

/**
 * A file of a newer format than this build reads: a newer txstate-spark wrote it. Its own type,
 * because readers that cannot upgrade (followers) must say which release they need.
 */
final class NewerFormatException(path: Path, val kind: String, val found: Int, val readable: Seq[Int],
    writtenBy: Option[String] = None)
    extends CheckpointFileException(path,
      s"[TXSTATE_NEWER_FORMAT] the $kind $path has $kind format $found" + writtenBy.fold("")(w => s", written by " +
        s"txstate-spark $w,") + s" and this build (txstate-spark ${txstate.engine.Release.version}) reads $kind format " +
        s"${NewerFormatException.list(readable)}: a newer txstate-spark wrote it. Use a txstate-spark that reads $kind " +
        s"format $found (${writtenBy.getOrElse("the release that wrote it")}, or newer).", null)

object NewerFormatException {
  private[checkpoint] def list(formats: Seq[Int]): String =
    if (formats.size < 2) formats.mkString else formats.init.mkString(", ") + " and " + formats.last
}

/**
 * A checkpoint file that could not be written (a full disk, a quota, a lost connection). Not a
 * [[CheckpointFileException]]: nothing is wrong with the checkpoint, which still holds every
 * committed version; the write that failed leaves nothing under its name.
 */
final class CheckpointWriteException(val path: Path, message: String, cause: Throwable)
    extends IOException(message, cause)

/** Every error the checkpoint layer raises, written once (docs/ARCHITECTURE.md, "Errors"). */
private[txstate] object CheckpointErrors {
  /** Writing `path` failed with `cause`; out of space is told apart, with its own code and advice. */
  def writeFailed(path: Path, cause: IOException): CheckpointWriteException =
    if (outOfSpace(cause)) new CheckpointWriteException(path,
      s"[TXSTATE_CHECKPOINT_DISK_FULL] the checkpoint location has no space left for $path (${cause.getMessage}). " +
        "The batch fails and is not committed; every committed version in the checkpoint is intact. Free space " +
        "on the checkpoint's file system (or raise its quota), then restart the query: it runs the failed batch " +
        "again.", cause)
    else new CheckpointWriteException(path,
      s"[TXSTATE_CHECKPOINT_WRITE_FAILED] could not write the checkpoint file $path (${cause.getMessage}). The " +
        "batch fails and is not committed; every committed version in the checkpoint is intact. Check that the " +
        "checkpoint location is writable and reachable, then restart the query.", cause)

  /** ENOSPC as the JDK words it, or a Hadoop file system's out-of-space or quota exception, anywhere in the chain. */
  private def outOfSpace(failure: Throwable): Boolean =
    Iterator.iterate(failure)(_.getCause).takeWhile(_ != null).take(16).exists { e =>
      Option(e.getMessage).exists(_.contains("No space left on device")) ||
        Seq("DiskOutOfSpace", "QuotaExceeded").exists(e.getClass.getSimpleName.contains)
    }

  def corruptChangelog(path: Path, why: String, cause: Throwable = null): CorruptChangelogException =
    new CorruptChangelogException(path, why, cause)

  def missingChangelog(path: Path, cause: Throwable): MissingChangelogException = new MissingChangelogException(path, cause)

  def corruptSnapshot(path: Path, why: String, cause: Throwable = null): CorruptSnapshotException =
    new CorruptSnapshotException(path, why, cause)

  def corruptRetentionRecord(path: Path, why: String, cause: Throwable = null): CorruptRetentionRecordException =
    new CorruptRetentionRecordException(path, why, cause)

  def newerFormat(path: Path, kind: String, found: Int, readable: Seq[Int]): NewerFormatException =
    new NewerFormatException(path, kind, found, readable)

  /** A changelog of a storage format this build does not read (a downgrade): names the release that wrote it. */
  def newerStorageFormat(path: Path, found: Int, writtenBy: String): NewerFormatException =
    new NewerFormatException(path, "storage", found, txstate.engine.CommitPoint.readableFormatVersions, Some(writtenBy))
}
