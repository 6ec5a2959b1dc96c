package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.util.NextIterator

/**
 * Spark 4.0's fine-grained replay contract (no checkpoint ids: 4.0 has no checkpoint format v2)
 * over the replay the shared provider implements with them, and its change reader as a plain
 * iterator, so a provider outside Spark's package can implement it.
 */
trait TxStateFineGrainedReplay extends SupportsFineGrainedReplay {
  /** (record type, key, value or null, batch id) of versions `startVersion` to `endVersion`. */
  def changeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)]

  def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long, readOnly: Boolean,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): StateStore

  /** Declared as Spark 4.1+ has it, so the shared provider implements it with `override`. */
  def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): ReadStateStore

  final override def replayStateFromSnapshot(snapshotVersion: Long, endVersion: Long): StateStore =
    replayStateFromSnapshot(snapshotVersion, endVersion, readOnly = false, None, None)

  final override def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long): ReadStateStore =
    replayReadStateFromSnapshot(snapshotVersion, endVersion, None, None)

  final override def getStateStoreChangeDataReader(startVersion: Long, endVersion: Long,
      colFamilyNameOpt: Option[String]): NextIterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)] =
    new TxStateChangeDataReader(changeFeed(startVersion, endVersion, colFamilyNameOpt, None), () => ())
}
