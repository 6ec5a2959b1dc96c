package txstate.bench

/**
 * The store-level targets (speed, reopen and checkpoint size), checked against the ratios of the same run. Each line says the
 * target, the measured ratio and whether it is met, so a miss is as visible as a success.
 */
object Targets {
  private final case class Target(what: String, measured: Option[Double], met: Double => Boolean, shown: Double => String)

  def render(ok: Seq[PeerSummary], distribution: String = "uniform"): Option[String] =
    ok.find(_.name == Peers.txstate.name).map { tx =>
      def peer(name: String) = ok.find(_.name == name)
      def faster(p: PeerSummary) = tx.updatesPerSec / p.updatesPerSec
      val targets = Seq(
        Target("updates/s ≥ 5× Spark RocksDB (changelog on)", peer(Peers.rocksChangelog.name).map(faster), _ >= 5, Report.ratio(_, 1)),
        Target("updates/s ≥ 1× Spark HDFS-backed", peer(Peers.hdfs.name).map(faster), _ >= 1, Report.ratio(_, 1)),
        Target("updates/s ≥ 0.8× the raw rocksdbjni limit", peer("raw").map(faster), _ >= 0.8, Report.ratio(_, 1)),
        Target("abort then re-run open ≤ 1/100 of Spark RocksDB (changelog on)",
          peer(Peers.rocksChangelog.name).map(p => tx.abortReopenMs / p.abortReopenMs), _ <= 0.01, Report.ratio(_, 1)),
        Target("warm reopen ≥ 20× faster than Spark RocksDB's (changelog on) reload",
          peer(Peers.rocksChangelog.name).map(p => p.coldReopenMs / tx.warmReopenMs), _ >= 20, x => Report.ratio(x, 1) + " faster"),
        // What a checkpoint costs on an object store (format 2's changelogs are LZ4-encoded).
        Target("checkpoint bytes ≤ 1.0× Spark RocksDB (changelog on), same batches",
          peer(Peers.rocksChangelog.name).map(p => tx.checkpointBytes.toDouble / p.checkpointBytes), _ <= 1.0,
          Report.ratio(_, 1))) ++ (distribution match {
          // The speed targets per key distribution, each for the distribution it names (1M keys in the full run).
          case "zipf" => Seq(Target("Zipf keys: updates/s ≥ 1.5× Spark HDFS-backed", peer(Peers.hdfs.name).map(faster),
            _ >= 1.5, Report.ratio(_, 1)))
          case _ => Seq(Target("uniform keys: updates/s ≥ 2× Spark RocksDB (changelog on)",
            peer(Peers.rocksChangelog.name).map(faster), _ >= 2, Report.ratio(_, 1)))
        })
      val lines = targets.map { t =>
        t.measured.filterNot(_.isNaN) match {
          case Some(x) => s"- ${t.what}: ${t.shown(x)} — ${if (t.met(x)) "met" else "MISSED"}"
          case None => s"- ${t.what}: not measured in this run"
        }
      }
      "## Targets (store level)\n\n" + lines.mkString("\n") + "\n"
    }
}
