package txstate.query.source

import java.util.{Locale, UUID}

import scala.util.Try

import txstate.compat.ScalaLibrary.CollectionConverters._
import txstate.query.ChangedSince

/** Which state a read names: a checkpoint, or a query running in this session (by name or id). */
private[source] sealed trait SourceTarget
private[source] object SourceTarget {
  final case class Checkpoint(path: String) extends SourceTarget
  final case class QueryName(name: String) extends SourceTarget
  final case class QueryId(id: UUID) extends SourceTarget
  final case class Follower(id: String) extends SourceTarget
}

/**
 * The options of `spark.read.format("txstate")` (README, "State as a DataFrame"), checked once:
 * an unknown option or a bad value is an error naming it.
 *
 * @param minBatchId      the oldest batch a partition may answer from (the query API's position bound)
 * @param checkpointReads partitions no running query holds are read from the checkpoint files
 * @param requireActive   only stores a running query holds answer (the query API's `NOT_ACTIVE`)
 * @param waitMs          how long to wait for a first commit, or for a partition to reach `minBatchId`
 * @param timestamps      add the columns `last_written_batch` and `last_written_ms` (null when not known)
 * @param changedSince    only rows last written at or after a batch (`changedSinceBatch`) or a batch
 *                        time (`changedSinceMs`); rows whose last write is not known are left out
 * @param protocol        the query protocol over the data source (`describe`, `execute`, `target`),
 *                        which Python uses where it has no py4j (Spark Connect); `request` is its JSON
 */
private[source] final case class SourceOptions(
    target: SourceTarget,
    operator: String,
    store: String,
    minBatchId: Option[Long],
    checkpointReads: Boolean,
    requireActive: Boolean,
    waitMs: Long,
    timestamps: Boolean,
    changedSince: Option[ChangedSince],
    protocol: Option[(String, String)])

private[source] object SourceOptions {
  private val known = Seq("path", "queryName", "queryId", "follower", "operator", "store", "minBatchId",
    "checkpointReads", "requireActive", "waitMs", "timestamps", "changedSinceBatch", "changedSinceMs", "protocol", "request")
  private val protocols = Seq("describe", "execute", "target", "follow", "followerStatus", "unfollow")

  def parse(options: java.util.Map[String, String]): SourceOptions = {
    // Spark hands options over case-insensitively (lower-cased keys in some paths): match that way.
    val supplied = options.asScala.map { case (k, v) => k.toLowerCase(Locale.ROOT) -> v }.toMap
    supplied.keys.foreach { k =>
      if (!known.exists(_.equalsIgnoreCase(k))) throw SourceErrors.unknownOption(k, known)
    }
    def get(name: String) = supplied.get(name.toLowerCase(Locale.ROOT)).map(_.trim).filter(_.nonEmpty)
    def flag(name: String, default: Boolean) = get(name).fold(default) {
      case v if v.equalsIgnoreCase("true") => true
      case v if v.equalsIgnoreCase("false") => false
      case v => throw SourceErrors.badOption(name, v, "true or false")
    }
    def long(name: String, min: Long) = get(name).map { v =>
      Try(v.toLong).toOption.filter(_ >= min).getOrElse(throw SourceErrors.badOption(name, v, s"a whole number >= $min"))
    }
    val protocol = get("protocol").map { p =>
      if (!protocols.contains(p)) throw SourceErrors.badOption("protocol", p, protocols.mkString(" or "))
      p -> get("request").getOrElse(throw SourceErrors.badOption("request", "", "the protocol's JSON request"))
    }
    val targets = Seq("path", "queryName", "queryId", "follower").filter(get(_).isDefined)
    val target = targets match {
      case Seq() if protocol.isDefined => SourceTarget.Checkpoint("") // the request names its store
      case Seq() => throw SourceErrors.noTarget()
      case Seq("path") => SourceTarget.Checkpoint(get("path").get)
      case Seq("queryName") => SourceTarget.QueryName(get("queryName").get)
      case Seq("queryId") =>
        val text = get("queryId").get
        SourceTarget.QueryId(scala.util.Try(UUID.fromString(text)).getOrElse(
          throw SourceErrors.badOption("queryId", text, "a query id (a UUID, StreamingQuery.id)")))
      case Seq("follower") => SourceTarget.Follower(get("follower").get)
      case several => throw SourceErrors.severalTargets(several)
    }
    val changedSince = (long("changedSinceBatch", 0), long("changedSinceMs", 0)) match {
      case (Some(_), Some(ms)) => throw SourceErrors.badOption("changedSinceMs", ms.toString,
        "left out when 'changedSinceBatch' is given (a read filters by batch or by time, not both)")
      case (batch, ms) => batch.map(ChangedSince.Batch).orElse(ms.map(ChangedSince.TimeMs))
    }
    SourceOptions(target, get("operator").getOrElse("0"), get("store").getOrElse("default"), long("minBatchId", 0),
      flag("checkpointReads", default = true), flag("requireActive", default = false),
      long("waitMs", 0).getOrElse(0L), flag("timestamps", default = false), changedSince, protocol)
  }
}
