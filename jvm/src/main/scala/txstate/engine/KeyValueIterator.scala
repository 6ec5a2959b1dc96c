package txstate.engine

import org.rocksdb.{ReadOptions, RocksIterator, Slice}

/**
 * A key-value pair read from a store, with when it was last written (unknown for rows of storage
 * format 1 and for uncommitted writes). The arrays are owned by the caller.
 */
final case class KeyValue(key: Array[Byte], value: Array[Byte], written: WriteStamp = WriteStamp.unknown)

/**
 * An iterator over native resources: it closes them when exhausted, and `close()` may be called
 * at any time (and more than once) to release them early.
 */
trait KeyValueIterator extends Iterator[KeyValue] with AutoCloseable

object KeyValueIterator {
  def empty: KeyValueIterator = of(Vector.empty)

  /** Rows already in memory. */
  def of(rows: Seq[KeyValue]): KeyValueIterator = new KeyValueIterator {
    private val it = rows.iterator
    def hasNext: Boolean = it.hasNext
    def next(): KeyValue =
      if (it.hasNext) it.next() else throw new NoSuchElementException("txstate: iterator is exhausted")
    def close(): Unit = ()
  }
}

/**
 * Committed rows of one RocksDB column family within a key range; owns its native objects.
 * `stamped`: the family stores format 2's stamped values, decoded into the row and its stamp.
 */
private[engine] final class RocksRangeIterator(open: ReadOptions => RocksIterator, range: KeyRange, stamped: Boolean)
    extends KeyValueIterator {
  private val upperBound: Option[Slice] = range.until.map(new Slice(_))
  private val readOptions = {
    val ro = new ReadOptions()
    upperBound.foreach(ro.setIterateUpperBound)
    ro
  }
  private val it = open(readOptions)
  private var closed = false
  it.seek(range.from)

  def hasNext: Boolean = !closed && {
    val valid = it.isValid
    if (!valid) { it.status(); close() }
    valid
  }

  def next(): KeyValue = {
    if (!hasNext) throw new NoSuchElementException("txstate: iterator is exhausted")
    val kv = if (stamped) StampedValues.decode(it.key(), it.value()) else KeyValue(it.key(), it.value())
    it.next()
    kv
  }

  def close(): Unit = if (!closed) {
    closed = true
    it.close()
    readOptions.close()
    upperBound.foreach(_.close())
  }
}

/**
 * Two iterators over disjoint key sets (format 2's stamped rows and the plain rows of format 1 not
 * yet rewritten), merged in key order.
 */
private[engine] final class DisjointMergeIterator(a: KeyValueIterator, b: KeyValueIterator) extends KeyValueIterator {
  private var headA: Option[KeyValue] = None
  private var headB: Option[KeyValue] = None

  def hasNext: Boolean = {
    if (headA.isEmpty && a.hasNext) headA = Some(a.next())
    if (headB.isEmpty && b.hasNext) headB = Some(b.next())
    headA.isDefined || headB.isDefined
  }

  def next(): KeyValue = {
    if (!hasNext) throw new NoSuchElementException("txstate: iterator is exhausted")
    val takeA = headB.isEmpty || headA.exists(x => ByteKeys.compare(x.key, headB.get.key) < 0)
    if (takeA) { val kv = headA.get; headA = None; kv }
    else { val kv = headB.get; headB = None; kv }
  }

  def close(): Unit = try a.close() finally b.close()
}

/**
 * Read-your-writes view: committed rows from RocksDB merged with a transaction's buffer. Buffered
 * values win, tombstones hide, and buffered range deletes hide every committed row they cover.
 * Both sides are as of the iterator's creation: RocksDB iterators read an implicit snapshot, the
 * buffer side is a [[BufferView]], and no early commit happens while an iterator is open.
 */
private[engine] final class MergedIterator(
    committed: KeyValueIterator,
    buffer: WriteBuffer,
    range: KeyRange,
    onClose: KeyValueIterator => Unit) extends KeyValueIterator {
  private val bufferedWrites = buffer.view(range)
  private var nextBuffered: java.util.Map.Entry[Array[Byte], BufferedWrite] = advanceBuffered()
  private var nextCommitted: Option[KeyValue] = advanceCommitted()
  private var pending: Option[KeyValue] = None
  private var closed = false

  private def advanceBuffered() = if (bufferedWrites.hasNext) bufferedWrites.next() else null

  private def advanceCommitted(): Option[KeyValue] = {
    var found: Option[KeyValue] = None
    while (found.isEmpty && committed.hasNext) {
      val kv = committed.next()
      if (!bufferedWrites.hidesCommitted(kv.key)) found = Some(kv)
    }
    found
  }

  private def fill(): Unit = {
    while (pending.isEmpty && (nextBuffered != null || nextCommitted.isDefined)) {
      val cmp =
        if (nextBuffered == null) 1
        else nextCommitted.fold(-1)(c => ByteKeys.compare(nextBuffered.getKey, c.key))
      if (cmp <= 0) {
        val entry = nextBuffered
        nextBuffered = advanceBuffered()
        if (cmp == 0) nextCommitted = advanceCommitted()
        entry.getValue match {
          case BufferedWrite.Value(v) => pending = Some(KeyValue(entry.getKey, v))
          case BufferedWrite.Tombstone => ()
        }
      } else {
        pending = nextCommitted
        nextCommitted = advanceCommitted()
      }
    }
    if (pending.isEmpty) close()
  }

  // Closed (by the reader, or by the transaction ending) means exhausted: no buffered row leaks out after.
  def hasNext: Boolean = !closed && { fill(); pending.isDefined }

  def next(): KeyValue = {
    if (closed) throw new NoSuchElementException("txstate: iterator is closed")
    fill()
    val kv = pending.getOrElse(throw new NoSuchElementException("txstate: iterator is exhausted"))
    pending = None
    kv
  }

  def close(): Unit = if (!closed) {
    closed = true
    pending = None
    committed.close()
    bufferedWrites.close()
    onClose(this)
  }
}
