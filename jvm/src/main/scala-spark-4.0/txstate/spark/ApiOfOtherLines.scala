package txstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * StateStore members that Spark 4.1 to 4.3 have and 4.0 lacks, declared here so the shared TxStateStore implements
 * them with `override` on every line (docs/ARCHITECTURE.md, "Spark lines"). Spark 4.0 never calls
 * them; our tests, queries and benchmarks do.
 */
trait StoreApiOfOtherLines {
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
  def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit
  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit
  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit
  def release(): Unit
}

/**
 * StateStoreProvider members that Spark 4.1 to 4.3 have and 4.0 lacks, declared here so the shared
 * TxStateStoreProvider implements them with `override` on every line. Spark 4.0 never calls
 * them; on 4.0 a write store opened by the task that holds a read store takes it over instead
 * (TxStateStoreProvider.open).
 */
trait ProviderApiOfOtherLines {
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String]): StateStore
  def getStore(version: Long, uniqueId: Option[String], forceSnapshotOnCommit: Boolean, loadEmpty: Boolean): StateStore
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore
  def doSnapshotMaintenance(): Unit
  def doCleanupMaintenance(): Unit
}
