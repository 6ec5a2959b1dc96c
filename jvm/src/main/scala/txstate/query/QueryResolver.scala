package txstate.query

import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * Turns a request's query into what each partition runs (its page cursor from the continuation),
 * and keys parsed from JSON into the store's UnsafeRows, on the driver: a key of the wrong shape
 * or a bad limit is an error for the caller, not a failed job.
 */
private[query] object QueryResolver {
  def resolve(query: StateQuery, partitions: Seq[Int]): Map[Int, ResolvedQuery] = {
    def forAll(q: ResolvedQuery) = partitions.map(_ -> q).toMap
    def paged(q: PagedQuery)(build: PageCursor => ResolvedQuery): Map[Int, ResolvedQuery] = {
      if (q.limit < 1 || q.limit > PagedQuery.maxLimit) throw QueryErrors.badLimit(q.limit, PagedQuery.maxLimit)
      val token = q.continuation.map(ContinuationToken.decode(_, q.typeName))
      partitions.map(p => p -> build(token.fold(PageCursor(q.limit, None, finished = false))(_.cursor(p, q.limit)))).toMap
    }
    query match {
      case KeyQuery(key) => forAll(ResolvedQuery.Get(Seq(key), single = true))
      case MultiKeyQuery(keys) => forAll(ResolvedQuery.Get(keys, single = false))
      case q: ScanQuery => paged(q)(ResolvedQuery.Scan(_, q.changedSince))
      case q: PrefixQuery => paged(q)(ResolvedQuery.Prefix(q.prefix, q.columns, _, q.changedSince))
      case q: RangeQuery => paged(q)(ResolvedQuery.Range(q.lower, q.upper, q.descending, _, q.changedSince))
      case UnknownQuery(name) => forAll(ResolvedQuery.Unknown(name))
    }
  }

  /** `row` (values of `schema`, as [[InternalJson]] reads them) in the store's row format. */
  def toUnsafe(row: InternalRow, schema: StructType, what: String): UnsafeRow = {
    val projection = projections.get(schema).getOrElse {
      val created = UnsafeProjection.create(schema)
      projections.put(schema, created)
      created
    }
    // A projection reuses its output row: one caller at a time, and a copy out.
    try projection.synchronized(projection.apply(row).copy())
    catch { case NonFatal(e) => throw QueryErrors.badKey(what, s"it does not fit ${schema.simpleString}: $e") }
  }

  // Creating a projection generates and compiles code (milliseconds); a point query must not pay that.
  private val projections = new BoundedCache[StructType, UnsafeProjection](64)
}
