package txstate.engine

/**
 * The committed rows a transaction read of keys it has not written yet, so that the write which
 * follows answers from here instead of a second RocksDB lookup. Spark's aggregation reads every
 * key of a batch (restoring the state) before it writes any of them (saving it), so one
 * remembered key is not enough. Bounded: past `limitBytes` (keys, rows and an allowance per entry)
 * new reads are not remembered, which costs only the second lookup. A key leaves once written, since
 * the transaction's own buffer answers it from then on.
 *
 * The rows are the committed version the transaction started from: anything that changes that
 * version under the transaction (an early commit) must [[clear]] it.
 */
private[engine] final class RowsRead(limitBytes: Long) {
  private val rows = new java.util.HashMap[BytesKey, StoredRow]()
  private var bytes = 0L

  def get(key: BytesKey): StoredRow = rows.get(key)

  def remember(key: BytesKey, row: StoredRow): Unit = {
    val size = sizeOf(key, row)
    if (bytes + size <= limitBytes && rows.put(key, row) == null) bytes += size
  }

  def forget(key: BytesKey): Unit = {
    val row = rows.remove(key)
    if (row != null) bytes -= sizeOf(key, row)
  }

  def byteSize: Long = bytes

  def clear(): Unit = {
    rows.clear()
    bytes = 0L
  }

  private def sizeOf(key: BytesKey, row: StoredRow): Long = RowsRead.EntryBytes + key.bytes.length + row.heapBytes
}

private[engine] object RowsRead {
  /** What one transaction remembers at most: counted in the executor's heap budget while it runs. */
  val LimitBytes: Long = 8L << 20
  /** A hash map entry, its key object and the key array's header, beside the key's bytes. */
  val EntryBytes = 72L
}
