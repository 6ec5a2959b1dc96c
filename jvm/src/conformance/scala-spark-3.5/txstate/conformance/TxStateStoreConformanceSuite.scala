package txstate.conformance

import org.apache.spark.sql.execution.streaming.state.StateStoreId

import txstate.compat.StateApi.KeyStateEncoderSpec
import txstate.spark.TxStateStoreProvider

/**
 * Spark 3.5's conformance suite against our provider: its providers as 3.5's suite asks for them
 * (prefix key columns by number, no column families).
 */
class TxStateStoreConformanceSuite extends TxStateConformanceBase {
  def newStoreProvider(): TxStateStoreProvider = newProvider()

  def newStoreProvider(storeId: StateStoreId): TxStateStoreProvider = newProvider(storeId)

  def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): TxStateStoreProvider =
    newProvider(sqlConf = getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory))

  def newStoreProvider(numPrefixCols: Int): TxStateStoreProvider =
    newProvider(keyStateEncoderSpec = KeyStateEncoderSpec.ofPrefixColumns(keySchema, numPrefixCols))

  def getLatestData(storeProvider: TxStateStoreProvider): Set[((String, Int), Int)] =
    readData(storeProvider, -1, useColumnFamilies = false)

  def getData(provider: TxStateStoreProvider, version: Int): Set[((String, Int), Int)] =
    readData(provider, version, useColumnFamilies = false)
}
