package txstate.engine

import java.util.Arrays
import java.util.concurrent.ConcurrentSkipListMap

import scala.collection.mutable.ArrayBuffer

/** A buffered write: the value a key will have once the transaction commits. */
sealed trait BufferedWrite
object BufferedWrite {
  final case class Value(bytes: Array[Byte]) extends BufferedWrite
  case object Tombstone extends BufferedWrite
}

/**
 * A byte-array key for hash maps: content equality and a hash computed once, then shared by the
 * buffer and the hot-state cache for one read-then-write of a key.
 */
private[engine] final class BytesKey(val bytes: Array[Byte]) {
  override val hashCode: Int = ByteKeys.hash(bytes)
  override def equals(other: Any): Boolean = other match {
    case k: BytesKey => k.hashCode == hashCode && Arrays.equals(k.bytes, bytes)
    case _ => false
  }
}

/**
 * The uncommitted writes of one transaction: point writes plus range deletes.
 *
 * Point writes live in a hash index, because most batches only get and put (and a sorted map's
 * lookups cost about as much as RocksDB's), packed into a few large arrays
 * ([[PackedRows]]: docs/ARCHITECTURE.md, "The heap of a batch"). A lookup copies the value out. A
 * sorted view is built the first time something needs order (an iterator or a range delete) and
 * kept up to date from then on: a concurrent skip list, because Spark removes keys while it
 * iterates them (evictions) and its iterators are weakly consistent, never throwing
 * ConcurrentModificationException.
 *
 * Invariant: a point write is newer than every range delete that covers it, because a range delete
 * clears the point writes it covers when it is added. So applying all range deletes first and then
 * all point writes reproduces the transaction exactly.
 *
 * Iterators see the buffer as it was when they were created ([[view]]): just before the buffer
 * changes, every open view copies the entries it has not read yet, so the cost falls only on
 * iterators still open while the batch writes (Spark's iterator contract, SPARK-38320).
 *
 * Accounting is the heap the packed rows hold, plus an estimate for range deletes and for the
 * sorted view once it exists, which is what bounds JVM memory (docs/ARCHITECTURE.md, "Early commits").
 */
final class WriteBuffer {
  import WriteBuffer._

  private var index = new PackedRows
  // True once `touchedKeys` handed the rows to a commit's undo: the next write copies them first.
  private var handedOut = false
  private var sorted: Option[ConcurrentSkipListMap[Array[Byte], BufferedWrite]] = None
  private var sortedBytes = 0L
  private val ranges = ArrayBuffer.empty[KeyRange]
  private var rangeBytes = 0L
  private val openViews = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[BufferView, java.lang.Boolean]())

  def isEmpty: Boolean = index.isEmpty && ranges.isEmpty
  def entryCount: Long = index.size.toLong + ranges.size
  def byteSize: Long = index.heapBytes + rangeBytes + sortedBytes

  def lookup(key: Array[Byte]): Option[BufferedWrite] = lookup(new BytesKey(key))
  def lookup(key: BytesKey): Option[BufferedWrite] = {
    val at = index.find(key)
    if (at < 0) None else Some(writeAt(at))
  }

  /** True when the buffer holds a write of `key` (a lookup without copying the value out). */
  def holds(key: BytesKey): Boolean = index.find(key) >= 0

  /** True when a buffered range delete hides the committed value of `key`. */
  def hidesCommitted(key: Array[Byte]): Boolean = ranges.nonEmpty && ranges.exists(_.contains(key))

  def put(key: Array[Byte], value: Array[Byte]): Unit = record(new BytesKey(key), BufferedWrite.Value(value))
  def put(key: BytesKey, value: Array[Byte]): Unit = record(key, BufferedWrite.Value(value))
  def delete(key: Array[Byte]): Unit = record(new BytesKey(key), BufferedWrite.Tombstone)
  def delete(key: BytesKey): Unit = record(key, BufferedWrite.Tombstone)

  /** Drops a buffered write altogether (the key's committed state is what it will be). */
  def forget(key: Array[Byte]): Unit = {
    beforeChange()
    if (index.remove(new BytesKey(key))) sorted.foreach { view =>
      Option(view.remove(key)).foreach(w => sortedBytes -= sortedSizeOf(key, w))
    }
  }

  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    beforeChange()
    val covered = ordered.subMap(from, true, until, false)
    covered.forEach { (k, w) =>
      sortedBytes -= sortedSizeOf(k, w)
      index.remove(new BytesKey(k))
    }
    covered.clear()
    ranges += KeyRange(from, Some(until))
    rangeBytes += from.length + until.length + rangeOverhead
  }

  /**
   * Point writes within `range`, in key order (weakly consistent under concurrent updates: writes
   * made after the call may or may not show). An empty buffer builds no sorted view, or every later
   * put would pay for one: the store reads its column-family registry right after opening.
   */
  def writesIn(range: KeyRange): java.util.Iterator[java.util.Map.Entry[Array[Byte], BufferedWrite]] =
    if (sorted.isEmpty && index.isEmpty) java.util.Collections.emptyIterator()
    else {
      val view = range.until match {
        case Some(until) => ordered.subMap(range.from, true, until, false)
        case None => ordered.tailMap(range.from, true)
      }
      view.entrySet.iterator
    }

  /** The transaction as change records: range deletes first, then the point writes. */
  def changes: Iterator[ChangeRecord] = {
    val deletes = ranges.iterator.map(r => ChangeRecord.DeleteRange(r.from, r.until.get): ChangeRecord)
    val rows = index
    deletes ++ rows.readRows[ChangeRecord] { at =>
      if (rows.tag(at) == TombstoneTag) ChangeRecord.Delete(rows.key(at)) else ChangeRecord.Put(rows.key(at), rows.value(at))
    }
  }

  /** [[changes]] sent as slices of the packed rows, without copying them (the commit's changelog). */
  def changeSource: ChangeSource = new ChangeSource {
    def sendTo(sink: ChangeSink): Unit = {
      ranges.foreach(r => sink.deleteRange(r.from, r.until.get))
      index.foreachSlice { (tag, bytes, keyFrom, keyLength, valueFrom, valueLength) =>
        if (tag == TombstoneTag) sink.delete(bytes, keyFrom, keyLength)
        else sink.put(bytes, keyFrom, keyLength, bytes, valueFrom, valueLength)
      }
    }
  }

  /**
   * The keys this transaction touches: point keys and range deletes (kept to undo a commit). The
   * undo shares the packed rows, values and all, instead of copying every key out.
   */
  def touchedKeys: TouchedKeys = {
    handedOut = true
    TouchedKeys(new TouchedPoints(index), ranges.toVector)
  }

  /**
   * The point writes in `range` and the range deletes, as they are now, for one iterator. The view
   * keeps showing this moment after later writes; close it when done.
   */
  def view(range: KeyRange): BufferView = {
    val v = new BufferView(writesIn(range), ranges.toVector, openViews.remove)
    openViews.add(v)
    v
  }

  /** Empties the buffer. The rows go to the garbage collector whole, or stay with an undo that holds them. */
  def clear(): Unit = {
    freezeViews()
    index = new PackedRows
    handedOut = false
    sorted = None
    sortedBytes = 0L
    ranges.clear()
    rangeBytes = 0L
  }

  private def writeAt(at: Int): BufferedWrite =
    if (index.tag(at) == TombstoneTag) BufferedWrite.Tombstone else BufferedWrite.Value(index.value(at))

  private def ordered: ConcurrentSkipListMap[Array[Byte], BufferedWrite] = sorted.getOrElse {
    val view = new ConcurrentSkipListMap[Array[Byte], BufferedWrite](ByteKeys.ordering)
    index.liveSlots.foreach { at =>
      val (k, w) = (index.key(at), writeAt(at))
      view.put(k, w)
      sortedBytes += sortedSizeOf(k, w)
    }
    sorted = Some(view)
    view
  }

  private def freezeViews(): Unit = if (!openViews.isEmpty) {
    openViews.forEach(_.freeze())
    openViews.clear()
  }

  private def beforeChange(): Unit = {
    freezeViews()
    if (handedOut) {
      index = index.copy()
      handedOut = false
    }
  }

  private def record(key: BytesKey, write: BufferedWrite): Unit = {
    beforeChange()
    write match {
      case BufferedWrite.Value(v) => index.put(key, ValueTag, v)
      case BufferedWrite.Tombstone => index.put(key, TombstoneTag, Array.emptyByteArray)
    }
    sorted.foreach { view =>
      Option(view.put(key.bytes, write)).foreach(w => sortedBytes -= sortedSizeOf(key.bytes, w))
      sortedBytes += sortedSizeOf(key.bytes, write)
    }
  }
}

/**
 * What one iterator sees of a buffer: the point writes of its range in key order and the range
 * deletes, as of its creation. Until the buffer first changes it reads the live sorted view; the
 * buffer calls `freeze` just before that change, and the view copies what it has not read yet.
 */
final class BufferView private[engine] (
    live: java.util.Iterator[java.util.Map.Entry[Array[Byte], BufferedWrite]],
    rangesAtCreation: Vector[KeyRange],
    onClose: BufferView => Unit) {
  private var entries = live

  def hasNext: Boolean = entries.hasNext
  def next(): java.util.Map.Entry[Array[Byte], BufferedWrite] = entries.next()

  /** True when a range delete of the buffer, as of this view, hides the committed value of `key`. */
  def hidesCommitted(key: Array[Byte]): Boolean = rangesAtCreation.nonEmpty && rangesAtCreation.exists(_.contains(key))

  def close(): Unit = onClose(this)

  private[engine] def freeze(): Unit = {
    val rest = new java.util.ArrayList[java.util.Map.Entry[Array[Byte], BufferedWrite]]()
    // Skip-list iterators hand out immutable entries read before any change: copying them is exact.
    entries.forEachRemaining(e => rest.add(e))
    entries = rest.iterator()
  }
}

/** The keys a committed transaction touched: what must be restored to undo it. */
final case class TouchedKeys(points: TouchedPoints, ranges: Vector[KeyRange])

/** The point keys of [[TouchedKeys]], as the transaction's packed rows hold them; each read copies a key out. */
final class TouchedPoints private[engine] (rows: PackedRows) {
  def size: Int = rows.size
  def iterator: Iterator[Array[Byte]] = rows.liveSlots.map(rows.key)
  /** Heap the rows hold (their values too: they are shared, not copied). */
  def heapBytes: Long = rows.heapBytes
}

object WriteBuffer {
  private val TombstoneTag = 0
  private val ValueTag = 1

  /** A range delete's objects around its two arrays (estimated). */
  val rangeOverhead: Long = 112L

  /** A skip-list node and its share of index levels, the write object, the copied key (estimated, with the bytes). */
  val sortedOverhead: Long = 112L

  private def sortedSizeOf(key: Array[Byte], write: BufferedWrite): Long = write match {
    case BufferedWrite.Value(v) => key.length + v.length + sortedOverhead
    case BufferedWrite.Tombstone => key.length + sortedOverhead
  }
}
