package txstate.query

import java.util.UUID

/**
 * Which store set a request reads: a query's checkpoint, one of its stateful operators (by id, or
 * by the name Spark's operator metadata gives it) and a store of that operator. `runId` names the
 * query run whose loaded stores may answer; without it, a running query on that checkpoint is
 * looked up when the request executes.
 */
private[query] final case class StoreReference(checkpoint: String, runId: Option[UUID], operator: String, storeName: String)

/**
 * A request (KIP-796's StateQueryRequest) as the py4j gateway parsed it (docs/query-protocol.md).
 *
 * @param partitions      the partitions to ask; None: all of them
 * @param bound           the oldest position accepted
 * @param activeOnly      answer only from stores a running query has loaded (else `NOT_ACTIVE`)
 * @param checkpointReads a partition whose store is not loaded is read from the checkpoint files
 *                        at the latest committed batch, instead of answering `NOT_PRESENT`
 * @param timestamped     every row answered says when it was last written (batch and batch time)
 */
private[query] final case class StateQueryRequest(
    store: StoreReference,
    query: StateQuery,
    partitions: Option[Seq[Int]],
    bound: PositionBound,
    activeOnly: Boolean,
    executionInfo: Boolean,
    checkpointReads: Boolean,
    timestamped: Boolean)
