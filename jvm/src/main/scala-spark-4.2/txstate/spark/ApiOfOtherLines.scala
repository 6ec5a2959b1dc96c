package txstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * The StateStore member Spark 4.3 has and 4.2 lacks, declared here so the shared TxStateStore
 * implements it with `override` on every line (docs/ARCHITECTURE.md, "Spark lines"). Spark 4.2
 * never calls it.
 */
trait StoreApiOfOtherLines {
  def registerColFamily(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit
}

/**
 * StateStoreProvider members of Spark 4.0, 4.1 and 4.3 that 4.2 lacks, declared here so the shared
 * TxStateStoreProvider implements them with `override` on every line. Spark 4.2 never calls them.
 */
trait ProviderApiOfOtherLines {
  def getStore(version: Long, uniqueId: Option[String]): StateStore
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String]): StateStore
  def doSnapshotMaintenance(): Unit
  def doCleanupMaintenance(): Unit
}
