package txstate.engine

import org.rocksdb.{WriteBatch, WriteOptions}

/**
 * Applies a stream of writes to one database in WriteBatches of at most about `chunkBytes`, so a
 * version of any size never sits in one native batch. `finish` adds the last writes (commit point,
 * in-flight marker) to the final chunk, so they land in the same atomic write as its data. With
 * `chunkBytes = Long.MaxValue` everything is one atomic write.
 */
private[engine] final class ChunkedWriter(database: LocalDatabase, writeOptions: WriteOptions, chunkBytes: Long)
    extends AutoCloseable {
  private var batch = new WriteBatch()

  def apply(change: ChangeRecord): Unit = {
    change match {
      case ChangeRecord.Put(k, v) => batch.put(database.data, k, v)
      case ChangeRecord.Delete(k) => batch.delete(database.data, k)
      case ChangeRecord.DeleteRange(from, until) => batch.deleteRange(database.data, from, until)
    }
    if (batch.getDataSize >= chunkBytes) {
      database.db.write(writeOptions, batch)
      batch.close()
      batch = new WriteBatch()
    }
  }

  /** Writes the last chunk together with `last`'s writes. */
  def finish(last: WriteBatch => Unit): Unit = {
    last(batch)
    database.db.write(writeOptions, batch)
  }

  def close(): Unit = batch.close()
}
