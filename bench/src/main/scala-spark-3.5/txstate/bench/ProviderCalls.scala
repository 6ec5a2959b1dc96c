package txstate.bench

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStoreConf, StateStoreProvider,
  StateStoreProviderId, UnsafeRowPair}
import org.apache.spark.sql.types.StructType

/**
 * The provider calls of ProviderRun that differ by Spark line, as Spark 3.5 spells them: a store
 * without prefix columns is `numColsPrefixKey = 0`, and a scan is a plain `Iterator`.
 */
object ProviderCalls {
  /** A provider for one store of plain keys (no prefix scans, one value per key, no column families). */
  def createAndInit(id: StateStoreProviderId, keySchema: StructType, valueSchema: StructType, conf: StateStoreConf,
      hadoopConf: Configuration): StateStoreProvider =
    StateStoreProvider.createAndInit(id, keySchema, valueSchema, 0, conf, hadoopConf)

  /** Runs `body` over every row of `store`. 3.5's scans have no close(): an exhausted one releases itself. */
  def scan[A](store: ReadStateStore)(body: Iterator[UnsafeRowPair] => A): A = body(store.iterator())
}
