package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

/**
 * Adapts txstate's decoded changelog records to the iterator type Spark's state data source
 * (`readChangeFeed`) consumes. In Spark's package only because that iterator type is Spark-private.
 *
 * @param changes (record type, key, value or null for deletes, batch id) in commit order
 */
final class TxStateChangeDataReader(changes: Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)], onClose: () => Unit)
    extends NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] {

  override protected def getNext(): (RecordType.Value, UnsafeRow, UnsafeRow, Long) =
    if (changes.hasNext) changes.next()
    else {
      finished = true
      null
    }

  override protected def close(): Unit = onClose()
}

object TxStateChangeDataReader {
  val put: RecordType.Value = RecordType.PUT_RECORD
  val delete: RecordType.Value = RecordType.DELETE_RECORD
}

/**
 * Spark's fine-grained replay contract with its change reader expressed as a plain iterator, so a
 * provider outside Spark's package can implement it.
 */
trait TxStateFineGrainedReplay extends SupportsFineGrainedReplay {
  /** (record type, key, value or null, batch id) of versions `startVersion` to `endVersion`. */
  def changeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)]

  final override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String], endVersionStateStoreCkptId: Option[String])
      : NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new TxStateChangeDataReader(changeFeed(startVersion, endVersion, colFamilyNameOpt, endVersionStateStoreCkptId),
      () => ())
}
