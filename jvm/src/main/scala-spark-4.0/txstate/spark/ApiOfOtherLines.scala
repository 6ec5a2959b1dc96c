package txstate.spark

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._

/**
 * StateStore members that Spark 4.1 to 4.3 have and 4.0 lacks, declared here so the shared
 * TxStateStore implements them with `override` on every line (docs/ARCHITECTURE.md, "Spark lines").
 * Spark 4.0 never calls them; our tests, queries and benchmarks do.
 */
trait StoreApiOfOtherLines extends StoreApiAddedIn42 with StoreApiAddedIn43 {
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
trait ProviderApiOfOtherLines extends ProviderApiAddedIn42 {
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String]): StateStore
}
