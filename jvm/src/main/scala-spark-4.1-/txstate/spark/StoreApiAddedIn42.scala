package txstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStore, UnsafeRowPair}

import txstate.compat.StateApi.StateStoreIterator

/**
 * The StateStore members Spark 4.2 added, declared for Spark 4.0 and 4.1, which lack them, so the shared TxStateStore implements them with `override` on
 * every line (docs/ARCHITECTURE.md, "Spark lines"). Spark 4.0 and 4.1 never call them; our tests,
 * queries and benchmarks do.
 */
trait StoreApiAddedIn42 {
  def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow]
  def keyExists(key: UnsafeRow, colFamilyName: String): Boolean
  def rangeScan(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair]
  def rangeScanWithMultiValues(startKey: Option[UnsafeRow], endKey: Option[UnsafeRow], colFamilyName: String)
      : StateStoreIterator[UnsafeRowPair]
  def deleteRange(beginKey: UnsafeRow, endKey: UnsafeRow, colFamilyName: String): Unit
  def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair]
  def prefixScanWithMultiValues(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair]
  def allColumnFamilyNames: Set[String]
}

/**
 * The StateStoreProvider members Spark 4.2 added, declared for the lines that lack them, so the
 * shared TxStateStoreProvider implements them with `override` on every line. Those lines never
 * call them.
 */
trait ProviderApiAddedIn42 {
  def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean, loadEmpty: Boolean): StateStore
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore
  def doSnapshotMaintenance(): Unit
  def doCleanupMaintenance(): Unit
}
