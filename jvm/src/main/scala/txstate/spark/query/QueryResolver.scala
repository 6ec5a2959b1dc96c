package txstate.spark.query

import scala.util.control.NonFatal

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

import txstate.spark.StoreSchema

/**
 * Turns a request's query into what each partition runs: Rows become the store's UnsafeRows here,
 * on the driver, so a key of the wrong shape is an error for the caller, not a failed job.
 */
private[query] object QueryResolver {
  def resolve(query: StateQuery, schema: StoreSchema, partitions: Seq[Int]): Map[Int, ResolvedQuery] = {
    def forAll(q: ResolvedQuery) = partitions.map(_ -> q).toMap
    def paged(q: PagedQuery)(build: PageCursor => ResolvedQuery): Map[Int, ResolvedQuery] = {
      if (q.limit < 1 || q.limit > PagedQuery.maxLimit) {
        throw new IllegalArgumentException(
          s"[TXSTATE_QUERY_BAD_LIMIT] page limit must be between 1 and ${PagedQuery.maxLimit}, got ${q.limit}")
      }
      val token = q.continuation.map(ContinuationToken.decode(_, q.typeName))
      partitions.map(p => p -> build(token.fold(PageCursor(q.limit, None, finished = false))(_.cursor(p, q.limit)))).toMap
    }
    val keys = schema.keySchema
    query match {
      case KeyQuery(key) => forAll(ResolvedQuery.Get(Seq(toUnsafe(key, keys, "key")), single = true))
      case MultiKeyQuery(ks) =>
        forAll(ResolvedQuery.Get(ks.zipWithIndex.map { case (k, i) => toUnsafe(k, keys, s"key ${i + 1}") }, single = false))
      case q: ScanQuery => paged(q)(ResolvedQuery.Scan)
      case q: PrefixQuery =>
        val columns = q.prefix.length
        if (columns < 1 || columns > keys.length) {
          throw new IllegalArgumentException(
            s"[TXSTATE_QUERY_BAD_KEY] a prefix has 1 to ${keys.length} leading key columns of " +
              s"${keys.simpleString}, got $columns")
        }
        val prefix = toUnsafe(q.prefix, StructType(keys.fields.take(columns)), "prefix")
        paged(q)(ResolvedQuery.Prefix(prefix, columns, _))
      case q: RangeQuery =>
        val lower = q.lower.map(toUnsafe(_, keys, "lower bound"))
        val upper = q.upper.map(toUnsafe(_, keys, "upper bound"))
        paged(q)(ResolvedQuery.Range(lower, upper, q.descending, _))
      case other => forAll(ResolvedQuery.Unknown(other.typeName))
    }
  }

  /** A Row in `schema` as the store's row format; a clear error when it does not fit. */
  def toUnsafe(row: Row, schema: StructType, what: String): UnsafeRow = {
    def bad(why: String) = new IllegalArgumentException(
      s"[TXSTATE_QUERY_BAD_KEY] the $what does not match the store's key schema ${schema.simpleString}: $why")
    if (row == null) throw bad("it is null")
    if (row.length != schema.length) throw bad(s"it has ${row.length} columns, the schema ${schema.length}")
    val internal =
      try CatalystTypeConverters.createToCatalystConverter(schema)(row)
      catch { case NonFatal(e) => throw bad(e.toString) }
    val projection = projections.get(schema).getOrElse {
      val created = UnsafeProjection.create(schema)
      projections.put(schema, created)
      created
    }
    // A projection reuses its output row: one caller at a time, and a copy out.
    try projection.synchronized(projection.apply(internal.asInstanceOf[org.apache.spark.sql.catalyst.InternalRow]).copy())
    catch { case NonFatal(e) => throw bad(e.toString) }
  }

  // Creating a projection generates and compiles code (milliseconds); a point query must not pay that.
  private val projections = new BoundedCache[StructType, UnsafeProjection](64)
}
