package txstate.engine

/**
 * The stored rows a transaction read of keys it then wrote: undoing its commit writes them back
 * instead of reading each key from the pre-commit snapshot (docs/ARCHITECTURE.md, "Undoing the last
 * commit"). Filled by one transaction, then only read by the engine's undo. Packed ([[PackedRows]]),
 * because they live as long as the undo: through the next batch.
 */
private[engine] final class PriorRows {
  import PriorRows._

  private var rows = new PackedRows

  /** The first row read wins: every read of a transaction sees the same committed version. */
  def keep(key: BytesKey, row: StoredRow): Unit = row match {
    case StoredRow.Absent => rows.putIfAbsent(key, AbsentTag, Array.emptyByteArray)
    case StoredRow.Stamped(stored) => rows.putIfAbsent(key, StampedTag, stored)
    case StoredRow.Plain(stored) => rows.putIfAbsent(key, PlainTag, stored)
  }

  def get(key: Array[Byte]): Option[StoredRow] = {
    val at = rows.find(new BytesKey(key))
    if (at < 0) None
    else Some(rows.tag(at) match {
      case AbsentTag => StoredRow.Absent
      case StampedTag => StoredRow.Stamped(rows.value(at))
      case _ => StoredRow.Plain(rows.value(at))
    })
  }

  def size: Int = rows.size

  /** Heap held, counted in the transaction's uncommitted bytes (the memory bound). */
  def byteSize: Long = heapBytes

  /** Heap held once kept as a commit's undo (the heap budget's count). */
  def heapBytes: Long = rows.heapBytes

  def clear(): Unit = rows = new PackedRows
}

private[engine] object PriorRows {
  private val AbsentTag = 0
  private val StampedTag = 1
  private val PlainTag = 2
}
