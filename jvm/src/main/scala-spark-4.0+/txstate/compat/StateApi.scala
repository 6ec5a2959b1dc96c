package txstate.compat

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RocksDBKeyStateEncoder, StateStoreConf,
  StateStoreId, StateStoreProvider, UnsafeRowDataEncoder}
import org.apache.spark.sql.types.StructType

/**
 * The parts of Spark's state store API that the shared adapter uses and Spark 3.5 lacks, under one
 * name (docs/ARCHITECTURE.md, "Spark lines"): on 4.0 and newer, Spark's own.
 */
object StateApi {
  type KeyStateEncoderSpec = state.KeyStateEncoderSpec
  val KeyStateEncoderSpec = state.KeyStateEncoderSpec
  type NoPrefixKeyStateEncoderSpec = state.NoPrefixKeyStateEncoderSpec
  val NoPrefixKeyStateEncoderSpec = state.NoPrefixKeyStateEncoderSpec
  type PrefixKeyScanStateEncoderSpec = state.PrefixKeyScanStateEncoderSpec
  val PrefixKeyScanStateEncoderSpec = state.PrefixKeyScanStateEncoderSpec
  type RangeKeyScanStateEncoderSpec = state.RangeKeyScanStateEncoderSpec
  val RangeKeyScanStateEncoderSpec = state.RangeKeyScanStateEncoderSpec
  type StateStoreIterator[A] = state.StateStoreIterator[A]
  type StateStoreCheckpointInfo = state.StateStoreCheckpointInfo
  val StateStoreCheckpointInfo = state.StateStoreCheckpointInfo
  type StateSchemaProvider = state.StateSchemaProvider
  val RecordType = state.RecordType

  /** Spark's key encoder for a family's spec: its bytes order prefix and range scans. */
  type KeyEncoder = RocksDBKeyStateEncoder
  def keyEncoder(spec: KeyStateEncoderSpec, valueSchema: StructType): KeyEncoder =
    spec.toEncoder(new UnsafeRowDataEncoder(spec, valueSchema), false)

  /** Checkpoint format v2 (ids in file names). */
  def checkpointIdsEnabled(conf: StateStoreConf): Boolean = conf.enableStateStoreCheckpointIds

  /** Opens `provider` on one store of one key encoding, as tools outside a query do (migrate). */
  def initProvider(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      spec: KeyStateEncoderSpec, conf: StateStoreConf, hadoopConf: Configuration): Unit =
    provider.init(id, keySchema, valueSchema, spec, false, conf, hadoopConf, false, None)

  /** A read-only view of `version`, by its checkpoint id under format v2. */
  def readStore(provider: StateStoreProvider, version: Long, checkpointId: Option[String]): ReadStateStore =
    provider.getReadStore(version, checkpointId)
}
