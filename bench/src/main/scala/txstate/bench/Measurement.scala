package txstate.bench

/**
 * What one repetition of one peer measured. Times in milliseconds; `Double.NaN` where the peer has
 * no such operation (the raw rocksdbjni limit has no abort or reopen path).
 *
 * @param batchRates     updates/s per measured batch, counting open + get/put + commit
 * @param cpuRates       updates per CPU-second of the benchmark thread, per measured batch (robust to other load)
 * @param rowRates       updates/s per measured batch, get/put loop only
 * @param getMicros      mean µs per `get` call, per batch
 * @param putMicros      mean µs per `put` call, per batch
 * @param openMs         `getStore(v)` per batch (the store was at `v` already)
 * @param commitMs       `commit()` per batch
 * @param preloadMs      the preload batch, open to commit
 * @param abortReopenMs  `getStore(v)` right after an aborted attempt at `v`
 * @param rerunMs        `getStore(v)` after `v + 1` was committed (Spark re-runs a batch)
 * @param maintenanceMs  `doMaintenance()` before close (what Spark runs before unloading)
 * @param coldReopenMs   a new provider on the same checkpoint, `getStore(latest)`, fresh local dir
 * @param warmReopenMs   the same, but the new provider finds the old one's local directory (NaN: not supported)
 * @param checkpointBytes the checkpoint directory's size at the end
 * @param loadAverage    the machine's 1-minute load average when the run ended
 * @param verified       None when the peer was not checked; else whether key count and values matched
 */
final case class Measurement(
    batchRates: Seq[Double],
    cpuRates: Seq[Double],
    rowRates: Seq[Double],
    getMicros: Seq[Double],
    putMicros: Seq[Double],
    openMs: Seq[Double],
    commitMs: Seq[Double],
    preloadMs: Double,
    abortReopenMs: Double,
    rerunMs: Double,
    maintenanceMs: Double,
    coldReopenMs: Double,
    warmReopenMs: Double,
    checkpointBytes: Long,
    loadAverage: Double,
    verified: Option[Either[String, Unit]])

object Stats {
  def median(xs: Seq[Double]): Double = percentile(xs, 50)

  /** Nearest-rank percentile; NaN for no samples. NaN samples are ignored. */
  def percentile(xs: Seq[Double], p: Double): Double = {
    val s = xs.filterNot(_.isNaN).sorted
    if (s.isEmpty) Double.NaN
    else s(math.min(s.size - 1, math.max(0, math.ceil(p / 100.0 * s.size).toInt - 1)))
  }

  def spread(xs: Seq[Double]): Option[(Double, Double)] = {
    val s = xs.filterNot(_.isNaN)
    if (s.size < 2) None else Some((s.min, s.max))
  }
}

/** All repetitions of one peer, summarised the way the report prints them. */
final case class PeerSummary(name: String, label: String, reps: Seq[Measurement]) {
  import Stats._

  private def perRep(f: Measurement => Double): Seq[Double] = reps.map(f)

  val updatesPerSec: Double = median(perRep(m => median(m.batchRates)))
  val updatesSpread: Option[(Double, Double)] = spread(perRep(m => median(m.batchRates)))
  val cpuRate: Double = median(perRep(m => median(m.cpuRates)))
  val loadAverage: Double = reps.map(_.loadAverage).max
  val rowRate: Double = median(perRep(m => median(m.rowRates)))
  val getMicros: Double = median(perRep(m => median(m.getMicros)))
  val putMicros: Double = median(perRep(m => median(m.putMicros)))
  val openMs: Double = median(perRep(m => median(m.openMs)))
  val commitP50: Double = percentile(reps.flatMap(_.commitMs), 50)
  val commitP99: Double = percentile(reps.flatMap(_.commitMs), 99)
  val commitSpread: Option[(Double, Double)] = spread(perRep(m => median(m.commitMs)))
  val preloadMs: Double = median(perRep(_.preloadMs))
  val abortReopenMs: Double = median(perRep(_.abortReopenMs))
  val abortSpread: Option[(Double, Double)] = spread(perRep(_.abortReopenMs))
  val rerunMs: Double = median(perRep(_.rerunMs))
  val rerunSpread: Option[(Double, Double)] = spread(perRep(_.rerunMs))
  val maintenanceMs: Double = median(perRep(_.maintenanceMs))
  val coldReopenMs: Double = median(perRep(_.coldReopenMs))
  val coldSpread: Option[(Double, Double)] = spread(perRep(_.coldReopenMs))
  val warmReopenMs: Double = median(perRep(_.warmReopenMs))
  val warmSpread: Option[(Double, Double)] = spread(perRep(_.warmReopenMs))
  val checkpointBytes: Long = reps.map(_.checkpointBytes).max
  val verification: String = reps.flatMap(_.verified) match {
    case Seq() => "n/a"
    case vs if vs.forall(_.isRight) => "ok"
    case vs => vs.collect { case Left(why) => why }.distinct.mkString("; ")
  }
}
