package txstate.query.source

import txstate.query.FailureReason

/** Every error the `txstate` data source raises, written once (docs/ARCHITECTURE.md, "Errors"). */
private[source] object SourceErrors {
  private def invalid(code: String, message: String) = new IllegalArgumentException(s"[$code] $message")

  def unknownOption(name: String, known: Seq[String]): IllegalArgumentException =
    invalid("TXSTATE_SOURCE_UNKNOWN_OPTION",
      s"the txstate data source has no option '$name'; its options are: ${known.mkString(", ")}")

  def badOption(name: String, value: String, expected: String): IllegalArgumentException =
    invalid("TXSTATE_SOURCE_BAD_OPTION", s"option '$name' must be $expected, got '$value'")

  def noTarget(): IllegalArgumentException =
    invalid("TXSTATE_SOURCE_NO_TARGET",
      "say which state to read: option 'path' (a checkpoint location, or load(path)), or 'queryName' / " +
        "'queryId' (a streaming query running in this Spark session)")

  def severalTargets(named: Seq[String]): IllegalArgumentException =
    invalid("TXSTATE_SOURCE_NO_TARGET", s"options ${named.mkString(", ")} each name the state to read: pass one")

  def noSuchQuery(what: String, running: Seq[String]): IllegalArgumentException =
    invalid("TXSTATE_SOURCE_UNKNOWN_QUERY",
      s"no streaming query with $what is running in this Spark session; running: " +
        (if (running.isEmpty) "none" else running.mkString(", ")) +
        ". Pass option 'path' to read a stopped query's checkpoint")

  def noCommitYet(checkpoint: String, waitedMs: Long): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_SOURCE_NOT_UP_TO_BOUND] the query writing $checkpoint has not committed " +
      s"its first batch yet (waited ${waitedMs} ms): no batch committed yet. Retry, or set option 'waitMs' to wait")

  /** A partition that could not answer, as the query API would report it. */
  def partitionFailed(reason: FailureReason, message: String, waitedMs: Long): IllegalStateException =
    new IllegalStateException(s"[TXSTATE_SOURCE_$reason] $message" +
      (if (waitedMs > 0) s" (waited $waitedMs ms; option 'waitMs' waits longer)" else ""))
}
