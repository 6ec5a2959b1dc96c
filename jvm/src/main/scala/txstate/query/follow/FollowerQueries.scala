package txstate.query.follow

import org.apache.hadoop.conf.Configuration

import txstate.query.{FailureReason, PartitionReader, PositionBound, QueryFailure,
  QueryResolver, RawPartitionResult, ResolvedQuery, StateQueryExecutor, StateQueryRequest, StateQueryResult}

/**
 * Runs a request on a follower's replicas, in this JVM, with the same readers, failure reasons and
 * positions as queries of live stores (docs/ARCHITECTURE.md, "Followers"). Key lookups without
 * explicit partitions go to the partition owning each key when the store's placement is known.
 */
private[query] object FollowerQueries {
  /** How long a read waits for a replica that is re-anchoring on a snapshot. */
  private val viewWaitMs = 2000L

  def execute(follower: Follower, request: StateQueryRequest, hadoopConf: => Configuration): StateQueryResult = {
    val d = follower.description
    val requested = request.partitions.getOrElse(routed(follower, request))
    val (existing, missing) = requested.partition(p => p >= 0 && p < d.numPartitions)
    val resolved = QueryResolver.resolve(request.query, existing)
    val answers = existing.map(p => readPartition(follower, p, resolved(p), request.bound)) ++ missing.map(p => failed(p, FailureReason.DoesNotExist,
      s"store '${d.storeName}' of operator ${d.operatorId} has partitions 0 to ${d.numPartitions - 1}, not $p"))
    StateQueryExecutor.assemble(d, request.query, request, answers, hadoopConf)
  }

  /** One partition's answer from the follower's replica (`NOT_PRESENT` when it holds none). */
  def readPartition(follower: Follower, p: Int, query: ResolvedQuery, bound: PositionBound): RawPartitionResult =
    if (!follower.follows(p)) {
      failed(p, FailureReason.NotPresent, s"follower ${follower.id} does not follow partition $p (it follows " +
        s"${follower.partitions.mkString(", ")}); start a follower of that partition")
    } else {
      follower.read(p, viewWaitMs)(view =>
        PartitionReader.read(p, query, bound, follower.codec, view, s"follower ${follower.id}"))
        .getOrElse(failed(p, FailureReason.NotPresent, s"follower ${follower.id} holds no committed batch of " +
          s"partition $p yet (the leader has committed none, or the follower is re-anchoring it); retry shortly"))
    }

  private def routed(follower: Follower, request: StateQueryRequest): Seq[Int] =
    (request.query.lookedUpKeys, follower.description.placement) match {
      case (Some(ks), Some(placement)) => ks.map(placement.partitionOf).distinct.sorted
      case _ => follower.partitions
    }

  private def failed(partition: Int, reason: FailureReason, message: String) =
    RawPartitionResult(partition, Left(QueryFailure(reason, message)), None, "follower", 0L)
}
