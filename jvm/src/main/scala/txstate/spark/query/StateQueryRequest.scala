package txstate.spark.query

import java.util.UUID

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQuery

/**
 * Which store set a request reads: a query's checkpoint, one of its stateful operators (by id, or
 * by the name Spark's operator metadata gives it) and a store of that operator. `runId` names the
 * query run whose loaded stores may answer; without it, a running query on that checkpoint is
 * looked up when the request executes.
 */
final case class StoreReference(checkpoint: String, runId: Option[UUID], operator: String, storeName: String)

/**
 * A request (KIP-796's StateQueryRequest), immutable: every `with…` returns a new request.
 *
 * @param partitions     the partitions to ask; None: all of them
 * @param bound          the oldest position accepted
 * @param activeOnly     answer only from stores a running query has loaded (else `NOT_ACTIVE`)
 * @param checkpointReads a partition whose store is not loaded is read from the checkpoint files
 *                        at the latest committed batch, instead of answering `NOT_PRESENT`
 */
final case class StateQueryRequest(
    store: StoreReference,
    query: Option[StateQuery] = None,
    partitions: Option[Seq[Int]] = None,
    bound: PositionBound = PositionBound.Unbounded,
    activeOnly: Boolean = false,
    executionInfo: Boolean = false,
    checkpointReads: Boolean = false) {
  def withQuery(q: StateQuery): StateQueryRequest = copy(query = Some(q))
  def withPartitions(ps: Seq[Int]): StateQueryRequest = copy(partitions = Some(ps.distinct.sorted))
  def withAllPartitions: StateQueryRequest = copy(partitions = None)
  def withPositionBound(b: PositionBound): StateQueryRequest = copy(bound = b)
  def requireActive: StateQueryRequest = copy(activeOnly = true)
  def enableExecutionInfo: StateQueryRequest = copy(executionInfo = true)
  def allowCheckpointReads: StateQueryRequest = copy(checkpointReads = true)

  def execute(spark: SparkSession): StateQueryResult = StateQueryExecutor.execute(spark, this)
}

object StateQueryRequest {
  /** The stores of a (running) streaming query. */
  def inStore(query: StreamingQuery, operator: String, storeName: String): StateQueryRequest = query match {
    case wrapper: StreamingQueryWrapper =>
      val execution = wrapper.streamingQuery
      StateQueryRequest(StoreReference(execution.resolvedCheckpointRoot, Some(execution.runId), operator, storeName))
    case other =>
      throw new IllegalArgumentException(
        s"[TXSTATE_QUERY_UNSUPPORTED_TARGET] cannot query the state of a ${other.getClass.getName}; " +
          "pass a streaming query started in this Spark session (classic, not Spark Connect) or its checkpoint path")
  }

  /** The stores under a checkpoint location (of a running or a stopped query). */
  def inStore(checkpoint: String, operator: String, storeName: String): StateQueryRequest =
    StateQueryRequest(StoreReference(checkpoint, None, operator, storeName))

  def inStore(query: StreamingQuery): StateQueryRequest = inStore(query, "0", "default")
}
