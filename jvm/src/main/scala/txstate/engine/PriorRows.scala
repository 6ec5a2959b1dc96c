package txstate.engine

/**
 * The stored rows a transaction read of keys it then wrote: undoing its commit writes them back
 * instead of reading each key from the pre-commit snapshot (docs/ARCHITECTURE.md, "Undoing the last
 * commit"). Filled by one transaction, then only read by the engine's undo.
 */
private[engine] final class PriorRows {
  private val rows = new java.util.HashMap[BytesKey, StoredRow]()
  private var bytes = 0L
  private var heap = 0L

  /** The first row read wins: every read of a transaction sees the same committed version. */
  def keep(key: BytesKey, row: StoredRow): Unit =
    if (rows.putIfAbsent(key, row) == null) {
      bytes += key.bytes.length + row.byteSize + PriorRows.entryOverhead
      heap += PriorRows.entryHeapBytes + row.heapBytes
    }

  def get(key: Array[Byte]): Option[StoredRow] = Option(rows.get(new BytesKey(key)))

  def size: Int = rows.size

  /** Heap held, counted in the transaction's uncommitted bytes (the memory bound). */
  def byteSize: Long = bytes

  /**
   * Heap held once kept as a commit's undo (the heap budget's count): the map's entries and the
   * rows, the stamped row's copied-out value included, but not the keys, which are the same arrays
   * as the undo's touched keys and counted there.
   */
  def heapBytes: Long = heap

  def clear(): Unit = {
    rows.clear()
    bytes = 0L
    heap = 0L
  }
}

private[engine] object PriorRows {
  /** Hash node, table slot and the row object with its array header (estimated). */
  private val entryOverhead = 80L

  /** A hash node (32), its table slot at the map's load (8) and the key wrapper (24), compressed oops. */
  private val entryHeapBytes = 64L
}
