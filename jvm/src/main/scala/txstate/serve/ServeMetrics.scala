package txstate.serve

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.{AtomicInteger, LongAdder}

import txstate.compat.ScalaLibrary.CollectionConverters._

/**
 * What the HTTP side counts: answers by endpoint and status code, requests refused by a limit
 * (`concurrency`, `request_bytes`, `page`), and requests in flight. Endpoints are the fixed routes
 * plus `other`, so a scan of random paths cannot grow the label set.
 */
final class ServeMetrics {
  private val answered = new ConcurrentHashMap[(String, Int), LongAdder]()
  private val rejected = new ConcurrentHashMap[String, LongAdder]()
  val inFlight = new AtomicInteger()

  def answered(endpoint: String, status: Int): Unit = answered.computeIfAbsent((endpoint, status), _ => new LongAdder).increment()

  def rejected(limit: String): Unit = rejected.computeIfAbsent(limit, _ => new LongAdder).increment()

  def answeredCounts: Seq[((String, Int), Long)] = answered.asScala.toSeq.map { case (k, v) => k -> v.sum }.sortBy(_._1)

  def rejectedCounts: Seq[(String, Long)] =
    (ServeMetrics.limits.map(_ -> 0L).toMap ++ rejected.asScala.map { case (k, v) => k -> v.sum }).toSeq.sorted
}

object ServeMetrics {
  val limits: Seq[String] = Seq("concurrency", "page", "request_bytes")
}
