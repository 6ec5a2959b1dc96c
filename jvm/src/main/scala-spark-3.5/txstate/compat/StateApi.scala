package txstate.compat

import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, RocksDBStateEncoder, StateStoreConf, StateStoreId,
  StateStoreProvider}
import org.apache.spark.sql.types.StructType
import org.json4s.{JArray, JInt, JObject, JString, JValue}

/**
 * The parts of Spark's state store API that the shared adapter uses and Spark 3.5 lacks, under
 * 4.x's names and shapes (docs/ARCHITECTURE.md, "Spark lines"). 3.5 passes a store's prefix columns
 * as a number (`numColsPrefixKey`); its only key encodings are plain and prefix, and its iterators
 * have no close(): a scan's RocksDB iterator closes when the scan is exhausted or the task ends.
 */
object StateApi {
  /** How a family's keys are encoded: 4.x's `KeyStateEncoderSpec`, with its JSON (the store schema file). */
  sealed trait KeyStateEncoderSpec {
    def keySchema: StructType
    def jsonValue: JValue
  }

  final case class NoPrefixKeyStateEncoderSpec(keySchema: StructType) extends KeyStateEncoderSpec {
    def jsonValue: JValue = JObject("keyStateEncoderType" -> JString("NoPrefixKeyStateEncoderSpec"))
  }

  final case class PrefixKeyScanStateEncoderSpec(keySchema: StructType, numColsPrefixKey: Int) extends KeyStateEncoderSpec {
    def jsonValue: JValue = JObject("keyStateEncoderType" -> JString("PrefixKeyScanStateEncoderSpec"),
      "numColsPrefixKey" -> JInt(numColsPrefixKey))
  }

  /** Never made on 3.5 (no operator range-scans); here so shared code matches on it. */
  final case class RangeKeyScanStateEncoderSpec(keySchema: StructType, orderingOrdinals: Seq[Int]) extends KeyStateEncoderSpec {
    def jsonValue: JValue = JObject("keyStateEncoderType" -> JString("RangeKeyScanStateEncoderSpec"),
      "orderingOrdinals" -> JArray(orderingOrdinals.map(o => JInt(o)).toList))
  }

  object KeyStateEncoderSpec {
    /** What 3.5's `init` passes: the number of prefix columns (0: none). */
    def ofPrefixColumns(keySchema: StructType, numColsPrefixKey: Int): KeyStateEncoderSpec =
      if (numColsPrefixKey > 0) PrefixKeyScanStateEncoderSpec(keySchema, numColsPrefixKey)
      else NoPrefixKeyStateEncoderSpec(keySchema)

    def fromJson(keySchema: StructType, m: Map[String, Any]): KeyStateEncoderSpec =
      m.get("keyStateEncoderType") match {
        case Some("NoPrefixKeyStateEncoderSpec") => NoPrefixKeyStateEncoderSpec(keySchema)
        case Some("PrefixKeyScanStateEncoderSpec") =>
          PrefixKeyScanStateEncoderSpec(keySchema, m("numColsPrefixKey").asInstanceOf[BigInt].toInt)
        case Some("RangeKeyScanStateEncoderSpec") => RangeKeyScanStateEncoderSpec(keySchema,
          m("orderingOrdinals").asInstanceOf[List[_]].map(_.asInstanceOf[BigInt].toInt))
        case other => throw new IllegalArgumentException(s"unknown key state encoder spec $other in a store schema file")
      }
  }

  /**
   * A scan over RocksDB rows. 3.5's callers see a plain `Iterator` and never close it: the rows close
   * when the scan is exhausted, or when the task ends (a scan left unfinished), whichever is first.
   */
  final class StateStoreIterator[A](rows: Iterator[A], cleanup: () => Unit) extends Iterator[A] with AutoCloseable {
    private var closed = false
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => close()))

    override def hasNext: Boolean = !closed && (rows.hasNext || { close(); false })
    override def next(): A = {
      if (!hasNext) throw new NoSuchElementException("the state store scan is exhausted")
      rows.next()
    }
    override def close(): Unit = if (!closed) {
      closed = true
      cleanup()
    }
  }

  /** 4.x's report of a committed version; 3.5 asks for none (no checkpoint format v2). */
  final case class StateStoreCheckpointInfo(partitionId: Int, batchVersion: Long, stateStoreCkptId: Option[String],
      baseStateStoreCkptId: Option[String])

  /** 4.x's schema provider (transformWithState); 3.5 has neither. */
  trait StateSchemaProvider

  /** The state data source's change records (4.x); 3.5 reads no change feed. */
  object RecordType extends Enumeration {
    val PUT_RECORD, DELETE_RECORD, MERGE_RECORD = Value
  }

  /** Spark 3.5's key encoder for a store's prefix columns: the bytes its prefix scans expect. */
  type KeyEncoder = RocksDBStateEncoder
  def keyEncoder(spec: KeyStateEncoderSpec, valueSchema: StructType): KeyEncoder = spec match {
    case PrefixKeyScanStateEncoderSpec(keySchema, n) => RocksDBStateEncoder.getEncoder(keySchema, valueSchema, n)
    case other => RocksDBStateEncoder.getEncoder(other.keySchema, valueSchema, 0)
  }

  /** No checkpoint format v2 on 3.5. */
  def checkpointIdsEnabled(conf: StateStoreConf): Boolean = false

  /** Opens `provider` on one store of one key encoding, as tools outside a query do (migrate). */
  def initProvider(provider: StateStoreProvider, id: StateStoreId, keySchema: StructType, valueSchema: StructType,
      spec: KeyStateEncoderSpec, conf: StateStoreConf, hadoopConf: Configuration): Unit = {
    val prefixColumns = spec match {
      case PrefixKeyScanStateEncoderSpec(_, n) => n
      case _ => 0
    }
    provider.init(id, keySchema, valueSchema, prefixColumns, conf, hadoopConf)
  }

  /** A read-only view of `version`; 3.5 names versions by number only (no checkpoint format v2). */
  def readStore(provider: StateStoreProvider, version: Long, checkpointId: Option[String]): ReadStateStore = {
    require(checkpointId.isEmpty, s"Spark 3.5 has no checkpoint ids (format v2), asked for version $version as $checkpointId")
    provider.getReadStore(version)
  }
}
