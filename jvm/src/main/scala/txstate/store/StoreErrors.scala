package txstate.store

import org.apache.hadoop.fs.Path

/** A store-level failure: its code says which, its message what to do. */
final class StoreException(val errorCode: String, message: String, cause: Throwable = null)
    extends IllegalStateException(s"[$errorCode] $message", cause)

/** Every error the store layer raises, written once (docs/ARCHITECTURE.md, "Errors"). */
private[txstate] object StoreErrors {
  /**
   * The checkpoint file whose damage or absence caused `failure`, if that is what it was: callers
   * above the store report such failures differently from other load failures.
   */
  def unreadableCheckpointFile(failure: Throwable): Option[Path] =
    Iterator.iterate(failure)(_.getCause).takeWhile(_ != null).collectFirst {
      case e: txstate.checkpoint.CheckpointFileException => e.path
    }

  def negativeVersion(version: Long, store: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_INVALID_VERSION] cannot load negative version $version of $store")

  def invalidChangeRange(start: Long, end: Long, store: String): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_INVALID_VERSION] invalid change range $start..$end for $store: the start must be >= 1 and <= the end")

  def missingCheckpointId(version: Long, store: String): StoreException =
    new StoreException("TXSTATE_MISSING_CHECKPOINT_ID",
      s"Spark asked for version $version of $store under checkpoint format v2 without a checkpoint id")

  def cannotRebuild(version: Long, store: String, root: Path, why: String, cause: Throwable = null): StoreException =
    new StoreException("TXSTATE_CANNOT_LOAD", s"cannot rebuild version $version of $store from $root: $why", cause)

  /**
   * A snapshot holds RocksDB files this Spark's RocksDB cannot read: a newer Spark line wrote them.
   * Older snapshots of such a checkpoint are as new, so no fallback is tried: the load is refused.
   */
  def writtenByNewerLine(version: Long, store: String, root: Path, snapshotVersion: Long, writtenBy: Option[String],
      cause: Throwable): StoreException =
    new StoreException("TXSTATE_CHECKPOINT_FROM_NEWER_SPARK",
      s"cannot load version $version of $store from $root: the snapshot of version $snapshotVersion holds RocksDB " +
        s"files that this Spark's RocksDB cannot read (${cause.getMessage}). " +
        writtenBy.fold("A newer Spark line wrote them.")(w => s"Version $version was written by txstate-spark $w.") +
        " A checkpoint moves to newer Spark lines (3.5 to 4.x), not back: run the query on the Spark line that " +
        "wrote it or a newer one, or restore a copy of the checkpoint taken before it ran there.", cause)

  def snapshotMismatch(path: Path, found: String): StoreException =
    new StoreException("TXSTATE_CANNOT_LOAD", s"snapshot $path holds $found, not what its manifest says")

  def closed(store: String): StoreException =
    new StoreException("TXSTATE_INSTANCE_CLOSED",
      s"$store is closed (Spark unloaded it); the task should fail and be retried, which opens it again")

  def busy(store: String): StoreException =
    new StoreException("TXSTATE_BATCH_OPEN",
      s"$store already has a batch open; commit or abort it before opening another")

  def batchEnded(store: String, operation: String, how: String): StoreException =
    new StoreException("TXSTATE_BATCH_ENDED", s"$operation on $store, whose batch is already $how")

  def checkpointIdAfterEarlyCommit(store: String, checkpointId: String): StoreException =
    new StoreException("TXSTATE_CHECKPOINT_ID_TOO_LATE", s"$store cannot take the checkpoint id $checkpointId: " +
      "its batch has early-committed under another id already; choose the id right after opening the batch")

  def stagedSnapshotWithoutId(version: Long): StoreException =
    new StoreException("TXSTATE_SNAPSHOT_WITHOUT_ID", s"the staged snapshot of version $version has no checkpoint id")

  def readOnly(what: String, path: Path): java.nio.file.AccessDeniedException =
    new java.nio.file.AccessDeniedException(path.toString, null,
      s"[TXSTATE_READ_ONLY] a follower tried to $what $path; followers never change a checkpoint they read")

  /** A follower met a file of a newer format: it cannot follow until it runs a release that reads it. */
  def followerNeedsNewerRelease(store: String, cause: txstate.checkpoint.NewerFormatException): StoreException =
    new StoreException("TXSTATE_FOLLOWER_NEWER_FORMAT", s"$store cannot follow its leader: ${cause.getMessage}", cause)
}
