package txstate.serve

import txstate.query.follow.FollowerStatus

/**
 * `GET /metrics` in the Prometheus text exposition format 0.0.4: one HELP and one TYPE line per
 * metric, then its samples. Batches not known yet are -1 (a gauge has no "absent").
 */
object PrometheusText {
  val contentType = "text/plain; version=0.0.4; charset=utf-8"

  def render(status: FollowerStatus, partitions: Int, http: ServeMetrics): String = {
    val out = new StringBuilder
    def metric(name: String, kind: String, help: String)(samples: Seq[(String, Double)]): Unit = {
      out ++= s"# HELP $name $help\n# TYPE $name $kind\n"
      samples.foreach { case (labels, v) => out ++= s"$name$labels ${number(v)}\n" }
    }
    def one(name: String, kind: String, help: String, v: Double): Unit = metric(name, kind, help)(Seq("" -> v))
    val lag = status.lag
    one("txstate_follower_lag_batches", "gauge", "Batches the leader has committed that the follower has not applied.",
      lag.batches.toDouble)
    one("txstate_follower_lag_milliseconds", "gauge",
      "How long the oldest committed batch not applied yet has been committed (0 when current).", lag.millis.toDouble)
    one("txstate_follower_applied_batch", "gauge", "Newest batch every followed partition has applied (-1: none).",
      lag.appliedBatch.fold(-1.0)(_.toDouble))
    one("txstate_follower_leader_batch", "gauge", "Newest batch in the leader's commit log (-1: none).",
      lag.leaderBatch.fold(-1.0)(_.toDouble))
    one("txstate_follower_partitions", "gauge", "Partitions this follower replicates.", partitions.toDouble)
    one("txstate_follower_polls_total", "counter", "Checks of the leader's commit log.", status.polls.toDouble)
    one("txstate_follower_catch_ups_total", "counter", "Partition catch-ups by replaying the leader's changelogs.",
      status.catchUps.toDouble)
    one("txstate_follower_reanchors_total", "counter", "Partition reloads from a newer snapshot.", status.reanchors.toDouble)
    one("txstate_follower_failures_total", "counter", "Polls that failed (retried at the next poll).",
      status.failures.toDouble)
    one("txstate_follower_up", "gauge", "1 when the last poll succeeded and the follower holds a batch, else 0.",
      if (ServeHealth.healthy(status)) 1.0 else 0.0)
    one("txstate_follower_native_memory_bytes", "gauge", "RocksDB native memory of the replicas (block cache, memtables).",
      status.nativeMemoryBytes.toDouble)
    metric("txstate_serve_http_requests_total", "counter", "HTTP requests answered, by endpoint and status code.")(
      http.answeredCounts.map { case ((endpoint, code), n) => s"""{endpoint="$endpoint",code="$code"}""" -> n.toDouble })
    metric("txstate_serve_rejected_requests_total", "counter",
      "Requests refused by a limit: concurrency (--max-concurrent), request_bytes (--max-request-bytes), page (--max-page).")(
      http.rejectedCounts.map { case (limit, n) => s"""{limit="$limit"}""" -> n.toDouble })
    one("txstate_serve_requests_in_flight", "gauge", "Requests being answered now.", http.inFlight.get.toDouble)
    out.result()
  }

  private def number(v: Double): String = if (v == math.rint(v) && !v.isInfinite) v.toLong.toString else v.toString
}
