package txstate.bench

import java.io.File
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.state._

/**
 * Drives one StateStoreProvider through the aggregation-like workload, exactly as a stateful
 * operator's task would (getStore, get then put per row, commit), on its own checkpoint directory.
 *
 * Order: preload (v0 -> v1), the measured batches, an aborted attempt and its re-run (committed),
 * the open of a re-run of that committed batch (then aborted), `doMaintenance()` and `close()`,
 * then a new provider on the same checkpoint for the cold reopen (where the state is verified).
 */
final class ProviderRun(peer: Peer, plan: Workload.Plan, hadoopConf: Configuration, extraConf: Map[String, String] = Map.empty) {
  import ProviderRun._

  private val rows = new RowMaker

  /**
   * @param localRoot where a peer with a stable local directory setting keeps it; such a peer runs
   *                  with it set, and its reopen is measured warm (same setting) and cold (without)
   */
  def run(checkpointDir: File, localRoot: File, sampler: Option[Sampler] = None, maxBatches: Int = Int.MaxValue,
      reopen: Boolean = true): Measurement = {
    val storeId = StateStoreId(checkpointDir.getAbsolutePath, 0L, 0)
    val coldConf = peer.storeConf(extraConf)
    val warmConf = peer.localDirKey.map(key => peer.storeConf(extraConf + (key -> localRoot.getAbsolutePath)))
    val provider = create(storeId, warmConf.getOrElse(coldConf))

    val preloadStart = System.nanoTime()
    var version = 0L
    version = timedBatch(provider, version, Array.range(0, plan.preloadKeys), batch = 0L).newVersion
    val preloadMs = msSince(preloadStart)

    val measured = plan.batches.take(maxBatches).zipWithIndex.map { case (ids, i) =>
      sampler.foreach(_.start())
      val t = try timedBatch(provider, version, ids, batch = i + 1L) finally sampler.foreach(_.stop())
      version = t.newVersion
      t
    }
    val lastBatch = plan.batches.size + 1L

    // Abort and retry: the attempt's work is dropped; the re-run opens the same version again.
    val attempt = provider.getStore(version)
    applyRows(attempt, plan.abortBatch, lastBatch, None)
    attempt.abort()
    val (retry, abortReopenMs) = timed(provider.getStore(version))
    applyRows(retry, plan.abortBatch, lastBatch, None)
    val committed = retry.commit()

    // Spark re-runs a batch this store already committed (another partition failed): open v again.
    // Only the open is timed; the re-run's work is dropped, leaving the checkpoint at `committed`.
    val (rerun, rerunMs) = timed(provider.getStore(version))
    rerun.abort()
    version = committed
    // A kept local directory should hold the latest version when the provider goes away. Without
    // the reopens (the scaling curve's big states), the state is verified on this provider instead.
    val verifiedInPlace = if (warmConf.isDefined || !reopen) {
      val latest = provider.getStore(version)
      try if (reopen) None else Some(verify(latest)) finally latest.abort()
    } else None

    val (_, maintenanceMs) = timed(provider.doMaintenance())
    provider.close()

    // Warm reopen: a new provider that finds the kept local directory.
    val warm = warmConf.filter(_ => reopen).map { conf =>
      val reopened = create(storeId, conf)
      try {
        val (store, ms) = timed(reopened.getStore(version))
        val ok = verify(store).left.map("warm reopen: " + _)
        store.abort()
        (ms, ok)
      } finally reopened.close()
    }

    // Cold reopen: a new provider (new local directory) on the same checkpoint.
    val (verified, coldReopenMs) = verifiedInPlace.map(_ -> Double.NaN).getOrElse {
      val reopened = create(storeId, coldConf)
      try {
        val (store, ms) = timed(reopened.getStore(version))
        val ok = warm.map(_._2).filter(_.isLeft).getOrElse(verify(store))
        store.abort()
        (ok, ms)
      } finally reopened.close()
    }

    Measurement(
      batchRates = measured.map(t => t.rows / ((t.openNs + t.loopNs + t.commitNs) / 1e9)),
      cpuRates = measured.map(t => t.rows / (t.cpuNs / 1e9)),
      rowRates = measured.map(t => t.rows / (t.loopNs / 1e9)),
      getMicros = measured.map(t => t.getNs / 1e3 / t.rows),
      putMicros = measured.map(t => t.putNs / 1e3 / t.rows),
      openMs = measured.map(_.openNs / 1e6),
      commitMs = measured.map(_.commitNs / 1e6),
      preloadMs = preloadMs,
      abortReopenMs = abortReopenMs,
      rerunMs = rerunMs,
      maintenanceMs = maintenanceMs,
      coldReopenMs = coldReopenMs,
      warmReopenMs = warm.fold(Double.NaN)(_._1),
      checkpointBytes = sizeOf(checkpointDir),
      loadAverage = loadAverage(),
      verified = if (maxBatches >= plan.batches.size) Some(verified) else None)
  }

  private def create(storeId: StateStoreId, conf: StateStoreConf): StateStoreProvider =
    ProviderCalls.createAndInit(StateStoreProviderId(storeId, UUID.randomUUID()), Workload.keySchema,
      Workload.valueSchema, conf, hadoopConf)

  private def timedBatch(provider: StateStoreProvider, version: Long, ids: Array[Int], batch: Long): BatchTiming = {
    val cpu0 = threadCpuNs()
    val t0 = System.nanoTime()
    val store = provider.getStore(version)
    val t1 = System.nanoTime()
    val split = new Split
    applyRows(store, ids, batch, Some(split))
    val t2 = System.nanoTime()
    val next = store.commit()
    val t3 = System.nanoTime()
    require(next == version + 1, s"${peer.name}: commit of version $version returned $next")
    val timing = BatchTiming(next, ids.size, t1 - t0, t2 - t1, t3 - t2, split.getNs, split.putNs, threadCpuNs() - cpu0)
    if (peer.providerClass == Peers.txstate.providerClass) reportCache(store, next)
    timing
  }

  /**
   * txstate's hot-state cache in the batch just committed: its hit rate and counts, as a progress line.
   * Read after the batch's CPU time is taken, from one `metrics` call.
   */
  private def reportCache(store: StateStore, version: Long): Unit = {
    val custom = store.metrics.customMetrics.collect { case (m, v) if m.name.startsWith("txstateCache") => m.name -> v }
    for {
      hits <- custom.get("txstateCacheHits")
      misses <- custom.get("txstateCacheMisses")
      if hits + misses > 0
    } StoreBench.progress(f"${peer.name}: version $version, hot-state cache hit rate ${hits * 100.0 / (hits + misses)}%.1f%%, " +
      custom.map { case (name, v) => s"$name=$v" }.mkString(" "))
  }

  /** get, then put, per row: the aggregation step. Times get and put separately when asked. */
  private def applyRows(store: StateStore, ids: Array[Int], batch: Long, split: Option[Split]): Unit = split match {
    case Some(s) =>
      var i = 0
      while (i < ids.length) {
        val id = ids(i)
        val key = rows.key(id)
        val a = System.nanoTime()
        val previous = store.get(key)
        val value = rows.nextValue(previous, id, batch)
        val b = System.nanoTime()
        store.put(key, value)
        val c = System.nanoTime()
        s.getNs += b - a
        s.putNs += c - b
        i += 1
      }
    case None =>
      var i = 0
      while (i < ids.length) {
        val id = ids(i)
        val key = rows.key(id)
        store.put(key, rows.nextValue(store.get(key), id, batch))
        i += 1
      }
  }

  /**
   * The reopened store must hold every distinct key once, with the counts the plan implies. Keys
   * are counted by a full scan: Spark's RocksDB store refuses `metrics` before a commit.
   */
  private def verify(store: StateStore): Either[String, Unit] = {
    val expectedKeys = plan.distinctKeys.toLong
    var numKeys = 0L
    ProviderCalls.scan(store) { all => while (all.hasNext) { all.next(); numKeys += 1 } }
    if (numKeys != expectedKeys) Left(s"${peer.name}: ${numKeys} keys, expected $expectedKeys")
    else {
      val wrong = expectedCounts(plan).iterator.map { case (id, expected) =>
        (id, expected, Option(store.get(rows.key(id))).map(_.getLong(0)).getOrElse(0L))
      }.collectFirst { case (id, expected, found) if found != expected =>
        s"${peer.name}: key $id has count $found, expected $expected"
      }
      wrong.toLeft(())
    }
  }
}

object ProviderRun {
  final case class BatchTiming(newVersion: Long, rows: Int, openNs: Long, loopNs: Long, commitNs: Long, getNs: Long,
      putNs: Long, cpuNs: Long)

  private val threads = java.lang.management.ManagementFactory.getThreadMXBean

  /** CPU time of the calling thread (RocksDB's background flushes and compactions are not in it). */
  def threadCpuNs(): Long = threads.getCurrentThreadCpuTime

  /** The 1-minute load average, or NaN where the OS does not say. */
  def loadAverage(): Double = java.lang.management.ManagementFactory.getOperatingSystemMXBean.getSystemLoadAverage

  private final class Split { var getNs = 0L; var putNs = 0L }

  def timed[A](f: => A): (A, Double) = {
    val start = System.nanoTime()
    val a = f
    (a, msSince(start))
  }

  def msSince(startNs: Long): Double = (System.nanoTime() - startNs) / 1e6

  /** Expected `count` for a sample of ids: preload once, each batch, and the abort batch once. */
  def expectedCounts(plan: Workload.Plan, withAbortBatch: Boolean = true): Map[Int, Long] = {
    val sample = (0 until plan.distinctKeys by math.max(1, plan.distinctKeys / 200)).toSet
    val counts = scala.collection.mutable.Map.empty[Int, Long].withDefaultValue(0L)
    sample.filter(_ < plan.preloadKeys).foreach(id => counts(id) += 1)
    val batches = if (withAbortBatch) plan.batches :+ plan.abortBatch else plan.batches
    batches.foreach(_.foreach(id => if (sample.contains(id)) counts(id) += 1))
    sample.iterator.map(id => id -> counts(id)).toMap
  }

  def sizeOf(f: File): Long =
    if (f.isFile) f.length()
    else Option(f.listFiles).fold(0L)(_.map(sizeOf).sum)

  def deleteRecursively(f: File): Unit = {
    Option(f.listFiles).foreach(_.foreach(deleteRecursively))
    f.delete()
  }
}
