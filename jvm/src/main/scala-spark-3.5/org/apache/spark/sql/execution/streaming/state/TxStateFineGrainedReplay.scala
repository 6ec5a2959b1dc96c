package org.apache.spark.sql.execution.streaming.state

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import txstate.compat.StateApi.RecordType

/**
 * Spark 3.5 has no fine-grained replay (its state data source reads whole versions): the replay
 * and change feed the shared provider implements are declared here, and 3.5 never calls them.
 */
trait TxStateFineGrainedReplay {
  def changeFeed(startVersion: Long, endVersion: Long, colFamilyNameOpt: Option[String],
      endVersionStateStoreCkptId: Option[String]): Iterator[(RecordType.Value, UnsafeRow, UnsafeRow, Long)]

  def replayReadStateFromSnapshot(snapshotVersion: Long, endVersion: Long,
      snapshotVersionStateStoreCkptId: Option[String], endVersionStateStoreCkptId: Option[String]): ReadStateStore
}
