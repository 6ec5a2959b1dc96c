package txstate.engine

/**
 * What a transaction's read of the committed version found. A read that went to RocksDB also knows
 * the key's stored bytes and family: kept for a key the transaction then writes, they are what
 * undoing its commit writes back, with no read at undo time (docs/ARCHITECTURE.md, "Undoing the last
 * commit").
 */
private[engine] sealed trait CommittedRow {
  def value: Option[Array[Byte]]
}

/** A committed row as RocksDB stores it: in neither family, or its bytes in the family holding it. */
private[engine] sealed trait StoredRow extends CommittedRow {
  /** The bytes the stored key holds now, on its own: whatever the key's family holds now is not trusted. */
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

/** A value the hot-state cache answered: its stored bytes (the stamp) are not known. */
private[engine] final case class CachedRow(cached: Array[Byte]) extends CommittedRow {
  val value: Option[Array[Byte]] = Some(cached)
}
