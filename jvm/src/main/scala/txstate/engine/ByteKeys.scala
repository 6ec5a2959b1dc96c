package txstate.engine

import java.util.{Arrays, Comparator}

import scala.util.hashing.MurmurHash3

import txstate.compat.JavaLibrary

/** Byte-string keys in RocksDB's default order: unsigned lexicographic. */
object ByteKeys {
  val ordering: Comparator[Array[Byte]] = (a: Array[Byte], b: Array[Byte]) => JavaLibrary.compareUnsigned(a, b)

  def compare(a: Array[Byte], b: Array[Byte]): Int = JavaLibrary.compareUnsigned(a, b)

  /**
   * The hash of a key's bytes for the heap's hash tables (the batch's buffer, the hot-state cache).
   * MurmurHash3 takes four bytes a step where `Arrays.hashCode` multiplies once per byte, and every
   * get and put of a batch hashes its key.
   */
  def hash(key: Array[Byte]): Int = MurmurHash3.bytesHash(key)

  /** The smallest key greater than every key starting with `prefix`; None when the prefix is all 0xFF. */
  def prefixUpperBound(prefix: Array[Byte]): Option[Array[Byte]] = {
    var i = prefix.length - 1
    while (i >= 0 && prefix(i) == 0xff.toByte) i -= 1
    if (i < 0) None
    else {
      val bound = Arrays.copyOf(prefix, i + 1)
      bound(i) = (bound(i) + 1).toByte
      Some(bound)
    }
  }

  /** True when `key` lies in [from, until), an absent `until` meaning unbounded. */
  def inRange(key: Array[Byte], from: Array[Byte], until: Option[Array[Byte]]): Boolean =
    compare(key, from) >= 0 && until.forall(compare(key, _) < 0)
}

/** A half-open key range [from, until); `until = None` runs to the end of the key space. */
final case class KeyRange(from: Array[Byte], until: Option[Array[Byte]]) {
  def contains(key: Array[Byte]): Boolean = ByteKeys.inRange(key, from, until)
}

object KeyRange {
  val all: KeyRange = KeyRange(Array.emptyByteArray, None)
  def prefix(p: Array[Byte]): KeyRange = KeyRange(p, ByteKeys.prefixUpperBound(p))
}
