package txstate.store.stress

import java.io.{PrintWriter, StringWriter}
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue}
import java.util.concurrent.atomic.AtomicLong

import txstate.compat.ScalaLibrary.CollectionConverters._

/** A check that failed in a schedule: which one, what was seen, and the seed that replays it. */
final case class StressFailure(seed: Long, check: String, detail: String) {
  override def toString: String = s"[seed $seed] $check: $detail (replay: STRESS_SEED=$seed)"
}

/**
 * The checks one schedule made and the failures among them, from any of its threads. A failure
 * never stops the other actors: the schedule runs to its end and reports everything it saw.
 */
final class StressChecks(val seed: Long) {
  private val made = new AtomicLong()
  private val excused = new AtomicLong()
  private val failed = new ConcurrentLinkedQueue[StressFailure]()

  private val seen = new ConcurrentHashMap[String, java.lang.Long]()

  /** Counts an event worth reporting (which load paths the schedules took), to show what they reached. */
  def saw(what: String): Unit =
    seen.merge(what, java.lang.Long.valueOf(1L), (a: java.lang.Long, b: java.lang.Long) => java.lang.Long.valueOf(a + b))
  def events: Map[String, Long] = seen.asScala.map { case (k, v) => k -> v.longValue }.toMap

  def count: Long = made.get
  def excusedCount: Long = excused.get
  def failures: Seq[StressFailure] = failed.asScala.toList

  /** Counts a check; records `detail` as a failure of `check` unless `ok`. */
  def expect(check: String, ok: Boolean, detail: => String): Unit = {
    made.incrementAndGet()
    if (!ok) failed.add(StressFailure(seed, check, detail))
  }

  def fail(check: String, detail: String, cause: Throwable): Unit =
    expect(check, ok = false, s"$detail: ${StressChecks.stack(cause)}")

  /** A failure the model allows (a load of a version cleanup was free to delete): counted, not failed. */
  def excuse(): Unit = excused.incrementAndGet()
}

object StressChecks {
  /** The throwable and the top of its stack, with its causes': enough to find the line. */
  def stack(e: Throwable): String = {
    val out = new StringWriter()
    e.printStackTrace(new PrintWriter(out))
    out.toString.linesIterator.filter(l => !l.trim.startsWith("at ") || l.contains("txstate")).take(24).mkString("\n  ")
  }
}
