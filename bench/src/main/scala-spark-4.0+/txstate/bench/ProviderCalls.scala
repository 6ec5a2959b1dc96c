package txstate.bench

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, ReadStateStore, StateStoreConf,
  StateStoreProvider, StateStoreProviderId, UnsafeRowPair}
import org.apache.spark.sql.types.StructType

/**
 * The provider calls of ProviderRun that differ by Spark line, as Spark 4.0 and newer spell them:
 * a store's key encoding is a `KeyStateEncoderSpec`, and a scan is closed when done.
 */
object ProviderCalls {
  /** A provider for one store of plain keys (no prefix scans, one value per key, no column families). */
  def createAndInit(id: StateStoreProviderId, keySchema: StructType, valueSchema: StructType, conf: StateStoreConf,
      hadoopConf: Configuration): StateStoreProvider =
    StateStoreProvider.createAndInit(
      id,
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      false, // useColumnFamilies
      conf,
      hadoopConf,
      false, // useMultipleValuesPerKey
      None)

  /** Runs `body` over every row of `store`, closing the scan after it. */
  def scan[A](store: ReadStateStore)(body: Iterator[UnsafeRowPair] => A): A = {
    val rows = store.iterator()
    try body(rows) finally rows.close()
  }
}
