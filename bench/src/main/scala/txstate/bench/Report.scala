package txstate.bench

import java.util.Locale

/** The markdown report: facts, the main table, ratios against txstate, details and the profile. */
object Report {
  /** A peer's outcome: its summary, or why it could not be measured. */
  final case class Row(name: String, label: String, result: Either[String, PeerSummary])

  def render(
      title: String,
      command: Seq[String],
      facts: Seq[(String, String)],
      params: BenchParams,
      rows: Seq[Row],
      notes: Seq[String],
      profile: Option[String]): String = {
    val sb = new StringBuilder
    sb ++= header(title, command, facts, params.summary)

    val ok = rows.collect { case Row(_, _, Right(s)) => s }
    sb ++= "## Results (medians)\n\n"
    sb ++= "updates/s counts a whole batch: `getStore` + get/put per row + `commit()`. Lower is better for every ms column.\n\n"
    sb ++= "| provider | updates/s | commit p50 ms | commit p99 ms | abort→reopen ms | cold reopen ms | warm reopen ms |\n"
    sb ++= "|---|---:|---:|---:|---:|---:|---:|\n"
    rows.foreach {
      case Row(_, label, Right(s)) =>
        sb ++= s"| $label | ${int(s.updatesPerSec)}${range(s.updatesSpread, int)} | ${ms(s.commitP50)}${range(s.commitSpread, ms)} | " +
          s"${ms(s.commitP99)} | ${ms(s.abortReopenMs)}${range(s.abortSpread, ms)} | ${ms(s.coldReopenMs)}${range(s.coldSpread, ms)} | ${ms(s.warmReopenMs)}${range(s.warmSpread, ms)} |\n"
      case Row(_, label, Left(why)) => sb ++= s"| $label | failed: ${why.replace('|', '/')} | | | | | |\n"
    }
    if (params.repetitions > 1) {
      sb ++= s"\nBrackets: [min–max] of the ${params.repetitions} repetitions' medians. Commit p50/p99 pool every measured batch of every repetition.\n"
    }

    ok.find(_.name == Peers.txstate.name).foreach { tx =>
      sb ++= "\n## Ratios: txstate ÷ peer\n\n"
      sb ++= "updates/s: above 1 means txstate is faster. Latency columns: below 1 means txstate is faster.\n\n"
      sb ++= "| peer | updates/s (↑) | updates/CPU-s (↑) | commit p50 (↓) | commit p99 (↓) | abort→reopen (↓) | cold reopen (↓) |\n"
      sb ++= "|---|---:|---:|---:|---:|---:|---:|\n"
      ok.filterNot(_.name == tx.name).foreach { p =>
        sb ++= s"| ${p.label} | ${ratio(tx.updatesPerSec, p.updatesPerSec)} | ${ratio(tx.cpuRate, p.cpuRate)} | ${ratio(tx.commitP50, p.commitP50)} | " +
          s"${ratio(tx.commitP99, p.commitP99)} | ${ratio(tx.abortReopenMs, p.abortReopenMs)} | ${ratio(tx.coldReopenMs, p.coldReopenMs)} |\n"
      }
    }

    Targets.render(ok, params.distribution).foreach(t => sb ++= "\n" + t)

    sb ++= "\n## Details (medians)\n\n"
    sb ++= "| provider | updates/CPU-s | get+put loop upd/s | get µs | put µs | getStore(v) ms | preload ms | re-run committed v ms | doMaintenance ms | checkpoint MiB | state verified | load avg |\n"
    sb ++= "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n"
    ok.foreach { s =>
      sb ++= s"| ${s.label} | ${int(s.cpuRate)} | ${int(s.rowRate)} | ${us(s.getMicros)} | ${us(s.putMicros)} | ${ms(s.openMs)} | ${ms(s.preloadMs)} | " +
        s"${ms(s.rerunMs)}${range(s.rerunSpread, ms)} | ${ms(s.maintenanceMs)} | ${mib(s.checkpointBytes)} | ${s.verification} | ${fmt("%.1f", s.loadAverage)} |\n"
    }
    val cores = Runtime.getRuntime.availableProcessors()
    val busiest = ok.map(_.loadAverage).filterNot(_.isNaN).reduceOption(_ max _).getOrElse(0.0)
    if (busiest > cores) {
      sb ++= s"\n**Warning:** the 1-minute load average reached ${fmt("%.1f", busiest)} on $cores cores: other processes " +
        "competed for the CPU, so wall-clock numbers are noisy. updates/CPU-s (benchmark thread CPU time) is the steadier comparison.\n"
    }
    sb ++= "\n" + notes.map("- " + _).mkString("\n") + "\n"
    profile.foreach(p => sb ++= s"\n## Where txstate's time goes (sampled)\n\n$p\n")
    sb.result()
  }

  /** A report's title, the commands that reproduce it, and the facts of the machine and the run. */
  def header(title: String, command: Seq[String], facts: Seq[(String, String)], workload: String): String = {
    val sb = new StringBuilder
    sb ++= s"# $title\n\n"
    sb ++= "Reproduce with:\n\n```\n" + command.mkString("\n") + "\n```\n\n"
    sb ++= "| fact | value |\n|---|---|\n"
    facts.foreach { case (k, v) => sb ++= s"| $k | $v |\n" }
    sb ++= s"| workload | $workload |\n\n"
    sb.result()
  }

  def fmt(pattern: String, x: Double) = String.format(Locale.ROOT, pattern, Double.box(x))
  def int(x: Double): String = if (x.isNaN) "—" else fmt("%,.0f", x)
  def ms(x: Double): String = if (x.isNaN) "—" else if (x >= 100) fmt("%,.0f", x) else if (x >= 10) fmt("%.1f", x) else fmt("%.2f", x)
  def us(x: Double): String = if (x.isNaN) "—" else fmt("%.2f", x)
  def mib(b: Long): String = fmt("%.1f", b / 1048576.0)
  def ratio(a: Double, b: Double): String =
    if (a.isNaN || b.isNaN || b == 0) "—" else if (a / b >= 10) fmt("%.0f×", a / b) else fmt("%.2f×", a / b)
  /** " [min–max]" after a median, when there is a spread. */
  def range(r: Option[(Double, Double)], f: Double => String): String =
    r.fold("")(x => s" [${f(x._1)}–${f(x._2)}]")
}
