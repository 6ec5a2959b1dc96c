package txstate.engine

/**
 * How often keys were looked up recently, approximately: a count-min sketch of 4-bit counters
 * (four per key, the smallest is the estimate) whose counts are halved every `10 x capacity`
 * lookups, so old popularity fades. The hot-state cache asks it whether a new key is wanted more
 * than the entry it would push out (TinyLFU's admission test): under uniform access no key is, and
 * the cache keeps what it holds instead of churning.
 *
 * Not thread-safe: each cache shard uses its own under its lock.
 */
private[engine] final class FrequencySketch(capacity: Int) {
  // 16 counters per long; about one long per entry the shard can hold.
  private val table = new Array[Long](Integer.highestOneBit(math.max(capacity, 64) - 1) << 1)
  private val counterMask = table.length.toLong * 16 - 1
  private val sampleSize = 10L * math.max(capacity, 64)
  private var additions = 0L

  def increment(hash: Int): Unit = {
    var added = false
    var row = 0
    while (row < 4) {
      val i = index(hash, row)
      val word = (i >>> 4).toInt
      val shift = ((i & 15) << 2).toInt
      if (((table(word) >>> shift) & 0xfL) < 15L) {
        table(word) += 1L << shift
        added = true
      }
      row += 1
    }
    if (added) {
      additions += 1
      if (additions >= sampleSize) halve()
    }
  }

  def frequency(hash: Int): Int = {
    var least = 15
    var row = 0
    while (row < 4) {
      val i = index(hash, row)
      least = math.min(least, ((table((i >>> 4).toInt) >>> ((i & 15) << 2)) & 0xfL).toInt)
      row += 1
    }
    least
  }

  /** Every counter halved: what was popular long ago counts for less than what is popular now. */
  private def halve(): Unit = {
    var w = 0
    while (w < table.length) {
      table(w) = (table(w) >>> 1) & 0x7777777777777777L
      w += 1
    }
    additions /= 2
  }

  /** Row `row`'s counter for `hash`: a different odd multiplier per row spreads the rows apart. */
  private def index(hash: Int, row: Int): Long = {
    val mixed = (hash.toLong + FrequencySketch.seeds(row)) * 0x9E3779B97F4A7C15L
    (mixed ^ (mixed >>> 29)) & counterMask
  }
}

private object FrequencySketch {
  private val seeds = Array(0x61C8864680B583EBL, 0x3C6EF372FE94F82BL, 0x1B873593CC9E2D51L, 0x7FEB352D846CA68BL)
}
