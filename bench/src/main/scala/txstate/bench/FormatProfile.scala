package txstate.bench

import txstate.bench.FormatStore.Timing
import txstate.bench.Report.fmt

/**
 * Where format 2 spends its time against format 1, from one sampler per format over the same
 * batches: each method's samples (taken on the wall clock, whether the thread runs, waits in RocksDB
 * or waits for a core) are turned into µs per update (its share of the samples times the sampled
 * batches' wall time per row), so the two formats compare per row, and the difference names what
 * the stamp costs.
 */
object FormatProfile {
  def render(profiles: Map[Int, (Sampler, Seq[Timing])], top: Int = 15): String = {
    val perUpdate = profiles.map { case (v, (sampler, timings)) =>
      val counts = sampler.counts
      val usPerUpdate = (f: Timing => Long) => timings.map(f).sum / 1e3 / timings.map(_.rows).sum
      v -> ((counts, usPerUpdate(_.wallNs) / math.max(1L, counts.samples), usPerUpdate(_.wallNs), usPerUpdate(_.cpuNs)))
    }
    val (c1, us1, total1, cpu1) = perUpdate(1)
    val (c2, us2, total2, cpu2) = perUpdate(2)

    def diffTable(header: String, a: Map[String, Long], b: Map[String, Long], keep: String => Boolean, name: String => String) = {
      val rows = (a.keySet ++ b.keySet).filter(keep).toSeq
        .map(m => (m, a.getOrElse(m, 0L) * us1, b.getOrElse(m, 0L) * us2))
        .sortBy { case (_, x, y) => -math.abs(y - x) }.take(top)
      val sb = new StringBuilder
      sb ++= s"| $header | format 1 µs/update | format 2 µs/update | format 2 − format 1 |\n|---|---:|---:|---:|\n"
      rows.foreach { case (m, x, y) => sb ++= s"| ${name(m)} | ${fmt("%.3f", x)} | ${fmt("%.3f", y)} | ${fmt("%+.3f", y - x)} |\n" }
      (sb.result(), rows)
    }
    def layers(c: Sampler.Counts) = Sampler.byLayer(c.self)
    val (layerTable, _) = diffTable("layer (self time)", layers(c1), layers(c2), _ => true, identity)
    val (methodTable, methodRows) = diffTable("method (inclusive: on the stack)", c1.inclusive, c2.inclusive,
      m => Sampler.isStorePath(m) && !Sampler.isPlumbing(m), m => s"`${Sampler.short(m)}`")
    val grew = methodRows.filter { case (_, x, y) => y > x }.take(4)
      .map { case (m, x, y) => s"`${Sampler.short(m)}` (${fmt("%+.3f", y - x)} µs)" }

    val sb = new StringBuilder
    sb ++= s"${c1.samples} samples of format 1 and ${c2.samples} of format 2, one every 1000 µs of the same sampled batches " +
      s"(open, get/put loop and commit; the formats alternating). A whole update took ${fmt("%.3f", total1)} µs under " +
      s"format 1 and ${fmt("%.3f", total2)} µs under format 2 (${fmt("%+.3f", total2 - total1)} µs; of the benchmark thread's " +
      s"CPU time ${fmt("%.3f", cpu1)} and ${fmt("%.3f", cpu2)} µs); a method's µs/update is its share of its format's samples " +
      "times that format's time per update. Differences smaller than the run-to-run noise of the sampled " +
      "batches (see the per-repetition table above) are not meaningful.\n\n"
    if (grew.nonEmpty) sb ++= s"Largest increases under format 2: ${grew.mkString(", ")}.\n\n"
    sb ++= layerTable + "\n" + methodTable
    sb ++= s"\n### Format 2 alone\n\n${profiles(2)._1.report(Sampler.isStorePath, top = 10)}"
    sb.result()
  }
}
