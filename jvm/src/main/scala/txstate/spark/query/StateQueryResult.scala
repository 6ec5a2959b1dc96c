package txstate.spark.query

import org.apache.spark.sql.Row

/** What a successful partition answers, by query type. */
sealed trait QueryAnswer extends Serializable

object QueryAnswer {
  /** KeyQuery: the key's value, if the key is present. */
  final case class Value(value: Option[Row]) extends QueryAnswer
  /** MultiKeyQuery: one value (or none) per requested key, in request order. */
  final case class Values(values: Seq[Option[Row]]) extends QueryAnswer
  /** Range, prefix and scan queries: one page, and where the next one starts (None: last page). */
  final case class Page(rows: Seq[KeyValueRow], continuation: Option[String]) extends QueryAnswer
}

/** One row of a page. */
final case class KeyValueRow(key: Row, value: Row)

/** One partition's result (KIP-796's QueryResult): an answer or a failure, with its position. */
final case class QueryResult(
    partition: Int,
    outcome: Either[QueryFailure, QueryAnswer],
    position: Option[Position],
    executionInfo: Seq[String]) {
  def isSuccess: Boolean = outcome.isRight
  def failureReason: Option[FailureReason] = outcome.left.toOption.map(_.reason)
  def failureMessage: Option[String] = outcome.left.toOption.map(_.message)

  /** The answer; throws when the partition failed (check `isSuccess` first). */
  def result: QueryAnswer = outcome.fold(
    f => throw new IllegalStateException(s"[TXSTATE_QUERY_FAILED] partition $partition failed with ${f.reason}: ${f.message}"),
    identity)
}

/**
 * The answer to a request (KIP-796's StateQueryResult): one result per requested partition, their
 * merged position, and a continuation covering every partition that has more rows.
 */
final case class StateQueryResult(
    partitionResults: Map[Int, QueryResult],
    position: MergedPosition,
    continuation: Option[String]) {
  /** The result of a request for exactly one partition. */
  def onlyPartitionResult: QueryResult = partitionResults.values.toList match {
    case only :: Nil => only
    case all => throw new IllegalArgumentException(
      s"[TXSTATE_QUERY_NOT_ONE_PARTITION] the result has ${all.size} partitions " +
        s"(${partitionResults.keys.toSeq.sorted.mkString(", ")}); use partitionResults, or request one partition")
  }
}
