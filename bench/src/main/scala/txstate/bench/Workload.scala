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
 * batch picks, per row, a brand-new id with probability `newKeyRatio` and otherwise an existing id:
 * uniformly among those written so far, or Zipf-distributed among the preloaded ones ([[Zipf]]).
 * The plan is fixed by a seed, so runs are comparable.
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
    val zipf = if (params.distribution == "zipf") Some(new Zipf(params.preloadKeys, 1.1)) else None
    def existing(): Int = zipf.fold(rng.nextInt(next))(_.sample(rng))
    def batch(): Array[Int] = Array.fill(params.updates) {
      if (rng.nextDouble() < params.newKeyRatio) { next += 1; next - 1 }
      else existing()
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
 * Zipf-distributed ids among the `n` preloaded keys: rank r (1 = hottest) has weight 1 / r^s. Ranks
 * are scattered over the ids by a fixed multiplicative permutation, so hot keys are not neighbours
 * in the key order (as the hottest users or devices of a real stream are not).
 */
final class Zipf(n: Int, s: Double) {
  private val cumulative: Array[Double] = {
    val c = new Array[Double](n)
    var sum = 0.0
    var r = 0
    while (r < n) { sum += 1.0 / math.pow(r + 1, s); c(r) = sum; r += 1 }
    c
  }
  // A multiplier coprime with n makes (rank * m) mod n a permutation of 0 until n.
  private val multiplier: Long = Iterator.from(1000003).find(m => BigInt(m).gcd(BigInt(n)) == 1).get.toLong

  def sample(rng: java.util.SplittableRandom): Int = {
    val u = rng.nextDouble() * cumulative(n - 1)
    var i = java.util.Arrays.binarySearch(cumulative, u)
    if (i < 0) i = -i - 1
    ((math.min(i, n - 1) * multiplier) % n).toInt
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
