package txstate.spark

import org.apache.spark.sql.execution.streaming.state._

/** StateStore members of Spark 4.3 that 4.2 lacks (docs/ARCHITECTURE.md, "Spark lines"). */
trait StoreApiOfOtherLines extends StoreApiAddedIn43

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
