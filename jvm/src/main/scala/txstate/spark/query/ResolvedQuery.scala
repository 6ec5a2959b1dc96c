package txstate.spark.query

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import txstate.engine.CommitPoint

/**
 * A query as one partition runs it: keys already in the store's row format (so a malformed key
 * fails on the driver, before any job), and the page cursor of that partition. Shipped to
 * executors, so everything here is serializable.
 */
private[query] sealed trait ResolvedQuery extends Serializable

private[query] object ResolvedQuery {
  /** KeyQuery (one key) or MultiKeyQuery. */
  final case class Get(keys: Seq[UnsafeRow], single: Boolean) extends ResolvedQuery
  final case class Scan(page: PageCursor) extends ResolvedQuery
  /** `prefix` holds the first `columns` key columns. */
  final case class Prefix(prefix: UnsafeRow, columns: Int, page: PageCursor) extends ResolvedQuery
  final case class Range(lower: Option[UnsafeRow], upper: Option[UnsafeRow], descending: Boolean, page: PageCursor)
    extends ResolvedQuery
  final case class Unknown(typeName: String) extends ResolvedQuery
}

/**
 * Where a partition's page starts: at the beginning, after an encoded key, or nowhere (the
 * continuation says the partition has no more rows).
 */
private[query] final case class PageCursor(limit: Int, after: Option[Array[Byte]], finished: Boolean)

/** One partition's answer in the store's row format, before the driver turns rows into Rows. */
private[query] sealed trait RawAnswer extends Serializable

private[query] object RawAnswer {
  final case class Values(values: Seq[Option[UnsafeRow]], single: Boolean) extends RawAnswer
  /** `next`: the encoded key the next page starts after, when there are more rows. */
  final case class Page(rows: Seq[(UnsafeRow, UnsafeRow)], next: Option[Array[Byte]]) extends RawAnswer
}

/** One partition's outcome where it ran: the committed version it read, and where that was. */
private[query] final case class RawPartitionResult(
    partition: Int,
    outcome: Either[QueryFailure, RawAnswer],
    point: Option[CommitPoint],
    servedBy: String,
    elapsedNanos: Long)
