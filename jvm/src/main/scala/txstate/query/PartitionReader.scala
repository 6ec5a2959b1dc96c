package txstate.query

import scala.collection.mutable
import scala.util.control.NonFatal

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{InterpretedOrdering, UnsafeRow}

import txstate.compat.JavaLibrary
import txstate.engine.{CommittedView, KeyRange}
import txstate.spark.{ColumnFamilies, RowCodec}

/**
 * Answers one partition's query from one committed view of its store (wherever the store is:
 * a live provider, or a copy loaded from checkpoint files). Reads only the default column family.
 * Every row answered carries when it was last written, and the query's `changedSince` drops the
 * older ones here, where rows are read, so pages, positions and continuations are those of the
 * filtered rows. Every iterator it opens is closed before it returns.
 */
private[query] object PartitionReader {
  private val familyRange = ColumnFamilies.familyRange(ColumnFamilies.defaultId)

  def read(partition: Int, query: ResolvedQuery, bound: PositionBound, codec: RowCodec, view: CommittedView,
      servedBy: String): RawPartitionResult = {
    val start = System.nanoTime()
    val point = view.point
    val minBatch = bound.minBatch(partition)
    val outcome =
      // A live store that has not committed its first version holds no batch yet: behind, as every
      // partition is before the query's first commit (BeforeFirstCommit), never an empty answer.
      if (point.version == 0) {
        Left(QueryFailure(FailureReason.NotUpToBound,
          s"partition $partition: no batch committed yet: its store has not committed the query's first batch; retry once it has"))
      } else if (point.version - 1 < minBatch) {
        Left(QueryFailure(FailureReason.NotUpToBound,
          s"partition $partition has committed batch ${point.version - 1} (state version ${point.version}), " +
            s"below the requested batch $minBatch; retry once the query has processed it"))
      } else {
        try Right(answer(query, codec, view))
        catch {
          case e: UnknownQueryType => Left(QueryFailure(FailureReason.UnknownQueryType, e.getMessage))
          case NonFatal(e) => Left(QueryFailure(FailureReason.StoreException,
            s"reading partition $partition at version ${point.version} failed: $e"))
        }
      }
    RawPartitionResult(partition, outcome, Some(point), servedBy, System.nanoTime() - start)
  }

  private final class UnknownQueryType(message: String) extends Exception(message)

  private def answer(query: ResolvedQuery, codec: RowCodec, view: CommittedView): RawAnswer = query match {
    case ResolvedQuery.Get(keys, single, _) =>
      RawAnswer.Values(keys.map(k => view.row(stored(codec.encodeKey(k))).filter(kv => query.keeps(kv.written))
        .flatMap(kv => firstValue(codec, kv.value).map(StoredRow(k, _, kv.written)))), single)
    case ResolvedQuery.Scan(page, _) =>
      inKeyOrder(codec, view, query, page, familyRange, _ => true)
    case ResolvedQuery.Prefix(prefix, columns, page, _) =>
      if (codec.supportsPrefixScan && codec.prefixKeyColumns == columns) {
        inKeyOrder(codec, view, query, page, KeyRange.prefix(stored(codec.encodePrefix(prefix))), _ => true)
      } else {
        // Other encodings do not group a prefix's keys together: look at every key.
        val leading = InterpretedOrdering.forSchema(codec.keySchema.fields.take(columns).map(_.dataType).toSeq)
        inKeyOrder(codec, view, query, page, familyRange, key => leading.compare(key, prefix) == 0)
      }
    case ResolvedQuery.Range(lower, upper, descending, page, _) =>
      inSqlOrder(codec, view, query, page, lower, upper, descending)
    case ResolvedQuery.Unknown(name) =>
      throw new UnknownQueryType(s"txstate stores answer key, multiKey, range, prefix and scan queries, not '$name'")
  }

  /**
   * One page of the rows in `range` that `keep` and the query's `changedSince` accept, in the
   * store's byte order of keys. The cursor is the last row returned, so rows filtered out are
   * never a page's end, and the next page skips them again.
   */
  private def inKeyOrder(codec: RowCodec, view: CommittedView, query: ResolvedQuery, page: PageCursor, range: KeyRange,
      keep: UnsafeRow => Boolean): RawAnswer.Page =
    if (page.finished) RawAnswer.Page(Nil, None)
    else {
      val from = page.after.map(a => stored(a :+ 0.toByte)).filter(f => JavaLibrary.compareUnsigned(f, range.from) > 0)
      val rows = mutable.ArrayBuffer.empty[(Array[Byte], StoredRow)]
      val it = view.range(KeyRange(from.getOrElse(range.from), range.until))
      try {
        while (rows.size <= page.limit && it.hasNext) {
          val kv = it.next()
          if (query.keeps(kv.written)) { // the stamp first: a filtered-out row is never decoded
            val encoded = ColumnFamilies.stripPrefix(kv.key)
            val key = codec.decodeKey(encoded).copy()
            if (keep(key)) firstValue(codec, kv.value).foreach(v => rows += ((encoded, StoredRow(key, v, kv.written))))
          }
        }
      } finally it.close()
      pageOf(rows.toSeq, page.limit)
    }

  /**
   * One page of the rows whose keys lie in [lower, upper] in Spark SQL ordering (a bound with
   * fewer columns than the key bounds its leading columns) and that the query's `changedSince`
   * accepts. Byte order is SQL order only for some encodings, so every key is compared; only a
   * page's worth is kept.
   */
  private def inSqlOrder(codec: RowCodec, view: CommittedView, query: ResolvedQuery, page: PageCursor, lower: Option[UnsafeRow],
      upper: Option[UnsafeRow], descending: Boolean): RawAnswer.Page =
    if (page.finished) RawAnswer.Page(Nil, None)
    else {
      val types = codec.keySchema.fields.map(_.dataType).toSeq
      val ordering = InterpretedOrdering.forSchema(types)
      // A bound may hold only the leading key columns (the data source pushes a range on the first
      // column): it is compared on those columns alone.
      def bounding(bound: UnsafeRow) =
        if (bound.numFields >= types.size) (ordering, bound) else (InterpretedOrdering.forSchema(types.take(bound.numFields)), bound)
      val from = lower.map(bounding)
      val until = upper.map(bounding)
      val direction: Ordering[InternalRow] = if (descending) ordering.reverse else ordering
      val after = page.after.map(a => codec.decodeKey(a).copy())
      // A max-heap in reading direction: its head is the row to drop once more than a page is kept.
      val kept = mutable.PriorityQueue.empty[(Array[Byte], StoredRow)](Ordering.by[(Array[Byte], StoredRow), InternalRow](_._2.key)(direction))
      val it = view.range(familyRange)
      try {
        while (it.hasNext) {
          val kv = it.next()
          if (query.keeps(kv.written)) {
            val encoded = ColumnFamilies.stripPrefix(kv.key)
            val key = codec.decodeKey(encoded).copy()
            val inRange = from.forall { case (o, b) => o.compare(key, b) >= 0 } && until.forall { case (o, b) => o.compare(key, b) <= 0 }
            if (inRange && after.forall(direction.compare(key, _) > 0)) {
              firstValue(codec, kv.value).foreach { v =>
                kept.enqueue((encoded, StoredRow(key, v, kv.written)))
                if (kept.size > page.limit + 1) kept.dequeue()
              }
            }
          }
        }
      } finally it.close()
      pageOf(kept.dequeueAll.reverse, page.limit)
    }

  private def pageOf(rows: Seq[(Array[Byte], StoredRow)], limit: Int): RawAnswer.Page = {
    val shown = rows.take(limit)
    RawAnswer.Page(shown.map(_._2), if (rows.size > limit) shown.lastOption.map(_._1) else None)
  }

  private def stored(encodedKey: Array[Byte]): Array[Byte] = ColumnFamilies.withPrefix(ColumnFamilies.defaultId, encodedKey)

  /** The value a reader sees: the row, or the first of a multi-valued key's list. */
  private def firstValue(codec: RowCodec, bytes: Array[Byte]): Option[UnsafeRow] =
    codec.decodeStored(bytes).take(1).map(_.copy()).toList.headOption
}
