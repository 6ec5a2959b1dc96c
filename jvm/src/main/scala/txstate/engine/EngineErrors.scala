package txstate.engine

import java.io.File

/**
 * A failure of the local engine: its code says which, its message what to do. Subclasses
 * IllegalStateException because every engine failure is a state the caller must not continue from.
 */
final class LocalStateException(val errorCode: String, message: String, cause: Throwable = null)
    extends IllegalStateException(s"[$errorCode] $message", cause)

/** Every error the engine raises, written once (docs/ARCHITECTURE.md, "Errors"). */
private[txstate] object EngineErrors {
  def closed(dir: File): LocalStateException =
    new LocalStateException("TXSTATE_ENGINE_CLOSED",
      s"the local state engine for $dir is closed; the store instance was unloaded, so open it again through Spark")

  def interruptedWrite(dir: File, version: Long): LocalStateException =
    new LocalStateException("TXSTATE_INTERRUPTED_WRITE",
      s"local state in $dir has an interrupted write of version $version; load a version first")

  def staleTransaction(base: Long, current: Long): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_STALE_TRANSACTION] the transaction began at version $base but the store is at $current")

  def nothingToRollBack(dir: File): LocalStateException =
    new LocalStateException("TXSTATE_NO_COMMIT_TO_ROLL_BACK", s"the local state in $dir has no commit to roll back")

  def noEarlyCommitToUndo(dir: File): LocalStateException =
    new LocalStateException("TXSTATE_NO_EARLY_COMMIT", s"the local state in $dir has no early-committed transaction to undo")

  def snapshotWhileInFlight(dir: File, version: Long): LocalStateException =
    new LocalStateException("TXSTATE_IN_FLIGHT",
      s"cannot snapshot $dir while version $version is in flight")

  def cannotCreateDirectory(dir: File): LocalStateException =
    new LocalStateException("TXSTATE_LOCAL_DIR",
      s"cannot create the local state directory $dir; check the disk and spark.sql.streaming.stateStore.txstate.localDir")

  /** The code of [[damagedDatabase]]: the store layer wipes a stable directory that fails this way. */
  val damagedDatabaseCode = "TXSTATE_DAMAGED_LOCAL_STATE"

  def damagedDatabase(dir: File, cause: Throwable): LocalStateException =
    new LocalStateException(damagedDatabaseCode,
      s"the local state database in $dir cannot be opened: RocksDB finds its files damaged or missing " +
        s"(${cause.getMessage}). Delete the directory; it is rebuilt from the checkpoint.", cause)

  /** The code of [[newerRocksDbFiles]]: the store layer refuses the load instead of trying older files. */
  val newerRocksDbFilesCode = "TXSTATE_NEWER_ROCKSDB_FILES"

  def newerRocksDbFiles(dir: File, cause: Throwable): LocalStateException =
    new LocalStateException(newerRocksDbFilesCode,
      s"the RocksDB files in $dir are in a format that this RocksDB (${LocalDatabase.rocksDbVersion}) cannot read: a " +
        s"newer RocksDB wrote them (${cause.getMessage})", cause)

  val localDiskFullCode = "TXSTATE_LOCAL_DISK_FULL"
  val localWriteFailedCode = "TXSTATE_LOCAL_WRITE_FAILED"

  /** Whether `e` is a [[localWriteFailed]]: the engine reopens its database after one. */
  def isLocalWriteFailure(e: LocalStateException): Boolean =
    e.errorCode == localDiskFullCode || e.errorCode == localWriteFailedCode

  /**
   * RocksDB refused a write, flush or open in `dir`. Out of disk space is told apart (its own code
   * and advice); either way the engine reopens the database before its next batch
   * (docs/ARCHITECTURE.md, "A failed local write").
   */
  def localWriteFailed(dir: File, cause: org.rocksdb.RocksDBException): LocalStateException =
    if (isOutOfSpace(cause)) new LocalStateException(localDiskFullCode,
      s"the disk of the local state directory $dir is full (RocksDB: ${cause.getMessage}). The batch fails; every " +
        "committed version is safe in the checkpoint. Free space on that disk, or set " +
        "spark.sql.streaming.stateStore.txstate.localDir to a directory on a larger one; the store then reopens its " +
        "local database and catches up from the checkpoint.", cause)
    else new LocalStateException(localWriteFailedCode,
      s"RocksDB failed to write the local state in $dir (${cause.getMessage}). The batch fails; every committed " +
        s"version is safe in the checkpoint, and the store reopens its local database before the next batch. If " +
        s"this repeats, check the disk of $dir.", cause)

  def isOutOfSpace(e: org.rocksdb.RocksDBException): Boolean =
    Option(e.getStatus).exists(_.getSubCode == org.rocksdb.Status.SubCode.NoSpace) ||
      Option(e.getMessage).exists(_.contains("No space left on device"))

  def unreadableCommitPoint(dir: File, cause: Throwable): LocalStateException =
    new LocalStateException("TXSTATE_UNREADABLE_COMMIT_POINT",
      s"the local state database in $dir records a commit point this build cannot read (${cause.getMessage}). " +
        "Delete the directory; it is rebuilt from the checkpoint.", cause)

  def unknownCommitPointEncoding(found: Int, newest: Int): LocalStateException =
    new LocalStateException("TXSTATE_UNREADABLE_COMMIT_POINT",
      s"the commit point is in encoding $found, but this build (txstate-spark ${Release.version}) reads encodings " +
        s"1 to $newest; a newer txstate-spark wrote it, so use that release or a newer one")

  def newerStorageFormat(dir: File, found: Int, writtenBy: String, readable: Seq[Int]): LocalStateException =
    new LocalStateException("TXSTATE_NEWER_STORAGE_FORMAT",
      s"the local state in $dir is in storage format $found, written by txstate-spark $writtenBy, and this build " +
        s"(txstate-spark ${Release.version}) reads storage formats ${readable.mkString(" and ")}. A store is never " +
        s"downgraded: run the query with txstate-spark $writtenBy or newer.")

  def damagedStampedValue(length: Int): LocalStateException =
    new LocalStateException("TXSTATE_DAMAGED_VALUE",
      s"a stored value of $length bytes has no complete write stamp; the local database is damaged. Delete the " +
        "local directory; it is rebuilt from the checkpoint.")

  def ttlWithoutBatchTime(dir: File): LocalStateException =
    new LocalStateException("TXSTATE_TTL_WITHOUT_BATCH_TIME",
      s"state TTL is on for the store in $dir, but the batch has no timestamp to measure age against; TTL needs " +
        "the batch timestamp Spark records in the query's offset log")

  def viewUsedAfterRead(): LocalStateException =
    new LocalStateException("TXSTATE_VIEW_EXPIRED", "a committed view was used after its read ended")
}
