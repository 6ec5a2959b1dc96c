package txstate.bench

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{DataType, LongType, StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * The shape of a streaming count/sum aggregation: a 16-character string key (a 32-byte UnsafeRow)
 * and three longs (count, sum, last batch: a 32-byte UnsafeRow).
 *
 * Every peer replays the same key sequence: the preload writes ids `0 until preloadKeys`, then each
 * batch picks, per row, a brand-new id with probability `newKeyRatio` and otherwise a uniformly
 * random id among those written so far. The plan is fixed by a seed, so runs are comparable.
 */
object Workload {
  val keySchema: StructType = new StructType().add("key", StringType, nullable = false)
  val valueSchema: StructType = new StructType()
    .add("count", LongType, nullable = false)
    .add("sum", LongType, nullable = false)
    .add("lastBatch", LongType, nullable = false)

  val keyChars = 16

  /** Key ids for every batch after the preload; `abortBatch` is run, aborted, then re-run. */
  final case class Plan(preloadKeys: Int, batches: Vector[Array[Int]], abortBatch: Array[Int], distinctKeys: Int)

  def plan(params: BenchParams, seed: Long = 42L): Plan = {
    val rng = new java.util.SplittableRandom(seed)
    var next = params.preloadKeys
    def batch(): Array[Int] = Array.fill(params.updates) {
      if (rng.nextDouble() < params.newKeyRatio) { next += 1; next - 1 }
      else rng.nextInt(next)
    }
    val batches = Vector.fill(params.batches)(batch())
    val abort = batch()
    Plan(params.preloadKeys, batches, abort, next)
  }

  /** Writes `id` as "k" + 15 zero-padded digits into `out` (no allocation besides the UTF8String). */
  def keyBytes(id: Int, out: Array[Byte]): Unit = {
    out(0) = 'k'.toByte
    var v = id
    var i = keyChars - 1
    while (i >= 1) {
      out(i) = ('0' + v % 10).toByte
      v /= 10
      i -= 1
    }
  }
}

/**
 * Builds the UnsafeRows a stateful operator would hand the store. Like Spark's operators, it
 * reuses one key row and one value row; stores must copy what they keep.
 */
final class RowMaker {
  import Workload._

  private val keyProjection = UnsafeProjection.create(Array[DataType](StringType))
  private val valueProjection = UnsafeProjection.create(Array[DataType](LongType, LongType, LongType))
  private val keyInput = new GenericInternalRow(1)
  private val valueInput = new GenericInternalRow(3)
  private val keyBuf = new Array[Byte](keyChars)

  def key(id: Int): UnsafeRow = {
    Workload.keyBytes(id, keyBuf)
    keyInput.update(0, UTF8String.fromBytes(keyBuf))
    keyProjection(keyInput)
  }

  /** The aggregation step: the new value given the previous one (null when the key is new). */
  def nextValue(previous: InternalRow, id: Int, batch: Long): UnsafeRow = {
    if (previous == null) {
      valueInput.update(0, 1L)
      valueInput.update(1, id.toLong)
    } else {
      valueInput.update(0, previous.getLong(0) + 1L)
      valueInput.update(1, previous.getLong(1) + id)
    }
    valueInput.update(2, batch)
    valueProjection(valueInput)
  }
}
