package txstate.bench

import java.io.File

import org.apache.hadoop.conf.Configuration

import txstate.engine.WriteStamp

/**
 * Part 2 of the storage-format benchmark: what state TTL costs on a format 2 store of `ttlKeys`
 * keys, of which `expiredKeys` were written long before the others.
 *
 * The store is filled without TTL: ids `0 until expiredKeys` at the epoch (in batches of at most
 * `fillChunk` keys, a second apart), the rest half an hour later. TTL (one hour) is then switched
 * on, and three kinds of batch run, each with the same `ttlUpdates` get + put on keys that never
 * expire:
 *  1. the first TTL batch, 40 minutes after the epoch: nothing is old enough, but its open builds
 *     the TTL index over every stored row (the one-time cost of switching TTL on);
 *  2. TTL batches at 41, 42 and 43 minutes: nothing expires, and the index says so without a scan;
 *  3. the expiry batch at 75 minutes: exactly the `expiredKeys` old rows are past the TTL and
 *     expire at its open, as deletes its commit writes.
 * Every count is checked: a run that expires any other number of rows fails.
 */
final class ExpiryRun(params: FormatParams, hadoopConf: Configuration, scratch: File) {
  import ExpiryRun._

  def run(rep: Int): Either[String, Measured] = {
    val dir = new File(scratch, s"ttl-rep$rep")
    val store = new FormatStore(2, dir, hadoopConf)
    try {
      val total = params.ttlKeys
      val old = params.expiredKeys
      val rng = new java.util.SplittableRandom(1000L + rep)
      def youngIds(): Array[Int] = Array.fill(params.ttlUpdates)(old + rng.nextInt(total - old))
      var batchId = 0L
      def stamp(timeMs: Long): WriteStamp = { batchId += 1; WriteStamp(batchId, timeMs) }

      val fillStart = System.nanoTime()
      chunks(0, old).zipWithIndex.foreach { case (ids, i) => store.batch(ids, stamp(epochMs + i * 1000L)) }
      chunks(old, total).zipWithIndex.foreach { case (ids, i) => store.batch(ids, stamp(epochMs + 30 * minute + i * 1000L)) }
      val fillMs = ProviderRun.msSince(fillStart)

      val ttl = Some(ttlMs)
      val first = store.batch(youngIds(), stamp(epochMs + 40 * minute), ttl)
      val quiet = (41 to 43).map(m => store.batch(youngIds(), stamp(epochMs + m * minute), ttl))
      val expiry = store.batch(youngIds(), stamp(epochMs + 75 * minute), ttl)

      val problems = Seq(
        when(first.expired != 0)(s"the first TTL batch expired ${first.expired} rows, expected 0"),
        quiet.find(_.expired != 0).map(t => s"a TTL batch with nothing old enough expired ${t.expired} rows, expected 0"),
        when(expiry.expired != old)(s"the expiry batch expired ${expiry.expired} rows, expected exactly $old"),
        when(store.numKeys != total - old)(s"after expiry the store holds ${store.numKeys} keys, expected ${total - old}"),
        when(store.holds(0) || store.holds(old - 1))(s"an expired key (id 0 or ${old - 1}) is still readable"),
        when(!store.holds(old) || !store.holds(total - 1))(s"a key that must not expire (id $old or ${total - 1}) is gone")
      ).flatten
      if (problems.nonEmpty) Left(s"repetition $rep: ${problems.mkString("; ")}")
      else Right(Measured(fillMs, first, quiet, expiry))
    } finally {
      store.close()
      ProviderRun.deleteRecursively(dir)
    }
  }

  private def chunks(from: Int, until: Int): Seq[Array[Int]] =
    (from until until by fillChunk).map(start => Array.range(start, math.min(until, start + fillChunk)))
}

object ExpiryRun {
  val minute: Long = 60000L
  val ttlMs: Long = 60 * minute
  val epochMs: Long = FormatComparison.epochMs
  val fillChunk: Int = 100000

  /** `why` when `failed`: Scala 2.13's `Option.when`, which 2.12 (the 3.5 line) lacks. */
  private def when(failed: Boolean)(why: => String): Option[String] = if (failed) Some(why) else None

  /**
   * One repetition: the time to fill the store, the first TTL batch (builds the index), the TTL
   * batches where nothing expires, and the expiry batch.
   */
  final case class Measured(fillMs: Double, indexBuild: FormatStore.Timing, noExpiry: Seq[FormatStore.Timing],
      expiry: FormatStore.Timing)
}
