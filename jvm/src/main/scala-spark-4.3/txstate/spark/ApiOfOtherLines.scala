package txstate.spark

import org.apache.spark.sql.execution.streaming.state._

/** Spark 4.3 has every StateStore member another line has (docs/ARCHITECTURE.md, "Spark lines"). */
trait StoreApiOfOtherLines

/**
 * StateStoreProvider members of Spark 4.0 and 4.1 that 4.3 lacks, declared here so the shared
 * TxStateStoreProvider implements them with `override` on every line. Spark 4.3 never calls them.
 */
trait ProviderApiOfOtherLines {
  def getStore(version: Long, uniqueId: Option[String]): StateStore
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String]): StateStore
}
