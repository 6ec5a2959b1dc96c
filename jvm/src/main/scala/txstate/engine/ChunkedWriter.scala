package txstate.engine

import org.rocksdb.{ColumnFamilyHandle, WriteBatch, WriteOptions}

/**
 * How change records become rows of the database, by storage format:
 * - `Plain` (format 1, replaying a changelog 0.1.0 wrote): values as they are, in `data`;
 * - `Stamped` (format 2): values behind `stamp`, in `stamped`, plus a TTL index entry while the
 *   index is kept (`indexSinceMs`: rows of unknown time are indexed at that time).
 * Either way a key written leaves the other family, so it lives in exactly one.
 */
private[engine] sealed trait RowFormat
private[engine] object RowFormat {
  case object Plain extends RowFormat
  /** Raw writes only ([[ChunkedWriter.raw]]): undo writes back each family's bytes as they were. */
  case object Raw extends RowFormat
  final case class Stamped(stamp: WriteStamp, indexSinceMs: Option[Long]) extends RowFormat

  def of(point: CommitPoint): RowFormat =
    if (point.formatVersion == 1) Plain else Stamped(point.stamp, point.timeIndexSinceMs)
}

/**
 * Applies a stream of writes to one database in WriteBatches of at most about `chunkBytes`, so a
 * version of any size never sits in one native batch. `finish` adds the last writes (commit point,
 * in-flight marker) to the final chunk, so they land in the same atomic write as its data. With
 * `chunkBytes = Long.MaxValue` everything is one atomic write.
 */
private[engine] final class ChunkedWriter(database: LocalDatabase, writeOptions: WriteOptions, chunkBytes: Long,
    format: RowFormat) extends AutoCloseable {
  private var batch = new WriteBatch()
  private val plainRows = format == RowFormat.Plain || database.mayHoldPlainRows
  private val stampedRows = format != RowFormat.Plain || database.mayHoldStampedRows
  format match {
    case RowFormat.Plain => database.notePlainRows()
    case _: RowFormat.Stamped => database.noteStampedRows()
    case RowFormat.Raw => ()
  }

  def apply(change: ChangeRecord): Unit = {
    change match {
      case ChangeRecord.Put(k, v) => format match {
        case RowFormat.Plain =>
          batch.put(database.data, k, v)
          if (stampedRows) batch.delete(database.stamped, k)
        case RowFormat.Raw => throw new IllegalStateException("txstate: a raw writer takes raw writes only")
        case RowFormat.Stamped(stamp, indexSince) =>
          batch.put(database.stamped, k, StampedValues.encode(stamp, v))
          if (plainRows) batch.delete(database.data, k)
          indexSince.foreach(since => batch.put(database.byTime, TimeIndex.key(stamp.knownTimeMs.getOrElse(since), k),
            Array.emptyByteArray))
      }
      case ChangeRecord.Delete(k) =>
        if (stampedRows) batch.delete(database.stamped, k)
        if (plainRows) batch.delete(database.data, k)
      case ChangeRecord.DeleteRange(from, until) =>
        if (stampedRows) batch.deleteRange(database.stamped, from, until)
        if (plainRows) batch.deleteRange(database.data, from, until)
    }
    flushIfFull()
  }

  /** A raw write to one family (undo, index maintenance); None deletes the key. */
  def raw(family: ColumnFamilyHandle, key: Array[Byte], value: Option[Array[Byte]]): Unit = {
    value match {
      case Some(v) => batch.put(family, key, v)
      case None => batch.delete(family, key)
    }
    flushIfFull()
  }

  /** Writes the last chunk together with `last`'s writes. */
  def finish(last: WriteBatch => Unit): Unit = {
    last(batch)
    database.write(writeOptions, batch)
  }

  def close(): Unit = batch.close()

  private def flushIfFull(): Unit =
    if (batch.getDataSize >= chunkBytes) {
      database.write(writeOptions, batch)
      batch.close()
      batch = new WriteBatch()
    }
}
