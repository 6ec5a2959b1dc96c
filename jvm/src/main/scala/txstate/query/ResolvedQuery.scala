package txstate.query

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

import txstate.engine.{CommitPoint, WriteStamp}

/**
 * A query as one partition runs it: keys already in the store's row format (so a malformed key
 * fails on the driver, before any job), the page cursor of that partition, and which rows to keep
 * by when they were last written. Shipped to executors, so everything here is serializable.
 */
private[query] sealed trait ResolvedQuery extends Serializable {
  /** Only rows last written at or after this; None: every row. */
  def changedSince: Option[ChangedSince]

  /** Whether a row last written at `written` is returned. */
  def keeps(written: WriteStamp): Boolean = changedSince.forall(_.accepts(written))
}

private[query] object ResolvedQuery {
  /** KeyQuery (one key) or MultiKeyQuery; a key whose row `changedSince` refuses reads as absent. */
  final case class Get(keys: Seq[UnsafeRow], single: Boolean, changedSince: Option[ChangedSince] = None)
    extends ResolvedQuery
  final case class Scan(page: PageCursor, changedSince: Option[ChangedSince] = None) extends ResolvedQuery
  /** `prefix` holds the first `columns` key columns. */
  final case class Prefix(prefix: UnsafeRow, columns: Int, page: PageCursor, changedSince: Option[ChangedSince] = None)
    extends ResolvedQuery
  final case class Range(lower: Option[UnsafeRow], upper: Option[UnsafeRow], descending: Boolean, page: PageCursor,
      changedSince: Option[ChangedSince] = None) extends ResolvedQuery
  final case class Unknown(typeName: String) extends ResolvedQuery {
    def changedSince: Option[ChangedSince] = None
  }
}

/**
 * Where a partition's page starts: at the beginning, after an encoded key, or nowhere (the
 * continuation says the partition has no more rows).
 */
private[query] final case class PageCursor(limit: Int, after: Option[Array[Byte]], finished: Boolean)

/** A row read from a store: its key and value in the store's row format, and when it was last written. */
private[query] final case class StoredRow(key: UnsafeRow, value: UnsafeRow, written: WriteStamp)

/** One partition's answer in the store's row format, before the driver turns rows into Rows. */
private[query] sealed trait RawAnswer extends Serializable

private[query] object RawAnswer {
  /** One entry per looked-up key, in their order: its row, or None when it is absent (or filtered out). */
  final case class Values(values: Seq[Option[StoredRow]], single: Boolean) extends RawAnswer
  /** `next`: the encoded key the next page starts after, when there are more rows. */
  final case class Page(rows: Seq[StoredRow], next: Option[Array[Byte]]) extends RawAnswer
}

/** One partition's outcome where it ran: the committed version it read, and where that was. */
private[query] final case class RawPartitionResult(
    partition: Int,
    outcome: Either[QueryFailure, RawAnswer],
    point: Option[CommitPoint],
    servedBy: String,
    elapsedNanos: Long)
