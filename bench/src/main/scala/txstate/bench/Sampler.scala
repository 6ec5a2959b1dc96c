package txstate.bench

import java.util.concurrent.locks.LockSupport

import scala.collection.mutable

/**
 * A poor man's profiler: while enabled, a daemon thread takes the target thread's stack every
 * `intervalMicros` and counts, per method, how often it is on top of the stack (self) and anywhere
 * in it (inclusive). Stack walks happen at safepoint polls, so tight JIT-compiled loops are
 * attributed to their nearest poll; frames inside JNI calls (RocksDB) are exact.
 */
final class Sampler(target: Thread, intervalMicros: Long = 1000L) extends AutoCloseable {
  @volatile private var enabled = false
  @volatile private var shutdown = false
  private val selfCounts = mutable.HashMap.empty[String, Long].withDefaultValue(0L)
  private val inclusiveCounts = mutable.HashMap.empty[String, Long].withDefaultValue(0L)
  private val pathCounts = mutable.HashMap.empty[String, mutable.HashMap[Seq[String], Long]]
  private val entryCounts = mutable.HashMap.empty[String, mutable.HashMap[String, Long]]
  private var samples = 0L

  private val thread = new Thread(() => loop(), "txstate-bench-sampler")
  thread.setDaemon(true)
  thread.start()

  def start(): Unit = enabled = true
  def stop(): Unit = enabled = false

  def close(): Unit = {
    shutdown = true
    thread.join()
  }

  private def loop(): Unit =
    while (!shutdown) {
      if (enabled) record(target.getStackTrace)
      LockSupport.parkNanos(intervalMicros * 1000L)
    }

  private def record(stack: Array[StackTraceElement]): Unit = if (stack.nonEmpty && enabled) synchronized {
    samples += 1
    val top = name(stack(0))
    selfCounts(top) += 1
    val path = stack.iterator.drop(1).map(name).filterNot(Sampler.isPlumbing).take(Sampler.pathDepth).toList
    val paths = pathCounts.getOrElseUpdate(top, mutable.HashMap.empty[Seq[String], Long])
    paths(path) = paths.getOrElse(path, 0L) + 1
    // The innermost txstate frame: which of our methods led to this leaf.
    val entry = stack.iterator.map(name).find(n => n.startsWith("txstate.") && !n.startsWith("txstate.bench."))
      .getOrElse("(outside txstate)")
    val entries = entryCounts.getOrElseUpdate(top, mutable.HashMap.empty[String, Long])
    entries(entry) = entries.getOrElse(entry, 0L) + 1
    stack.iterator.map(name).toSet[String].foreach(n => inclusiveCounts(n) += 1)
  }

  private def name(f: StackTraceElement): String =
    s"${f.getClassName}.${f.getMethodName}${if (f.isNativeMethod) " (native)" else ""}"

  /** What was sampled so far: the sample count and, per method, samples on top of the stack and anywhere in it. */
  def counts: Sampler.Counts = synchronized { Sampler.Counts(samples, selfCounts.toMap, inclusiveCounts.toMap) }

  /** Markdown: where the samples fell, by layer, by method (self), and by method (inclusive). */
  def report(inclusiveOf: String => Boolean, top: Int = 25): String = synchronized {
    def pct(n: Long) = f"${100.0 * n / math.max(1L, samples)}%5.1f%%"
    val layers = Sampler.byLayer(selfCounts).toSeq.sortBy(-_._2)
    val sb = new StringBuilder
    sb ++= s"$samples samples, one every ${intervalMicros} µs of the profiled batches (get/put loop and commit).\n\n"
    sb ++= "| layer (self time) | share |\n|---|---|\n"
    layers.foreach { case (l, n) => sb ++= s"| $l | ${pct(n)} |\n" }
    sb ++= "\n| method (self) | share |\n|---|---|\n"
    selfCounts.toSeq.sortBy(-_._2).take(top).foreach { case (m, n) => sb ++= s"| `$m` | ${pct(n)} |\n" }
    sb ++= "\n| method (inclusive: on the stack) | share |\n|---|---|\n"
    inclusiveCounts.toSeq.filter { case (m, _) => inclusiveOf(m) }.sortBy(-_._2).take(top)
      .foreach { case (m, n) => sb ++= s"| `$m` | ${pct(n)} |\n" }
    sb ++= s"\nCallers of the hottest self frames (most frequent path, ${Sampler.pathDepth} frames up, lambdas and Scala collection plumbing skipped):\n\n"
    selfCounts.toSeq.sortBy(-_._2).take(8).foreach { case (m, n) =>
      val (path, k) = pathCounts(m).maxBy(_._2)
      val (entry, e) = entryCounts(m).maxBy(_._2)
      sb ++= s"- `$m` (${pct(n)}; this path ${pct(k)}): ${path.map(f => s"`${Sampler.short(f)}`").mkString(" ← ")}; " +
        s"innermost txstate frame `${Sampler.short(entry)}` (${pct(e)})\n"
    }
    sb.result()
  }
}

object Sampler {
  val pathDepth = 9

  final case class Counts(samples: Long, self: Map[String, Long], inclusive: Map[String, Long])

  /** The frames of the store's own path (txstate below the benchmark, RocksDB, Spark's state code): what reports list inclusively. */
  def isStorePath(method: String): Boolean =
    method.startsWith("txstate.") && !method.startsWith("txstate.bench.") ||
      method.startsWith("org.rocksdb.") || method.startsWith("java.util.concurrent.ConcurrentSkipListMap.") ||
      method.startsWith("org.apache.spark.sql.execution.streaming.")

  def isPlumbing(method: String): Boolean =
    method.contains("$anonfun$") || method.contains("$$Lambda") || method.contains("$adapted") ||
      method.startsWith("scala.collection.") || method.startsWith("scala.util.Using")

  /** `a.b.C.m` -> `C.m`, to keep call paths readable. */
  def short(method: String): String = {
    val (owner, rest) = method.splitAt(method.lastIndexOf('.'))
    owner.substring(owner.lastIndexOf('.') + 1) + rest
  }

  def layer(method: String): String =
    if (method.startsWith("org.rocksdb.")) "RocksDB (JNI, native)"
    else if (method.startsWith("java.util.concurrent.ConcurrentSkipListMap")) "ConcurrentSkipListMap (write buffer)"
    else if (method.startsWith("txstate.bench.")) "benchmark driver (row building)"
    else if (method.startsWith("txstate.")) "txstate (Scala)"
    else if (method.startsWith("org.apache.spark.sql.catalyst.")) "Spark catalyst (UnsafeRow, projections)"
    else if (method.startsWith("org.apache.spark.")) "Spark (state encoders, file manager)"
    else if (method.startsWith("org.apache.hadoop.")) "Hadoop FS (checkpoint files)"
    else if (method.startsWith("java.io.") || method.startsWith("sun.nio.") || method.startsWith("java.nio."))
      "JDK I/O"
    else if (method.startsWith("scala.")) "Scala library"
    else "JDK other"

  /** Sample counts summed per [[layer]] (2.13's `groupMapReduce`, which 2.12 lacks). */
  def byLayer(counts: collection.Map[String, Long]): Map[String, Long] =
    counts.foldLeft(Map.empty[String, Long]) { case (sums, (method, n)) =>
      val l = layer(method)
      sums.updated(l, sums.getOrElse(l, 0L) + n)
    }
}
