package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

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
