package txstate.bench

import scala.util.Try

/**
 * The size of one benchmark run, chosen on the command line.
 *
 * @param preloadKeys  keys written by the first batch (version 0 -> 1)
 * @param batches      measured update batches after the preload
 * @param updates      get + put pairs per batch
 * @param repetitions  how many times each measurement runs (medians reported, spread shown)
 * @param newKeyRatio  share of updates that write a key never seen before
 * @param profile      run an extra, unmeasured txstate pass under the stack sampler
 * @param distribution how a batch picks the existing keys it updates: "uniform", or "zipf" (s = 1.1, the
 *                     hottest keys scattered over the key space)
 * @param reopen       measure the warm and cold reopens (new providers on the checkpoint); without, the
 *                     state is verified on the running provider (big states, where a reopen costs minutes)
 */
final case class BenchParams(
    mode: String,
    preloadKeys: Int,
    batches: Int,
    updates: Int,
    repetitions: Int,
    newKeyRatio: Double,
    profile: Boolean,
    only: Option[Set[String]],
    conf: Map[String, String] = Map.empty,
    distribution: String = "uniform",
    reopen: Boolean = true) {

  def summary: String =
    s"mode=$mode, preload=$preloadKeys keys, $distribution keys, $batches batches x $updates get+put, " +
      s"${(newKeyRatio * 100).round}% new keys, R=$repetitions" +
      (if (conf.isEmpty) "" else conf.map { case (k, v) => s"$k=$v" }.mkString(", extra conf: ", ", ", ""))
}

object BenchParams {
  val usage: String =
    """StoreBench [--quick | --full] [--reps N] [--keys N] [--batches N] [--updates N]
      |           [--no-profile] [--no-reopen] [--only name,name,...] [--conf key=value]... [--dist uniform|zipf]
      |  --quick       200k keys, 4 x 50k updates, R=1 (under ~4 minutes)
      |  --full        1M keys, 10 x 200k updates, R=3 (the default; under ~20 minutes)
      |  --dist        existing keys updated uniformly (default) or Zipf-distributed (s = 1.1)
      |  --only        peers to run, by short name: txstate, txstate-cache, rocksdb-changelog, rocksdb-snapshot, rocksdb-bounded, hdfs, raw, raw-changelog,
      |                and (only when named) raw-txstate-options, raw-txstate-options-one-shard, raw-partitioned-index
      |  --no-profile  skip the sampled txstate pass
      |  --no-reopen   skip the warm and cold reopens (verify the state on the running provider)
      |  --conf k=v    an extra SQL setting for every provider (e.g. spark.sql.streaming.stateStore.txstate.blockCacheSizeMB=64)""".stripMargin

  private val quick = BenchParams("quick", 200000, 4, 50000, 1, 0.10, profile = true, only = None)
  private val full = BenchParams("full", 1000000, 10, 200000, 3, 0.10, profile = true, only = None)

  def parse(args: Seq[String]): BenchParams = {
    def loop(rest: List[String], p: BenchParams): BenchParams = rest match {
      case Nil => p
      case "--quick" :: tail => loop(tail, quick.copy(profile = p.profile, only = p.only, conf = p.conf, distribution = p.distribution,
        reopen = p.reopen))
      case "--full" :: tail => loop(tail, full.copy(profile = p.profile, only = p.only, conf = p.conf, distribution = p.distribution,
        reopen = p.reopen))
      case "--dist" :: d :: tail if Set("uniform", "zipf").contains(d) => loop(tail, p.copy(distribution = d))
      case "--dist" :: d :: _ => throw new IllegalArgumentException(s"StoreBench: --dist takes uniform or zipf, got '$d'.\n$usage")
      case "--reps" :: n :: tail => loop(tail, p.copy(repetitions = positive("--reps", n)))
      case "--keys" :: n :: tail => loop(tail, p.copy(preloadKeys = positive("--keys", n)))
      case "--batches" :: n :: tail => loop(tail, p.copy(batches = positive("--batches", n)))
      case "--updates" :: n :: tail => loop(tail, p.copy(updates = positive("--updates", n)))
      case "--no-profile" :: tail => loop(tail, p.copy(profile = false))
      case "--no-reopen" :: tail => loop(tail, p.copy(reopen = false))
      case "--only" :: names :: tail => loop(tail, p.copy(only = Some(names.split(',').map(_.trim).filter(_.nonEmpty).toSet)))
      case "--conf" :: kv :: tail =>
        kv.split("=", 2) match {
          case Array(k, v) if k.trim.nonEmpty => loop(tail, p.copy(conf = p.conf + (k.trim -> v.trim)))
          case _ => throw new IllegalArgumentException(s"StoreBench: --conf needs key=value, got '$kv'.\n$usage")
        }
      case other :: _ => throw new IllegalArgumentException(s"StoreBench: unknown argument '$other'.\n$usage")
    }
    loop(args.toList, full)
  }

  private def positive(flag: String, raw: String): Int =
    Try(raw.toInt).toOption.filter(_ > 0).getOrElse(
      throw new IllegalArgumentException(s"StoreBench: $flag needs a positive whole number, got '$raw'.\n$usage"))
}
