package txstate.query.source

import java.util.UUID

import org.apache.spark.broadcast.Broadcast
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.util.SerializableConfiguration

import txstate.query.follow.{FollowerQueries, Followers}
import txstate.query.{FailureReason, LiveTask, PositionBound, RawAnswer, RawPartitionResult, ResolvedQuery,
  StateQueryExecutor, StoreDescription, StoredRow}

/** One partition of a read, with the executor that holds its store, if a running query does. */
private[source] final case class StatePartition(
    description: StoreDescription,
    partition: Int,
    runId: Option[UUID],
    query: ResolvedQuery,
    bound: PositionBound,
    requireActive: Boolean,
    checkpointReads: Boolean,
    waitMs: Long,
    location: Option[String],
    follower: Option[String] = None,
    timestamps: Boolean = false) extends InputPartition {
  override def preferredLocations(): Array[String] = location.toArray
}

private[source] final class StateReaderFactory(hadoopConf: Broadcast[SerializableConfiguration])
    extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    new StatePartitionReader(partition.asInstanceOf[StatePartition], hadoopConf.value.value)
}

/**
 * Reads one partition where its task runs (a follower's partitions on the driver, see
 * [[FollowerScan]]): from the live store of the running query when this
 * executor holds it (a task scheduled elsewhere finds none), else from the checkpoint files'
 * latest committed batch, as the query API does. All rows come from one committed version (one
 * view), so they are buffered: a read holds one partition's answer in memory, which filters and
 * LIMIT keep small. A partition behind `minBatchId` is asked again until `waitMs` has passed.
 */
private[source] final class StatePartitionReader(task: StatePartition, hadoopConf: org.apache.hadoop.conf.Configuration)
    extends PartitionReader[InternalRow] {
  private val rows: Iterator[InternalRow] = {
    val started = System.currentTimeMillis()
    var answer = read()
    while (notUpToBound(answer) && System.currentTimeMillis() - started < task.waitMs) {
      Thread.sleep(100)
      answer = read()
    }
    toRows(answer, System.currentTimeMillis() - started)
  }
  private var current: InternalRow = _

  override def next(): Boolean =
    if (rows.hasNext) { current = rows.next(); true } else false

  override def get(): InternalRow = current

  override def close(): Unit = ()

  private def read(): RawPartitionResult = task.follower match {
    case Some(id) => FollowerQueries.readPartition(Followers.get(id), task.partition, task.query, task.bound)
    case None => readQueryStore()
  }

  private def readQueryStore(): RawPartitionResult = {
    val d = task.description
    task.runId.flatMap(id => LiveTask(d.stateRoot, d.operatorId, task.partition, d.storeName, id, task.query,
      task.bound).run()).getOrElse(StateQueryExecutor.notLoaded(d, task.partition, task.query, task.bound,
      task.requireActive, task.checkpointReads, task.runId, hadoopConf))
  }

  private def notUpToBound(r: RawPartitionResult) = r.outcome.left.exists(_.reason == FailureReason.NotUpToBound)

  private def toRows(r: RawPartitionResult, waitedMs: Long): Iterator[InternalRow] = {
    val found: Seq[StoredRow] = r.outcome match {
      case Left(failure) => throw SourceErrors.partitionFailed(failure.reason, failure.message,
        if (failure.reason == FailureReason.NotUpToBound) waitedMs else 0L)
      case Right(RawAnswer.Values(values, _)) => values.flatten
      case Right(RawAnswer.Page(page, _)) => page
    }
    val batch = r.point.fold(-1L)(_.version - 1)
    val commitMicros = r.point.fold(0L)(_.commitTimeMs * 1000L)
    found.iterator.map { row =>
      if (!task.timestamps) InternalRow(row.key, row.value, task.partition, batch, commitMicros)
      else InternalRow(row.key, row.value, task.partition, batch, commitMicros, row.written.knownBatch.map(Long.box).orNull,
        row.written.knownTimeMs.map(Long.box).orNull)
    }
  }
}
