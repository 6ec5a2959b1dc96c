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
}

private[engine] object StoredRow {
  sealed trait Family
  case object StampedFamily extends Family
  case object PlainFamily extends Family

  case object Absent extends StoredRow {
    val value: Option[Array[Byte]] = None
    def bytesIn(family: Family): Option[Array[Byte]] = None
    def byteSize: Long = 0L
  }

  /** A storage format 2 row: the stamp, then the value (copied out once, for the read). */
  final case class Stamped(stored: Array[Byte]) extends StoredRow {
    val value: Option[Array[Byte]] = Some(StampedValues.valueOf(stored))
    def bytesIn(family: Family): Option[Array[Byte]] = if (family == StampedFamily) Some(stored) else None
    def byteSize: Long = stored.length.toLong
  }

  /** A storage format 1 row: the value as it is. */
  final case class Plain(stored: Array[Byte]) extends StoredRow {
    val value: Option[Array[Byte]] = Some(stored)
    def bytesIn(family: Family): Option[Array[Byte]] = if (family == PlainFamily) Some(stored) else None
    def byteSize: Long = stored.length.toLong
  }
}
