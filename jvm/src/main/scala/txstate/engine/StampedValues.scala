package txstate.engine

/**
 * Storage format 2's stored value: the write stamp, then the value's bytes. The stamp is two
 * unsigned varints of `batchId + 1` and `timeMs + 1` (0: unknown), about 8 bytes for today's
 * epoch milliseconds and batch ids below 16,384.
 */
private[engine] object StampedValues {
  def encode(stamp: WriteStamp, value: Array[Byte]): Array[Byte] = {
    val batch = stamp.batchId + 1
    val time = stamp.timeMs + 1
    val header = varintSize(batch) + varintSize(time)
    val out = new Array[Byte](header + value.length)
    val afterBatch = writeVarint(out, 0, batch)
    writeVarint(out, afterBatch, time)
    System.arraycopy(value, 0, out, header, value.length)
    out
  }

  /** The row a stored value holds (the value copied out of the stored bytes). */
  def decode(key: Array[Byte], stored: Array[Byte]): KeyValue = {
    val (batch, afterBatch) = readVarint(stored, 0)
    val (time, valueStart) = readVarint(stored, afterBatch)
    KeyValue(key, java.util.Arrays.copyOfRange(stored, valueStart, stored.length), WriteStamp(batch - 1, time - 1))
  }

  /** Just the value, its stamp skipped without being decoded (plain reads). */
  def valueOf(stored: Array[Byte]): Array[Byte] =
    java.util.Arrays.copyOfRange(stored, skipVarint(stored, skipVarint(stored, 0)), stored.length)

  /** Just the stamp, without copying the value (expiry checks). */
  def stampOf(stored: Array[Byte]): WriteStamp = {
    val (batch, afterBatch) = readVarint(stored, 0)
    val (time, _) = readVarint(stored, afterBatch)
    WriteStamp(batch - 1, time - 1)
  }

  private def varintSize(n: Long): Int = {
    var size = 1
    var rest = n >>> 7
    while (rest != 0) { size += 1; rest >>>= 7 }
    size
  }

  private def writeVarint(out: Array[Byte], at: Int, n: Long): Int = {
    var i = at
    var rest = n
    while ((rest & ~0x7fL) != 0) {
      out(i) = ((rest & 0x7f) | 0x80).toByte
      rest >>>= 7
      i += 1
    }
    out(i) = rest.toByte
    i + 1
  }

  /** Where the varint starting at `at` ends. */
  private def skipVarint(in: Array[Byte], at: Int): Int = {
    var i = at
    while (i < in.length && i - at < 10 && (in(i) & 0x80) != 0) i += 1
    if (i >= in.length || i - at >= 10) throw EngineErrors.damagedStampedValue(in.length)
    i + 1
  }

  private def readVarint(in: Array[Byte], at: Int): (Long, Int) = {
    var i = at
    var shift = 0
    var result = 0L
    var more = true
    while (more) {
      if (i >= in.length || shift > 63) throw EngineErrors.damagedStampedValue(in.length)
      val b = in(i)
      result |= (b & 0x7fL) << shift
      more = (b & 0x80) != 0
      shift += 7
      i += 1
    }
    (result, i)
  }
}

/**
 * The TTL index (a column family of its own): one empty row per write, keyed by the write's time
 * then the row's key, so the rows older than a cutoff are one range scan from the start. A key
 * rewritten later leaves its older entry behind (stale, never wrong): expiry checks each entry's row.
 */
private[engine] object TimeIndex {
  def key(timeMs: Long, rowKey: Array[Byte]): Array[Byte] = {
    val out = new Array[Byte](8 + rowKey.length)
    java.nio.ByteBuffer.wrap(out).putLong(timeMs)
    System.arraycopy(rowKey, 0, out, 8, rowKey.length)
    out
  }

  def timeOf(indexKey: Array[Byte]): Long = java.nio.ByteBuffer.wrap(indexKey, 0, 8).getLong

  def rowKeyOf(indexKey: Array[Byte]): Array[Byte] = java.util.Arrays.copyOfRange(indexKey, 8, indexKey.length)

  /** Every entry: times are epoch milliseconds, never negative, so each key's first byte is below 0x80. */
  val everything: KeyRange = KeyRange(Array.emptyByteArray, Some(Array(0x80.toByte)))

  /** Entries written before `cutoffMs` (times are never negative: they are epoch milliseconds). */
  def before(cutoffMs: Long): KeyRange = KeyRange(Array.emptyByteArray, Some(key(math.max(cutoffMs, 0L), Array.emptyByteArray)))
}
