package txstate.spark

import org.apache.spark.sql.execution.streaming.state.{StateStoreId, TxStateSparkBridge}

import txstate.store.StoreErrors

/** Every error the Spark adapter raises: what was expected, what was found, what to do (one place per layer). */
object TxStateErrors {
  def badSetting(key: String, problem: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_INVALID_SETTING] $key $problem.")

  /** A value its setting does not take; Python's `configure()` and `submit-args` word it the same way. */
  def badValue(key: String, value: String, expects: String, example: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_INVALID_SETTING] $key must be $expects, got '$value'. For example: $key=$example")

  def batchTimeUnreadable(file: org.apache.hadoop.fs.Path, why: String, cause: Throwable): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_BATCH_TIME_UNREADABLE] cannot read the batch timestamp from the offset log " +
      s"entry $file: $why. Stamped state and TTL measure time by it; the checkpoint's offset log is damaged or not " +
      "Spark's.", cause)

  def ttlOnJoin(store: StateStoreId, operatorKey: String): UnsupportedOperationException =
    new UnsupportedOperationException(s"[TXSTATE_TTL_UNSUPPORTED] state TTL cannot apply to the stream-stream join " +
      s"store $store: a join keeps each side in several stores that must stay consistent, and expiring their rows " +
      s"one by one would break them. Bound a join's state with watermarks, and set $operatorKey=off for this operator.")

  def unsupported(operation: String, store: StateStoreId, why: String): UnsupportedOperationException =
    new UnsupportedOperationException(s"[TXSTATE_UNSUPPORTED_OPERATION] $operation on state store $store: $why")

  def unknownColumnFamily(name: String, store: StateStoreId, known: Iterable[String]): IllegalArgumentException =
    new IllegalArgumentException(
      s"[TXSTATE_UNKNOWN_COLUMN_FAMILY] column family '$name' does not exist in state store $store " +
        s"(known: ${known.toSeq.sorted.mkString(", ")}). Create it with createColFamilyIfAbsent first.")

  def readOnly(operation: String, store: StateStoreId): UnsupportedOperationException =
    new UnsupportedOperationException(
      s"[TXSTATE_READ_ONLY_STORE] $operation on a read-only view of state store $store; " +
        "upgrade it with upgradeReadStoreToWriteStore to write.")

  def closedStore(operation: String, store: StateStoreId, state: String): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_STORE_NOT_OPEN] $operation on state store $store, which is already $state.")

  /** Spark's wording ("Cannot put a null value") is part of its provider contract (SPARK-35659). */
  def nullRow(operation: String, store: StateStoreId, what: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_NULL_ROW] Cannot put a null $what into state store $store ($operation)")

  /**
   * A version that could not be loaded, as Spark's contract has it: `CANNOT_LOAD_STATE_STORE`
   * with UNEXPECTED_VERSION (negative), CANNOT_READ_STREAMING_STATE_FILE (a checkpoint file that
   * is missing or damaged) or UNCATEGORIZED. Our own message stays in the cause.
   */
  def cannotLoad(version: Long, cause: Throwable): Throwable =
    if (version < 0) TxStateSparkBridge.unexpectedVersion(version)
    else StoreErrors.unreadableCheckpointFile(cause).fold(TxStateSparkBridge.cannotLoadStore(cause))(
      TxStateSparkBridge.cannotReadStateFile(_, cause))

  /** A commit that failed before it was durable: Spark's `CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT`. */
  def cannotCommit(store: StateStoreId, cause: Throwable): Throwable =
    TxStateSparkBridge.cannotCommit(store.toString, cause)

  def notInitialized(): IllegalStateException =
    new IllegalStateException("[TXSTATE_NOT_INITIALIZED] getStore called before init on TxStateStoreProvider")

  def closedProvider(store: StateStoreId): IllegalStateException =
    new IllegalStateException(
      s"[TXSTATE_PROVIDER_CLOSED] the provider of state store $store was closed (Spark unloaded it); Spark opens a new one")

  def tooManyColumnFamilies(name: String, max: Int): IllegalStateException =
    new IllegalStateException(
      s"[TXSTATE_TOO_MANY_COLUMN_FAMILIES] cannot create column family '$name': a store holds at most $max")

  def schemaFileNotWritten(path: String): java.io.IOException =
    new java.io.IOException(s"[TXSTATE_SCHEMA_FILE] could not write the store schema file $path; check that the " +
      "checkpoint location is writable")

  def badSchemaFile(path: String, cause: Throwable): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_QUERY_BAD_SCHEMA_FILE] cannot read the store schema file $path: " +
      s"${cause.getMessage}. A txstate provider rewrites it when the query runs again.", cause)

  def unfinishedRescale(checkpoint: String, batchId: Long, before: Int, now: Int): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_UNFINISHED_RESCALE] batch $batchId of the query on $checkpoint runs with " +
      s"$now shuffle partitions, the batch before with $before: an in-place rescale (migrate --partitions $now) " +
      "stopped before its last write, and resuming its batch would run on the old state. Stop the query and run " +
      s"`python -m txstate_spark migrate $checkpoint --undo` (back to $before partitions; rescale again after if " +
      "you like).")

  def busy(store: StateStoreId, waitedMs: Long, holder: String): IllegalStateException =
    new IllegalStateException(
      s"[TXSTATE_STORE_BUSY] state store $store is still used by $holder after waiting $waitedMs ms; " +
        "a previous task did not commit or abort it.")
}
