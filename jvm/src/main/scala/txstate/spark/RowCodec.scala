package txstate.spark

import java.nio.ByteBuffer

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

import txstate.compat.StateApi
import txstate.compat.StateApi.{KeyStateEncoderSpec, PrefixKeyScanStateEncoderSpec, RangeKeyScanStateEncoderSpec}

/**
 * UnsafeRow <-> bytes for one column family.
 *
 * Keys go through Spark's own key encoders for the family's `KeyStateEncoderSpec`, so prefix and
 * range scans see exactly the byte order Spark's operators expect (range keys are order-preserving,
 * prefix keys put the prefix columns first). Values are the UnsafeRow bytes, copied: Spark reuses
 * row buffers after `put` returns. A multi-valued family stores a list as length-prefixed values.
 */
final class RowCodec(
    val keySchema: StructType,
    val valueSchema: StructType,
    val spec: KeyStateEncoderSpec,
    val multiValued: Boolean) {

  private val keyEncoder: StateApi.KeyEncoder = StateApi.keyEncoder(spec, valueSchema)
  private val valueFields = valueSchema.length

  def supportsPrefixScan: Boolean = keyEncoder.supportPrefixKeyScan
  def supportsRangeScan: Boolean = KeyOrder.supportsRangeScan(keyEncoder, spec)
  def supportsDeleteRange: Boolean = KeyOrder.supportsDeleteRange(keyEncoder, spec)

  /** Key columns a prefix-encoded family puts first in its byte order (0: not prefix-encoded). */
  def prefixKeyColumns: Int = spec match {
    case PrefixKeyScanStateEncoderSpec(_, n) => n
    case _ => 0
  }

  /** Key columns a range-encoded family orders its bytes by (empty: not range-encoded). */
  def rangeKeyOrdinals: Seq[Int] = spec match {
    case RangeKeyScanStateEncoderSpec(_, ordinals) => ordinals
    case _ => Nil
  }

  def encodeKey(key: UnsafeRow): Array[Byte] = keyEncoder.encodeKey(key)
  def decodeKey(bytes: Array[Byte]): UnsafeRow = keyEncoder.decodeKey(bytes)
  def encodePrefix(prefix: UnsafeRow): Array[Byte] = keyEncoder.encodePrefixKey(prefix)

  def encodeValue(value: UnsafeRow): Array[Byte] = {
    val size = value.getSizeInBytes
    val bytes = new Array[Byte](size)
    Platform.copyMemory(value.getBaseObject, value.getBaseOffset, bytes, Platform.BYTE_ARRAY_OFFSET, size)
    bytes
  }

  def decodeValue(bytes: Array[Byte]): UnsafeRow = {
    val row = new UnsafeRow(valueFields)
    row.pointTo(bytes, bytes.length)
    row
  }

  /** A list of values as one stored value: each value preceded by its length. */
  def encodeValues(values: Seq[UnsafeRow]): Array[Byte] = appendValues(Array.emptyByteArray, values)

  def appendValues(existing: Array[Byte], values: Seq[UnsafeRow]): Array[Byte] = {
    val encoded = values.map(encodeValue)
    val buffer = ByteBuffer.allocate(existing.length + encoded.map(_.length + 4).sum)
    buffer.put(existing)
    encoded.foreach(v => buffer.putInt(v.length).put(v))
    buffer.array()
  }

  def decodeValues(bytes: Array[Byte]): Iterator[UnsafeRow] = {
    val buffer = ByteBuffer.wrap(bytes)
    Iterator.continually(()).takeWhile(_ => buffer.hasRemaining).map { _ =>
      val value = new Array[Byte](buffer.getInt)
      buffer.get(value)
      decodeValue(value)
    }
  }

  /** The stored value of a family as the rows a reader sees: one row, or the list of a multi-valued key. */
  def decodeStored(bytes: Array[Byte]): Iterator[UnsafeRow] =
    if (multiValued) decodeValues(bytes) else Iterator.single(decodeValue(bytes))
}
