package txstate.engine

/**
 * A committed row as RocksDB stores it, as a transaction's read found it: in neither family, or its
 * bytes in the family holding it. Kept for a key the transaction then writes, it is what undoing
 * the commit writes back, with no read at undo time (docs/ARCHITECTURE.md, "Undoing the last
 * commit"). The hot-state cache holds stamped rows in this form too, so a cached read knows as much.
 */
private[engine] sealed trait StoredRow {
  def value: Option[Array[Byte]]
  /** The bytes the key holds in `family`, on its own: it is absent from the other family. */
  def bytesIn(family: StoredRow.Family): Option[Array[Byte]]
  def byteSize: Long
  /** Heap this row holds as the JVM lays it out (compressed oops): its objects and arrays. */
  def heapBytes: Long
}

private[engine] object StoredRow {
  sealed trait Family
  case object StampedFamily extends Family
  case object PlainFamily extends Family

  case object Absent extends StoredRow {
    val value: Option[Array[Byte]] = None
    def bytesIn(family: Family): Option[Array[Byte]] = None
    def byteSize: Long = 0L
    def heapBytes: Long = 0L // one shared object
  }

  /** A storage format 2 row: the stamp, then the value (copied out once, for the read). */
  final case class Stamped(stored: Array[Byte]) extends StoredRow {
    val value: Option[Array[Byte]] = Some(StampedValues.valueOf(stored))
    def bytesIn(family: Family): Option[Array[Byte]] = if (family == StampedFamily) Some(stored) else None
    def byteSize: Long = stored.length.toLong
    // The row, its `Some`, the stored bytes and the value copied out of them.
    def heapBytes: Long = 24L + 16L + arrayBytes(stored.length) + value.fold(0L)(v => arrayBytes(v.length))
  }

  /** A storage format 1 row: the value as it is. */
  final case class Plain(stored: Array[Byte]) extends StoredRow {
    val value: Option[Array[Byte]] = Some(stored)
    def bytesIn(family: Family): Option[Array[Byte]] = if (family == PlainFamily) Some(stored) else None
    def byteSize: Long = stored.length.toLong
    def heapBytes: Long = 24L + 16L + arrayBytes(stored.length) // the row, its `Some`, the stored bytes
  }

  /** A byte array on the heap: a 16-byte header, the bytes, padded to 8. */
  def arrayBytes(length: Int): Long = (16L + length + 7L) & ~7L
}
