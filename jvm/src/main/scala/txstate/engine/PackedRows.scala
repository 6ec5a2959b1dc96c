package txstate.engine

import scala.collection.mutable.ArrayBuffer

import txstate.compat.JavaLibrary

/**
 * Keyed rows packed into a few large byte arrays, found through an open-addressing hash index of
 * two primitive arrays: a batch's buffer and its kept undo (docs/ARCHITECTURE.md, "The heap of a
 * batch"). A row is a key, a small tag the owner gives meaning to, and a value.
 *
 * Why not a hash map of objects: a batch's rows live for the whole batch, so as several small
 * objects per row they survive young collections, are copied, promoted and die in the old
 * generation, and G1 grows the heap meanwhile. Here the rows are a handful of arrays; those past
 * half a G1 region are allocated outside the young generation and freed at the first collection
 * after the batch lets them go, with nothing copied.
 *
 * A rewrite of a key with a value of the same length and tag writes over the old bytes in place
 * (an aggregate's running value); other rewrites and removals leave dead bytes behind, and the
 * arrays are compacted once dead bytes outweigh live ones. One thread writes; reads after the last
 * write may come from any thread that received the rows.
 */
private[engine] final class PackedRows(expectedRows: Int = 0) {
  import PackedRows._

  private val chunks = ArrayBuffer.empty[Array[Byte]]
  private var fill = 0 // next free byte of the last chunk
  // Sized for `expectedRows` at most half full (a copy of rows that exist), so filling it never rehashes.
  private var hashes = new Array[Int](slotsFor(expectedRows))
  private var slots = new Array[Long](hashes.length) // Empty, Removed, or a row's position + 1
  private var live = 0
  private var occupied = 0 // live and removed slots: what lengthens probes
  private var appended = 0L
  private var dead = 0L
  private var allocated = 0L

  def size: Int = live
  def isEmpty: Boolean = live == 0

  /**
   * Heap held: the arrays as allocated (headers included) and the index, dead rows too, until a
   * compaction. Zero until the first row: a fresh index of 16 slots is not worth counting.
   */
  def heapBytes: Long =
    if (chunks.isEmpty) 0L
    else allocated + StoredRow.arrayBytes(slots.length * 8) + StoredRow.arrayBytes(hashes.length * 4) + 64L

  /** The slot holding `key`, or a negative number when it is absent. */
  def find(key: BytesKey): Int = {
    val at = probe(key)
    if (slots(at) > 0) at else -1
  }

  def tag(slot: Int): Int = chunkOf(slots(slot))(offsetOf(slots(slot)) + 4).toInt
  def key(slot: Int): Array[Byte] = copyOut(slots(slot), HeaderBytes, intAt(slots(slot), 0))
  def value(slot: Int): Array[Byte] = {
    val p = slots(slot)
    copyOut(p, HeaderBytes + intAt(p, 0), intAt(p, 5))
  }

  /** Sets `key`'s row. */
  def put(key: BytesKey, tag: Int, value: Array[Byte]): Unit = write(key, tag, value, replace = true)

  /** Sets `key`'s row unless it has one; true when it was set. */
  def putIfAbsent(key: BytesKey, tag: Int, value: Array[Byte]): Boolean = write(key, tag, value, replace = false)

  def remove(key: BytesKey): Boolean = {
    val at = find(key)
    if (at >= 0) {
      dead += rowBytes(slots(at))
      slots(at) = Removed
      live -= 1
    }
    at >= 0
  }

  /**
   * `read` of each slot holding a row, in index order; the rows must not change while it runs. The
   * slot numbers stay primitive ints: a commit walks every row of the batch this way.
   */
  def readRows[T](read: SlotReader[T]): Iterator[T] = new Iterator[T] {
    private val index = slots
    private var at = nextLive(index, 0)
    def hasNext: Boolean = at < index.length
    def next(): T = {
      if (!hasNext) throw new NoSuchElementException("no more rows")
      val row = read(at)
      at = nextLive(index, at + 1)
      row
    }
  }

  /**
   * Every row, in index order, as its tag and the array holding it with where its key and value lie
   * there: nothing is copied. The rows must not change while it runs.
   */
  def foreachSlice(visit: SliceVisitor): Unit = {
    val index = slots
    var at = nextLive(index, 0)
    while (at < index.length) {
      val p = index(at)
      val (c, o) = (chunkOf(p), offsetOf(p))
      val keyLength = getInt(c, o)
      visit(c(o + 4).toInt, c, o + HeaderBytes, keyLength, o + HeaderBytes + keyLength, getInt(c, o + 5))
      at = nextLive(index, at + 1)
    }
  }

  /** The slots holding rows, in index order; the rows must not change while it runs. */
  def liveSlots: Iterator[Int] = readRows(slot => slot)

  /** An independent copy (for a writer that must not change rows it handed out). */
  def copy(): PackedRows = {
    val fresh = new PackedRows(live)
    liveSlots.foreach(s => fresh.put(new BytesKey(key(s)), tag(s), value(s)))
    fresh
  }

  private def write(key: BytesKey, tag: Int, value: Array[Byte], replace: Boolean): Boolean = {
    makeRoom()
    val at = probe(key)
    val p = slots(at)
    if (p <= 0) {
      if (p == Empty) occupied += 1
      hashes(at) = key.hashCode
      slots(at) = append(key.bytes, tag, value)
      live += 1
      true
    } else if (!replace) false
    else {
      if (this.tag(at) == tag && intAt(p, 5) == value.length)
        System.arraycopy(value, 0, chunkOf(p), offsetOf(p) + HeaderBytes + key.bytes.length, value.length)
      else {
        dead += rowBytes(p)
        slots(at) = append(key.bytes, tag, value)
      }
      true
    }
  }

  // The slot of `key`, or, when absent, the slot a new row for it takes (the first removed one passed).
  private def probe(key: BytesKey): Int = {
    val mask = slots.length - 1
    var i = spread(key.hashCode) & mask
    var firstRemoved = -1
    while (true) {
      val s = slots(i)
      if (s == Empty) return if (firstRemoved >= 0) firstRemoved else i
      if (s == Removed) { if (firstRemoved < 0) firstRemoved = i }
      else if (hashes(i) == key.hashCode && keyEquals(s, key.bytes)) return i
      i = (i + 1) & mask
    }
    -1 // unreachable: the index always has empty slots
  }

  // Before a write: a bigger or cleaner index once slots run short, and compacted arrays once
  // dead bytes outweigh live ones (positions change, slots and hashes do not).
  private def makeRoom(): Unit = {
    // At most half full: most lookups of a batch miss (the key is read before it is first written),
    // and a miss probes until an empty slot.
    if ((occupied + 1) * 2L > slots.length) rehash(if ((live + 1) * 4L > slots.length) slots.length * 2 else slots.length)
    if (dead > CompactFrom && dead > appended - dead) compact()
  }

  private def rehash(capacity: Int): Unit = {
    val (oldHashes, oldSlots) = (hashes, slots)
    hashes = new Array[Int](capacity)
    slots = new Array[Long](capacity)
    occupied = live
    val mask = capacity - 1
    var j = 0
    while (j < oldSlots.length) {
      if (oldSlots(j) > 0) {
        var i = spread(oldHashes(j)) & mask
        while (slots(i) != Empty) i = (i + 1) & mask
        hashes(i) = oldHashes(j)
        slots(i) = oldSlots(j)
      }
      j += 1
    }
  }

  private def compact(): Unit = {
    val old = chunks.toVector
    chunks.clear()
    fill = 0
    appended = 0L
    dead = 0L
    allocated = 0L
    var i = 0
    while (i < slots.length) {
      val p = slots(i)
      if (p > 0) {
        val from = old((p - 1 >>> 32).toInt)
        val length = HeaderBytes + getInt(from, offsetOf(p)) + getInt(from, offsetOf(p) + 5)
        val to = reserve(length)
        System.arraycopy(from, offsetOf(p), chunks.last, offsetOf(to), length)
        slots(i) = to
      }
      i += 1
    }
  }

  private def append(key: Array[Byte], tag: Int, value: Array[Byte]): Long = {
    val p = reserve(HeaderBytes + key.length + value.length)
    val (c, o) = (chunkOf(p), offsetOf(p))
    putInt(c, o, key.length)
    c(o + 4) = tag.toByte
    putInt(c, o + 5, value.length)
    System.arraycopy(key, 0, c, o + HeaderBytes, key.length)
    System.arraycopy(value, 0, c, o + HeaderBytes + key.length, value.length)
    p
  }

  // Room for `length` bytes at the end of the last chunk, or in a new one twice the last one's size
  // (up to MaxChunk; a longer row gets a chunk of its own size). Returns the position + 1.
  private def reserve(length: Int): Long = {
    if (chunks.isEmpty || chunks.last.length - fill < length) {
      val next = if (chunks.isEmpty) FirstChunk else math.min(chunks.last.length * 2L, MaxChunk.toLong).toInt
      chunks += new Array[Byte](math.max(next, length))
      allocated += StoredRow.arrayBytes(chunks.last.length)
      fill = 0
    }
    val p = ((chunks.length - 1).toLong << 32 | fill) + 1
    fill += length
    appended += length
    p
  }

  private def keyEquals(p: Long, key: Array[Byte]): Boolean =
    intAt(p, 0) == key.length && JavaLibrary.equalRanges(chunkOf(p), offsetOf(p) + HeaderBytes, key, 0, key.length)

  private def rowBytes(p: Long): Int = HeaderBytes + intAt(p, 0) + intAt(p, 5)
  private def chunkOf(p: Long): Array[Byte] = chunks((p - 1 >>> 32).toInt)
  private def offsetOf(p: Long): Int = (p - 1).toInt
  private def intAt(p: Long, at: Int): Int = getInt(chunkOf(p), offsetOf(p) + at)

  private def copyOut(p: Long, from: Int, length: Int): Array[Byte] =
    java.util.Arrays.copyOfRange(chunkOf(p), offsetOf(p) + from, offsetOf(p) + from + length)
}

private[engine] object PackedRows {
  /** What [[PackedRows.readRows]] makes of one slot (a function of a primitive int: no boxing). */
  trait SlotReader[T] { def apply(slot: Int): T }

  /** What [[PackedRows.foreachSlice]] hands over of one row. */
  trait SliceVisitor {
    def apply(tag: Int, bytes: Array[Byte], keyFrom: Int, keyLength: Int, valueFrom: Int, valueLength: Int): Unit
  }

  private val Empty = 0L
  private val Removed = -1L
  private val FirstSlots = 16
  private val MostFirstSlots = 1 << 24

  // The smallest power of two above twice `rows` (between 16 and 2^24 slots): `rows` fit at most half full.
  private def slotsFor(rows: Int): Int =
    if (rows < FirstSlots / 2) FirstSlots
    else (java.lang.Long.highestOneBit((rows + 1) * 2L) << 1).min(MostFirstSlots.toLong).toInt

  private def nextLive(slots: Array[Long], from: Int): Int = {
    var i = from
    while (i < slots.length && slots(i) <= 0) i += 1
    i
  }
  // A key's length, the tag, the value's length.
  private val HeaderBytes = 9
  private val FirstChunk = 4096
  // Past half of G1's largest region (32 MiB) an array is humongous under every heap size; 4 MiB
  // minus the header is humongous from 8 MiB regions down and fits two 2 MiB regions exactly.
  private val MaxChunk = (4 << 20) - 64
  private val CompactFrom = 1L << 20

  // Fibonacci hashing on top: cheap insurance should a key's hash have weak low bits.
  private def spread(h: Int): Int = (h * 0x9E3779B9) ^ (h * 0x9E3779B9 >>> 16)

  private def getInt(c: Array[Byte], o: Int): Int =
    (c(o) & 0xff) << 24 | (c(o + 1) & 0xff) << 16 | (c(o + 2) & 0xff) << 8 | (c(o + 3) & 0xff)

  private def putInt(c: Array[Byte], o: Int, v: Int): Unit = {
    c(o) = (v >>> 24).toByte
    c(o + 1) = (v >>> 16).toByte
    c(o + 2) = (v >>> 8).toByte
    c(o + 3) = v.toByte
  }
}
