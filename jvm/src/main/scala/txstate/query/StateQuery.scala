package txstate.query

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * A question for each requested partition of one store (KIP-796's Query), as the py4j gateway
 * parsed it: keys are already in the store's row format, so a key of the wrong shape fails on the
 * driver before any job runs. A query type the store does not know answers `UNKNOWN_QUERY_TYPE`.
 */
private[query] sealed trait StateQuery {
  /** The query type's name, as the Python API and execution info spell it. */
  def typeName: String

  /** The keys a key or multi-key query looks up (routing sends them to their owning partitions). */
  def lookedUpKeys: Option[Seq[UnsafeRow]] = this match {
    case KeyQuery(key) => Some(Seq(key))
    case MultiKeyQuery(keys) => Some(keys)
    case _ => None
  }
}

/**
 * A query that answers pages of (key, value) rows: at most `limit` per partition, then a
 * continuation; with `changedSince`, only the rows last written at or after it.
 */
private[query] sealed trait PagedQuery extends StateQuery {
  def limit: Int
  def continuation: Option[String]
  def changedSince: Option[ChangedSince]
}

/** The page limits of the protocol; the serving process checks requests against them too. */
private[txstate] object PagedQuery {
  val defaultLimit = 1000
  val maxLimit = 100000
}

/** The value of one key, or none. */
private[query] final case class KeyQuery(key: UnsafeRow) extends StateQuery {
  def typeName: String = "key"
}

/** The values of several keys in one round trip, in the order of the keys. */
private[query] final case class MultiKeyQuery(keys: Seq[UnsafeRow]) extends StateQuery {
  def typeName: String = "multiKey"
}

/**
 * Rows whose key lies between `lower` and `upper` (both inclusive, either open), ascending or
 * descending by the key's Spark SQL ordering (column by column).
 */
private[query] final case class RangeQuery(lower: Option[UnsafeRow], upper: Option[UnsafeRow], descending: Boolean,
    limit: Int, continuation: Option[String], changedSince: Option[ChangedSince]) extends PagedQuery {
  def typeName: String = "range"
}

/** Rows whose first `columns` key columns equal `prefix`. */
private[query] final case class PrefixQuery(prefix: UnsafeRow, columns: Int, limit: Int, continuation: Option[String],
    changedSince: Option[ChangedSince]) extends PagedQuery {
  def typeName: String = "prefix"
}

/** Every row, in the store's key order, page by page. */
private[query] final case class ScanQuery(limit: Int, continuation: Option[String], changedSince: Option[ChangedSince])
    extends PagedQuery {
  def typeName: String = "scan"
}

/** A query type this version does not know (from a newer client): answers `UNKNOWN_QUERY_TYPE`. */
private[query] final case class UnknownQuery(typeName: String) extends StateQuery
