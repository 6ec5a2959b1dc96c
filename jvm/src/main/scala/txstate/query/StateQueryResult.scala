package txstate.query

/** One partition's result (KIP-796's QueryResult): an answer or a failure, with its position. */
private[query] final case class QueryResult(
    partition: Int,
    outcome: Either[QueryFailure, RawAnswer],
    position: Option[Position],
    executionInfo: Seq[String])

/**
 * The answer to a request (KIP-796's StateQueryResult): one result per requested partition, their
 * merged position, and a continuation covering every partition that has more rows. Rows stay in
 * the store's row format; the gateway writes them as JSON directly.
 */
private[query] final case class StateQueryResult(
    partitionResults: Map[Int, QueryResult],
    position: MergedPosition,
    continuation: Option[String])
