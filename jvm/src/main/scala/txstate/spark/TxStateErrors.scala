package txstate.spark

import org.apache.spark.sql.execution.streaming.state.StateStoreId

/** Every error the provider raises to Spark: what was expected, what was found, what to do. */
object TxStateErrors {
  def badSetting(key: String, problem: String): IllegalArgumentException =
    new IllegalArgumentException(s"[TXSTATE_INVALID_SETTING] $key $problem.")

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

  def busy(store: StateStoreId, waitedMs: Long, holder: String): IllegalStateException =
    new IllegalStateException(
      s"[TXSTATE_STORE_BUSY] state store $store is still used by $holder after waiting $waitedMs ms; " +
        "a previous task did not commit or abort it.")
}
