package txstate.bench

import java.io.File
import java.nio.file.Files
import java.time.LocalDateTime

import scala.util.control.NonFatal

import org.apache.spark.sql.SparkSession

/**
 * The store-level benchmark: txstate against Spark's built-in state store providers and against
 * raw rocksdbjni, through the StateStoreProvider API with no scheduler, in one JVM.
 *
 *   build/sbt "bench/runMain txstate.bench.StoreBench --quick"   (make bench-quick)
 *   build/sbt "bench/runMain txstate.bench.StoreBench"           (make bench)
 *
 * Prints a markdown report and writes it to bench/results/store-<timestamp>.md.
 */
object StoreBench {
  def main(args: Array[String]): Unit = {
    val params =
      try BenchParams.parse(args.toSeq)
      catch { case e: IllegalArgumentException => System.err.println(e.getMessage); sys.exit(2) }
    val stamp = Results.stamp()
    val scratch = Files.createTempDirectory(s"txstate-bench-$stamp-").toFile
    val started = System.nanoTime()
    val loadAtStart = ProviderRun.loadAverage()

    // Spark's providers reach for SparkEnv (RocksDB's local dirs and memory manager); a local
    // session provides it. No job runs.
    val spark = SparkSession.builder()
      .master("local[1]")
      .appName("txstate-store-bench")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "1")
      .getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    // The driver's StateStoreCoordinator, as a running streaming query would have it: Spark's
    // providers report to it (snapshot uploads, active instances) and warn when it is missing.
    DriverCoordinator.start(spark)
    val hadoopConf = spark.sparkContext.hadoopConfiguration

    try {
      val plan = Workload.plan(params)
      progress(s"${params.summary}; scratch dir $scratch")
      val wanted = (p: String) => params.only.forall(_.contains(p))
      val peers = Peers.providers.filter(p => wanted(p.name))
      // The last three only run when named in --only: they show how RocksDB's index/filter caching decides get cost.
      val raws = Seq(
        ("raw", false, RawRocksLimit.IndexOutsideCache),
        ("raw-changelog", true, RawRocksLimit.IndexOutsideCache),
        ("raw-txstate-options", false, RawRocksLimit.TxstateDefaults),
        ("raw-txstate-options-one-shard", false, RawRocksLimit.TxstateDefaultsOneShard),
        ("raw-partitioned-index", false, RawRocksLimit.Partitioned)).filter { case (n, _, _) =>
          if (n == "raw" || n == "raw-changelog") wanted(n) else params.only.exists(_.contains(n))
        }

      val results = scala.collection.mutable.LinkedHashMap.empty[String, Either[String, Vector[Measurement]]]
      def record(name: String, m: => Measurement): Unit = {
        System.gc()
        val out =
          try Right(m)
          catch { case NonFatal(e) => e.printStackTrace(); Left(s"${e.getClass.getSimpleName}: ${e.getMessage}") }
        results(name) = (results.get(name), out) match {
          case (Some(Left(why)), _) => Left(why)
          case (_, Left(why)) => Left(why)
          case (prev, Right(ms)) => Right(prev.flatMap(_.toOption).getOrElse(Vector.empty) :+ ms)
        }
        out.foreach(m => progress(f"$name: ${Stats.median(m.batchRates)}%,.0f updates/s, commit p50 ${Stats.median(m.commitMs)}%.1f ms, " +
          f"abort→reopen ${m.abortReopenMs}%.1f ms, cold reopen ${m.coldReopenMs}%.1f ms; per batch k updates/s: " +
          m.batchRates.map(r => f"${r / 1000}%.0f").mkString(" ")))
      }

      // Warm the JIT on the shared paths (row building, JNI) so the first peer measured is not penalised.
      val warmDir = new File(scratch, "warmup")
      try new RawRocksLimit(Workload.plan(params.copy(preloadKeys = 50000, batches = 2, updates = 20000)), changelog = true,
        RawRocksLimit.IndexOutsideCache).run(warmDir)
      finally ProviderRun.deleteRecursively(warmDir)

      for (rep <- 1 to params.repetitions) {
        progress(s"repetition $rep of ${params.repetitions}")
        raws.foreach { case (name, changelog, tuning) =>
          val dir = new File(scratch, s"$name-rep$rep")
          try record(name, new RawRocksLimit(plan, changelog, tuning).run(dir)) finally ProviderRun.deleteRecursively(dir)
        }
        peers.foreach { peer =>
          val dir = new File(scratch, s"${peer.name}-rep$rep")
          val local = new File(scratch, s"${peer.name}-rep$rep-local")
          try record(peer.name, new ProviderRun(peer, plan, hadoopConf, params.conf).run(dir, local, reopen = params.reopen))
          finally { ProviderRun.deleteRecursively(dir); ProviderRun.deleteRecursively(local) }
        }
      }

      val profile =
        if (params.profile && wanted(Peers.txstate.name)) Some(profileTxstate(plan, hadoopConf, params.conf, scratch)) else None

      val labels = Peers.providers.map(p => p.name -> p.label).toMap ++ Map(
        "raw" -> "raw rocksdbjni limit (HashMap overlay + WriteBatch)",
        "raw-changelog" -> "raw rocksdbjni + local changelog file",
        "raw-txstate-options" -> "raw rocksdbjni, txstate's index/filter caching",
        "raw-txstate-options-one-shard" -> "raw rocksdbjni, txstate's index/filter caching, 1-shard cache",
        "raw-partitioned-index" -> "raw rocksdbjni, partitioned index/filter in cache")
      val order = peers.map(_.name) ++ raws.map(_._1)
      val rows = order.flatMap(n => results.get(n).map(r =>
        Report.Row(n, labels(n), r.map(ms => PeerSummary(n, labels(n), ms)))))
      val elapsed = (System.nanoTime() - started) / 1e9
      val report = Report.render(
        title = s"txstate store benchmark, ${params.mode} ($stamp)",
        command = Seq(
          s"""build/sbt "${("bench/runMain txstate.bench.StoreBench" +: args.toSeq).mkString(" ")}"""",
          if (params.mode == "quick") "make bench-quick" else "make bench"),
        facts = Facts.collect() ++ Seq(
          "load average at start" -> f"$loadAtStart%.1f",
          "benchmark wall time" -> f"$elapsed%.0f s"),
        params = params,
        rows = rows,
        notes = notes(params),
        profile = profile)
      println(report)
      Results.write("store", stamp, report, Some(summaryData(params, results.toMap, labels)))
        .foreach(f => progress(s"wrote ${f.getPath}"))
    } finally {
      spark.stop()
      ProviderRun.deleteRecursively(scratch)
    }
  }

  /** The report's headline numbers per peer, for scripts (bench/scaling_bench.py); a failed peer says why. */
  private def summaryData(params: BenchParams, results: Map[String, Either[String, Vector[Measurement]]],
      labels: Map[String, String]): Map[String, Any] = Map(
    "keys" -> params.preloadKeys, "distribution" -> params.distribution, "batches" -> params.batches,
    "updates" -> params.updates, "repetitions" -> params.repetitions,
    "peers" -> results.map {
      case (name, Left(why)) => name -> Map("label" -> labels(name), "failed" -> why)
      case (name, Right(ms)) =>
        val s = PeerSummary(name, labels(name), ms)
        name -> Map("label" -> s.label, "updates_per_s" -> s.updatesPerSec, "updates_per_cpu_s" -> s.cpuRate,
          "commit_p50_ms" -> s.commitP50, "preload_ms" -> s.preloadMs, "rerun_ms" -> s.rerunMs,
          "checkpoint_bytes" -> s.checkpointBytes, "verified" -> s.verification)
    })

  /** An extra, unmeasured txstate run with the stack sampler on during its first batches. */
  private def profileTxstate(plan: Workload.Plan, hadoopConf: org.apache.hadoop.conf.Configuration,
      conf: Map[String, String], scratch: File): String = {
    val dir = new File(scratch, "txstate-profile")
    val local = new File(scratch, "txstate-profile-local")
    val sampler = new Sampler(Thread.currentThread(), intervalMicros = 1000L)
    try {
      System.gc()
      progress("profiling txstate (sampled, not part of the results)")
      new ProviderRun(Peers.txstate, plan, hadoopConf, conf).run(dir, local, Some(sampler), maxBatches = 3)
      sampler.report(Sampler.isStorePath)
    } finally {
      sampler.close()
      ProviderRun.deleteRecursively(dir)
      ProviderRun.deleteRecursively(local)
    }
  }

  private def notes(params: BenchParams): Seq[String] = Seq(
    "Each provider runs on its own fresh checkpoint directory, created through `StateStoreProvider.createAndInit` " +
      "with a `StateStoreConf` built from a `SQLConf`, no prefix key columns (`NoPrefixKeyStateEncoderSpec`; " +
      "`numColsPrefixKey = 0` on 3.5), operator 0, partition 0.",
    "Key: one 16-character string column (32-byte UnsafeRow). Value: three longs (32-byte UnsafeRow). " +
      s"Per row: `get(key)` then `put(key, newValue)`; ${(params.newKeyRatio * 100).round}% of rows write a new key.",
    "A local[1] SparkSession provides SparkEnv and the driver's StateStoreCoordinator; no job runs. Commit " +
      "validation (`spark.sql.streaming.stateStore.commitValidation.enabled`) is off for every provider: with no " +
      "streaming query there is no batch to validate (in a query it costs one local RPC per commit).",
    "No background maintenance runs during the batches; `doMaintenance()` runs once before `close()`, as Spark does " +
      "before unloading a provider. Spark's snapshots therefore exist only where that call made them.",
    "updates/CPU-s: rows of a batch divided by the benchmark thread's CPU time for it (open + get/put + commit). " +
      "It leaves out RocksDB's background flush/compaction threads and any time spent waiting, so it is steadier " +
      "than updates/s when other processes share the machine.",
    "abort→reopen: U updates, `abort()`, then time `getStore(sameVersion)`. re-run committed v: after committing " +
      "v+1, time `getStore(v)` (Spark re-running a batch this store already committed), then abort it.",
    "cold reopen: a new provider (new local directory) on the same checkpoint, time `getStore(latest)`. " +
      "The reopened state is checked: key count and the counts of a sample of keys.",
    if (Peers.txstate.localDirKey.isDefined)
      "warm reopen: txstate runs with `spark.sql.streaming.stateStore.txstate.localDir` set; after `close()` a new " +
        "provider with the same setting finds the kept local directory (timed `getStore(latest)`, state checked too); " +
        "its cold reopen is a provider without the setting. Spark's providers have no such setting."
    else
      "Warm reopen (local directory kept across provider restarts): TODO, txstate will get " +
        "`spark.sql.streaming.stateStore.txstate.localDir` reuse later; all reopens above are cold.",
    "raw rows: no Spark layer, no abort/reopen path (abort is dropping the HashMap). RocksDB options mirror " +
      "txstate's engine (LZ4, bloom 10 bits, txstate's default block cache and memtable sizes) except that index and filter " +
      "blocks stay outside the block cache (RocksDB's default): with txstate's setting (in the cache, pinned for L0 " +
      "only) gets collapse to a few thousand per second once ~1M keys reach one bottom-level file " +
      "(`--only raw-txstate-options` reproduces it). The changelog variant also writes every entry to a local file " +
      "per commit (no fsync).")
  def progress(msg: String): Unit = System.err.println(s"[StoreBench] $msg")
}

/** The machine and JVM the numbers came from. */
object Facts {
  def collect(): Seq[(String, String)] = {
    val rt = Runtime.getRuntime
    Seq(
      "date" -> LocalDateTime.now().toString,
      "git" -> git(),
      "cores (JVM)" -> rt.availableProcessors().toString,
      "CPU" -> cpuModel(),
      "memory" -> memTotal(),
      "JVM" -> s"${sys.props("java.vm.name")} ${sys.props("java.runtime.version")}, max heap ${rt.maxMemory() >> 20} MiB",
      "OS" -> s"${sys.props("os.name")} ${sys.props("os.version")} ${sys.props("os.arch")}",
      "Spark" -> org.apache.spark.SPARK_VERSION,
      "rocksdbjni" -> org.rocksdb.RocksDB.rocksdbVersion().toString,
      "Scala" -> scala.util.Properties.versionNumberString)
  }

  private def firstLine(file: String, prefix: String): Option[String] =
    try {
      val src = scala.io.Source.fromFile(file)
      try src.getLines().find(_.startsWith(prefix)).map(_.split(":", 2)(1).trim) finally src.close()
    } catch { case NonFatal(_) => None }

  private def cpuModel(): String = firstLine("/proc/cpuinfo", "model name").getOrElse("unknown")
  private def memTotal(): String = firstLine("/proc/meminfo", "MemTotal").getOrElse("unknown")

  private def git(): String =
    try {
      import scala.sys.process._
      val head = Seq("git", "rev-parse", "--short", "HEAD").!!.trim
      val dirty = Seq("git", "status", "--porcelain", "--untracked-files=no").!!.trim.nonEmpty
      head + (if (dirty) " (with uncommitted changes)" else "")
    } catch { case NonFatal(_) => "unknown" }
}
