package txstate.engine

import java.util.concurrent.ConcurrentSkipListMap

import scala.collection.mutable.ArrayBuffer

/** A buffered write: the value a key will have once the transaction commits. */
sealed trait BufferedWrite
object BufferedWrite {
  final case class Value(bytes: Array[Byte]) extends BufferedWrite
  case object Tombstone extends BufferedWrite
}

/**
 * The uncommitted writes of one transaction: point writes in key order plus range deletes.
 *
 * Invariant: a point write in `writes` is newer than every range delete that covers it, because a
 * range delete clears the point writes it covers when it is added. So applying all range deletes
 * first and then all point writes reproduces the transaction exactly.
 *
 * A skip list (not a TreeMap) because Spark removes keys while it iterates them (evictions): its
 * iterators are weakly consistent and never throw ConcurrentModificationException.
 *
 * Accounting is exact for the data and estimated for the index (a fixed per-entry overhead of the
 * skip-list node, key array and value array headers), which is what bounds JVM memory (DESIGN §3).
 */
final class WriteBuffer {
  import WriteBuffer._

  private val writes = new ConcurrentSkipListMap[Array[Byte], BufferedWrite](ByteKeys.ordering)
  private val ranges = ArrayBuffer.empty[KeyRange]
  private var bytes = 0L

  def isEmpty: Boolean = writes.isEmpty && ranges.isEmpty
  def entryCount: Long = writes.size.toLong + ranges.size
  def byteSize: Long = bytes

  def lookup(key: Array[Byte]): Option[BufferedWrite] = Option(writes.get(key))

  /** True when a buffered range delete hides the committed value of `key`. */
  def hidesCommitted(key: Array[Byte]): Boolean = ranges.exists(_.contains(key))

  def put(key: Array[Byte], value: Array[Byte]): Unit = record(key, BufferedWrite.Value(value))
  def delete(key: Array[Byte]): Unit = record(key, BufferedWrite.Tombstone)

  def deleteRange(from: Array[Byte], until: Array[Byte]): Unit = {
    val covered = writes.subMap(from, true, until, false)
    covered.forEach((k, w) => bytes -= sizeOf(k, w))
    covered.clear()
    ranges += KeyRange(from, Some(until))
    bytes += from.length + until.length + entryOverhead
  }

  /** Point writes within `range`, in key order (weakly consistent under concurrent updates). */
  def writesIn(range: KeyRange): java.util.Iterator[java.util.Map.Entry[Array[Byte], BufferedWrite]] = {
    val view = range.until match {
      case Some(until) => writes.subMap(range.from, true, until, false)
      case None => writes.tailMap(range.from, true)
    }
    view.entrySet.iterator
  }

  /** The transaction as change records: range deletes first, then point writes in key order. */
  def changes: Iterator[ChangeRecord] = {
    val deletes = ranges.iterator.map(r => ChangeRecord.DeleteRange(r.from, r.until.get): ChangeRecord)
    deletes ++ pointChanges
  }

  private def pointChanges: Iterator[ChangeRecord] = {
    val it = writes.entrySet.iterator
    new Iterator[ChangeRecord] {
      def hasNext: Boolean = it.hasNext
      def next(): ChangeRecord = {
        val e = it.next()
        e.getValue match {
          case BufferedWrite.Value(v) => ChangeRecord.Put(e.getKey, v)
          case BufferedWrite.Tombstone => ChangeRecord.Delete(e.getKey)
        }
      }
    }
  }

  /** The keys this transaction touches: point keys and range deletes (kept to undo a commit). */
  def touchedKeys: TouchedKeys =
    TouchedKeys(writes.keySet.toArray(new Array[Array[Byte]](0)).toVector, ranges.toVector)

  def clear(): Unit = {
    writes.clear()
    ranges.clear()
    bytes = 0L
  }

  private def record(key: Array[Byte], write: BufferedWrite): Unit = {
    val previous = writes.put(key, write)
    if (previous != null) bytes -= sizeOf(key, previous)
    bytes += sizeOf(key, write)
  }
}

/** The keys a committed transaction touched: what must be restored to undo it. */
final case class TouchedKeys(points: Vector[Array[Byte]], ranges: Vector[KeyRange])

object WriteBuffer {
  /** Skip-list node and index levels, the write object, key and value array headers (estimated). */
  val entryOverhead: Long = 96L

  def sizeOf(key: Array[Byte], write: BufferedWrite): Long = write match {
    case BufferedWrite.Value(v) => key.length + v.length + entryOverhead
    case BufferedWrite.Tombstone => key.length + entryOverhead
  }
}
