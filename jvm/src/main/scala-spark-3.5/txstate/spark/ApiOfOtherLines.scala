package txstate.spark

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

import txstate.compat.StateApi.{KeyStateEncoderSpec, StateSchemaProvider, StateStoreCheckpointInfo, StateStoreIterator}

/**
 * The StateStore members of Spark 4.x that 3.5 lacks, declared here so the shared TxStateStore
 * implements them with `override` (docs/ARCHITECTURE.md, "Spark lines"), and 3.5's own members
 * in their terms: 3.5 has no column families, so its calls go to the default one.
 */
trait StoreApiOfOtherLines extends StateStore with StoreApiAddedIn42 with StoreApiAddedIn43 {
  def get(key: UnsafeRow, colFamilyName: String): UnsafeRow
  def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow]
  def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair]
  def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair]
  def createColFamilyIfAbsent(colFamilyName: String, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useMultipleValuesPerKey: Boolean, isInternal: Boolean): Unit
  def removeColFamilyIfExists(colFamilyName: String): Boolean
  def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit
  def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit
  def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit
  def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit
  def remove(key: UnsafeRow, colFamilyName: String): Unit
  def release(): Unit
  def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo

  override def get(key: UnsafeRow): UnsafeRow = get(key, ColumnFamilies.defaultName)
  override def put(key: UnsafeRow, value: UnsafeRow): Unit = put(key, value, ColumnFamilies.defaultName)
  override def remove(key: UnsafeRow): Unit = remove(key, ColumnFamilies.defaultName)
  override def iterator(): Iterator[UnsafeRowPair] = iterator(ColumnFamilies.defaultName)
  override def prefixScan(prefixKey: UnsafeRow): Iterator[UnsafeRowPair] = prefixScan(prefixKey, ColumnFamilies.defaultName)
}

/**
 * The StateStoreProvider members of Spark 4.x that 3.5 lacks, declared so the shared provider
 * implements them with `override`, and 3.5's own members in their terms: 3.5 passes the number of
 * prefix key columns where 4.x passes a key encoding, and asks for stores by version alone.
 */
trait ProviderApiOfOtherLines extends StateStoreProvider with ProviderApiAddedIn42 {
  def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec, useColumnFamilies: Boolean, storeConfs: StateStoreConf,
      hadoopConf: Configuration, useMultipleValuesPerKey: Boolean, stateSchemaProvider: Option[StateSchemaProvider]): Unit
  def getStore(version: Long, uniqueId: Option[String]): TxStateStore
  def getReadStore(version: Long, uniqueId: Option[String]): TxStateStore
  def upgradeReadStoreToWriteStore(readStore: ReadStateStore, version: Long, uniqueId: Option[String]): StateStore

  override def init(stateStoreId: StateStoreId, keySchema: StructType, valueSchema: StructType,
      numColsPrefixKey: Int, storeConfs: StateStoreConf, hadoopConf: Configuration): Unit =
    init(stateStoreId, keySchema, valueSchema, KeyStateEncoderSpec.ofPrefixColumns(keySchema, numColsPrefixKey),
      useColumnFamilies = false, storeConfs, hadoopConf, useMultipleValuesPerKey = false, None)

  override def getStore(version: Long): TxStateStore = getStore(version, None)

  override def getReadStore(version: Long): TxStateStore = getReadStore(version, None)
}
