package txstate.spark.query

import org.apache.spark.sql.Row

/**
 * A question for each requested partition of one store (KIP-796's Query). Keys are Rows in the
 * store's key schema. A query type the store does not know answers `UNKNOWN_QUERY_TYPE`.
 */
trait StateQuery extends Serializable {
  /** The query type's name, as the Python API and execution info spell it. */
  def typeName: String
}

/** A query that answers pages of (key, value) rows: at most `limit` per partition, then a continuation. */
sealed trait PagedQuery extends StateQuery {
  def limit: Int
  def continuation: Option[String]
}

object PagedQuery {
  val defaultLimit = 1000
  val maxLimit = 100000
}

/** The value of one key, or none. */
final case class KeyQuery(key: Row) extends StateQuery {
  def typeName: String = "key"
}

object KeyQuery {
  def withKey(key: Row): KeyQuery = KeyQuery(key)
}

/** The values of several keys in one round trip, in the order of the keys. */
final case class MultiKeyQuery(keys: Seq[Row]) extends StateQuery {
  def typeName: String = "multiKey"
}

object MultiKeyQuery {
  def withKeys(keys: Seq[Row]): MultiKeyQuery = MultiKeyQuery(keys)
}

/**
 * Rows whose key lies between `lower` and `upper` (both inclusive, either open), ascending or
 * descending by the key's Spark SQL ordering (column by column).
 */
final case class RangeQuery(
    lower: Option[Row],
    upper: Option[Row],
    descending: Boolean = false,
    limit: Int = PagedQuery.defaultLimit,
    continuation: Option[String] = None) extends PagedQuery {
  def typeName: String = "range"
  def inDescendingOrder: RangeQuery = copy(descending = true)
  def withLimit(n: Int): RangeQuery = copy(limit = n)
  def withContinuation(token: String): RangeQuery = copy(continuation = Some(token))
}

object RangeQuery {
  def withRange(lower: Row, upper: Row): RangeQuery = RangeQuery(Some(lower), Some(upper))
  def withLowerBound(lower: Row): RangeQuery = RangeQuery(Some(lower), None)
  def withUpperBound(upper: Row): RangeQuery = RangeQuery(None, Some(upper))
  def withNoBounds: RangeQuery = RangeQuery(None, None)
}

/** Rows whose leading key columns equal `prefix` (a Row of the first n key columns). */
final case class PrefixQuery(prefix: Row, limit: Int = PagedQuery.defaultLimit, continuation: Option[String] = None)
    extends PagedQuery {
  def typeName: String = "prefix"
  def withLimit(n: Int): PrefixQuery = copy(limit = n)
  def withContinuation(token: String): PrefixQuery = copy(continuation = Some(token))
}

object PrefixQuery {
  def withPrefix(prefix: Row): PrefixQuery = PrefixQuery(prefix)
}

/** Every row, in the store's key order, page by page. */
final case class ScanQuery(limit: Int = PagedQuery.defaultLimit, continuation: Option[String] = None) extends PagedQuery {
  def typeName: String = "scan"
  def withLimit(n: Int): ScanQuery = copy(limit = n)
  def withContinuation(token: String): ScanQuery = copy(continuation = Some(token))
}

object ScanQuery {
  def all: ScanQuery = ScanQuery()
}
