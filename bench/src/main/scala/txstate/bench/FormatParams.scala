package txstate.bench

import scala.util.Try

/**
 * The size of one storage-format benchmark run, chosen on the command line.
 *
 * @param workload    part 1: StoreBench's workload (preload, batches of get + put, repetitions),
 *                    run once per storage format, the two formats alternating batch by batch
 * @param ttlKeys     part 2: keys in the store TTL runs on
 * @param expiredKeys part 2: of those, the keys written before the TTL cutoff (the expiry batch must remove exactly them)
 * @param ttlUpdates  part 2: get + put pairs in each TTL batch, on keys that do not expire
 * @param ttlReps     part 2: how many times the whole TTL scenario runs, each on a fresh store
 * @param profile     Some(true): always sample both formats; Some(false): never; None: when the target is missed or borderline
 */
final case class FormatParams(
    mode: String,
    workload: BenchParams,
    ttlKeys: Int,
    expiredKeys: Int,
    ttlUpdates: Int,
    ttlReps: Int,
    profile: Option[Boolean]) {

  def summary: String =
    s"mode=$mode; formats: preload=${workload.preloadKeys} keys, ${workload.batches} batches x ${workload.updates} " +
      s"get+put, ${(workload.newKeyRatio * 100).round}% new keys, R=${workload.repetitions}; TTL: $ttlKeys keys, " +
      s"$expiredKeys expire, $ttlUpdates get+put per batch, R=$ttlReps"
}

object FormatParams {
  val usage: String =
    """FormatBench [--quick | --full] [--reps N] [--keys N] [--batches N] [--updates N]
      |            [--ttl-keys N] [--expired N] [--ttl-updates N] [--ttl-reps N] [--profile | --no-profile]
      |  --quick        formats: 100k keys, 6 x 25k updates, R=3; TTL: 100k keys, 10k expire (under ~2 minutes)
      |  --full         formats: StoreBench's full size (1M keys, 10 x 200k updates, R=3); TTL: 1M keys, 100k expire, R=2
      |                 (the default; under ~15 minutes)
      |  --profile      always sample where both formats spend their time (default: when the target is missed or borderline)
      |  --no-profile   never sample""".stripMargin

  private val quick = FormatParams("quick",
    BenchParams("quick", 100000, 6, 25000, 3, 0.10, profile = false, only = None),
    ttlKeys = 100000, expiredKeys = 10000, ttlUpdates = 2500, ttlReps = 1, profile = None)
  private val full = FormatParams("full",
    BenchParams("full", 1000000, 10, 200000, 3, 0.10, profile = false, only = None),
    ttlKeys = 1000000, expiredKeys = 100000, ttlUpdates = 20000, ttlReps = 2, profile = None)

  def parse(args: Seq[String]): FormatParams = {
    def workload(p: FormatParams)(f: BenchParams => BenchParams) = p.copy(workload = f(p.workload))
    def loop(rest: List[String], p: FormatParams): FormatParams = rest match {
      case Nil => p
      case "--quick" :: tail => loop(tail, quick.copy(profile = p.profile))
      case "--full" :: tail => loop(tail, full.copy(profile = p.profile))
      case "--reps" :: n :: tail => loop(tail, workload(p)(_.copy(repetitions = positive("--reps", n))))
      case "--keys" :: n :: tail => loop(tail, workload(p)(_.copy(preloadKeys = positive("--keys", n))))
      case "--batches" :: n :: tail => loop(tail, workload(p)(_.copy(batches = positive("--batches", n))))
      case "--updates" :: n :: tail => loop(tail, workload(p)(_.copy(updates = positive("--updates", n))))
      case "--ttl-keys" :: n :: tail => loop(tail, p.copy(ttlKeys = positive("--ttl-keys", n)))
      case "--expired" :: n :: tail => loop(tail, p.copy(expiredKeys = positive("--expired", n)))
      case "--ttl-updates" :: n :: tail => loop(tail, p.copy(ttlUpdates = positive("--ttl-updates", n)))
      case "--ttl-reps" :: n :: tail => loop(tail, p.copy(ttlReps = positive("--ttl-reps", n)))
      case "--profile" :: tail => loop(tail, p.copy(profile = Some(true)))
      case "--no-profile" :: tail => loop(tail, p.copy(profile = Some(false)))
      case other :: _ => throw new IllegalArgumentException(s"FormatBench: unknown argument '$other'.\n$usage")
    }
    val p = loop(args.toList, full)
    if (p.expiredKeys >= p.ttlKeys) {
      throw new IllegalArgumentException(s"FormatBench: --expired (${p.expiredKeys}) must be below --ttl-keys (${p.ttlKeys}).\n$usage")
    }
    if (p.ttlUpdates > p.ttlKeys - p.expiredKeys) {
      throw new IllegalArgumentException(s"FormatBench: --ttl-updates (${p.ttlUpdates}) must not exceed the keys that do " +
        s"not expire (${p.ttlKeys - p.expiredKeys}).\n$usage")
    }
    p
  }

  private def positive(flag: String, raw: String): Int =
    Try(raw.toInt).toOption.filter(_ > 0).getOrElse(
      throw new IllegalArgumentException(s"FormatBench: $flag needs a positive whole number, got '$raw'.\n$usage"))
}
