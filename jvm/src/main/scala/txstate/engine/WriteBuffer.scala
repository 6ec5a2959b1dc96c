package txstate.engine

import java.util.{Arrays, HashMap => JHashMap}
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
  override val hashCode: Int = Arrays.hashCode(bytes)
  override def equals(other: Any): Boolean = other match {
    case k: BytesKey => k.hashCode == hashCode && Arrays.equals(k.bytes, bytes)
    case _ => false
  }
}

/**
 * The uncommitted writes of one transaction: point writes plus range deletes.
 *
 * Point writes live in a hash index, because most batches only get and put (the benchmark showed
 * a sorted map's lookups costing as much as RocksDB's). A sorted view is built the first time
 * something needs order (an iterator or a range delete) and kept up to date from then on: a
 * concurrent skip list, because Spark removes keys while it iterates them (evictions) and its
 * iterators are weakly consistent, never throwing ConcurrentModificationException.
 *
 * Invariant: a point write is newer than every range delete that covers it, because a range delete
 * clears the point writes it covers when it is added. So applying all range deletes first and then
 * all point writes reproduces the transaction exactly.
 *
 * Iterators see the buffer as it was when they were created ([[view]]): just before the buffer
 * changes, every open view copies the entries it has not read yet, so the cost falls only on
 * iterators still open while the batch writes (Spark's iterator contract, SPARK-38320).
 *
 * Accounting is exact for the data and estimated for the index (a fixed per-entry overhead for the
 * hash node, key wrapper and array headers, plus the skip-list node once the sorted view exists),
 * which is what bounds JVM memory (docs/ARCHITECTURE.md, "Early commits").
 */
final class WriteBuffer {
  import WriteBuffer._

  private val index = new JHashMap[BytesKey, BufferedWrite]()
  private var sorted: Option[ConcurrentSkipListMap[Array[Byte], BufferedWrite]] = None
  private val ranges = ArrayBuffer.empty[KeyRange]
  private var bytes = 0L
  private val openViews = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[BufferView, java.lang.Boolean]())

  def isEmpty: Boolean = index.isEmpty && ranges.isEmpty
  def entryCount: Long = index.size.toLong + ranges.size
  def byteSize: Long = bytes + sorted.fold(0L)(_ => index.size.toLong * sortedOverhead)

  def lookup(key: Array[Byte]): Option[BufferedWrite] = lookup(new BytesKey(key))
  def lookup(key: BytesKey): Option[BufferedWrite] = Option(index.get(key))

  /** True when a buffered range delete hides the committed value of `key`. */
  def hidesCommitted(key: Array[Byte]): Boolean = ranges.nonEmpty && ranges.exists(_.contains(key))

  def put(key: Array[Byte], value: Array[Byte]): Unit = record(new BytesKey(key), BufferedWrite.Value(value))
  def put(key: BytesKey, value: Array[Byte]): Unit = record(key, BufferedWrite.Value(value))
  def delete(key: Array[Byte]): Unit = record(new BytesKey(key), BufferedWrite.Tombstone)
  def delete(key: BytesKey): Unit = record(key, BufferedWrite.Tombstone)

  /** Drops a buffered write altogether (the key's committed state is what it will be). */
  def forget(key: Array[Byte]): Unit = {
    freezeViews()
    val previous = index.remove(new BytesKey(key))
    if (previous != null) {
      bytes -= sizeOf(key, previous)
      sorted.foreach(_.remove(key))
    }
  }

  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    freezeViews()
    val covered = ordered.subMap(from, true, until, false)
    covered.forEach { (k, w) =>
      bytes -= sizeOf(k, w)
      index.remove(new BytesKey(k))
    }
    covered.clear()
    ranges += KeyRange(from, Some(until))
    bytes += from.length + until.length + entryOverhead
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
    val points = index.entrySet.iterator
    deletes ++ new Iterator[ChangeRecord] {
      def hasNext: Boolean = points.hasNext
      def next(): ChangeRecord = {
        val e = points.next()
        e.getValue match {
          case BufferedWrite.Value(v) => ChangeRecord.Put(e.getKey.bytes, v)
          case BufferedWrite.Tombstone => ChangeRecord.Delete(e.getKey.bytes)
        }
      }
    }
  }

  /** The keys this transaction touches: point keys and range deletes (kept to undo a commit). */
  def touchedKeys: TouchedKeys = {
    val keys = new Array[Array[Byte]](index.size)
    var i = 0
    index.keySet.forEach { k => keys(i) = k.bytes; i += 1 }
    TouchedKeys(keys.toVector, ranges.toVector)
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

  def clear(): Unit = {
    freezeViews()
    index.clear()
    sorted = None
    ranges.clear()
    bytes = 0L
  }

  private def ordered: ConcurrentSkipListMap[Array[Byte], BufferedWrite] = sorted.getOrElse {
    val view = new ConcurrentSkipListMap[Array[Byte], BufferedWrite](ByteKeys.ordering)
    index.forEach((k, w) => view.put(k.bytes, w))
    sorted = Some(view)
    view
  }

  private def freezeViews(): Unit = if (!openViews.isEmpty) {
    openViews.forEach(_.freeze())
    openViews.clear()
  }

  private def record(key: BytesKey, write: BufferedWrite): Unit = {
    freezeViews()
    val previous = index.put(key, write)
    if (previous != null) bytes -= sizeOf(key.bytes, previous)
    bytes += sizeOf(key.bytes, write)
    sorted.foreach(_.put(key.bytes, write))
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
final case class TouchedKeys(points: Vector[Array[Byte]], ranges: Vector[KeyRange])

object WriteBuffer {
  /** Hash node, table slot, key wrapper, the write object, key and value array headers (estimated). */
  val entryOverhead: Long = 112L

  /** A skip-list node and its share of index levels, once the sorted view exists (estimated). */
  val sortedOverhead: Long = 48L

  def sizeOf(key: Array[Byte], write: BufferedWrite): Long = write match {
    case BufferedWrite.Value(v) => key.length + v.length + entryOverhead
    case BufferedWrite.Tombstone => key.length + entryOverhead
  }
}
