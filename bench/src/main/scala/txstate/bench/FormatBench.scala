package txstate.bench

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration

/**
 * The storage-format benchmark, in one JVM and one run:
 *  1. storage format 2 (a write stamp before every value) against format 1 (plain values, 0.1.0)
 *     on StoreBench's txstate workload, both formats alternating batch by batch: updates/s, the
 *     target (format 2 within 5% of format 1), bytes per entry on disk and per changelog;
 *  2. state TTL on a format 2 store: the batch that expires `expiredKeys` of `ttlKeys` rows, a batch
 *     with TTL on where nothing expires, and the first TTL batch, which builds the TTL index.
 * When the target is missed (or met on updates/s but not batch by batch or on CPU time), both
 * formats run again under a stack sampler and the report says where format 2's extra time goes.
 *
 *   build/sbt "bench/runMain txstate.bench.FormatBench --quick"   (make bench-format-quick, under 2 minutes)
 *   build/sbt "bench/runMain txstate.bench.FormatBench --full"    (make bench-format)
 *
 * Writes bench/results/format-<timestamp>.md and .json; exits with status 1 when TTL expired any
 * other number of rows than it must.
 */
object FormatBench {
  def main(args: Array[String]): Unit = {
    val params =
      try FormatParams.parse(args.toSeq)
      catch { case e: IllegalArgumentException => System.err.println(e.getMessage); sys.exit(2) }
    val stamp = Results.stamp()
    val scratch = Files.createTempDirectory(s"txstate-format-bench-$stamp-").toFile
    val started = System.nanoTime()
    val loadAtStart = ProviderRun.loadAverage()
    val hadoopConf = new Configuration()
    val loads = Seq.newBuilder[Double]

    val status = try {
      progress(s"${params.summary}; scratch dir $scratch")
      val plan = Workload.plan(params.workload)
      val comparison = new FormatComparison(plan, hadoopConf, scratch)

      // Warm the JIT on both formats' paths so the first repetition is not penalised.
      new FormatComparison(Workload.plan(params.workload.copy(preloadKeys = 20000, batches = 2, updates = 10000)),
        hadoopConf, scratch).run(0)

      val runs = (1 to params.workload.repetitions).map { rep =>
        System.gc()
        progress(s"formats: repetition $rep of ${params.workload.repetitions}")
        val r = comparison.run(rep)
        loads += ProviderRun.loadAverage()
        r.toSeq.sortBy(_._1).foreach { case (v, run) =>
          progress(f"format $v: ${Stats.median(run.batches.map(_.updatesPerSec))}%,.0f updates/s; per batch k updates/s: " +
            run.batches.map(t => f"${t.updatesPerSec / 1000}%.0f").mkString(" ") +
            s"; ${run.log.flushes} memtable flushes, ${run.log.writeStalls} write stalls")
        }
        r
      }
      val summaries = FormatComparison.formats.map(v => FormatSummary(v, runs.map(_(v))))

      progress(s"bytes per entry: ${params.workload.preloadKeys} keys per format")
      val sizes = comparison.sizes(params.workload.preloadKeys, batches = 10)

      val ttl = new ExpiryRun(params, hadoopConf, scratch)
      val expiry = (1 to params.ttlReps).map { rep =>
        System.gc()
        progress(s"TTL: repetition $rep of ${params.ttlReps} (${params.expiredKeys} of ${params.ttlKeys} keys expire)")
        val r = ttl.run(rep)
        loads += ProviderRun.loadAverage()
        r.fold(why => progress(s"TTL FAILED: $why"), m =>
          progress(f"TTL: index build ${(m.indexBuild.openNs + m.indexBuild.commitNs) / 1e6}%.0f ms, no expiry " +
            m.noExpiry.map(t => f"${(t.openNs + t.commitNs) / 1e6}%.1f").mkString(" ") +
            f" ms, expiry of ${m.expiry.expired} rows ${(m.expiry.openNs + m.expiry.commitNs) / 1e6}%.0f ms (open + commit)"))
        r
      }
      val problems = expiry.collect { case Left(why) => why }
      val measured = expiry.collect { case Right(m) => m }

      val preliminary: FormatReport.Outcome = FormatReport.Outcome(params, summaries, sizes,
        (if (measured.nonEmpty) Some(ExpirySummary(measured)) else None), problems, profile = None)
      val profile = if (!params.profile.getOrElse(!preliminary.met || preliminary.borderline)) None else Some {
        System.gc()
        progress(s"profiling both formats (sampled, not part of the results): format 2 is at " +
          f"${preliminary.updatesRatio}%.2fx of format 1")
        FormatProfile.render(comparison.profile(maxBatches = math.min(4, plan.batches.size)))
      }
      val outcome = preliminary.copy(profile = profile)

      val elapsed = (System.nanoTime() - started) / 1e9
      val command = Seq(
        s"""build/sbt "${("bench/runMain txstate.bench.FormatBench" +: args.toSeq).mkString(" ")}"""",
        if (params.mode == "quick") "make bench-format-quick" else "make bench-format")
      val busiest = loads.result().filterNot(_.isNaN).reduceOption(_ max _).getOrElse(Double.NaN)
      val facts = Facts.collect() ++ Seq(
        "load average at start" -> f"$loadAtStart%.1f",
        "load average, busiest repetition" -> f"$busiest%.1f",
        "benchmark wall time" -> f"$elapsed%.0f s")
      val title = s"txstate storage format benchmark, ${params.mode} ($stamp)"
      val markdown = FormatReport.render(title, command, facts, outcome)
      println(markdown)
      Results.write("format", stamp, markdown, Some(FormatReport.data(stamp, command, facts, outcome)))
        .foreach(f => progress(s"wrote ${f.getPath}"))
      problems.foreach(why => System.err.println(s"ERROR: TTL expiry: $why"))
      if (problems.isEmpty) 0 else 1
    } finally ProviderRun.deleteRecursively(scratch)
    sys.exit(status)
  }

  private def progress(msg: String): Unit = System.err.println(s"[FormatBench] $msg")
}
