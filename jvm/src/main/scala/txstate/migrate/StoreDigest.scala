package txstate.migrate

import scala.util.hashing.MurmurHash3

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/**
 * Row count and an order-independent hash of a store's rows: the sum (mod 2^64) of a 64-bit hash
 * of each key and value. Two providers iterate in different orders; equal digests mean the same
 * set of rows with overwhelming probability.
 */
final case class StoreDigest(rows: Long, hash: Long) {
  def +(other: StoreDigest): StoreDigest = StoreDigest(rows + other.rows, hash + other.hash)
  override def toString: String = f"$rows%d rows (hash $hash%016x)"
}

object StoreDigest {
  val empty: StoreDigest = StoreDigest(0, 0)

  /** Accumulates rows one at a time (a store can hold millions, so no intermediate values). */
  final class Builder {
    private var rows = 0L
    private var hash = 0L

    def add(key: UnsafeRow, value: UnsafeRow): Unit = {
      val k = key.getBytes
      val v = value.getBytes
      val high = MurmurHash3.bytesHash(v, MurmurHash3.bytesHash(k, 0x3c6ef372))
      val low = MurmurHash3.bytesHash(v, MurmurHash3.bytesHash(k, 0x5be0cd19))
      hash += (high.toLong << 32) | (low.toLong & 0xffffffffL)
      rows += 1
    }

    def rowCount: Long = rows
    def result: StoreDigest = StoreDigest(rows, hash)
  }
}
